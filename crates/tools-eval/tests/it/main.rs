//! tools-eval on its own, over tools-core's dispatcher with no umbrella: a cell's `tool()`
//! reaches a tool registered beside `eval` through the bridge (CORE-8), and the run's shutdown
//! stops every kernel (`Run::on_shutdown("kernels", …)`). Needs `python3` (and `node`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use tools_core::{
    ApprovalPolicy, Dispatcher, DispatcherOptions, RegistryBuilder, Run, ToolCall, ToolResult,
    Workspace,
};
use tools_eval::EvalOptions;

fn dispatcher(root: &std::path::Path) -> Dispatcher {
    let mut builder = RegistryBuilder::new(Run::new(Workspace::new(root).unwrap()));
    builder.register(tools_test_support::Hello);
    tools_eval::register(&mut builder, EvalOptions::default());
    Dispatcher::new(
        builder.build(),
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    )
}

async fn eval(dispatcher: &Dispatcher, language: &str, code: &str) -> ToolResult {
    dispatcher
        .dispatch(ToolCall {
            name: "eval".into(),
            arguments: json!({"code": code, "language": language,
                "description": "a cell of the crate's own tests"}),
        })
        .await
}

fn available(program: &str) -> bool {
    tools_test_support::program_available(program, &format!("apt-get install {program}"))
}

#[tokio::test]
async fn eval_6_tool_reaches_a_sibling_tool_through_the_bridge_in_both_languages() {
    if !available("python3") || !available("node") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dispatcher = dispatcher(dir.path());
    let python = eval(
        &dispatcher,
        "python",
        "r = tool('hello', {'name': 'cell'})\n(str(r), r.structured)",
    )
    .await;
    assert!(!python.is_error, "{}", python.text);
    assert!(
        python
            .text
            .ends_with("('hello, cell', {'greeting': 'hello, cell'})"),
        "{}",
        python.text
    );
    let refused = eval(
        &dispatcher,
        "python",
        "try:\n    tool('hello', {'name': ''})\nexcept ToolError as e:\n    print('error:', e)",
    )
    .await;
    assert_eq!(refused.text, "error: say who to greet");
    let javascript = eval(
        &dispatcher,
        "javascript",
        "const r = await tool('hello', {name: 'js'}); [String(r), r.structured.greeting]",
    )
    .await;
    assert!(!javascript.is_error, "{}", javascript.text);
    assert!(
        javascript.text.ends_with("[ 'hello, js', 'hello, js' ]"),
        "{}",
        javascript.text
    );
    let missing = eval(
        &dispatcher,
        "javascript",
        "try { await tool('nope', {}) } catch (e) { console.log(e.name, e.message.split(':')[0]) }",
    )
    .await;
    assert_eq!(missing.text, "ToolError unknown tool `nope`");
    dispatcher.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_runs_shutdown_stops_every_kernel() {
    if !available("python3") || !available("node") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Each kernel reports its pid (on the host, the leader we spawned).
    let dispatcher = dispatcher(dir.path());
    let python = eval(&dispatcher, "python", "import os\nos.getpid()").await;
    let javascript = eval(&dispatcher, "javascript", "process.pid").await;
    let pids: Vec<u32> = [&python, &javascript]
        .iter()
        .map(|result| result.structured.as_ref().unwrap()["pid"].as_u64().unwrap() as u32)
        .collect();
    assert!(
        pids.iter()
            .all(|pid| tools_process::process_info(*pid).is_some())
    );
    let summary = dispatcher.shutdown(Duration::from_secs(5)).await;
    assert_eq!(summary.stopped, ["kernels"]);
    for pid in pids {
        let gone = tools_process::process_info(pid).is_none_or(|info| info.is_zombie());
        assert!(
            gone,
            "kernel {pid} outlived the run: {:?}",
            tools_process::process_info(pid)
        );
    }
}

// EVAL-7: a child of the Node kernel that writes to fd 1 writes to the protocol pipe, around
// the kernel's capture. Each of its lines is the cell's output, one that is JSON of a type the
// protocol does not have included; the cell still ends on the kernel's own `done`.
#[tokio::test]
async fn eval_7_what_a_node_child_writes_to_the_pipe_is_output() {
    if !available("node") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dispatcher = dispatcher(dir.path());
    // The first cell's result names the kernel it started.
    eval(&dispatcher, "javascript", "1").await;
    let child = eval(
        &dispatcher,
        "javascript",
        r#"require('child_process').execSync(
  `printf 'from a child\n{"type": "progress", "done": 1}\n'`,
  { stdio: ['ignore', 'inherit', 'inherit'] },
); console.log('after')"#,
    )
    .await;
    assert!(!child.is_error, "{}", child.text);
    assert_eq!(
        child.text,
        "from a child\n{\"type\": \"progress\", \"done\": 1}\nafter"
    );
    dispatcher.shutdown(Duration::from_secs(5)).await;
}
