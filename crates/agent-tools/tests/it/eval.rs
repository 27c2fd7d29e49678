//! `eval` through `agent-tools serve` (EVAL-1, EVAL-2, EVAL-3, EVAL-4, EVAL-5, EVAL-6, EVAL-8,
//! EVAL-9): an MCP client runs cells in real Python (the test venv, with pandas, matplotlib
//! and tabulate) and real Node, calls the run's tools from a cell through every gate, stops
//! runaway cells, and the process table shows that no kernel outlives the server. Each
//! scenario is one transcript snapshot (`snapshots/eval_*.snap`): every cell, and what the
//! model reads back, in text and structure.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use crate::support::{Client, Person, Server, is_error, text, until_processes};
use tools_test_support::{
    Transcript, program_available, python_imports, repo_root, sandbox::bwrap_ready,
    snapshot_settings, write_files,
};

/// Whether the test venv has what the Python tests import (said loudly when not; fails under
/// `CI=true`).
pub(crate) fn python_ready() -> bool {
    python_imports("pandas, matplotlib, tabulate")
}

/// Whether `node` runs (said loudly when not; fails under `CI=true`).
fn node_ready() -> bool {
    program_available("node", "apt-get install nodejs")
}

/// A workspace whose `.venv` is the test venv, with an idle window of `idle_seconds`: 2 for
/// tests of the window itself, a minute where a slow import on a loaded machine must not
/// count as idle.
pub(crate) fn python_workspace(idle_seconds: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    tools_test_support::link_test_venv(&root);
    write_files(
        &root,
        &[
            (
                "agent-tools.toml",
                &format!("[eval]\nidle_timeout_seconds = {idle_seconds}\n"),
            ),
            ("notes.txt", "alpha\nbeta\n"),
            ("src/keep.txt", ""),
        ],
    );
    (dir, root)
}

async fn start(root: &Path) -> Server {
    Server::start(
        root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await
}

fn cell(code: &str) -> Value {
    json!({"code": code, "description": "a cell the eval tests run"})
}

fn js(code: &str) -> Value {
    json!({"code": code, "description": "a cell the eval tests run", "language": "javascript"})
}

/// Runs a cell that must succeed, for a test about processes rather than answers.
async fn ok(server: &Server, arguments: Value) {
    let result = server.call("eval", arguments.clone()).await;
    assert!(!is_error(&result), "{arguments} failed: {}", text(&result));
}

/// Calls `eval` with `arguments`, records the answer in `t`, and returns its text: for what
/// a snapshot cannot hold (a configured window, which the duration filter hides among the
/// measured ones; a pid).
async fn call(t: &mut Transcript, server: &Server, arguments: Value) -> String {
    let result = server.call("eval", arguments.clone()).await;
    t.record_mcp("eval", &arguments, &result);
    text(&result)
}

/// What varies in every eval transcript: the interpreters' versions are the machine's.
const VERSIONS: &[(&str, &str)] = &[(
    r#"(python |node v|"version": "v?)\d+\.\d+\.\d+"#,
    "${1}[VERSION]",
)];

/// Snapshots the transcript `t` as `name`, with [`VERSIONS`] and this test's own `extra`
/// filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let filters: Vec<(&str, &str)> = VERSIONS.iter().chain(extra).copied().collect();
    let transcript = t.finish_with(&filters);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
}

#[tokio::test]
async fn eval_1_state_persists_echo_semicolon_and_the_venv_interpreter() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    // The project's .venv wins over python3 on PATH, and the first result names it.
    t.call(&server, "eval", cell("x = 41")).await;
    t.call(&server, "eval", cell("x + 1")).await;
    // EVAL-3: a trailing `;` hides the echo, as in IPython.
    t.call(&server, "eval", cell("x + 1;")).await;
    // stdout, stderr and a child's output, in the order they were written.
    t.call(
        &server,
        "eval",
        cell("import sys, os\nprint('one')\nprint('two', file=sys.stderr)\nos.system('echo three')\nprint('\\x1b[31mfour\\x1b[0m 10%\\r100% done')"),
    )
    .await;
    // A traceback keeps the cell's own frames only.
    t.call(&server, "eval", cell("def f():\n    return 1 / 0\nf()"))
        .await;
    // EVAL-2: the description is checked.
    t.call(&server, "eval", json!({"code": "1", "description": "one"}))
        .await;
    assert_transcript(
        "eval_1_state_persists_echo_semicolon_and_the_venv_interpreter",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_4_a_dataframe_is_a_table_and_a_figure_is_an_image() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    // The run's state directory, outside the workspace: each image is also a file there.
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().canonicalize().unwrap();
    let server = Server::start(
        &root,
        &[
            "--approval",
            "allow",
            "--state-dir",
            &state_dir.display().to_string(),
        ],
        Client::without_elicitation(),
    )
    .await;
    let mut t = Transcript::new(&root);
    t.call(
        &server,
        "eval",
        cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndf"),
    )
    .await;
    t.call(&server, "eval", cell("df['a'] * 10")).await;
    t.call(&server, "eval", cell("pd.DataFrame({'n': range(100)})"))
        .await;
    t.call(
        &server,
        "eval",
        cell("class Note:\n    def _repr_markdown_(self):\n        return '**bold** note'\ndisplay(Note(), 'plain')"),
    )
    .await;
    let figure = cell(
        "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\nplt.show()",
    );
    let result = server.call("eval", figure.clone()).await;
    t.record_mcp("eval", &figure, &result);
    // The picture itself: a PNG of 4 × 3 inches at 100 dpi, trimmed to the drawing.
    let images: Vec<_> = result.content.iter().filter_map(|c| c.as_image()).collect();
    let [image] = images.as_slice() else {
        panic!("one image: {result:?}")
    };
    let png = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert!(
        (300..=400).contains(&width) && (200..=300).contains(&height),
        "{width}×{height}"
    );
    // The text names the picture's real size, which the snapshot cannot hold: the size is
    // the renderer's on this machine.
    assert!(
        text(&result).contains(&format!("[image 1: PNG {width}×{height}]")),
        "{}",
        text(&result)
    );
    // A client that reads only the structure gets the same picture as a file: its path
    // (named in the text too), media type, size and pixels, under the run's state directory.
    let structured = result.structured_content.clone().unwrap();
    let described = &structured["images"][0];
    let path = PathBuf::from(described["path"].as_str().unwrap());
    assert!(path.starts_with(state_dir.join("runs")), "{path:?}");
    assert!(!path.starts_with(&root), "{path:?}");
    assert_eq!(std::fs::read(&path).unwrap(), png);
    assert_eq!(described["media_type"], "image/png");
    assert_eq!(described["bytes"], png.len());
    assert_eq!(
        (described["width"].clone(), described["height"].clone()),
        (json!(width), json!(height))
    );
    assert!(
        text(&result).contains(&format!(
            "[image 1 at {}: image/png, {width}×{height}, {} bytes]",
            path.display(),
            png.len()
        )),
        "{}",
        text(&result)
    );
    // A figure left open at the end of a cell is emitted too, and then closed.
    t.call(&server, "eval", cell("plt.plot([1, 2]);")).await;
    t.call(&server, "eval", cell("len(plt.get_fignums())"))
        .await;
    // At most 8 images per cell, with a note for the rest.
    t.call(
        &server,
        "eval",
        cell("for n in range(10):\n    plt.figure(figsize=(1, 1))"),
    )
    .await;
    assert_transcript(
        "eval_4_a_dataframe_is_a_table_and_a_figure_is_an_image",
        t,
        &[
            (r"PNG \d+×\d+", "PNG [WIDTH]×[HEIGHT]"),
            (
                r"png, \d+×\d+, \d+ bytes",
                "png, [WIDTH]×[HEIGHT], [BYTES] bytes",
            ),
            (r#""(bytes|width|height)": \d+"#, r#""$1": "[N]""#),
            (r"eval-images-\w+", "eval-images-[ID]"),
        ],
    );
    // The files are the run's: when it ends, they go, and no kernel is left behind.
    server.service.cancel().await.unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!path.exists(), "{path:?} outlived the run");
    assert!(
        !state_dir.join("runs").read_dir().unwrap().any(|_| true),
        "the run's state folder outlived it"
    );
}

#[tokio::test]
async fn eval_a_kernel_that_cannot_start_names_its_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write_files(
        &root,
        &[(
            ".venv/bin/python",
            "#!/bin/sh\necho 'no such interpreter today' >&2\nexit 7\n",
        )],
    );
    let python = root.join(".venv/bin/python");
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("1")).await;
    assert_transcript(
        "eval_a_kernel_that_cannot_start_names_its_interpreter",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_5_magics_are_rewritten() {
    if !python_ready() {
        return;
    }
    // `%%timeit` prints only at its end.
    let (_dir, root) = python_workspace(30);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("%cd src")).await;
    t.call(&server, "eval", cell("!pwd")).await;
    t.call(&server, "eval", cell("files = !ls\nfiles")).await;
    t.call(&server, "eval", cell("%%bash\necho $((1 + 2))"))
        .await;
    t.call(&server, "eval", cell("%%timeit\nsum(range(10))"))
        .await;
    t.call(&server, "eval", cell("%timeit sum(range(10))"))
        .await;
    t.call(&server, "eval", cell("%env GREETING=hello")).await;
    t.call(&server, "eval", cell("import os\nos.environ['GREETING']"))
        .await;
    t.call(&server, "eval", cell("%cd /")).await;
    t.call(&server, "eval", cell("%matplotlib inline")).await;
    // Valid Python is never rewritten: `%` is the modulo operator here.
    t.call(&server, "eval", cell("x = 7\nx %2")).await;
    // A timing, and as many loops as fit in it.
    let timeit = (
        r"(\[TIME\]|\d+(\.\d+)? \S+) per loop \(best of (\d+) runs, \d+ loops each; mean (\[TIME\]|[^)]+)\)",
        "[TIME] per loop (best of $3 runs, [N] loops each; mean [TIME])",
    );
    assert_transcript("eval_5_magics_are_rewritten", t, &[timeit]);
}

/// Builds a wheel of a package `tinypkg` at `version` in `root`, installable without the
/// network; returns its file name.
fn tiny_wheel(root: &Path, version: &str) -> String {
    const MAKE: &str = r#"
import sys, zipfile
version = sys.argv[1]
info = f"tinypkg-{version}.dist-info"
with zipfile.ZipFile(f"tinypkg-{version}-py3-none-any.whl", "w") as wheel:
    wheel.writestr("tinypkg/__init__.py", f"VERSION = '{version}'\n")
    wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tinypkg\nVersion: {version}\n")
    wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.writestr(f"{info}/RECORD", f"tinypkg/__init__.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
"#;
    let made = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .args(["-c", MAKE, version])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(made.success());
    format!("tinypkg-{version}-py3-none-any.whl")
}

#[tokio::test]
async fn eval_5_pip_installs_and_the_next_import_sees_it() {
    if !python_ready() {
        return;
    }
    // A venv of its own: installing must not touch the shared test venv.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let made = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .args(["-m", "venv"])
        .arg(root.join(".venv"))
        .status()
        .unwrap();
    assert!(made.success());
    let first = tiny_wheel(&root, "1.0");
    let second = tiny_wheel(&root, "2.0");
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("import tinypkg")).await;
    let pip = |folder: &str| format!("%pip install -q --no-index --no-build-isolation ./{folder}");
    t.call(&server, "eval", cell(&pip(&first))).await;
    t.call(&server, "eval", cell("import tinypkg\ntinypkg.VERSION"))
        .await;
    // EVAL-5: the touched package leaves sys.modules, so the next import sees the new one.
    t.call(&server, "eval", cell(&pip(&second))).await;
    t.call(&server, "eval", cell("import tinypkg\ntinypkg.VERSION"))
        .await;
    assert_transcript("eval_5_pip_installs_and_the_next_import_sees_it", t, &[]);
}

#[tokio::test]
async fn eval_6_tool_calls_go_through_the_bridge_and_its_gates() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    // The person allows two cells, refuses the second one's write, then allows the rest.
    let people = vec![
        Person::Accept(json!({"decision": "allow"})),
        Person::Accept(json!({"decision": "allow"})),
        Person::Accept(json!({"decision": "deny"})),
        Person::Accept(json!({"decision": "allow"})),
    ];
    let server = Server::start(&root, &[], Client::answering(people)).await;
    let mut t = Transcript::new(&root);
    t.call(
        &server,
        "eval",
        cell("r = tool('read', {'path': 'notes.txt'})\nprint(r)\nr.structured is not None"),
    )
    .await;
    // CORE-8: the approval gate applies to the cell's write as to a model's.
    t.call(
        &server,
        "eval",
        cell("try:\n    tool('write', {'path': 'out.txt', 'content': 'hi'})\nexcept ToolError as e:\n    print('refused:', e)"),
    )
    .await;
    assert!(!root.join("out.txt").exists());
    t.call(
        &server,
        "eval",
        cell("tool('write', {'path': 'out.txt', 'content': 'hi'});"),
    )
    .await;
    assert_eq!(std::fs::read_to_string(root.join("out.txt")).unwrap(), "hi");
    // `eval` from inside a cell would wait on its own lane: refused at once.
    t.call(
        &server,
        "eval",
        cell("try:\n    tool('eval', {'code': '1', 'description': 'a nested cell that must fail'})\nexcept ToolError as e:\n    print(e)"),
    )
    .await;
    assert_transcript(
        "eval_6_tool_calls_go_through_the_bridge_and_its_gates",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_8_an_idle_cell_is_interrupted_and_state_is_kept() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(2);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("kept = 'still here'")).await;
    let stopped = call(
        &mut t,
        &server,
        cell("print('working')\nwhile True:\n    pass"),
    )
    .await;
    // The window the config sets, which the snapshot shows as a duration.
    assert!(stopped.contains("for 2 s (the idle timeout)"), "{stopped}");
    t.call(&server, "eval", cell("kept")).await;
    // A cell that ignores interrupts costs the kernel, and the next cell says so.
    let killed = call(
        &mut t,
        &server,
        cell("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
    )
    .await;
    assert!(killed.contains("for 2 s (the idle timeout)"), "{killed}");
    t.call(&server, "eval", cell("kept = 'still here'")).await;
    // A blocking sleep in a child (`!sleep`) is interrupted too.
    t.call(&server, "eval", cell("!sleep 60")).await;
    t.call(&server, "eval", cell("kept")).await;
    assert_transcript(
        "eval_8_an_idle_cell_is_interrupted_and_state_is_kept",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_8_a_tool_call_longer_than_the_idle_window_does_not_stop_the_cell() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(2);
    // `ask_user` from the cell: the person takes 4 s to answer, twice the idle window.
    let person = Person::Slow(
        Duration::from_secs(4),
        json!({"selected": "Postgres", "answer": "slowly"}),
    );
    let server = Server::start(
        &root,
        &["--approval", "allow"],
        Client::answering(vec![person]),
    )
    .await;
    let mut t = Transcript::new(&root);
    let code = "r = tool('ask_user', {'question': 'Which database?', 'context': 'The cell needs it.', 'options': [{'label': 'Postgres'}, {'label': 'SQLite'}]})\nr.structured['outcome']";
    t.call(&server, "eval", cell(code)).await;
    assert_transcript(
        "eval_8_a_tool_call_longer_than_the_idle_window_does_not_stop_the_cell",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_the_client_cancels_a_cell_and_the_kernel_survives_with_progress_seen() {
    if !python_ready() {
        return;
    }
    // A long idle window: only the cancellation may stop this cell.
    let (_dir, root) = python_workspace(120);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("kept = 1")).await;
    let params = CallToolRequestParams::new("eval").with_arguments(
        cell("import time\nfor i in range(1000):\n    print('tick', i)\n    time.sleep(0.1)")
            .as_object()
            .cloned()
            .unwrap(),
    );
    let call = server
        .service
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !server
        .client
        .progress
        .lock()
        .unwrap()
        .iter()
        .any(|p| p.message.as_deref().is_some_and(|m| m.starts_with("tick")))
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let progress = server.client.progress.lock().unwrap().clone();
    assert!(
        progress
            .iter()
            .any(|p| p.message.as_deref().is_some_and(|m| m.starts_with("tick"))),
        "no progress arrived: {progress:?}"
    );
    call.cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    t.note(
        "a cell that prints a tick every tenth of a second runs; its ticks arrive as \
         progress, and the client cancels it",
    );
    // The kernel is the same one: its state is there.
    t.call(&server, "eval", cell("kept")).await;
    assert_transcript(
        "eval_the_client_cancels_a_cell_and_the_kernel_survives_with_progress_seen",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_crashes_are_named_and_the_next_cell_starts_clean() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("a = 1")).await;
    t.call(&server, "eval", cell("import ctypes\nctypes.string_at(0)"))
        .await;
    t.call(&server, "eval", cell("'a' in globals()")).await;
    t.call(&server, "eval", cell("import os\nos._exit(3)"))
        .await;
    t.call(&server, "eval", cell("1")).await;
    // A kernel that dies between cells is replaced by the next one, which says so.
    t.call(
        &server,
        "eval",
        cell("import os, threading\nthreading.Timer(0.2, lambda: os._exit(9)).start()"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    t.note("a second later, the timer has ended the kernel between cells");
    t.call(&server, "eval", cell("2")).await;
    // EVAL-2: reset is a clean kernel, on purpose, and says nothing was lost.
    t.call(&server, "eval", cell("b = 2")).await;
    t.call(
        &server,
        "eval",
        json!({"code": "'b' in globals()", "description": "a cell the eval tests run", "reset": true}),
    )
    .await;
    // The tail of the interpreter's crash dump: its threads' frames, with the paths, line
    // numbers and addresses of this machine's Python.
    assert_transcript(
        "eval_crashes_are_named_and_the_next_cell_starts_clean",
        t,
        &[(
            r"(?s)its last words:\n.*?\n\n###",
            "its last words:\n[THE INTERPRETER'S CRASH DUMP]\n\n###",
        )],
    );
}

#[tokio::test]
async fn eval_no_kernel_outlives_a_killed_server() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let server = start(&root).await;
    // A daemon the cell starts in a session of its own: no group signal reaches it, and its
    // parent, the kernel, is killed before it (issue 22).
    ok(
        &server,
        cell(
            "import subprocess\nsubprocess.Popen(['sleep', '307'], start_new_session=True).pid > 0",
        ),
    )
    .await;
    let running = until_processes(&server.mark, |found| {
        found.iter().any(|p| p.ends_with("sleep 307"))
    })
    .await;
    assert!(running.iter().any(|p| p.contains("python")), "{running:?}");
    crate::lifecycle::sigkill_and_expect_nothing_left(&server, "an eval cell's daemon").await;
}

#[tokio::test]
async fn eval_sigterm_stops_serve_and_its_kernels() {
    if !python_ready() || !node_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let server = start(&root).await;
    ok(&server, cell("1")).await;
    ok(&server, js("1")).await;
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

#[tokio::test]
async fn eval_1_javascript_state_echo_await_and_idle_interrupt() {
    if !node_ready() {
        return;
    }
    let (_dir, root) = python_workspace(2);
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", js("const x = 41; let y = 1")).await;
    t.call(&server, "eval", js("x + y")).await;
    // REPL mode: `const` may be declared again, and top-level await works.
    t.call(&server, "eval", js("const x = 5; x")).await;
    t.call(
        &server,
        "eval",
        js("await new Promise(r => setTimeout(() => r(7), 10))"),
    )
    .await;
    t.call(
        &server,
        "eval",
        js("console.log('a'); console.error('b'); ({k: [1, 2]})"),
    )
    .await;
    t.call(&server, "eval", js("null.f")).await;
    t.call(
        &server,
        "eval",
        js("(await tool('read', {path: 'notes.txt'})).includes('alpha')"),
    )
    .await;
    let stopped = call(&mut t, &server, js("while (true) {}")).await;
    // The window the config sets, which the snapshot shows as a duration.
    assert!(stopped.contains("for 2 s (the idle timeout)"), "{stopped}");
    t.call(&server, "eval", js("x")).await;
    assert_transcript(
        "eval_1_javascript_state_echo_await_and_idle_interrupt",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_9_the_kernel_runs_inside_the_sandbox() {
    if !python_ready() || !bwrap_ready() {
        return;
    }
    let (_dir, root) = python_workspace(2);
    let config = std::fs::read_to_string(root.join("agent-tools.toml")).unwrap();
    write_files(
        &root,
        &[(
            "agent-tools.toml",
            &format!(
                "{config}\n[sandbox]\ncommand = [\"bwrap\", \"--dev-bind\", \"/\", \"/\", \"--unshare-pid\", \"--proc\", \"/proc\", \"--die-with-parent\", \"--\"]\n"
            ),
        )],
    );
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    // Its own PID namespace: bwrap's init is 1, the kernel is 2, and it sees nothing else.
    let first = call(
        &mut t,
        &server,
        cell("import os\nos.getpid(), len([p for p in os.listdir('/proc') if p.isdigit()]) < 5"),
    )
    .await;
    // The banner says the pid the agent's shell knows, not the one inside; the snapshot
    // hides pids, so the test reads it.
    let banner_pid: u32 = first
        .split(", pid ")
        .nth(1)
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {first}"));
    assert_ne!(banner_pid, 2, "{first}");
    assert!(
        tools_process::process_info(banner_pid).is_some(),
        "the banner's pid {banner_pid} is not a process here: {first}"
    );
    // And it says which number is which (issue 39).
    assert!(first.contains("(2 in its own PID namespace)"), "{first}");
    // The kernel's source came on its stdin, not its command line: the process table shows
    // a short boot program, not 25 KB of kernel (issue 39).
    for process in crate::support::marked_processes(&server.mark) {
        assert!(
            process.len() < 1_000,
            "{} bytes: {process:.200}",
            process.len()
        );
    }
    // The interrupt travels over the pipe, so it lands inside the sandbox too.
    t.call(&server, "eval", cell("kept = 3")).await;
    t.call(&server, "eval", cell("while True:\n    pass")).await;
    t.call(&server, "eval", cell("kept")).await;
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let left = until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after SIGKILL: {left:?}");
    assert_transcript("eval_9_the_kernel_runs_inside_the_sandbox", t, &[]);
}

#[tokio::test]
async fn eval_6_a_write_from_a_cell_reports_the_diagnostics_it_introduced() {
    if !python_ready() || !crate::lsp::basedpyright_available() {
        return;
    }
    let (_dir, root) = python_workspace(120);
    write_files(
        &root,
        &[
            (
                "agent-tools.toml",
                &format!(
                    "[eval]\nidle_timeout_seconds = 120\n\n{}",
                    crate::on_write::on_write_config(&root)
                ),
            ),
            (
                "pyproject.toml",
                "[project]\nname = \"p\"\nversion = \"0\"\n",
            ),
            (
                "app.py",
                "def add(a: int, b: int) -> int:\n    return a + b\n",
            ),
        ],
    );
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    // Diagnostics on write wraps the bridged call exactly as a model's (CORE-8, LSP-6).
    let code = "r = tool('write', {'path': 'app.py', 'content': 'def add(a: int, b: int) -> int:\\n    return a + b\\n\\nx: int = \"no\"\\n'})\nprint(r)\n[(f['path'], d['line']) for f in r.structured['diagnostics']['files'] for d in f.get('listed', [])]";
    t.call(&server, "eval", cell(code)).await;
    assert_transcript(
        "eval_6_a_write_from_a_cell_reports_the_diagnostics_it_introduced",
        t,
        &[],
    );
}

#[tokio::test]
async fn eval_8_a_chatty_endless_loop_is_stopped_by_the_output_cap() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let config = std::fs::read_to_string(root.join("agent-tools.toml")).unwrap();
    write_files(
        &root,
        &[(
            "agent-tools.toml",
            &format!("{config}max_output_bytes = 1000000\n"),
        )],
    );
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("kept = 'yes'")).await;
    t.call(
        &server,
        "eval",
        cell("n = 0\nwhile True:\n    n += 1\n    print('line', n)"),
    )
    .await;
    t.call(&server, "eval", cell("kept")).await;
    // Thousands of lines: the head is shown by its first and last lines; the cut and the
    // tail (which may begin inside a line) depend on how far the loop ran before the
    // interrupt landed.
    assert_transcript(
        "eval_8_a_chatty_endless_loop_is_stopped_by_the_output_cap",
        t,
        &[
            (
                r"(?m)^line 1\nline 2\nline 3\n(?:line \d+\n)*(line \d+)\n",
                "line 1\nline 2\nline 3\n[LINES ELIDED BY THE TEST]\n${1}\n",
            ),
            (
                r"\d+ bytes in about \d+ lines cut",
                "[N] bytes in about [N] lines cut",
            ),
            (
                r"(?m)(cut from the middle of the output …\]\n)(?:.*\n)*?\[interrupted",
                "${1}[THE LAST LINES, AS FAR AS THE LOOP RAN]\n[interrupted",
            ),
        ],
    );
}

#[tokio::test]
async fn eval_8_the_cap_on_one_cell_stops_a_busy_printing_cell() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(60);
    let config = std::fs::read_to_string(root.join("agent-tools.toml")).unwrap();
    write_files(
        &root,
        &[(
            "agent-tools.toml",
            &format!("{config}max_cell_seconds = 2\n"),
        )],
    );
    let server = start(&root).await;
    let mut t = Transcript::new(&root);
    t.call(&server, "eval", cell("kept = 'yes'")).await;
    // It prints every 0.1 s, so only the cap can stop it.
    let stopped = call(
        &mut t,
        &server,
        cell("import time\nwhile True:\n    print('.', end='', flush=True)\n    time.sleep(0.1)"),
    )
    .await;
    // The cap the config sets, which the snapshot shows as a duration.
    assert!(
        stopped.contains("it ran for 2 s (the cap on one cell)"),
        "{stopped}"
    );
    t.call(&server, "eval", cell("kept")).await;
    // As many dots as it printed in those seconds.
    assert_transcript(
        "eval_8_the_cap_on_one_cell_stops_a_busy_printing_cell",
        t,
        &[(r"(?m)^\.+$", "[DOTS]")],
    );
}
