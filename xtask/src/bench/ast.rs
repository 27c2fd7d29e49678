//! `cargo xtask bench ast`: `ast_grep`'s engine against the ast-grep CLI (same engine, from
//! PyPI) on real corpora, in one run, both sides on every core: identical match sets, wall
//! and CPU time per pattern, and the ratios (issue 23).
//!
//! Each round searches every pattern of a corpus in order through one syntax index, as one
//! `serve` run would: `first` is a pattern's first search (the index holds what the earlier
//! patterns read and parsed), `again` the same search repeated on the unchanged tree. `no
//! index` and `cold` time each pattern alone without an index and on an empty one (a run's
//! very first search): what building the index costs. `warm` is each pattern's first search
//! on an index the prewarm (`[ast] prewarm`) filled, whose own cost is printed apart. Every measurement starts from a heap
//! trimmed of free memory, so none is spared the page faults of the memory it fills. The
//! corpora are downloaded into `bench-corpus/` (ignored by
//! git): the Django sdist from PyPI, a few large crates vendored from crates.io, and one
//! 14 MB Python file made of Django's own modules end to end. The CLI is installed into
//! `.venv`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tools::tools_ast::{SearchOptions, SyntaxIndex, find_spans};
use anyhow::{Context, bail};

/// The CLI version built on the same engine version as ours.
const CLI_VERSION: &str = "0.51.1";
const DJANGO_VERSION: &str = "5.2.19";
/// Rounds of the whole run; every figure is their average.
const ROUNDS: u32 = 3;
/// The budget of the benchmark's indexes (the default of `[ast] cache_mb`).
const CACHE_MB: usize = agent_tools::tools_ast::DEFAULT_CACHE_MB;
/// The size of the one-file corpus.
const BIG_FILE_BYTES: usize = 14 << 20;
/// The most a piece of it holds (the CLI's oracle for it runs on the pieces).
const PIECE_BYTES: usize = 1 << 20;

struct Case {
    corpus: &'static str,
    language: &'static str,
    pattern: &'static str,
    /// Whether most files lack the pattern's literals (where checking them first pays).
    selective: bool,
}

const CASES: &[Case] = &[
    Case {
        corpus: "django",
        language: "python",
        pattern: "$X.objects.filter($$$A)",
        selective: true,
    },
    Case {
        corpus: "django",
        language: "python",
        pattern: "raise NotImplementedError($$$A)",
        selective: true,
    },
    Case {
        corpus: "django",
        language: "python",
        pattern: "warnings.warn($$$A)",
        selective: true,
    },
    Case {
        corpus: "django",
        language: "python",
        pattern: "super().__init__($$$A)",
        selective: false,
    },
    Case {
        corpus: "django",
        language: "python",
        pattern: "isinstance($X, $T)",
        selective: false,
    },
    Case {
        corpus: "django",
        language: "python",
        pattern: "$A = $B",
        selective: false,
    },
    Case {
        corpus: "crates",
        language: "rust",
        pattern: "$X.unwrap()",
        selective: false,
    },
    Case {
        corpus: "crates",
        language: "rust",
        pattern: "unsafe { $$$B }",
        selective: false,
    },
    Case {
        corpus: "crates",
        language: "rust",
        pattern: "std::mem::transmute($$$A)",
        selective: true,
    },
    Case {
        corpus: "crates",
        language: "rust",
        pattern: "panic!($$$A)",
        selective: true,
    },
    Case {
        corpus: "big-file",
        language: "python",
        pattern: "isinstance($X, $T)",
        selective: false,
    },
    Case {
        corpus: "big-file",
        language: "python",
        pattern: "$A = $B",
        selective: false,
    },
];

/// Wall and CPU time of one measurement (CPU: every thread of the process, or the child).
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.wall += other.wall;
        self.cpu += other.cpu;
    }
}

impl Cost {
    fn per_round(self) -> Cost {
        Cost {
            wall: self.wall / ROUNDS,
            cpu: self.cpu / ROUNDS,
        }
    }
}

/// Per pattern, summed over the rounds.
#[derive(Default)]
struct Row {
    matches: Matches,
    cli_matches: Matches,
    no_index: Cost,
    cold: Cost,
    /// The first search of a run with `[ast] prewarm` (the default), asked for as the run
    /// starts: its prewarm has only just begun, and goes on beside it.
    early: Cost,
    first: Cost,
    again: Cost,
    /// The first search on an index the prewarm filled (`[ast] prewarm`).
    warm: Cost,
    cli: Cost,
}

pub(crate) fn run() -> anyhow::Result<()> {
    // Timing an unoptimised engine says nothing: run the release build of this command.
    if let Some(outcome) = super::in_release("ast") {
        return outcome;
    }
    let root = crate::project_root();
    let corpus = root.join("bench-corpus");
    let cli = ensure_cli(&root)?;
    let django = ensure_django(&corpus)?;
    let crates = ensure_crates(&root, &corpus)?;
    let big = ensure_big_file(&corpus, &django)?;
    let dir_of = |case: &Case| match case.corpus {
        "django" => django.clone(),
        "crates" => crates.clone(),
        _ => big.clone(),
    };
    println!(
        "ast-grep CLI {CLI_VERSION} vs ast_grep's engine, every core each ({} here), averaged over {ROUNDS} rounds",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!(
        "corpora: django {DJANGO_VERSION} ({} .py files), vendored crates ({} .rs files), one {:.1} MB .py file",
        count(&django, "py"),
        count(&crates, "rs"),
        BIG_FILE_BYTES as f64 / 1e6,
    );
    println!(
        "the CLI reports no match in the one big file, so its matches there come from the same bytes cut into {} pieces at module boundaries (its times too)",
        std::fs::read_dir(corpus.join("big-file-pieces"))?.count()
    );
    println!(
        "columns: `no index` searches with cache_mb = 0; `cold` is a first search on an empty index, prewarm off; `early` a first search asked for as the run starts, its prewarm (the default) beginning beside it; `first` and `again` each pattern twice on one index, in order; `warm` a first search once the prewarm has ended"
    );
    let options = SearchOptions::default();
    let mut rows: Vec<Row> = CASES.iter().map(|_| Row::default()).collect();
    let mut memory = Vec::new();
    let mut prewarms: Vec<(&str, Cost, (usize, usize))> = ["django", "crates", "big-file"]
        .into_iter()
        .map(|name| (name, Cost::default(), (0, 0)))
        .collect();
    for round in 0..ROUNDS {
        // Without an index, and on an empty one: each pattern alone.
        for (case, row) in CASES.iter().zip(&mut rows) {
            let dir = dir_of(case);
            let (_, cost) = ours(case, &dir, options, &SyntaxIndex::new(0))?;
            row.no_index += cost;
            let (_, cost) = ours(case, &dir, options, &SyntaxIndex::new(CACHE_MB))?;
            row.cold += cost;
            // A run's search asked for at once, its prewarm starting beside it.
            trim();
            let index = SyntaxIndex::new(CACHE_MB);
            let prewarm = index.prewarm(&dir);
            let (_, cost) = ours(case, &dir, options, &index)?;
            row.early += cost;
            // Nothing of it runs on into the next measurement.
            drop(index);
            prewarm.wait();
            let (cli_matches, cost) = match case.corpus {
                "big-file" => measure_cli_in_pieces(&cli, case, &corpus.join("big-file-pieces"))?,
                _ => measure_cli(&cli, case, &dir)?,
            };
            row.cli += cost;
            row.cli_matches = cli_matches;
        }
        // One index per corpus, the patterns in order, each searched twice.
        for name in ["django", "crates", "big-file"] {
            trim();
            let rss_before = rss_bytes();
            let index = SyntaxIndex::new(CACHE_MB);
            for (case, row) in CASES.iter().zip(&mut rows) {
                if case.corpus != name {
                    continue;
                }
                let dir = dir_of(case);
                let (_, cost) = ours(case, &dir, options, &index)?;
                row.first += cost;
                let (matches, cost) = ours(case, &dir, options, &index)?;
                row.again += cost;
                row.matches = matches;
            }
            if round == 0 {
                let files = CASES
                    .iter()
                    .find(|c| c.corpus == name)
                    .map(|c| count(&dir_of(c), if c.language == "rust" { "rs" } else { "py" }))
                    .unwrap_or_default();
                trim();
                memory.push((
                    name,
                    files,
                    index.stats(),
                    rss_bytes().saturating_sub(rss_before),
                ));
            }
            // Prewarmed: the index filled before the first search, each pattern once.
            drop(index);
            trim();
            let index = SyntaxIndex::new(CACHE_MB);
            let corpus_dir = CASES
                .iter()
                .find(|c| c.corpus == name)
                .map(&dir_of)
                .context("a corpus without a case")?;
            let (wall, cpu) = (Instant::now(), cpu_time(Who::Me));
            let report = index.prewarm(&corpus_dir).wait();
            if report.full {
                bail!("the prewarm of {name} filled the budget");
            }
            if let Some((_, cost, held)) = prewarms.iter_mut().find(|(n, _, _)| *n == name) {
                *held = (report.held, report.files);
                *cost += Cost {
                    wall: wall.elapsed(),
                    cpu: cpu_time(Who::Me).saturating_sub(cpu),
                };
            }
            for (case, row) in CASES.iter().zip(&mut rows) {
                if case.corpus == name {
                    let (matches, cost) = ours(case, &dir_of(case), options, &index)?;
                    row.warm += cost;
                    if matches != row.matches {
                        bail!(
                            "`{}` found other matches on the prewarmed index",
                            case.pattern
                        );
                    }
                }
            }
        }
    }
    let mut failures = Vec::new();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    for (case, row) in CASES.iter().zip(&rows) {
        let same = row.matches == row.cli_matches;
        if !same {
            failures.push(format!(
                "`{}` ({}): {} only ours, {} only the CLI's",
                case.pattern,
                case.corpus,
                row.matches.difference(&row.cli_matches).count(),
                row.cli_matches.difference(&row.matches).count()
            ));
        }
    }
    for (label, pick) in [
        ("wall", (|c: Cost| c.wall) as fn(Cost) -> Duration),
        ("cpu", |c: Cost| c.cpu),
    ] {
        println!(
            "\n{:<32} {:>6} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}  same",
            format!("pattern ({label})"),
            "matches",
            "no index",
            "cold",
            "early",
            "first",
            "again",
            "warm",
            "cli",
            "cli/cold",
            "cli/early",
            "cli/first",
            "cli/again",
            "cli/warm",
            "kind"
        );
        for (case, row) in CASES.iter().zip(&rows) {
            let [no_index, cold, early, first, again, warm, cli] = [
                row.no_index,
                row.cold,
                row.early,
                row.first,
                row.again,
                row.warm,
                row.cli,
            ]
            .map(|c| pick(c.per_round()));
            println!(
                "{:<32} {:>7} {:>9.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.2}x {:>8.2}x {:>8.2}x {:>8.2}x {:>8.2}x {:>6}  {}",
                format!("{} [{}]", case.pattern, case.corpus),
                row.matches.len(),
                ms(no_index),
                ms(cold),
                ms(early),
                ms(first),
                ms(again),
                ms(warm),
                ms(cli),
                ratio(cli, cold),
                ratio(cli, early),
                ratio(cli, first),
                ratio(cli, again),
                ratio(cli, warm),
                if case.selective { "select" } else { "broad" },
                if row.matches == row.cli_matches {
                    "yes"
                } else {
                    "NO"
                },
            );
        }
    }
    println!("\nbuilding the index (cold over no index, wall):");
    for name in ["django", "crates", "big-file"] {
        let (no_index, cold) = CASES
            .iter()
            .zip(&rows)
            .filter(|(case, _)| case.corpus == name)
            .fold((Duration::ZERO, Duration::ZERO), |(n, c), (_, row)| {
                (n + row.no_index.wall, c + row.cold.wall)
            });
        println!("  {name:<9} {:+.1}%", (ratio(cold, no_index) - 1.0) * 100.0);
    }
    println!(
        "\nthe prewarm (`[ast] prewarm`: every file parsed into an empty index in the background, at idle priority; `warm` is the first search after it):"
    );
    for (name, cost, (held, files)) in prewarms {
        let cost = cost.per_round();
        println!(
            "  {name:<9} {:.1} ms wall, {:.1} ms CPU; {held} of {files} files of a known language held (the rest are not text or do not parse)",
            ms(cost.wall),
            ms(cost.cpu)
        );
    }
    println!("\nthe index after one round (estimate; resident growth of this process):");
    for (name, files, stats, rss) in memory {
        println!(
            "  {name:<9} {} files held, {} parsed: {:.1} MB ({:.1} MB per 1,000 files); resident +{:.1} MB",
            stats.files,
            stats.parsed,
            stats.bytes as f64 / 1e6,
            stats.bytes as f64 / 1e6 / (files.max(1) as f64 / 1000.0),
            rss as f64 / 1e6,
        );
    }
    if !failures.is_empty() {
        bail!("match sets differ:\n{}", failures.join("\n"));
    }
    Ok(())
}

type Matches = BTreeSet<(PathBuf, usize, usize)>;

/// One search through `index`: its matches and what it cost.
fn ours(
    case: &Case,
    dir: &Path,
    options: SearchOptions,
    index: &Arc<SyntaxIndex>,
) -> anyhow::Result<(Matches, Cost)> {
    trim();
    let (wall, cpu) = (Instant::now(), cpu_time(Who::Me));
    let spans =
        find_spans(case.pattern, case.language, dir, options, index).map_err(anyhow::Error::msg)?;
    let cost = Cost {
        wall: wall.elapsed(),
        cpu: cpu_time(Who::Me).saturating_sub(cpu),
    };
    let matches = spans
        .into_iter()
        .map(|s| {
            (
                s.path
                    .strip_prefix(dir)
                    .map(Path::to_path_buf)
                    .unwrap_or(s.path),
                s.start,
                s.end,
            )
        })
        .collect();
    Ok((matches, cost))
}

fn measure_cli(cli: &Path, case: &Case, dir: &Path) -> anyhow::Result<(Matches, Cost)> {
    let (wall, cpu) = (Instant::now(), cpu_time(Who::Children));
    let output = Command::new(cli)
        .args([
            "run",
            "--pattern",
            case.pattern,
            "--lang",
            case.language,
            "--json=stream",
            ".",
        ])
        .current_dir(dir)
        .output()
        .with_context(|| format!("cannot run {}", cli.display()))?;
    let cost = Cost {
        wall: wall.elapsed(),
        cpu: cpu_time(Who::Children).saturating_sub(cpu),
    };
    if !output.status.success() && !output.stdout.is_empty() {
        bail!(
            "the CLI failed on `{}`: {}",
            case.pattern,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut matches = Matches::new();
    for line in String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let value: serde_json::Value =
            serde_json::from_str(line).context("the CLI printed a line that is not JSON")?;
        let file = value["file"].as_str().unwrap_or_default();
        let offsets = &value["range"]["byteOffset"];
        let (Some(start), Some(end)) = (offsets["start"].as_u64(), offsets["end"].as_u64()) else {
            bail!("the CLI's JSON has no byte offsets: {line}");
        };
        matches.insert((
            PathBuf::from(file.trim_start_matches("./")),
            start as usize,
            end as usize,
        ));
    }
    Ok((matches, cost))
}

enum Who {
    Me,
    Children,
}

/// User plus system CPU time of this process (every thread, ended ones included) or of its
/// waited-for children, to the microsecond.
fn cpu_time(who: Who) -> Duration {
    let which = match who {
        Who::Me => libc::RUSAGE_SELF,
        Who::Children => libc::RUSAGE_CHILDREN,
    };
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer it is given, which points at
    // memory of that size that lives through the call.
    #[allow(unsafe_code)]
    let usage = unsafe {
        if libc::getrusage(which, usage.as_mut_ptr()) != 0 {
            return Duration::ZERO;
        }
        usage.assume_init()
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Gives the allocator's free memory back to the system, so that every measurement starts
/// from the same heap (the memory a dropped index leaves would otherwise spare the next one
/// its page faults) and resident growth is what is held.
fn trim() {
    // SAFETY: malloc_trim has no preconditions; it only releases free memory of the heap.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// This process's resident memory, from /proc.
fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
        })
        .map_or(0, |kb| kb * 1024)
}

/// One Python file of about 14 MB: Django's modules end to end (real code, one tree), and
/// the same bytes cut at module boundaries into pieces of at most 1 MB in `big-file-pieces/`:
/// the CLI reports no match at all in the whole file (it gives up on it silently), so its
/// matches there are taken from the pieces, shifted by each piece's offset.
fn ensure_big_file(corpus: &Path, django: &Path) -> anyhow::Result<PathBuf> {
    let dir = corpus.join("big-file");
    let file = dir.join("django_all.py");
    let pieces = corpus.join("big-file-pieces");
    if file.is_file() && pieces.is_dir() {
        return Ok(dir);
    }
    for stale in [&dir, &pieces] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)?;
        }
        std::fs::create_dir_all(stale)?;
    }
    let mut sources: Vec<PathBuf> = ignore::WalkBuilder::new(django)
        .require_git(false)
        .build()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    sources.sort();
    let mut text = String::with_capacity(BIG_FILE_BYTES + (1 << 20));
    let mut piece = String::new();
    let mut written = 0;
    let mut flush = |piece: &mut String| -> anyhow::Result<()> {
        if !piece.is_empty() {
            std::fs::write(pieces.join(format!("{written:04}.py")), &*piece)?;
            written += 1;
            piece.clear();
        }
        Ok(())
    };
    'fill: loop {
        for source in &sources {
            let mut module = std::fs::read_to_string(source).unwrap_or_default();
            module.push('\n');
            if piece.len() + module.len() > PIECE_BYTES {
                flush(&mut piece)?;
            }
            piece.push_str(&module);
            text.push_str(&module);
            if text.len() >= BIG_FILE_BYTES {
                break 'fill;
            }
        }
    }
    flush(&mut piece)?;
    std::fs::write(&file, text)?;
    // Dated like the sources it was made of: a file modified this instant is searched but
    // not held by the index (see tools-ast's index), which is not what this case measures.
    let sdist = std::fs::metadata(django)?.modified()?;
    std::fs::File::options()
        .write(true)
        .open(&file)?
        .set_modified(sdist)?;
    Ok(dir)
}

/// The CLI's matches in the big file: its matches in the pieces, each shifted by where its
/// piece begins in the file.
fn measure_cli_in_pieces(
    cli: &Path,
    case: &Case,
    pieces: &Path,
) -> anyhow::Result<(Matches, Cost)> {
    let (in_pieces, cost) = measure_cli(cli, case, pieces)?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(pieces)?
        .flatten()
        .map(|e| PathBuf::from(e.file_name()))
        .collect();
    names.sort();
    let mut offsets = std::collections::HashMap::new();
    let mut offset = 0;
    for name in names {
        let len = std::fs::metadata(pieces.join(&name))?.len() as usize;
        offsets.insert(name, offset);
        offset += len;
    }
    let matches = in_pieces
        .into_iter()
        .map(|(piece, start, end)| {
            let at = offsets.get(&piece).copied().unwrap_or_default();
            (PathBuf::from("django_all.py"), at + start, at + end)
        })
        .collect();
    Ok((matches, cost))
}

fn ensure_cli(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join(".venv");
    let cli = venv.join("bin/ast-grep");
    let installed = Command::new(&cli)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(CLI_VERSION));
    if installed.unwrap_or(false) {
        return Ok(cli);
    }
    if !venv.join("bin/pip").exists() {
        sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    sh(Command::new(venv.join("bin/pip")).args([
        "install",
        "--quiet",
        &format!("ast-grep-cli=={CLI_VERSION}"),
    ]))?;
    Ok(cli)
}

fn ensure_django(corpus: &Path) -> anyhow::Result<PathBuf> {
    let dir = corpus.join(format!("django-{DJANGO_VERSION}"));
    if dir.exists() {
        return Ok(dir);
    }
    std::fs::create_dir_all(corpus)?;
    let pip = crate::project_root().join(".venv/bin/pip");
    sh(Command::new(pip)
        .args([
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
        ])
        .arg(corpus)
        .arg(format!("django=={DJANGO_VERSION}")))?;
    let archive = corpus.join(format!("django-{DJANGO_VERSION}.tar.gz"));
    sh(Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(corpus))?;
    Ok(dir)
}

/// A few large, popular crates, vendored from crates.io at fixed versions.
fn ensure_crates(root: &Path, corpus: &Path) -> anyhow::Result<PathBuf> {
    let dir = corpus.join("crates");
    if dir.exists() {
        return Ok(dir);
    }
    let project = corpus.join("crates-manifest");
    std::fs::create_dir_all(project.join("src"))?;
    std::fs::write(project.join("src/lib.rs"), "")?;
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"bench-corpus\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
         [dependencies]\ntokio = { version = \"=1.54.1\", default-features = false }\nsyn = { version = \"=2.0.119\", default-features = false }\n\
         regex-automata = { version = \"=0.4.14\", default-features = false }\nserde_json = { version = \"=1.0.145\", default-features = false, features = [\"std\"] }\n",
    )?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    sh(Command::new(cargo)
        .args(["vendor", "--quiet", "--versioned-dirs", "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .arg(&dir)
        .current_dir(root))?;
    Ok(dir)
}

fn count(dir: &Path, extension: &str) -> usize {
    ignore::WalkBuilder::new(dir)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == extension))
        .count()
}

fn sh(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}
