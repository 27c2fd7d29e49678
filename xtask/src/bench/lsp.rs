//! `cargo xtask bench lsp`: rust-analyzer on this workspace itself. Measures, in one run, the
//! time from the first call to its answer (spawn, initialise, index) and, per request after
//! that, the whole call through dispatch against the time the server took to answer; the
//! difference is what our layer adds (target: under 2 ms at the median).

use std::path::Path;
use std::time::{Duration, Instant};

use agent_tools::RunBuilder;
use agent_tools::tools_core::{ApprovalPolicy, Dispatcher, DispatcherOptions, ToolCall, Workspace};
use agent_tools::tools_lsp::{LspConfig, LspSupervisor};
use anyhow::{Context, bail};
use serde_json::{Value, json};

/// How many symbols the timed requests are spread over, and how often each is asked.
const SYMBOLS: usize = 20;
const ROUNDS: usize = 4;
const TARGET: Duration = Duration::from_millis(2);

pub(crate) fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(lsp())
}

/// One (file, line, symbol) to ask about: a public function's name where it is declared.
struct Target {
    file: String,
    line: usize,
    symbol: String,
}

async fn lsp() -> anyhow::Result<()> {
    let root = crate::project_root();
    let targets = targets(&root)?;
    let workspace = Workspace::new(&root)?;
    let supervisor = LspSupervisor::new(workspace.root(), LspConfig::default())?;
    let registry = RunBuilder::new(workspace)
        .bind::<agent_tools::tools_lsp::LspFamily>(supervisor.clone())
        .registry();
    let dispatcher = Dispatcher::new(
        registry,
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    );
    let call = |arguments: Value| {
        dispatcher.dispatch(ToolCall {
            name: "lsp".into(),
            arguments,
        })
    };

    println!("rust-analyzer on this workspace ({})", root.display());
    let first = &targets[0];
    let started = Instant::now();
    let answer = call(json!({"operation": "hover", "path": first.file, "line": first.line, "symbol": first.symbol})).await;
    let first_answer = started.elapsed();
    if answer.is_error {
        bail!("the first call failed: {}", answer.text);
    }
    println!(
        "  first call to first answer: {:.2} s (hover on `{}` in {})",
        first_answer.as_secs_f64(),
        first.symbol,
        first.file
    );

    let mut server = Vec::new();
    let mut whole = Vec::new();
    let mut overhead = Vec::new();
    let mut failures = 0;
    for _ in 0..ROUNDS {
        for target in &targets {
            for operation in ["hover", "definition", "references"] {
                let before = supervisor.server_time();
                let started = Instant::now();
                let answer = call(json!({"operation": operation, "path": target.file, "line": target.line, "symbol": target.symbol})).await;
                let elapsed = started.elapsed();
                let server_time = supervisor.server_time().saturating_sub(before);
                if answer.is_error {
                    failures += 1;
                    continue;
                }
                server.push(server_time);
                whole.push(elapsed);
                overhead.push(elapsed.saturating_sub(server_time));
            }
        }
    }
    if overhead.is_empty() {
        bail!("every timed request failed");
    }
    println!(
        "  {} requests (hover, definition, references on {} symbols, {} rounds; {failures} failed):",
        overhead.len(),
        targets.len(),
        ROUNDS
    );
    print_row("server time", &mut server);
    print_row("whole call", &mut whole);
    let median = print_row("our overhead", &mut overhead);
    println!(
        "  target: under {} ms median overhead — {}",
        TARGET.as_millis(),
        if median < TARGET { "met" } else { "NOT met" }
    );
    Ok(())
}

/// Prints median, p90 and max; returns the median.
pub(crate) fn print_row(label: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let at = |fraction: f64| {
        let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
        samples[index]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = at(0.5);
    println!(
        "    {label:<13} median {:>7.3} ms   p90 {:>7.3} ms   max {:>8.3} ms",
        ms(median),
        ms(at(0.9)),
        ms(at(1.0))
    );
    median
}

/// Public functions of the workspace's crates, one per file, spread across files.
fn targets(root: &Path) -> anyhow::Result<Vec<Target>> {
    let mut files = Vec::new();
    for crate_dir in std::fs::read_dir(root.join("crates"))? {
        let src = crate_dir?.path().join("src");
        collect_rust_files(&src, &mut files);
    }
    files.sort();
    let mut targets = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let found = text.lines().enumerate().find_map(|(index, line)| {
            let rest = line.trim_start().strip_prefix("pub fn ")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some((index + 1, name))
        });
        if let Some((line, symbol)) = found {
            let relative = file.strip_prefix(root).unwrap_or(&file);
            targets.push(Target {
                file: relative.display().to_string(),
                line,
                symbol,
            });
        }
        if targets.len() == SYMBOLS {
            break;
        }
    }
    if targets.is_empty() {
        bail!("found no public functions to ask about under crates/*/src");
    }
    Ok(targets)
}

fn collect_rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
