//! `debug` through `agent-tools serve`, driven by an MCP client, against the real adapters
//! (debugpy in the test venv, lldb-dap from Debian's lldb-19, delve; installed by `cargo
//! xtask ci`). Each scenario is one transcript snapshot (`snapshots/`, named after its
//! test): every call, and what the model reads back, in text and structure. After every test
//! the process table is searched for anything the server started: no adapter or debuggee
//! may outlive a session, its TTL, or the server.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolResult, TaskPayload};
use serde_json::{Value, json};

use crate::support::{Client, Server, is_error, text, until_processes};
use tools_test_support::{Transcript, repo_root, require, snapshot_settings, write_files};

/// Whether the test venv has debugpy (said loudly when not; fails under `CI=true`).
fn debugpy_available() -> bool {
    let installed = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .args(["-c", "import debugpy"])
        .output()
        .is_ok_and(|out| out.status.success());
    require("debugpy", installed, ".venv/bin/pip install debugpy")
}

/// Whether lldb-dap and gcc, which builds the C program, are here (said loudly when not;
/// fails under `CI=true`).
fn lldb_available() -> bool {
    let installed = which("lldb-dap-19") || which("lldb-dap");
    require(
        "lldb-dap",
        installed && which("gcc"),
        "apt-get install lldb-19 gcc",
    )
}

/// Whether delve and go, which builds the Go program, are here (said loudly when not; fails
/// under `CI=true`).
fn delve_available() -> bool {
    require(
        "delve",
        which("dlv") && which("go"),
        "apt-get install delve golang-go",
    )
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

const APP: &str = r#"import subprocess, sys


def helper(n):
    total = n * 2
    return total


def main():
    items = list(range(120))
    text = "y" * 2000
    count = 3
    print("hello from app", subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
    value = helper(count)
    print("value", value)
    sys.exit(7)


main()
"#;

/// A Python project using the test venv as its own `.venv` (DBG-7), with `extra` config.
fn python_project(extra: &str) -> tempfile::TempDir {
    tools_test_support::python_project(&[("app.py", APP), ("agent-tools.toml", extra)])
}

async fn start(root: &Path) -> Server {
    Server::start(
        root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await
}

/// Calls `debug` with `arguments`, records the answer in `t`, and returns its text and its
/// structured content: for the handles a later call passes back (a frame id, a reference),
/// and for what a snapshot cannot hold (a configured timeout, which the duration filter
/// hides).
async fn call(t: &mut Transcript, server: &Server, arguments: Value) -> (String, Value) {
    let result = server.call("debug", arguments.clone()).await;
    let structured = t.record_mcp("debug", &arguments, &result);
    (text(&result), structured)
}

/// Sets a breakpoint at `path`:`line` and launches `program` to it, for a test about
/// processes rather than answers (the end-to-end snapshots show these answers).
async fn launch_to_a_breakpoint(server: &Server, path: &str, line: u32, program: &str) {
    let set = json!({"operation": "breakpoints", "path": path, "lines": [line]});
    let result = server.call("debug", set.clone()).await;
    assert!(!is_error(&result), "{set} failed: {}", text(&result));
    let launch = json!({"operation": "launch", "program": program});
    let result = server.call("debug", launch).await;
    let stopped = result.structured_content.clone().unwrap_or(Value::Null);
    assert_eq!(
        stopped["stopped"]["reason"],
        "breakpoint",
        "{}",
        text(&result)
    );
}

/// The reference a `variables`/`scopes` line gives for `name`.
fn reference_of(listing: &str, name: &str) -> i64 {
    listing
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .and_then(|l| l.rsplit("reference ").next())
        .and_then(|r| r.trim_end_matches([')', ']']).parse().ok())
        .unwrap_or_else(|| panic!("no reference for {name}: {listing}"))
}

/// What varies in every debug transcript: the handles an adapter numbers as it goes (frame
/// ids and variable references), which a model only passes back. No `\b` before the words:
/// in the structured `answer` a line starts after a JSON `\n`.
const HANDLES: &[(&str, &str)] = &[
    (r"frame \d+", "frame [FRAME]"),
    (r#"("frame_id": ?)\d+"#, "${1}[FRAME]"),
    (r"reference \d+", "reference [REF]"),
    (r#"("reference": ?)\d+"#, "${1}[REF]"),
];

/// Snapshots the transcript `t` as `name`, with [`HANDLES`] and this test's own `extra`
/// filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let filters: Vec<(&str, &str)> = HANDLES.iter().chain(extra).copied().collect();
    let transcript = t.finish_with(&filters);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

/// Only the server itself is left among the processes it started.
async fn only_the_server_left(server: &Server) {
    let pid = server.pid.to_string();
    let left = until_processes(&server.mark, |found| {
        found
            .iter()
            .all(|p| p.split(' ').next() == Some(pid.as_str()))
    })
    .await;
    let others: Vec<&String> = left
        .iter()
        .filter(|p| p.split(' ').next() != Some(pid.as_str()))
        .collect();
    assert!(others.is_empty(), "left behind: {others:?}");
}

async fn nothing_left(server: Server) {
    let mark = server.mark.clone();
    server.service.cancel().await.unwrap();
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after serve ended: {left:?}");
}

#[tokio::test]
async fn dbg_5_debugpy_end_to_end() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    // Before a session, breakpoints wait for the launch.
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    // The adapter is inferred from the program, the breakpoint is verified, and the stop is a
    // place like every tool's (path, line, the line's text) with its source and locals. A
    // child process runs free (it is not debugged) and its output is the program's.
    let stop = t
        .call(
            &server,
            "debug",
            json!({"operation": "launch", "program": "app.py"}),
        )
        .await;
    let frame = stop["stopped"]["frame_id"].clone();
    // DBG-4: one session per conversation.
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "stack"}))
        .await;
    let (scopes, _) = call(
        &mut t,
        &server,
        json!({"operation": "scopes", "frame_id": frame}),
    )
    .await;
    // A long string is cut at 400 characters, with a note.
    let (variables, _) = call(
        &mut t,
        &server,
        json!({"operation": "variables", "reference": reference_of(&scopes, "Locals")}),
    )
    .await;
    // 120 children are capped at 50, with a note.
    t.call(
        &server,
        "debug",
        json!({"operation": "variables", "reference": reference_of(&variables, "items")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "count + 1", "frame_id": frame}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "step_in"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_over"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_out"}))
        .await;
    t.call(&server, "debug", json!({"operation": "threads"}))
        .await;
    t.call(&server, "debug", json!({"operation": "continue"}))
        .await;
    t.call(&server, "debug", json!({"operation": "status"}))
        .await;
    // DBG-5: what the program printed stays readable after it exited, all of it (the
    // `continue` above showed only its last lines), until the next launch.
    t.call(&server, "debug", json!({"operation": "output"}))
        .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    assert_transcript("dbg_5_debugpy_end_to_end", t, &[]);
}

#[tokio::test]
async fn dbg_4_terminate_ends_everything_and_a_new_session_may_start() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    // Breakpoints set during a session reach the adapter at once. `file`, the argument's old
    // name, still names the file.
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "file": "app.py", "lines": [16, 14]}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "continue"}))
        .await;
    t.call(&server, "debug", json!({"operation": "status"}))
        .await;
    t.call(&server, "debug", json!({"operation": "terminate"}))
        .await;
    only_the_server_left(&server).await;
    t.note("the adapter and the program are gone from the process table");
    t.call(&server, "debug", json!({"operation": "stack"}))
        .await;
    // Clearing the file's breakpoints lets the program run to its end.
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": []}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_4_terminate_ends_everything_and_a_new_session_may_start",
        t,
        &[],
    );
}

#[tokio::test]
async fn dbg_4_a_session_past_its_ttl_is_killed_and_the_next_call_says_so() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("[debug]\nsession_ttl_seconds = 2\n");
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    only_the_server_left(&server).await;
    t.note("the TTL passes: the adapter and the program are gone from the process table");
    let (expired, _) = call(&mut t, &server, json!({"operation": "continue"})).await;
    // The TTL the config sets, which the snapshot shows as a duration.
    assert!(expired.contains("time limit of 2 s"), "{expired}");
    t.call(&server, "debug", json!({"operation": "status"}))
        .await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_4_a_session_past_its_ttl_is_killed_and_the_next_call_says_so",
        t,
        &[],
    );
}

#[tokio::test]
async fn dbg_2_adapters_say_which_marker_and_binary_are_missing() {
    // The report names every adapter, so the snapshot needs all of them here.
    if !debugpy_available() || !lldb_available() || !delve_available() {
        return;
    }
    let dir = python_project("");
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    t.call(&server, "debug", json!({"operation": "adapters"}))
        .await;
    // DBG-2: without the marker, launch is refused with the reason.
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py", "adapter": "delve"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "launch"}))
        .await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_2_adapters_say_which_marker_and_binary_are_missing",
        t,
        ADAPTER_VERSIONS,
    );
}

/// What an adapters report says that is this machine's: the folder of each binary found on
/// `PATH` (one in the workspace shows as `[ROOT]`), and each adapter's version.
const ADAPTER_VERSIONS: &[(&str, &str)] = &[
    (r"binary /\S*/([^/\s]+) ", "binary [DIR]/$1 "),
    (r#"("path": )"/[^"]*/([^/"]+)""#, r#"$1"[DIR]/$2""#),
    (r"debugpy \d+\.\d+\.\d+", "debugpy [VERSION]"),
    (r"lldb-dap-\d+", "lldb-dap-[N]"),
    (
        r"version \d+ \(from its name\)",
        "version [N] (from its name)",
    ),
    (r"Version: \d+\.\d+\.\d+", "Version: [VERSION]"),
];

#[tokio::test]
async fn core_4_debug_is_absent_on_the_plan_surface() {
    let dir = python_project("");
    let server = Server::start(
        dir.path(),
        &["--surface", "plan"],
        Client::without_elicitation(),
    )
    .await;
    // The tool list, not an answer: `debug` is not among the names.
    let names = server.tool_names().await;
    assert!(!names.contains(&"debug".to_owned()), "{names:?}");
    let mut t = Transcript::new(dir.path());
    t.call(&server, "debug", json!({"operation": "adapters"}))
        .await;
    nothing_left(server).await;
    assert_transcript("core_4_debug_is_absent_on_the_plan_surface", t, &[]);
}

const LOOP: &str = r#"import time


def tick(i):
    return i + 1


i = 0
while i < 100000:
    i = tick(i)
    time.sleep(0.01)
"#;

#[tokio::test]
async fn dbg_5_attach_by_port_to_a_listening_debugpy() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    write_files(dir.path(), &[("loop.py", LOOP)]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut debuggee = tokio::process::Command::new(dir.path().join(".venv/bin/python"))
        .args([
            "-m",
            "debugpy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--wait-for-client",
            "loop.py",
        ])
        .current_dir(dir.path())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .unwrap();
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "loop.py", "lines": [5]}),
    )
    .await;
    // The listener may take a moment to open its port: the attempts before it did are not
    // the scenario's, only the one that attached.
    let attach = json!({"operation": "attach", "port": port});
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let attached = loop {
        let result = server.call("debug", attach.clone()).await;
        if !is_error(&result) || std::time::Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    t.record_mcp("debug", &attach, &attached);
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "i * 10"}),
    )
    .await;
    // The program was not started by us: terminate detaches and it runs on.
    t.call(&server, "debug", json!({"operation": "terminate"}))
        .await;
    nothing_left(server).await;
    let pgid = rustix::process::Pid::from_raw(debuggee.id().unwrap() as i32).unwrap();
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    let _ = debuggee.wait().await;
    // The port is the one this run found free.
    let port = format!(r"\b{port}\b");
    assert_transcript(
        "dbg_5_attach_by_port_to_a_listening_debugpy",
        t,
        &[(port.as_str(), "[PORT]")],
    );
}

#[tokio::test]
async fn dbg_4_no_adapter_or_debuggee_outlives_a_killed_serve() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    // A debuggee with a child in a session of its own (issue 22).
    write_files(
        dir.path(),
        &[(
            "daemon.py",
            "import subprocess\nsubprocess.Popen(['sleep', '306'], start_new_session=True)\nx = 1\nprint(x)\n",
        )],
    );
    let server = start(dir.path()).await;
    launch_to_a_breakpoint(&server, "daemon.py", 4, "daemon.py").await;
    let running = until_processes(&server.mark, |found| {
        found.iter().any(|p| p.ends_with("sleep 306"))
    })
    .await;
    assert!(
        running.iter().any(|p| p.ends_with("sleep 306")),
        "{running:?}"
    );
    crate::lifecycle::sigkill_and_expect_nothing_left(&server, "a debuggee and its child").await;
}

const C_PROGRAM: &str = r#"#include <stdio.h>
#include <string.h>

struct point {
    int x;
    int y;
};

static int twice(int n) {
    int result = n * 2;
    return result;
}

int main(void) {
    int items[120];
    for (int i = 0; i < 120; i++) items[i] = i;
    char text[2001];
    memset(text, 'y', 2000);
    text[2000] = '\0';
    struct point p = {3, 4};
    printf("hello from c\n");
    fflush(stdout);
    int value = twice(p.x);
    printf("value %d\n", value);
    return 7;
}
"#;

/// Builds `main.c` into `app` in `root`, with debug information.
fn build_c(root: &Path) {
    write_files(
        root,
        &[
            ("CMakeLists.txt", "project(app C)\n"),
            ("main.c", C_PROGRAM),
        ],
    );
    let built = std::process::Command::new("gcc")
        .args(["-g", "-O0", "-o", "app", "main.c"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(built.success());
}

#[tokio::test]
async fn dbg_5_lldb_end_to_end_with_a_c_program() {
    if !lldb_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    build_c(root);
    let server = start(root).await;
    let mut t = Transcript::new(root);
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "main.c", "lines": [23]}),
    )
    .await;
    let stop = t
        .call(
            &server,
            "debug",
            json!({"operation": "launch", "program": "app"}),
        )
        .await;
    let frame = stop["stopped"]["frame_id"].clone();
    // DBG-4: one session per conversation.
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "stack"}))
        .await;
    let (scopes, _) = call(
        &mut t,
        &server,
        json!({"operation": "scopes", "frame_id": frame}),
    )
    .await;
    let (variables, _) = call(
        &mut t,
        &server,
        json!({"operation": "variables", "reference": reference_of(&scopes, "Locals")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "variables", "reference": reference_of(&variables, "p")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "variables", "reference": reference_of(&variables, "items")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "p.x + 1", "frame_id": frame}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "step_in"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_over"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_out"}))
        .await;
    t.call(&server, "debug", json!({"operation": "continue"}))
        .await;
    only_the_server_left(&server).await;
    t.note("the adapter and the program are gone from the process table");
    // Terminate in the middle of a second session leaves nothing behind either.
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "output"}))
        .await;
    t.call(&server, "debug", json!({"operation": "terminate"}))
        .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    assert_transcript("dbg_5_lldb_end_to_end_with_a_c_program", t, LLDB);
}

/// What varies in an lldb transcript: its thread ids are the program's kernel thread ids,
/// the addresses of arrays and structs are the stack's on this kernel, the frames below
/// `main` are the C library's, at its lines in this distribution's build, and `value` is read
/// at the breakpoint before line 23 assigns it: whatever the stack held there.
const LLDB: &[(&str, &str)] = &[
    (r"thread \d+", "thread [TID]"),
    (
        r"p = point @ 0x[0-9a-f]+, value = -?\d+",
        "p = point @ 0x[ADDR], value = [UNSET]",
    ),
    (r#"("thread_id": ?)\d+"#, "${1}[TID]"),
    (r"0x[0-9a-f]+", "0x[ADDR]"),
    (
        r"(__libc_start_call_main|__libc_start_main_impl) at [^\s\\]+:\d+",
        "$1 at [LIBC SOURCE]",
    ),
];

#[tokio::test]
async fn dbg_4_no_lldb_or_c_program_outlives_a_killed_serve() {
    if !lldb_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    build_c(root);
    let server = start(root).await;
    launch_to_a_breakpoint(&server, "main.c", 23, "app").await;
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(
        left.is_empty(),
        "left behind after SIGKILL of serve: {left:?}"
    );
}

const GO_PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"strings"
)

type point struct {
	X int
	Y int
}

func twice(n int) int {
	result := n * 2
	return result
}

func main() {
	items := make([]int, 120)
	for i := range items {
		items[i] = i
	}
	text := strings.Repeat("y", 2000)
	p := point{X: 3, Y: 4}
	fmt.Println("hello from go", len(text))
	value := twice(p.X)
	fmt.Println("value", value)
	os.Exit(7)
}
"#;

/// A Go module with `main.go`, and timeouts long enough for a cold Go build.
fn go_module(main: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("go.mod", "module example.com/app\n\ngo 1.19\n"),
            ("main.go", main),
            (
                "agent-tools.toml",
                "[debug]\nstart_timeout_seconds = 180\nstop_timeout_seconds = 180\n",
            ),
        ],
    );
    dir
}

#[tokio::test]
async fn dbg_5_delve_end_to_end_with_a_go_package() {
    if !delve_available() {
        return;
    }
    let dir = go_module(GO_PROGRAM);
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    t.call(
        &server,
        "debug",
        json!({"operation": "breakpoints", "path": "main.go", "lines": [27]}),
    )
    .await;
    let stop = t
        .call(
            &server,
            "debug",
            json!({"operation": "launch", "program": "."}),
        )
        .await;
    let frame = stop["stopped"]["frame_id"].clone();
    t.call(&server, "debug", json!({"operation": "stack"}))
        .await;
    let (scopes, _) = call(
        &mut t,
        &server,
        json!({"operation": "scopes", "frame_id": frame}),
    )
    .await;
    let (variables, _) = call(
        &mut t,
        &server,
        json!({"operation": "variables", "reference": reference_of(&scopes, "Locals")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "variables", "reference": reference_of(&variables, "p")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "variables", "reference": reference_of(&variables, "items")}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "p.X + 1", "frame_id": frame}),
    )
    .await;
    t.call(
        &server,
        "debug",
        json!({"operation": "evaluate", "expression": "text", "frame_id": frame}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "step_in"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_over"}))
        .await;
    t.call(&server, "debug", json!({"operation": "step_out"}))
        .await;
    t.call(&server, "debug", json!({"operation": "continue"}))
        .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    // The Go runtime's frames below `main.main`, at their lines in this Go's sources.
    assert_transcript(
        "dbg_5_delve_end_to_end_with_a_go_package",
        t,
        &[(
            r"(runtime\.\w+) at /[^\s\\]*/src/runtime/(\w+\.\w+):\d+",
            "$1 at [GOROOT]/src/runtime/$2:[N]",
        )],
    );
}

#[tokio::test]
async fn dbg_5_a_go_file_that_does_not_build_says_what_the_compiler_said() {
    if !delve_available() {
        return;
    }
    let dir = go_module(
        "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(average([]int{1, 2}))\n}\n",
    );
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    // A `.go` file is built by delve, as a package folder is; its build error is the reason.
    for program in ["main.go", "."] {
        t.call(
            &server,
            "debug",
            json!({"operation": "launch", "program": program}),
        )
        .await;
    }
    nothing_left(server).await;
    // Newer delves name the binary they build with a number of their own.
    assert_transcript(
        "dbg_5_a_go_file_that_does_not_build_says_what_the_compiler_said",
        t,
        &[(r"__debug_bin\d+", "__debug_bin[N]")],
    );
}

#[tokio::test]
async fn dbg_4_no_delve_or_go_program_outlives_a_killed_serve() {
    if !delve_available() {
        return;
    }
    let dir = go_module(GO_PROGRAM);
    let server = start(dir.path()).await;
    launch_to_a_breakpoint(&server, "main.go", 27, ".").await;
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(
        left.is_empty(),
        "left behind after SIGKILL of serve: {left:?}"
    );
}

/// A program that runs until it is stopped, and spends nearly all its time in one call: the
/// next line a pause can stop at is the loop's head, so its answer is the same in every run
/// (a loop with a counter would stop anywhere, with any count).
const SPIN: &str = r#"import time

while True:
    time.sleep(0.05)
"#;

/// A Python project with [`SPIN`] as `spin.py`, whose control operations wait 5 s for a stop.
fn spinning_project() -> tempfile::TempDir {
    let dir = python_project("[debug]\nstop_timeout_seconds = 5\n");
    write_files(dir.path(), &[("spin.py", SPIN)]);
    dir
}

#[tokio::test]
async fn dbg_5_a_running_program_is_reported_paused_and_a_cancelled_continue_pauses_it() {
    if !debugpy_available() {
        return;
    }
    let dir = spinning_project();
    let server = start(dir.path()).await;
    let mut t = Transcript::new(dir.path());
    let (running, _) = call(
        &mut t,
        &server,
        json!({"operation": "launch", "program": "spin.py"}),
    )
    .await;
    // The wait the config sets, which the snapshot shows as a duration.
    assert!(running.contains("still running after 5s"), "{running}");
    t.call(&server, "debug", json!({"operation": "step_over"}))
        .await;
    t.call(&server, "debug", json!({"operation": "pause"}))
        .await;

    // GRACEFUL_CANCEL: a cancelled `continue` pauses the program before it returns.
    server.client.progress.lock().unwrap().clear();
    let params = rmcp::model::CallToolRequestParams::new("debug").with_arguments(
        json!({"operation": "continue"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let continued = server
        .service
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // The waiting call reports progress (rmcp sent a progress token) before it is cancelled.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.client.progress.lock().unwrap().is_empty() && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let progress = server.client.progress.lock().unwrap().clone();
    let message = progress
        .last()
        .and_then(|p| p.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with("spin.py is running; waiting for it to stop"),
        "progress: {progress:?}"
    );
    continued.cancel(Some("enough".into())).await.unwrap();
    t.note(
        "a `continue` runs the program on and reports progress while it waits; the client \
         cancels it",
    );
    // The pause lands a moment after the cancellation: the statuses before it are not the
    // scenario's, only the one that sees it.
    let status = json!({"operation": "status"});
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let paused = loop {
        let result = server.call("debug", status.clone()).await;
        let reason = result
            .structured_content
            .as_ref()
            .and_then(|answer| answer["stopped"]["reason"].as_str().map(str::to_owned));
        if reason.as_deref() == Some("pause") || std::time::Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    t.record_mcp("debug", &status, &paused);
    t.call(&server, "debug", json!({"operation": "terminate"}))
        .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_5_a_running_program_is_reported_paused_and_a_cancelled_continue_pauses_it",
        t,
        &[],
    );
}

#[tokio::test]
async fn dbg_5_a_continue_that_became_a_task_is_paused_by_tasks_cancel() {
    if !debugpy_available() {
        return;
    }
    let dir = spinning_project();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation()
            .in_era(crate::support::Era::Discover)
            .with_tasks(),
    )
    .await;
    let mut t = Transcript::new(dir.path());
    // A launch that waits 5 s for a stop is long: it answers as a task, polled to its end.
    let launch = json!({"operation": "launch", "program": "spin.py"});
    let (launched, as_task) = crate::protocol::call_to_end(&server, "debug", launch.clone()).await;
    assert!(as_task, "a 5 s launch outlasts the grace");
    t.record_mcp("debug", &launch, &launched);
    // The wait the config sets, which the snapshot shows as a duration.
    assert!(
        text(&launched).contains("still running after 5s"),
        "{}",
        text(&launched)
    );
    t.call(&server, "debug", json!({"operation": "pause"}))
        .await;
    // A continue into an endless loop is a task.
    let resume = json!({"operation": "continue"});
    let id = crate::protocol::task_of(&server, "debug", resume.clone()).await;
    let task = crate::protocol::cancelled(&server, &id).await;
    // Cancellation is cooperative: the continue stopped by pausing the program, and that
    // answer — where it paused — is the task's result, which the model reads.
    let TaskPayload::Completed { result } = task.payload else {
        panic!("{:?}", task.payload);
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    t.note("the `continue` became a task, and the client sent `tasks/cancel`; its result:");
    t.record_mcp("debug", &resume, &result);
    // tasks/cancel paused the debuggee.
    t.call(&server, "debug", json!({"operation": "status"}))
        .await;
    t.call(&server, "debug", json!({"operation": "terminate"}))
        .await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_5_a_continue_that_became_a_task_is_paused_by_tasks_cancel",
        t,
        &[],
    );
}

#[tokio::test]
async fn dbg_7_an_interpreter_without_debugpy_is_named_with_how_to_install_it() {
    // The adapters report names every adapter as this machine has it.
    if !lldb_available() || !delve_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"app\"\nversion = \"0\"\n",
            ),
            ("app.py", APP),
            // The project's own interpreter wins over PATH's (DBG-7); this one lacks debugpy.
            (
                ".venv/bin/python3",
                "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'debugpy'\" >&2\nexit 1\n",
            ),
        ],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        root.join(".venv/bin/python3"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let server = start(root).await;
    let mut t = Transcript::new(root);
    t.call(
        &server,
        "debug",
        json!({"operation": "launch", "program": "app.py"}),
    )
    .await;
    t.call(&server, "debug", json!({"operation": "adapters"}))
        .await;
    nothing_left(server).await;
    assert_transcript(
        "dbg_7_an_interpreter_without_debugpy_is_named_with_how_to_install_it",
        t,
        ADAPTER_VERSIONS,
    );
}
