//! `cargo xtask bench ast`: `ast_grep`'s engine against the ast-grep CLI (same engine, from
//! PyPI) on a real corpus, single thread each, in one run: identical match sets, CPU time per
//! pattern and the ratio.
//!
//! The corpus is downloaded into `bench-corpus/` (ignored by git): the Django sdist from PyPI
//! and a few large crates vendored from crates.io. The CLI is installed into `.venv`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent_tools::tools_ast::{SearchOptions, find_spans};
use anyhow::{Context, bail};

/// The CLI version built on the same engine version as ours.
const CLI_VERSION: &str = "0.51.1";
const DJANGO_VERSION: &str = "5.2.19";
/// How many times each side runs each pattern; the CPU times are averaged.
const RUNS: u32 = 3;

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
];

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
    println!(
        "ast-grep CLI {CLI_VERSION} vs ast_grep's engine, one thread each, CPU time averaged over {RUNS} runs"
    );
    println!(
        "corpora: django {DJANGO_VERSION} ({} .py files), vendored crates ({} .rs files)\n",
        count(&django, "py"),
        count(&crates, "rs")
    );
    println!(
        "{:<36} {:>8} {:>10} {:>10} {:>10} {:>7}  same matches",
        "pattern", "matches", "ours ms", "cli ms", "cli/ours", "kind"
    );
    let mut failures = Vec::new();
    for case in CASES {
        let dir = if case.corpus == "django" {
            &django
        } else {
            &crates
        };
        let (ours, ours_cpu) = measure_ours(case, dir)?;
        let (theirs, cli_cpu) = measure_cli(&cli, case, dir)?;
        let same = ours == theirs;
        if !same {
            let only_ours = ours.difference(&theirs).count();
            let only_theirs = theirs.difference(&ours).count();
            failures.push(format!(
                "`{}`: {only_ours} only ours, {only_theirs} only the CLI's",
                case.pattern
            ));
        }
        println!(
            "{:<36} {:>8} {:>10.1} {:>10.1} {:>9.2}x {:>7}  {}",
            case.pattern,
            ours.len(),
            ours_cpu.as_secs_f64() * 1e3,
            cli_cpu.as_secs_f64() * 1e3,
            cli_cpu.as_secs_f64() / ours_cpu.as_secs_f64().max(1e-9),
            if case.selective { "select" } else { "broad" },
            if same { "yes" } else { "NO" },
        );
    }
    if !failures.is_empty() {
        bail!("match sets differ:\n{}", failures.join("\n"));
    }
    Ok(())
}

type Matches = BTreeSet<(PathBuf, usize, usize)>;

fn measure_ours(case: &Case, dir: &Path) -> anyhow::Result<(Matches, Duration)> {
    let options = SearchOptions {
        threads: 1,
        ..SearchOptions::default()
    };
    let mut spans = Vec::new();
    let before = self_cpu()?;
    for _ in 0..RUNS {
        spans =
            find_spans(case.pattern, case.language, dir, options).map_err(anyhow::Error::msg)?;
    }
    let cpu = (self_cpu()? - before) / RUNS;
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
    Ok((matches, cpu))
}

fn measure_cli(cli: &Path, case: &Case, dir: &Path) -> anyhow::Result<(Matches, Duration)> {
    let before = children_cpu()?;
    let mut stdout = Vec::new();
    for _ in 0..RUNS {
        let output = Command::new(cli)
            .args([
                "run",
                "--pattern",
                case.pattern,
                "--lang",
                case.language,
                "--json=stream",
                "--threads",
                "1",
                ".",
            ])
            .current_dir(dir)
            .output()
            .with_context(|| format!("cannot run {}", cli.display()))?;
        if !output.status.success() && !output.stdout.is_empty() {
            bail!(
                "the CLI failed on `{}`: {}",
                case.pattern,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        stdout = output.stdout;
    }
    let cpu = (children_cpu()? - before) / RUNS;
    let mut matches = Matches::new();
    for line in String::from_utf8_lossy(&stdout)
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
    Ok((matches, cpu))
}

/// User plus system CPU time of this process, from /proc (clock ticks of 10 ms).
fn self_cpu() -> anyhow::Result<Duration> {
    proc_stat_ticks(13..15)
}

/// User plus system CPU time of this process's waited-for children.
fn children_cpu() -> anyhow::Result<Duration> {
    proc_stat_ticks(15..17)
}

fn proc_stat_ticks(fields: std::ops::Range<usize>) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("cannot read /proc/self/stat")?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    // `rest` starts at field 3 (state); field N (1-based) is at index N - 3. Some fields are
    // negative (tpgid without a terminal), so every field is kept as text until it is used.
    let values: Vec<&str> = rest.split_whitespace().collect();
    let mut ticks = 0;
    for field in fields {
        let text = values.get(field + 1 - 3).copied().unwrap_or_default();
        ticks += text
            .parse::<u64>()
            .with_context(|| format!("field {} of /proc/self/stat is `{text}`", field + 1))?;
    }
    Ok(Duration::from_millis(ticks * 10))
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
