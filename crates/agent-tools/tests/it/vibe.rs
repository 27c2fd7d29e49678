//! Background workers (VIBE-1…7) through `agent-tools serve --vibe`, driven by an MCP client.
//! The worker commands are shell scripts that speak the worker contract — the brief on stdin,
//! the result on stdout, JSON lines for progress, questions and results — since no agent CLI
//! exists on these machines; everything around them (process groups, files, limits) is real.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Client, Server, is_error, marked_processes, text, until_processes};

/// Writes an executable script.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A workspace whose config points the `fast` tier at a script that does what the brief's
/// first word says, and the `good` tier at one that echoes its environment and stdin.
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
}

fn setup(max_workers: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    let bin = dir.path().join("bin");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let fast = script(
        &bin,
        "fast-worker",
        r#"brief=$(cat)
case "$brief" in
  finish*) echo '{"type":"progress","text":"reading the brief"}'; echo "done: $brief" ;;
  fail*) echo "partial work"; echo "it broke" >&2; exit 3 ;;
  sleep*) echo '{"type":"progress","text":"sleeping"}'; sleep 300 & wait ;;
  ask*)
    case "$brief" in
      *answer:*) echo '{"type":"result","text":"got the answer"}' ;;
      *) echo '{"type":"needs_input","question":"Which database?"}' ;;
    esac ;;
  chatty*) i=0; while [ $i -lt 3000 ]; do echo "line $i of a chatty worker, padded to be long enough"; i=$((i+1)); done ;;
  echo*) printf '%s' "$brief" ;;
  pause*) sleep 2; echo "paused and done" ;;
  daemon*) setsid sleep 309 & sleep 300 & wait ;;
  *) echo "unknown brief" ;;
esac
"#,
    );
    let good = script(
        &bin,
        "good-worker",
        "cat >/dev/null; echo \"id=$AGENT_TOOLS_WORKER_ID tier=$AGENT_TOOLS_TIER surface=$AGENT_TOOLS_SURFACE pwd=$(pwd)\"\n",
    );
    std::fs::write(
        root.join("agent-tools.toml"),
        format!(
            "[vibe]\nfast = [{:?}]\ngood = [{:?}]\nmax_workers = {max_workers}\n",
            fast.display().to_string(),
            good.display().to_string()
        ),
    )
    .unwrap();
    Setup {
        _dir: dir,
        root,
        state,
    }
}

async fn start(setup: &Setup, extra: &[&str]) -> Server {
    let state = setup.state.display().to_string();
    let mut args = vec!["--vibe", "--state-dir", state.as_str()];
    args.extend(extra);
    Server::start(&setup.root, &args, Client::without_elicitation()).await
}

async fn ok(server: &Server, tool: &str, arguments: Value) -> (String, Value) {
    let result = server.call(tool, arguments.clone()).await;
    assert!(!is_error(&result), "{tool} {arguments}: {}", text(&result));
    (text(&result), result.structured_content.clone().unwrap())
}

async fn spawn(server: &Server, brief: &str, tier: &str) -> String {
    let (_, view) = ok(
        server,
        "vibe_spawn",
        json!({"brief": brief, "label": brief.split(' ').next().unwrap(), "tier": tier}),
    )
    .await;
    view["worker_id"].as_str().unwrap().to_owned()
}

async fn wait(server: &Server, id: &str, seconds: u64) -> (String, Value) {
    ok(
        server,
        "vibe_wait",
        json!({"worker_id": id, "timeout_seconds": seconds}),
    )
    .await
}

#[tokio::test]
async fn vibe_1_the_tools_exist_only_in_vibe_mode() {
    let setup = setup(4);
    let plain = Server::start(&setup.root, &[], Client::without_elicitation()).await;
    let names = plain.tool_names().await;
    assert!(!names.iter().any(|n| n.starts_with("vibe_")), "{names:?}");
    let vibe = start(&setup, &[]).await;
    let names = vibe.tool_names().await;
    for tool in [
        "vibe_spawn",
        "vibe_send",
        "vibe_wait",
        "vibe_kill",
        "vibe_list",
    ] {
        assert!(names.iter().any(|n| n == tool), "{tool} missing: {names:?}");
    }
}

#[tokio::test]
async fn vibe_2_to_6_workers_finish_fail_ask_print_a_lot_and_are_listed() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    // VIBE-2: spawn returns at once while the worker runs.
    let started = Instant::now();
    let sleeper = spawn(&server, "sleep for a while", "fast").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let finisher = spawn(&server, "finish the task", "fast").await;
    let (shown, view) = wait(&server, &finisher, 30).await;
    assert_eq!(view["status"], "completed", "{shown}");
    assert_eq!(view["result"], "done: finish the task");
    assert!(shown.contains("Result:\ndone: finish the task"), "{shown}");
    // The result is in a file, not only in memory.
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(view["files"].as_str().unwrap()).join("result.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["result"], "done: finish the task");
    assert!(
        !Path::new(view["files"].as_str().unwrap()).starts_with(&setup.root),
        "the state folder must be outside the workspace"
    );

    let failing = spawn(&server, "fail please", "fast").await;
    let (shown, view) = wait(&server, &failing, 30).await;
    assert_eq!(view["status"], "failed", "{shown}");
    assert!(
        shown.contains("the worker exited with exit status: 3; its stderr ended with:\nit broke"),
        "{shown}"
    );
    assert!(shown.contains("partial work"), "{shown}");

    // A question, answered by a send (VIBE-3).
    let asker = spawn(&server, "ask something", "fast").await;
    let (shown, view) = wait(&server, &asker, 30).await;
    assert_eq!(view["status"], "needs_input", "{shown}");
    assert_eq!(view["question"], "Which database?");
    let (sent, _) = ok(
        &server,
        "vibe_send",
        json!({"worker_id": asker, "message": "answer: Postgres"}),
    )
    .await;
    assert!(sent.contains("started it again"), "{sent}");
    let (shown, view) = wait(&server, &asker, 30).await;
    assert_eq!(view["status"], "completed", "{shown}");
    assert_eq!(view["result"], "got the answer");
    assert_eq!(view["runs"], 2);

    // A chatty worker: its result is capped, and the cut is counted.
    let chatty = spawn(&server, "chatty worker", "fast").await;
    let (shown, _) = wait(&server, &chatty, 30).await;
    assert!(
        shown.contains("[output cut: "),
        "{}",
        &shown[shown.len().saturating_sub(300)..]
    );
    assert!(shown.contains("more bytes not shown; the whole transcript is in"));

    // VIBE-4: a wait that times out is not an error and leaves the worker running.
    let (shown, view) = wait(&server, &sleeper, 1).await;
    assert_eq!(view["status"], "running", "{shown}");
    assert!(shown.contains("still running after waiting 1s"), "{shown}");
    assert!(shown.contains("Latest progress: sleeping"), "{shown}");

    // VIBE-6: the list shows all of them.
    let (listed, list) = ok(&server, "vibe_list", json!({})).await;
    assert_eq!(list["workers"].as_array().unwrap().len(), 5, "{listed}");
    assert!(
        listed.starts_with("5 workers: 3 completed, 1 failed, 1 running"),
        "{listed}"
    );
    assert!(listed.contains("\"fail\" (fast): failed"), "{listed}");

    // VIBE-5: kill stops the sleeper's whole group; killing again changes nothing.
    let (killed, view) = ok(&server, "vibe_kill", json!({"worker_id": sleeper})).await;
    assert_eq!(view["status"], "killed", "{killed}");
    let left = until_processes(&server.mark, |found| {
        !found.iter().any(|p| p.contains("sleep"))
    })
    .await;
    assert!(!left.iter().any(|p| p.contains("sleep")), "{left:?}");
    let (again, _) = ok(&server, "vibe_kill", json!({"worker_id": sleeper})).await;
    assert!(again.contains("had already ended (killed)"), "{again}");
}

#[tokio::test]
async fn vibe_3_a_send_to_a_running_worker_stops_it_and_reruns_with_the_whole_brief() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    let id = spawn(&server, "sleep then echo", "fast").await;
    let (sent, _) = ok(
        &server,
        "vibe_send",
        json!({"worker_id": id, "message": "echo this instead"}),
    )
    .await;
    assert!(
        sent.contains("stopped its running command and started it again"),
        "{sent}"
    );
    // The brief now begins with "sleep", so it sleeps again: its brief file shows both parts.
    let (_, view) = wait(&server, &id, 1).await;
    let brief =
        std::fs::read_to_string(Path::new(view["files"].as_str().unwrap()).join("brief.txt"))
            .unwrap();
    assert_eq!(brief, "sleep then echo\n\necho this instead");
    ok(&server, "vibe_kill", json!({"worker_id": id})).await;
    // An echo worker gets the whole brief on stdin.
    let echo = spawn(&server, "echo first", "fast").await;
    wait(&server, &echo, 30).await;
    ok(
        &server,
        "vibe_send",
        json!({"worker_id": echo, "message": "second"}),
    )
    .await;
    let (_, view) = wait(&server, &echo, 30).await;
    assert_eq!(view["result"], "echo first\n\nsecond");
}

#[tokio::test]
async fn vibe_workers_queue_beyond_max_workers_and_get_the_callers_surface() {
    let setup = setup(2);
    let server = start(&setup, &[]).await;
    let first = spawn(&server, "sleep one", "fast").await;
    let second = spawn(&server, "sleep two", "fast").await;
    let third = spawn(&server, "sleep three", "fast").await;
    let fourth = spawn(&server, "sleep four", "fast").await;
    let (listed, list) = ok(&server, "vibe_list", json!({})).await;
    let statuses: Vec<&str> = list["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["running", "running", "queued", "queued"],
        "{listed}"
    );
    // A slot frees: the oldest queued worker starts.
    ok(&server, "vibe_kill", json!({"worker_id": first})).await;
    let (_, view) = wait(&server, &third, 1).await;
    assert_eq!(view["status"], "running");
    let (_, view) = wait(&server, &fourth, 1).await;
    assert_eq!(view["status"], "queued");
    for id in [&second, &third, &fourth] {
        ok(&server, "vibe_kill", json!({"worker_id": id})).await;
    }
    // The environment of the contract; a full run's worker may do everything.
    let good = spawn(&server, "report", "good").await;
    let (_, view) = wait(&server, &good, 30).await;
    let result = view["result"].as_str().unwrap().to_owned();
    assert!(
        result.starts_with(&format!("id={good} tier=good surface=full pwd=")),
        "{result}"
    );
    assert!(result.ends_with(&setup.root.canonicalize().unwrap().display().to_string()));
    // A plan run's workers are capped at plan.
    let plan = start(&setup, &["--surface", "plan"]).await;
    let id = spawn(&plan, "report", "good").await;
    let (_, view) = wait(&plan, &id, 30).await;
    assert!(
        view["result"].as_str().unwrap().contains("surface=plan"),
        "{view}"
    );
}

#[tokio::test]
async fn vibe_a_tier_with_no_command_says_what_to_configure() {
    let setup = setup(4);
    std::fs::write(
        setup.root.join("agent-tools.toml"),
        "[vibe]\nenabled = true\n",
    )
    .unwrap();
    let server = Server::start(
        &setup.root,
        &["--state-dir", &setup.state.display().to_string()],
        Client::without_elicitation(),
    )
    .await;
    let result = server
        .call("vibe_spawn", json!({"brief": "x", "label": "x"}))
        .await;
    assert!(is_error(&result));
    assert!(
        text(&result).starts_with(
            "no command is configured for `fast` workers; add one to agent-tools.toml, e.g.\n[vibe]\nfast = "
        ),
        "{}",
        text(&result)
    );
    let unknown = server.call("vibe_wait", json!({"worker_id": "w9"})).await;
    assert_eq!(
        text(&unknown),
        "there is no worker w9: none was spawned in this run"
    );
}

/// A worker's files are written off the async threads and a failed write is said, never
/// dropped: a brief that cannot be saved refuses the spawn or the send, and a result that
/// cannot be saved is named in the worker's reason. Root ignores permission bits, so a
/// folder stands where the file should go.
#[tokio::test]
async fn vibe_a_worker_file_that_cannot_be_written_is_reported() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    let (_, view) = ok(
        &server,
        "vibe_spawn",
        json!({"brief": "pause then finish", "label": "pause"}),
    )
    .await;
    let files = PathBuf::from(view["files"].as_str().unwrap());
    // The next worker's brief file is taken by a folder: the spawn is refused, saying where.
    std::fs::create_dir_all(files.with_file_name("w2").join("brief.txt")).unwrap();
    let refused = server
        .call("vibe_spawn", json!({"brief": "finish", "label": "second"}))
        .await;
    assert!(is_error(&refused), "{}", text(&refused));
    assert!(
        text(&refused).contains("cannot write the worker's brief to ")
            && text(&refused).contains("w2/brief.txt: Is a directory"),
        "{}",
        text(&refused)
    );
    // The running worker's brief file too: the send is refused and changes nothing.
    std::fs::remove_file(files.join("brief.txt")).unwrap();
    std::fs::create_dir(files.join("brief.txt")).unwrap();
    let unsent = server
        .call("vibe_send", json!({"worker_id": "w1", "message": "more"}))
        .await;
    assert!(is_error(&unsent), "{}", text(&unsent));
    assert!(
        text(&unsent).contains("brief.txt: Is a directory (os error 21); the message was not sent"),
        "{}",
        text(&unsent)
    );
    // Its result file: the worker completes, and its reason says the file is missing.
    std::fs::create_dir(files.join("result.json")).unwrap();
    let (said, view) = wait(&server, "w1", 30).await;
    assert_eq!(view["status"], json!("completed"), "{said}");
    assert_eq!(view["result"], json!("paused and done"), "{said}");
    let reason = view["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("its result could not be written to ")
            && reason.ends_with("result.json: Is a directory (os error 21)"),
        "{view}"
    );
    assert!(said.contains(reason), "the text says it too: {said}");
}

#[tokio::test]
async fn vibe_no_worker_outlives_the_server() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    spawn(&server, "sleep long", "fast").await;
    spawn(&server, "sleep longer", "fast").await;
    let running = until_processes(&server.mark, |found| {
        found.iter().filter(|p| p.contains("sleep 300")).count() >= 2
    })
    .await;
    assert!(
        running.iter().filter(|p| p.contains("sleep 300")).count() >= 2,
        "{running:?}"
    );
    let mark = server.mark.clone();
    // SIGTERM, as a client's supervisor would send.
    let pid = rustix::process::Pid::from_raw(server.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let left = until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = marked_processes(&mark);
}

/// A worker whose own child left its group and session (a daemon), and `serve` SIGKILLed:
/// the worker gets its parent-death signal, and the daemon ends with the worker's PID
/// namespace (issue 22).
#[tokio::test]
async fn vibe_no_worker_or_its_daemon_outlives_a_killed_server() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    spawn(&server, "daemon please", "fast").await;
    let running = until_processes(&server.mark, |found| {
        found.iter().any(|p| p.ends_with("sleep 309"))
            && found.iter().any(|p| p.ends_with("sleep 300"))
    })
    .await;
    assert!(
        running.iter().any(|p| p.ends_with("sleep 309")),
        "{running:?}"
    );
    crate::lifecycle::sigkill_and_expect_nothing_left(&server, "a worker and its daemon").await;
}

#[tokio::test]
async fn vibe_3_a_long_wait_is_a_task_and_cancelling_it_leaves_the_worker_running() {
    let setup = setup(4);
    let state = setup.state.display().to_string();
    let server = Server::start(
        &setup.root,
        &["--vibe", "--state-dir", state.as_str()],
        Client::without_elicitation()
            .in_era(crate::support::Era::Discover)
            .with_tasks(),
    )
    .await;
    let (spawned, _) = crate::protocol::call_to_end(
        &server,
        "vibe_spawn",
        json!({"brief": "sleep for a while", "label": "sleep", "tier": "fast"}),
    )
    .await;
    let view = spawned.structured_content.unwrap();
    let id = view["worker_id"].as_str().unwrap().to_owned();
    // A five-second wait outlasts the grace: a task, polled to its "still running" end.
    let (waited, as_task) = crate::protocol::call_to_end(
        &server,
        "vibe_wait",
        json!({"worker_id": id, "timeout_seconds": 5}),
    )
    .await;
    assert!(as_task, "a 5 s wait is a task");
    assert_eq!(
        waited.structured_content.clone().unwrap()["status"],
        "running",
        "{}",
        text(&waited)
    );
    // Cancelling a waiting task ends the wait, not the worker.
    let task = crate::protocol::task_of(
        &server,
        "vibe_wait",
        json!({"worker_id": id, "timeout_seconds": 60}),
    )
    .await;
    let cancelled = crate::protocol::cancelled(&server, &task).await;
    assert!(
        matches!(cancelled.payload, rmcp::model::TaskPayload::Cancelled),
        "{:?}",
        cancelled.payload
    );
    let (listed, _) = crate::protocol::call_to_end(&server, "vibe_list", json!({})).await;
    assert!(text(&listed).contains("running"), "{}", text(&listed));
    crate::protocol::call_to_end(&server, "vibe_kill", json!({"worker_id": id})).await;
}
