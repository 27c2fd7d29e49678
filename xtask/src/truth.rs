//! `cargo xtask truth`: the differential test of diagnostics on write (SPEC section 11).
//!
//! Real projects at pinned versions from their registries (a crate, a typed PyPI package
//! with stubs, an npm package with TypeScript sources, a PyPI package's C extension with a
//! compilation database) are edited through `agent-tools serve` with `edit`, as an agent
//! edits them. Before the first write and after each one, the project's own checker runs on
//! the whole tree (`cargo check --all-targets`, the basedpyright CLI, `tsc --noEmit`, `clang
//! -fsyntax-only` per compilation-database entry). The write's report must say, file by file,
//! exactly as many new errors as the checker's readings show — the plain before/after
//! difference, less what the run's baseline already had and what an earlier write reported
//! and only hid — and must give every written file a state. The table shows both numbers
//! and the write's latency; any difference fails the run.
//!
//! `--binary PATH` measures another build of `agent-tools` (an older commit's, for a
//! before/after comparison); `--only NAME` runs one project.

mod oracle;
pub(crate) mod projects;
mod serve;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use self::oracle::{Ledger, difference};
use self::projects::{Project, sh};
use self::serve::Serve;

/// How long a write may wait for its servers: long enough for a cold server on a small CI
/// machine, so a slow start is a slow row, not a wrong one.
const ON_WRITE_TIMEOUT_SECONDS: u32 = 180;

struct Options {
    binary: Option<PathBuf>,
    only: Option<String>,
}

/// One row of the counts table.
struct Row {
    project: &'static str,
    step: usize,
    label: &'static str,
    file: String,
    delta: usize,
    expected: usize,
    reported: Option<usize>,
}

/// One write's latency.
struct Timing {
    server: &'static str,
    seconds: f64,
}

pub(crate) fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut options = Options {
        binary: None,
        only: None,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--binary" => {
                options.binary = Some(PathBuf::from(
                    rest.next()
                        .context("--binary needs the path of an agent-tools binary")?,
                ));
            }
            "--only" => {
                options.only = Some(
                    rest.next()
                        .context("--only needs a project name")?
                        .to_string(),
                );
            }
            other => bail!(
                "unknown argument `{other}`: cargo xtask truth [--binary PATH] [--only semver|more-itertools|zod|ujson]"
            ),
        }
    }
    let repo = crate::project_root();
    let binary = match &options.binary {
        Some(binary) => binary
            .canonicalize()
            .with_context(|| format!("{} does not exist", binary.display()))?,
        None => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            sh(Command::new(cargo)
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "agent-tools",
                    "--bin",
                    "agent-tools",
                ])
                .current_dir(&repo))?;
            repo.join("target/debug/agent-tools")
        }
    };
    let base = repo.join("target/truth");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut rows = Vec::new();
    let mut timings = Vec::new();
    let mut problems = Vec::new();
    for project in projects::all(&repo) {
        if options
            .only
            .as_deref()
            .is_some_and(|only| only != project.name)
        {
            continue;
        }
        let outcome = runtime.block_on(run_project(&repo, &binary, &base, &project));
        match outcome {
            Ok((mut project_rows, mut project_timings, mut project_problems)) => {
                rows.append(&mut project_rows);
                timings.append(&mut project_timings);
                problems.append(&mut project_problems);
            }
            Err(error) => problems.push(format!("{}: {error:#}", project.name)),
        }
    }
    print_counts(&rows);
    print_timings(&timings);
    let wrong = rows
        .iter()
        .filter(|row| row.reported != Some(row.expected))
        .count();
    if wrong > 0 {
        problems.push(format!(
            "{wrong} of {} file counts differ from the checker's",
            rows.len()
        ));
    }
    if problems.is_empty() {
        println!("\nevery report equals the checker's difference");
        return Ok(());
    }
    for problem in &problems {
        eprintln!("problem: {problem}");
    }
    bail!("the write reports do not tell the checkers' truth")
}

async fn run_project(
    repo: &Path,
    binary: &Path,
    base: &Path,
    project: &Project,
) -> anyhow::Result<(Vec<Row>, Vec<Timing>, Vec<String>)> {
    println!(
        "== {} ({}, checked by {})",
        project.name,
        project.server,
        project.checker.shown()
    );
    let root = project.prepare(repo, &base.join("sources"), &base.join("work"))?;
    let config = base.join("work").join(format!("{}.toml", project.name));
    std::fs::write(&config, config_text(repo, &root))?;
    let started = Instant::now();
    let mut before = project.checker.run(repo, &root)?;
    println!(
        "   baseline: {} errors in {} files ({:.1}s)",
        before
            .values()
            .flat_map(|keys| keys.values())
            .sum::<usize>(),
        before.len(),
        started.elapsed().as_secs_f64()
    );
    let mut ledger = Ledger::new(&before);
    let serve = Serve::start(binary, &root, &config).await?;
    // An agent looks before it edits: the first look starts the server.
    let look = serve
        .call(
            "lsp",
            json!({"operation": "diagnostics", "path": project.first_look}),
        )
        .await?;
    if look.is_error {
        bail!(
            "the first look at {} failed: {}",
            project.first_look,
            look.text
        );
    }
    let mut rows = Vec::new();
    let mut timings = Vec::new();
    let mut problems = Vec::new();
    for (index, step) in project.steps.iter().enumerate() {
        let started = Instant::now();
        let answer = serve
            .call(
                "edit",
                json!({"path": step.file, "old_string": step.old, "new_string": step.new}),
            )
            .await?;
        let seconds = started.elapsed().as_secs_f64();
        if answer.is_error {
            bail!(
                "step {} ({}) failed: {}",
                index + 1,
                step.label,
                answer.text
            );
        }
        timings.push(Timing {
            server: project.server,
            seconds,
        });
        let after = project.checker.run(repo, &root)?;
        let delta = difference(&before, &after);
        let expected = ledger.write(&after);
        let report = &answer.structured["diagnostics"];
        let reported = reported_counts(report);
        if let Some(problem) = written_state(report, step.file) {
            problems.push(format!(
                "{} step {} ({}): {problem}\n{}",
                project.name,
                index + 1,
                step.label,
                answer.text
            ));
        }
        let files: BTreeSet<&String> = delta
            .keys()
            .chain(expected.keys())
            .chain(reported.keys())
            .collect();
        if files.is_empty() {
            rows.push(Row {
                project: project.name,
                step: index + 1,
                label: step.label,
                file: "(no file)".into(),
                delta: 0,
                expected: 0,
                reported: Some(0),
            });
        }
        for file in files {
            rows.push(Row {
                project: project.name,
                step: index + 1,
                label: step.label,
                file: file.clone(),
                delta: delta.get(file).copied().unwrap_or(0),
                expected: expected.get(file).copied().unwrap_or(0),
                reported: Some(reported.get(file).copied().unwrap_or(0)),
            });
        }
        let wrong = rows
            .iter()
            .filter(|row| row.step == index + 1 && row.project == project.name)
            .any(|row| row.reported != Some(row.expected));
        if wrong || std::env::var("TRUTH_SHOW").is_ok_and(|v| v == "1") {
            println!(
                "   step {} ({}) answered:\n{}",
                index + 1,
                step.label,
                indent(&answer.text)
            );
        }
        println!("   step {}: {} ({seconds:.2}s)", index + 1, step.label);
        before = after;
    }
    serve.stop().await;
    Ok((rows, timings, problems))
}

/// The suite's config: the servers the README's test command installed, a target folder of
/// the project's own, and a generous wait.
fn config_text(repo: &Path, root: &Path) -> String {
    format!(
        "[lsp]\npath = [{:?}, {:?}]\n\n[lsp.servers.rust-analyzer.env]\nCARGO_TARGET_DIR = {:?}\n\n[lsp.on_write]\ntimeout_seconds = {ON_WRITE_TIMEOUT_SECONDS}\n",
        repo.join(".venv/bin").display().to_string(),
        repo.join(".tools/node/node_modules/.bin")
            .display()
            .to_string(),
        root.join("target").display().to_string(),
    )
}

/// New errors per file as the write's report counts them: in the written files and in the
/// files it did not touch.
fn reported_counts(report: &Value) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for list in ["files", "fallout"] {
        for file in report[list].as_array().into_iter().flatten() {
            let (Some(path), Some(introduced)) =
                (file["path"].as_str(), file["introduced"].as_u64())
            else {
                continue;
            };
            if introduced > 0 {
                *counts.entry(path.to_owned()).or_default() += introduced as usize;
            }
        }
    }
    counts
}

/// Why the written file's state is missing or not a checked one, if it is.
fn written_state(report: &Value, file: &str) -> Option<String> {
    let entry = report["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["path"] == file);
    match entry {
        None => Some(format!(
            "the written file {file} has no state in the report"
        )),
        Some(entry) if entry["state"] != "checked" => Some(format!(
            "the written file {file} was not checked: {}",
            entry["reason"].as_str().unwrap_or("no reason")
        )),
        Some(_) => None,
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("      | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn print_counts(rows: &[Row]) {
    println!(
        "\nnew errors per file: the checker's plain difference, what the report must say (the run's baseline and hidden errors taken out), and what it said"
    );
    println!(
        "{:<15} {:>4}  {:<58} {:<42} {:>5} {:>8} {:>8}",
        "project", "step", "edit", "file", "diff", "expected", "report"
    );
    for row in rows {
        let reported = row
            .reported
            .map_or_else(|| "-".to_owned(), |count| count.to_string());
        let mark = match row.reported == Some(row.expected) {
            true => "",
            false => "  <- differs",
        };
        println!(
            "{:<15} {:>4}  {:<58} {:<42} {:>5} {:>8} {:>8}{mark}",
            row.project,
            row.step,
            truncate(row.label, 58),
            truncate(&row.file, 42),
            row.delta,
            row.expected,
            reported
        );
    }
}

fn print_timings(timings: &[Timing]) {
    println!("\nwrite latency (the `edit` call, report included)");
    println!(
        "{:<28} {:>6} {:>9} {:>9}",
        "server", "writes", "median s", "p90 s"
    );
    let servers: BTreeSet<&str> = timings.iter().map(|t| t.server).collect();
    for server in servers {
        let mut seconds: Vec<f64> = timings
            .iter()
            .filter(|t| t.server == server)
            .map(|t| t.seconds)
            .collect();
        seconds.sort_by(f64::total_cmp);
        println!(
            "{server:<28} {:>6} {:>9.2} {:>9.2}",
            seconds.len(),
            percentile(&seconds, 0.5),
            percentile(&seconds, 0.9)
        );
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((fraction * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn truncate(text: &str, width: usize) -> String {
    match text.chars().count() > width {
        true => format!("{}…", text.chars().take(width - 1).collect::<String>()),
        false => text.to_owned(),
    }
}
