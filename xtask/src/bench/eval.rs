//! `cargo xtask bench eval`: our pipe kernels against ipykernel driven by jupyter_client (both
//! in the project's `.venv`), in one run: kernel start to first result, and a trivial cell's
//! round trip (median of many), for Python; Node's start and round trip beside them. Targets:
//! at least 15× faster start and 20× faster round trip than ipykernel.

use std::process::Command;
use std::time::{Duration, Instant};

use agent_tools::RunBuilder;
use agent_tools::tools_core::{ApprovalPolicy, Dispatcher, DispatcherOptions, ToolCall, Workspace};
use agent_tools::tools_eval::EvalOptions;
use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::lsp::print_row;

const STARTS: usize = 5;
const ROUND_TRIPS: usize = 300;
const START_TARGET: f64 = 15.0;
const ROUND_TRIP_TARGET: f64 = 20.0;

/// ipykernel's side, run by the venv's Python: prints one JSON object of samples in seconds.
const IPYKERNEL: &str = r#"
import json, sys, time
from jupyter_client.manager import start_new_kernel

def run(client, code):
    msg_id = client.execute(code)
    while True:
        reply = client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply

starts, trips = [], []
for _ in range(int(sys.argv[1])):
    began = time.perf_counter()
    manager, client = start_new_kernel(kernel_name="python3")
    run(client, "1")
    starts.append(time.perf_counter() - began)
    if not trips:
        for _ in range(int(sys.argv[2])):
            began = time.perf_counter()
            run(client, "1")
            trips.append(time.perf_counter() - began)
    client.stop_channels()
    manager.shutdown_kernel(now=True)
print(json.dumps({"starts": starts, "trips": trips}))
"#;

pub(crate) fn run() -> anyhow::Result<()> {
    if let Some(outcome) = super::in_release("eval") {
        return outcome;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(eval())
}

/// A dispatcher with `eval` bound over a fresh temp workspace whose `.venv` is the project's.
fn dispatcher(root: &std::path::Path) -> anyhow::Result<Dispatcher> {
    let registry = RunBuilder::new(Workspace::new(root)?)
        .bind::<agent_tools::tools_eval::EvalFamily>(EvalOptions::default())
        .registry();
    Ok(Dispatcher::new(
        registry,
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    ))
}

async fn cell(dispatcher: &Dispatcher, language: &str, code: &str) -> anyhow::Result<()> {
    let result = dispatcher
        .dispatch(ToolCall {
            name: "eval".into(),
            arguments: json!({"code": code, "language": language,
                "description": "a trivial cell for the benchmark"}),
        })
        .await;
    if result.is_error {
        bail!("the {language} cell failed: {}", result.text);
    }
    Ok(())
}

/// Start-to-first-result samples and round-trip samples of our kernel for `language`.
async fn ours(language: &str) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let dir = tempfile::tempdir()?;
    let venv = crate::project_root().join(".venv");
    std::os::unix::fs::symlink(&venv, dir.path().join(".venv"))
        .context("cannot link the project's .venv into the benchmark workspace")?;
    let mut starts = Vec::new();
    let mut trips = Vec::new();
    for round in 0..STARTS {
        let dispatcher = dispatcher(dir.path())?;
        let began = Instant::now();
        cell(&dispatcher, language, "1").await?;
        starts.push(began.elapsed());
        if round == 0 {
            for _ in 0..ROUND_TRIPS {
                let began = Instant::now();
                cell(&dispatcher, language, "1").await?;
                trips.push(began.elapsed());
            }
        }
        dispatcher.shutdown(Duration::from_secs(5)).await;
    }
    Ok((starts, trips))
}

fn ipykernel() -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let python = crate::project_root().join(".venv/bin/python");
    let output = Command::new(&python)
        .args([
            "-c",
            IPYKERNEL,
            &STARTS.to_string(),
            &ROUND_TRIPS.to_string(),
        ])
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !output.status.success() {
        bail!(
            "ipykernel's benchmark failed (`.venv/bin/pip install ipykernel jupyter_client`, or \
             `cargo xtask ci`, installs it): {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let samples: Value = serde_json::from_slice(&output.stdout)?;
    let durations = |key: &str| -> Vec<Duration> {
        samples[key]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(Value::as_f64)
                    .map(Duration::from_secs_f64)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok((durations("starts"), durations("trips")))
}

async fn eval() -> anyhow::Result<()> {
    println!(
        "kernel start to first result ({STARTS} starts), trivial cell `1` ({ROUND_TRIPS} round trips)"
    );
    let (mut py_starts, mut py_trips) = ours("python").await?;
    let (mut js_starts, mut js_trips) = ours("javascript").await?;
    let (mut ipy_starts, mut ipy_trips) = ipykernel()?;
    println!("  eval python (pipe kernel, whole call through dispatch)");
    let py_start = print_row("start", &mut py_starts);
    let py_trip = print_row("round trip", &mut py_trips);
    println!("  ipykernel via jupyter_client");
    let ipy_start = print_row("start", &mut ipy_starts);
    let ipy_trip = print_row("round trip", &mut ipy_trips);
    println!("  eval javascript (node inspector)");
    print_row("start", &mut js_starts);
    print_row("round trip", &mut js_trips);
    let start_ratio = ipy_start.as_secs_f64() / py_start.as_secs_f64();
    let trip_ratio = ipy_trip.as_secs_f64() / py_trip.as_secs_f64();
    println!(
        "  python vs ipykernel: start {start_ratio:.1}× faster (target {START_TARGET}×), \
         round trip {trip_ratio:.1}× faster (target {ROUND_TRIP_TARGET}×)"
    );
    if start_ratio < START_TARGET || trip_ratio < ROUND_TRIP_TARGET {
        bail!("below target");
    }
    Ok(())
}
