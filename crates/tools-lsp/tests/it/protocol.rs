//! The client's side of the protocol against a scripted server (a short Python program), for
//! what real servers do not do on demand: hang, crash at start, stay busy, speak only
//! UTF-16, send requests and odd notifications of their own.

use serde_json::{Value, json};
use tools_lsp::{LspConfig, ServerOverride};

use crate::support::{Fixture, assert_transcript, only, run};

/// A language server in a few lines: answers `initialize` (after sending the client
/// requests and notifications of its own), answers `hover` with the position it received,
/// and logs what it gets back. The mode (argv[1]) makes it hang, crash, or stay busy.
const FAKE_SERVER: &str = r#"
import json, os, sys
mode = sys.argv[1]
log = open(os.environ["FAKE_LOG"], "a")
def note(entry):
    log.write(json.dumps(entry) + "\n"); log.flush()
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        key, value = line.split(b":", 1)
        if key.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(message):
    message["jsonrpc"] = "2.0"
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    message = read()
    method = message.get("method")
    if method is None:
        note({"answer": message.get("id"), "result": message.get("result"), "error": message.get("error")})
    elif method == "initialize":
        if mode == "crash":
            sys.stderr.write("fake: cannot start today\n"); sys.stderr.flush()
            sys.exit(3)
        send({"id": "progress", "method": "window/workDoneProgress/create", "params": {"token": "index"}})
        send({"id": "config", "method": "workspace/configuration", "params": {"items": [{"section": "fake"}, {"section": "other"}]}})
        send({"id": "register", "method": "client/registerCapability", "params": {"registrations": []}})
        send({"id": "unknown", "method": "custom/somethingNew", "params": {}})
        send({"method": "custom/notification", "params": {"x": 1}})
        send({"method": "$/progress", "params": {"token": "index", "value": 3}})
        send({"method": "textDocument/publishDiagnostics", "params": {"uri": 7, "diagnostics": "nonsense"}})
        capabilities = {"hoverProvider": True}
        if mode == "utf8":
            capabilities["positionEncoding"] = "utf-8"
        send({"id": message["id"], "result": {"capabilities": capabilities}})
        if mode == "busy":
            send({"method": "$/progress", "params": {"token": "index", "value": {"kind": "begin", "title": "Indexing", "message": "3/10", "percentage": 30}}})
        else:
            send({"method": "$/progress", "params": {"token": "index", "value": {"kind": "end"}}})
    elif method == "textDocument/hover":
        position = message["params"]["position"]
        if mode == "hang":
            note({"hover": message["id"]})
            continue
        send({"id": message["id"], "result": {"contents": {"kind": "plaintext", "value": "%d:%d" % (position["line"], position["character"])}}})
    elif method == "$/cancelRequest":
        note({"cancel": message["params"]["id"]})
    elif method == "shutdown":
        send({"id": message["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
"#;

/// A workspace with the fake server configured in `mode`, and `config` tweaks. The script
/// runs with `python3 -c`; it logs to `fake.log` in the root (its working folder).
fn fake(mode: &str, tweak: impl FnOnce(&mut LspConfig)) -> Fixture {
    let mut config = LspConfig::default();
    config.servers.insert(
        "fake".into(),
        ServerOverride {
            command: Some(vec![
                "python3".into(),
                "-c".into(),
                FAKE_SERVER.into(),
                mode.into(),
            ]),
            extensions: Some(vec!["fake".into()]),
            markers: Some(vec!["fake.toml".into()]),
            env: [("FAKE_LOG".to_owned(), "fake.log".to_owned())].into(),
            settings: Some(json!({"fake": {"answer": 42}})),
            ..ServerOverride::default()
        },
    );
    tweak(&mut config);
    // Only the fake server: `status` then lists nothing this machine happens to have.
    Fixture::temp_with(
        "//- /fake.toml\n//- /src/main.fake\nlet s = \"é𝄞\"; call(s);\n",
        only("fake", config),
    )
}

/// Whether the fake server can run: it is a Python program.
fn python() -> bool {
    tools_test_support::program_available("python3", "apt-get install python3")
}

fn log(fx: &Fixture) -> Vec<Value> {
    std::fs::read_to_string(fx.root.join("fake.log"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn hover() -> Value {
    json!({"operation": "hover", "path": "src/main.fake", "line": 1, "symbol": "call"})
}

#[test]
fn lsp_2_server_requests_are_answered_and_odd_messages_do_not_stop_the_loop() {
    if !python() {
        return;
    }
    run(async {
        let fx = fake("normal", |_| {});
        let mut t = fx.scenario();
        t.lsp(hover()).await;
        // The malformed notifications did not stop the loop: a second request works too.
        t.lsp(hover()).await;
        assert_transcript!(t);
        // What the model does not read: the answers the server got to its own requests.
        let answers: Vec<Value> = log(&fx)
            .into_iter()
            .filter(|entry| entry.get("answer").is_some())
            .collect();
        let answer = |id: &str| {
            answers
                .iter()
                .find(|entry| entry["answer"] == id)
                .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"))
                .clone()
        };
        assert_eq!(answer("progress")["result"], Value::Null);
        assert_eq!(answer("config")["result"], json!([{"answer": 42}, null]));
        assert_eq!(answer("register")["result"], Value::Null);
        assert_eq!(answer("unknown")["error"]["code"], -32601);
    });
}

#[test]
fn lsp_3_positions_are_utf16_for_a_server_that_does_not_speak_utf8() {
    if !python() {
        return;
    }
    run(async {
        // `let s = "é𝄞"; call(s);`: `call` starts at byte 18, UTF-16 unit 15. The fake server
        // answers a hover with the position it received.
        let utf16 = fake("normal", |_| {});
        let mut t = utf16.scenario();
        t.lsp(hover()).await;
        let utf8 = fake("utf8", |_| {});
        let mut t = t.then_on(&utf8);
        t.note("the same file, with a server that says it speaks UTF-8");
        t.lsp(hover()).await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_a_hung_request_times_out_naming_server_and_method_and_is_cancelled() {
    if !python() {
        return;
    }
    run(async {
        let fx = fake("hang", |config| config.request_timeout_seconds = 1);
        let mut t = fx.scenario();
        let result = t.lsp(hover()).await;
        assert_transcript!(t);
        // The transcript hides durations, the configured window among them.
        assert!(
            result.text.contains("within 1s; the request was cancelled"),
            "{}",
            result.text
        );
        // The cancel goes out as the request is dropped; give the server a moment to log it.
        let mut entries = log(&fx);
        for _ in 0..50 {
            if entries.iter().any(|e| e.get("cancel").is_some()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            entries = log(&fx);
        }
        let asked = entries.iter().find_map(|e| e.get("hover")).unwrap().clone();
        let cancelled = entries.iter().find_map(|e| e.get("cancel")).cloned();
        assert_eq!(cancelled, Some(asked), "{entries:?}");
    });
}

#[test]
fn lsp_2_a_server_that_keeps_crashing_uses_up_its_restart_budget() {
    if !python() {
        return;
    }
    run(async {
        let fx = fake("crash", |config| config.restart_budget = 2);
        let mut t = fx.scenario();
        for _ in 0..3 {
            t.lsp(hover()).await;
        }
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_2_requests_wait_for_indexing_and_say_when_they_gave_up() {
    if !python() {
        return;
    }
    run(async {
        let fx = fake("busy", |config| config.index_timeout_seconds = 1);
        let mut t = fx.scenario();
        let result = t.lsp(hover()).await;
        t.lsp(json!({"operation": "status"})).await;
        assert_transcript!(t);
        // The transcript hides durations, the configured window among them.
        assert!(
            result
                .text
                .contains("fake was still busy after 1s (Indexing"),
            "{}",
            result.text
        );
    });
}

#[test]
fn lsp_5_the_project_checker_is_capped_with_counts_per_file() {
    if !python() {
        return;
    }
    run(async {
        let script = "for i in range(150): \
                      print(('src/main.fake' if i < 120 else 'fake.toml') + ':1: warning: w%d' % i)";
        let fx = fake("normal", |config| {
            let fake = config.servers.get_mut("fake").unwrap();
            fake.checker = Some(vec!["python3".into(), "-c".into(), script.into()]);
            fake.checker_format = Some(tools_lsp::CheckerFormat::Lines);
        });
        let mut t = fx.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        // A folder prefix and a severity keep what matters; `offset` pages on.
        t.lsp(json!({"operation": "diagnostics", "path": "src/*", "severity": "warning", "max_results": 5, "offset": 115}))
            .await;
        t.lsp(json!({"operation": "diagnostics", "path": "*", "severity": "error"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_3_a_client_that_names_the_file_by_its_old_name_is_answered_alike() {
    if !python() {
        return;
    }
    run(async {
        let fx = fake("normal", |_| {});
        let mut t = fx.scenario();
        let old = t
            .lsp(
                json!({"operation": "hover", "file": "src/main.fake", "line": 1, "symbol": "call"}),
            )
            .await;
        let new = t.lsp(hover()).await;
        t.lsp(json!({
            "operation": "hover", "path": "src/main.fake", "file": "src/main.fake", "line": 1,
            "symbol": "call"
        }))
        .await;
        assert_transcript!(t);
        assert_eq!(old.text, new.text);
        assert_eq!(old.structured, new.structured);
    });
}
