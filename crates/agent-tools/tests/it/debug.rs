//! `debug` through `agent-tools serve`, driven by an MCP client, against the real adapters
//! (debugpy in the test venv, lldb-dap from Debian's lldb-19, delve; installed by `cargo
//! xtask ci`). After every test the process table is searched for anything the server
//! started: no adapter or debuggee may outlive a session, its TTL, or the server.

use std::path::Path;
use std::time::Duration;

use rmcp::model::TaskPayload;
use serde_json::{Value, json};

use crate::support::{Client, Server, is_error, text, until_processes};
use tools_test_support::{repo_root, require, write_files};

/// Whether the test venv has debugpy (said loudly when not; fails under `CI=true`).
fn debugpy_available() -> bool {
    let installed = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .args(["-c", "import debugpy"])
        .output()
        .is_ok_and(|out| out.status.success());
    require("debugpy", installed, ".venv/bin/pip install debugpy")
}

fn lldb_available() -> bool {
    let installed = which("lldb-dap-19") || which("lldb-dap");
    require(
        "lldb-dap",
        installed && which("gcc"),
        "apt-get install lldb-19 gcc",
    )
}

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

async fn debug(server: &Server, arguments: Value) -> (String, Value) {
    let result = server.call("debug", arguments.clone()).await;
    let shown = text(&result);
    assert!(!is_error(&result), "{arguments} failed: {shown}");
    (shown, result.structured_content.unwrap_or(Value::Null))
}

async fn debug_error(server: &Server, arguments: Value) -> String {
    let result = server.call("debug", arguments.clone()).await;
    assert!(
        is_error(&result),
        "{arguments} should fail: {}",
        text(&result)
    );
    text(&result)
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

    let (set, _) = debug(
        &server,
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    assert!(
        set.contains("sent to the adapter when a session launches"),
        "{set}"
    );

    let (stop, data) = debug(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(
        stop.contains("with debugpy (inferred from the program)"),
        "{stop}"
    );
    assert!(
        stop.contains("breakpoints in app.py: 14 verified"),
        "{stop}"
    );
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at app.py:14 in main"), "{stop}");
    assert!(
        stop.contains(">   14 |     value = helper(count)"),
        "{stop}"
    );
    assert!(
        stop.contains("    13 |     print(\"hello from app\", subprocess.run("),
        "{stop}"
    );
    assert!(stop.contains("count = 3"), "{stop}");
    // A child process runs free (it is not debugged) and its output is the program's.
    assert!(stop.contains("hello from app 42"), "{stop}");
    // The stop is a place like every tool's: path, line and the line's text.
    assert_eq!(data["stopped"]["path"], "app.py");
    assert_eq!(data["stopped"]["line"], 14);
    assert_eq!(data["stopped"]["text"], "value = helper(count)");
    assert_eq!(data["adapter"], "debugpy");
    let frame = data["stopped"]["frame_id"].as_i64().unwrap();

    // DBG-4: one session per conversation.
    let refused = debug_error(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(
        refused.contains("already running") && refused.contains("app.py with debugpy, stopped"),
        "{refused}"
    );

    let (stack, _) = debug(&server, json!({"operation": "stack"})).await;
    assert!(stack.contains("main at app.py:14"), "{stack}");
    assert!(stack.contains("<module> at app.py:19"), "{stack}");

    let (scopes, _) = debug(&server, json!({"operation": "scopes", "frame_id": frame})).await;
    let locals: i64 = scopes
        .lines()
        .find(|l| l.starts_with("Locals"))
        .and_then(|l| l.split("reference ").nth(1))
        .and_then(|r| r.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no Locals scope: {scopes}"));
    let (variables, _) = debug(
        &server,
        json!({"operation": "variables", "reference": locals}),
    )
    .await;
    assert!(variables.contains("count (int) = 3"), "{variables}");
    let long = variables.lines().find(|l| l.starts_with("text ")).unwrap();
    assert!(long.contains("… (1602 more characters cut)"), "{long}");
    let items: i64 = variables
        .lines()
        .find(|l| l.starts_with("items "))
        .and_then(|l| l.split("[reference ").nth(1))
        .and_then(|r| r.trim_end_matches(']').parse().ok())
        .unwrap_or_else(|| panic!("no items reference: {variables}"));
    let (children, _) = debug(
        &server,
        json!({"operation": "variables", "reference": items}),
    )
    .await;
    assert!(
        children.contains("more children not shown: variables are capped at 50"),
        "{children}"
    );
    assert_eq!(
        children.lines().filter(|l| !l.starts_with('(')).count(),
        1 + 50,
        "{children}"
    );

    let (value, _) = debug(
        &server,
        json!({"operation": "evaluate", "expression": "count + 1", "frame_id": frame}),
    )
    .await;
    assert!(value.starts_with("count + 1 = 4"), "{value}");

    let (inside, _) = debug(&server, json!({"operation": "step_in"})).await;
    assert!(inside.contains("at app.py:5 in helper"), "{inside}");
    let (over, _) = debug(&server, json!({"operation": "step_over"})).await;
    assert!(
        over.contains("at app.py:6 in helper") && over.contains("total = 6"),
        "{over}"
    );
    let (out, _) = debug(&server, json!({"operation": "step_out"})).await;
    assert!(out.contains("in main"), "{out}");

    let (threads, _) = debug(&server, json!({"operation": "threads"})).await;
    assert!(threads.contains("MainThread"), "{threads}");

    let (exit, data) = debug(&server, json!({"operation": "continue"})).await;
    assert!(exit.contains("the program exited with code 7"), "{exit}");
    assert!(exit.contains("value 6"), "{exit}");
    assert_eq!(data["exit_code"], 7);

    let (status, _) = debug(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("no debug session is running; the last one: app.py exited with code 7"),
        "{status}"
    );
    // DBG-5: what the program printed stays readable after it exited, all of it (the
    // `continue` above showed only its last lines), until the next launch.
    let (printed, data) = debug(&server, json!({"operation": "output"})).await;
    assert!(
        printed.starts_with(
            "no debug session is running; the last one: app.py exited with code 7; all it \
             printed:\nhello from app 42\n"
        ) && printed.ends_with("value 6"),
        "{printed}"
    );
    assert_eq!(data["state"], "exited with code 7");
    only_the_server_left(&server).await;
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_4_terminate_ends_everything_and_a_new_session_may_start() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    let server = start(dir.path()).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    let (stop, _) = debug(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    // Breakpoints set during a session reach the adapter at once.
    let (set, _) = debug(
        &server,
        // `file`, the argument's old name, still names the file.
        json!({"operation": "breakpoints", "file": "app.py", "lines": [16, 14]}),
    )
    .await;
    assert_eq!(set, "breakpoints in app.py: 14 verified, 16 verified");
    let (next, _) = debug(&server, json!({"operation": "continue"})).await;
    assert!(next.contains("at app.py:16 in main"), "{next}");
    assert!(next.contains("output:\nvalue 6"), "{next}");
    let (status, _) = debug(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("session: app.py with debugpy, stopped (breakpoint) on thread"),
        "{status}"
    );
    assert!(
        status.contains("stopped at app.py:16 in main (frame "),
        "{status}"
    );
    assert!(
        status.contains("breakpoints: app.py lines 14, 16"),
        "{status}"
    );
    let (ended, _) = debug(&server, json!({"operation": "terminate"})).await;
    assert!(ended.contains("terminated app.py"), "{ended}");
    only_the_server_left(&server).await;
    let missing = debug_error(&server, json!({"operation": "stack"})).await;
    assert!(
        missing.contains("`stack` needs a debug session and none is running"),
        "{missing}"
    );
    // Clearing the file's breakpoints lets the program run to its end.
    let (cleared, _) = debug(
        &server,
        json!({"operation": "breakpoints", "path": "app.py", "lines": []}),
    )
    .await;
    assert!(cleared.contains("cleared"), "{cleared}");
    let (exit, _) = debug(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(
        exit.contains("exited with code 7") && exit.contains("value 6"),
        "{exit}"
    );
    only_the_server_left(&server).await;
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_4_a_session_past_its_ttl_is_killed_and_the_next_call_says_so() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("[debug]\nsession_ttl_seconds = 2\n");
    let server = start(dir.path()).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "app.py", "lines": [14]}),
    )
    .await;
    let (stop, _) = debug(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    only_the_server_left(&server).await;
    let expired = debug_error(&server, json!({"operation": "continue"})).await;
    assert!(
        expired.contains("expired") && expired.contains("2 s"),
        "{expired}"
    );
    let (status, _) = debug(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains(
            "no debug session is running; the last one: the debug session of app.py expired"
        ),
        "{status}"
    );
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_2_adapters_say_which_marker_and_binary_are_missing() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("");
    let server = start(dir.path()).await;
    let (report, data) = debug(&server, json!({"operation": "adapters"})).await;
    let line = |name: &str| -> String {
        let start = report.find(&format!("{name}: ")).unwrap();
        let rest = &report[start..];
        let end = rest[1..]
            .find("\n")
            .map(|i| {
                // Include the indented "why not" line.
                let next = &rest[i + 2..];
                if next.starts_with("  why not") {
                    i + 2 + next.find('\n').unwrap_or(next.len())
                } else {
                    i + 1
                }
            })
            .unwrap_or(rest.len());
        rest[..end].to_owned()
    };
    let debugpy = line("debugpy");
    assert!(
        debugpy.starts_with("debugpy: usable; marker pyproject.toml in .; binary "),
        "{report}"
    );
    assert!(
        debugpy.contains(".venv/bin/python3 (as python3, debugpy 1."),
        "{report}"
    );
    let dart = line("dart");
    assert!(
        dart.contains("not usable; no marker; no binary"),
        "{report}"
    );
    assert!(
        dart.contains("no root marker (pubspec.yaml) in the workspace"),
        "{report}"
    );
    assert!(dart.contains("no binary (dart, dart-NN)"), "{report}");
    assert_eq!(data["adapters"][0]["adapter"], "debugpy");
    assert_eq!(data["adapters"][0]["usable"], true);
    if delve_available() {
        let delve = line("delve");
        assert!(delve.contains("not usable; no marker; binary "), "{report}");
        assert!(delve.contains("no root marker (go.mod)"), "{report}");
    }
    if lldb_available() {
        let lldb = line("lldb");
        assert!(lldb.contains("(as lldb-dap-19"), "{report}");
    }
    // DBG-2: without the marker, launch is refused with the reason.
    let refused = debug_error(
        &server,
        json!({"operation": "launch", "program": "app.py", "adapter": "delve"}),
    )
    .await;
    assert!(
        refused.contains("delve needs a project root marker (go.mod)"),
        "{refused}"
    );
    let missing = debug_error(&server, json!({"operation": "launch"})).await;
    assert!(missing.contains("`launch` needs `program`"), "{missing}");
    nothing_left(server).await;
}

#[tokio::test]
async fn core_4_debug_is_absent_on_the_plan_surface() {
    let dir = python_project("");
    let server = Server::start(
        dir.path(),
        &["--surface", "plan"],
        Client::without_elicitation(),
    )
    .await;
    let names = server.tool_names().await;
    assert!(!names.contains(&"debug".to_owned()), "{names:?}");
    let refused = server.call("debug", json!({"operation": "adapters"})).await;
    assert!(is_error(&refused), "{}", text(&refused));
    nothing_left(server).await;
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
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "loop.py", "lines": [5]}),
    )
    .await;
    // The listener may take a moment to open its port.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let stop = loop {
        let result = server
            .call("debug", json!({"operation": "attach", "port": port}))
            .await;
        if !is_error(&result) || std::time::Instant::now() > deadline {
            break text(&result);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        stop.contains(&format!("attached to port {port} with debugpy")),
        "{stop}"
    );
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("loop.py:5 in tick"), "{stop}");
    let (value, _) = debug(
        &server,
        json!({"operation": "evaluate", "expression": "i * 10"}),
    )
    .await;
    assert!(value.starts_with("i * 10 = "), "{value}");
    let (ended, _) = debug(&server, json!({"operation": "terminate"})).await;
    assert!(ended.contains("detached from port"), "{ended}");
    nothing_left(server).await;
    let pgid = rustix::process::Pid::from_raw(debuggee.id().unwrap() as i32).unwrap();
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    let _ = debuggee.wait().await;
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
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "daemon.py", "lines": [4]}),
    )
    .await;
    let (stop, _) = debug(
        &server,
        json!({"operation": "launch", "program": "daemon.py"}),
    )
    .await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
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

/// The reference a `variables`/`scopes` line gives for `name`.
fn reference_of(listing: &str, name: &str) -> i64 {
    listing
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .and_then(|l| l.rsplit("reference ").next())
        .and_then(|r| r.trim_end_matches([')', ']']).parse().ok())
        .unwrap_or_else(|| panic!("no reference for {name}: {listing}"))
}

#[tokio::test]
async fn dbg_5_lldb_end_to_end_with_a_c_program() {
    if !lldb_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
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
    let server = start(root).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "main.c", "lines": [23]}),
    )
    .await;
    let (stop, data) = debug(&server, json!({"operation": "launch", "program": "app"})).await;
    assert!(
        stop.contains("with lldb (inferred from the program)"),
        "{stop}"
    );
    assert!(
        stop.contains("breakpoints in main.c: 23 verified"),
        "{stop}"
    );
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at main.c:23 in main"), "{stop}");
    assert!(
        stop.contains(">   23 |     int value = twice(p.x);"),
        "{stop}"
    );
    assert!(stop.contains("output:\nhello from c"), "{stop}");
    assert_eq!(data["adapter"], "lldb");
    let frame = data["stopped"]["frame_id"].as_i64().unwrap();

    let refused = debug_error(&server, json!({"operation": "launch", "program": "app"})).await;
    assert!(refused.contains("already running"), "{refused}");

    let (stack, _) = debug(&server, json!({"operation": "stack"})).await;
    assert!(stack.contains("main at main.c:23"), "{stack}");

    let (scopes, _) = debug(&server, json!({"operation": "scopes", "frame_id": frame})).await;
    let locals = reference_of(&scopes, "Locals");
    let (variables, _) = debug(
        &server,
        json!({"operation": "variables", "reference": locals}),
    )
    .await;
    let (fields, _) = debug(
        &server,
        json!({"operation": "variables", "reference": reference_of(&variables, "p")}),
    )
    .await;
    assert!(
        fields.contains("x (int) = 3") && fields.contains("y (int) = 4"),
        "{fields}"
    );
    let (children, _) = debug(
        &server,
        json!({"operation": "variables", "reference": reference_of(&variables, "items")}),
    )
    .await;
    assert!(
        children.contains("70 more children not shown"),
        "{children}"
    );
    let text_line = variables.lines().find(|l| l.starts_with("text ")).unwrap();
    assert!(text_line.contains("more characters cut"), "{text_line}");

    let (value, _) = debug(
        &server,
        json!({"operation": "evaluate", "expression": "p.x + 1", "frame_id": frame}),
    )
    .await;
    assert!(value.starts_with("p.x + 1 = 4"), "{value}");

    let (inside, _) = debug(&server, json!({"operation": "step_in"})).await;
    assert!(inside.contains("at main.c:10 in twice"), "{inside}");
    let (over, _) = debug(&server, json!({"operation": "step_over"})).await;
    assert!(over.contains("at main.c:11 in twice"), "{over}");
    let (out, _) = debug(&server, json!({"operation": "step_out"})).await;
    assert!(out.contains("in main"), "{out}");

    let (exit, data) = debug(&server, json!({"operation": "continue"})).await;
    assert!(exit.contains("the program exited with code 7"), "{exit}");
    assert!(exit.contains("value 6"), "{exit}");
    assert_eq!(data["exit_code"], 7);
    only_the_server_left(&server).await;

    // Terminate in the middle of a second session leaves nothing behind either.
    let (stop, _) = debug(&server, json!({"operation": "launch", "program": "app"})).await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    let (output, _) = debug(&server, json!({"operation": "output"})).await;
    assert!(output.contains("no output since the last call"), "{output}");
    debug(&server, json!({"operation": "terminate"})).await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
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

#[tokio::test]
async fn dbg_5_delve_end_to_end_with_a_go_package() {
    if !delve_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[
            ("go.mod", "module example.com/app\n\ngo 1.19\n"),
            ("main.go", GO_PROGRAM),
            // A cold Go build can take a while.
            (
                "agent-tools.toml",
                "[debug]\nstart_timeout_seconds = 180\nstop_timeout_seconds = 180\n",
            ),
        ],
    );
    let server = start(root).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "main.go", "lines": [27]}),
    )
    .await;
    let (stop, data) = debug(&server, json!({"operation": "launch", "program": "."})).await;
    assert!(
        stop.contains("with delve (inferred from the program)"),
        "{stop}"
    );
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at main.go:27 in main.main"), "{stop}");
    assert!(stop.contains(">   27 | \tvalue := twice(p.X)"), "{stop}");
    assert!(stop.contains("hello from go 2000"), "{stop}");
    assert_eq!(data["adapter"], "delve");
    let frame = data["stopped"]["frame_id"].as_i64().unwrap();

    let (stack, _) = debug(&server, json!({"operation": "stack"})).await;
    assert!(stack.contains("main.main at main.go:27"), "{stack}");
    let (scopes, _) = debug(&server, json!({"operation": "scopes", "frame_id": frame})).await;
    let locals = reference_of(&scopes, "Locals");
    let (variables, _) = debug(
        &server,
        json!({"operation": "variables", "reference": locals}),
    )
    .await;
    let (fields, _) = debug(
        &server,
        json!({"operation": "variables", "reference": reference_of(&variables, "p")}),
    )
    .await;
    assert!(
        fields.contains("X (int) = 3") && fields.contains("Y (int) = 4"),
        "{fields}"
    );
    let (children, _) = debug(
        &server,
        json!({"operation": "variables", "reference": reference_of(&variables, "items")}),
    )
    .await;
    assert!(children.contains("more children not shown"), "{children}");

    let (value, _) = debug(
        &server,
        json!({"operation": "evaluate", "expression": "p.X + 1", "frame_id": frame}),
    )
    .await;
    assert!(value.starts_with("p.X + 1 = 4"), "{value}");
    let (long, _) = debug(
        &server,
        json!({"operation": "evaluate", "expression": "text", "frame_id": frame}),
    )
    .await;
    assert!(long.contains("more characters cut"), "{long}");
    let text_line = variables.lines().find(|l| l.starts_with("text ")).unwrap();
    assert!(text_line.contains("more characters cut"), "{text_line}");

    let (inside, _) = debug(&server, json!({"operation": "step_in"})).await;
    assert!(inside.contains("in main.twice"), "{inside}");
    let (over, _) = debug(&server, json!({"operation": "step_over"})).await;
    assert!(over.contains("at main.go:15 in main.twice"), "{over}");
    let (out, _) = debug(&server, json!({"operation": "step_out"})).await;
    assert!(out.contains("in main.main"), "{out}");

    let (exit, data) = debug(&server, json!({"operation": "continue"})).await;
    assert!(exit.contains("the program exited with code 7"), "{exit}");
    assert!(exit.contains("value 6"), "{exit}");
    assert_eq!(data["exit_code"], 7);
    only_the_server_left(&server).await;
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_5_a_go_file_that_does_not_build_says_what_the_compiler_said() {
    if !delve_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[
            ("go.mod", "module example.com/broken\n\ngo 1.19\n"),
            (
                "main.go",
                "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(average([]int{1, 2}))\n}\n",
            ),
            (
                "agent-tools.toml",
                "[debug]\nstart_timeout_seconds = 180\nstop_timeout_seconds = 180\n",
            ),
        ],
    );
    let server = start(root).await;
    // A `.go` file is built by delve, as a package folder is; its build error is the reason.
    for program in ["main.go", "."] {
        let result = server
            .call("debug", json!({"operation": "launch", "program": program}))
            .await;
        let shown = text(&result);
        assert!(is_error(&result), "{shown}");
        assert!(
            shown.contains("delve refused `launch`: Failed to launch"),
            "{shown}"
        );
        assert!(
            shown.contains("main.go:6:14: undefined: average"),
            "{shown}"
        );
    }
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_5_a_running_program_is_reported_paused_and_a_cancelled_continue_pauses_it() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("[debug]\nstop_timeout_seconds = 5\n");
    write_files(dir.path(), &[("loop.py", LOOP)]);
    let server = start(dir.path()).await;
    let (running, data) = debug(
        &server,
        json!({"operation": "launch", "program": "loop.py"}),
    )
    .await;
    assert!(
        running.contains("still running after 5s; the program keeps running"),
        "{running}"
    );
    assert_eq!(data["state"], "running");
    let refused = debug_error(&server, json!({"operation": "step_over"})).await;
    assert!(
        refused.contains("`step_over` needs the program stopped, and it is running"),
        "{refused}"
    );
    let (paused, _) = debug(&server, json!({"operation": "pause"})).await;
    assert!(paused.contains("stopped: pause"), "{paused}");
    assert!(paused.contains("loop.py:"), "{paused}");

    // GRACEFUL_CANCEL: a cancelled `continue` pauses the program before it returns.
    server.client.progress.lock().unwrap().clear();
    let params = rmcp::model::CallToolRequestParams::new("debug").with_arguments(
        json!({"operation": "continue"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let call = server
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
        message.starts_with("loop.py is running; waiting for it to stop"),
        "progress: {progress:?}"
    );
    call.cancel(Some("enough".into())).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        let (status, _) = debug(&server, json!({"operation": "status"})).await;
        if status.contains("stopped (pause)") || std::time::Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        status.contains("session: loop.py with debugpy, stopped (pause)"),
        "{status}"
    );
    debug(&server, json!({"operation": "terminate"})).await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_5_a_continue_that_became_a_task_is_paused_by_tasks_cancel() {
    if !debugpy_available() {
        return;
    }
    let dir = python_project("[debug]\nstop_timeout_seconds = 5\n");
    write_files(dir.path(), &[("loop.py", LOOP)]);
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation()
            .in_era(crate::support::Era::Discover)
            .with_tasks(),
    )
    .await;
    // A launch that waits 5 s for a stop is long: it answers as a task, polled to its end.
    let (launched, as_task) = crate::protocol::call_to_end(
        &server,
        "debug",
        json!({"operation": "launch", "program": "loop.py"}),
    )
    .await;
    assert!(as_task, "a 5 s launch outlasts the grace");
    assert!(
        text(&launched).contains("still running after 5s"),
        "{}",
        text(&launched)
    );
    let (paused, _) = debug(&server, json!({"operation": "pause"})).await;
    assert!(paused.contains("stopped: pause"), "{paused}");
    // A continue into an endless loop is a task.
    let id = crate::protocol::task_of(&server, "debug", json!({"operation": "continue"})).await;
    let task = crate::protocol::cancelled(&server, &id).await;
    // Cancellation is cooperative: the continue stopped by pausing the program, and that
    // answer — where it paused — is the task's result.
    let TaskPayload::Completed { result } = task.payload else {
        panic!("{:?}", task.payload);
    };
    let said = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("cancelled: the program was paused\nstopped: pause"),
        "{said}"
    );
    let (status, _) = debug(&server, json!({"operation": "status"})).await;
    assert!(
        status.contains("session: loop.py with debugpy, stopped (pause)"),
        "tasks/cancel pauses the debuggee: {status}"
    );
    debug(&server, json!({"operation": "terminate"})).await;
    only_the_server_left(&server).await;
    nothing_left(server).await;
}

#[tokio::test]
async fn dbg_4_no_lldb_or_c_program_outlives_a_killed_serve() {
    if !lldb_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
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
    let server = start(root).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "main.c", "lines": [23]}),
    )
    .await;
    let (stop, _) = debug(&server, json!({"operation": "launch", "program": "app"})).await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(
        left.is_empty(),
        "left behind after SIGKILL of serve: {left:?}"
    );
}

#[tokio::test]
async fn dbg_4_no_delve_or_go_program_outlives_a_killed_serve() {
    if !delve_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_files(
        root,
        &[
            ("go.mod", "module example.com/app\n\ngo 1.19\n"),
            ("main.go", GO_PROGRAM),
            (
                "agent-tools.toml",
                "[debug]\nstart_timeout_seconds = 180\nstop_timeout_seconds = 180\n",
            ),
        ],
    );
    let server = start(root).await;
    debug(
        &server,
        json!({"operation": "breakpoints", "path": "main.go", "lines": [27]}),
    )
    .await;
    let (stop, _) = debug(&server, json!({"operation": "launch", "program": "."})).await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(
        left.is_empty(),
        "left behind after SIGKILL of serve: {left:?}"
    );
}

#[tokio::test]
async fn dbg_7_an_interpreter_without_debugpy_is_named_with_how_to_install_it() {
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
    let refused = debug_error(&server, json!({"operation": "launch", "program": "app.py"})).await;
    assert!(
        refused.contains(".venv/bin/python3 cannot import debugpy (ModuleNotFoundError: No module named 'debugpy')"),
        "{refused}"
    );
    assert!(
        refused.contains(".venv/bin/pip install debugpy"),
        "{refused}"
    );
    let (report, _) = debug(&server, json!({"operation": "adapters"})).await;
    assert!(
        report.starts_with("debugpy: not usable; marker pyproject.toml in .; binary "),
        "{report}"
    );
    assert!(report.contains("cannot import debugpy"), "{report}");
    nothing_left(server).await;
}
