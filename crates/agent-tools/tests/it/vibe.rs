//! Background workers (VIBE-1, VIBE-2, VIBE-3, VIBE-4, VIBE-5, VIBE-6, VIBE-7) through
//! `agent-tools serve --vibe`, driven by an MCP client. The worker commands are shell scripts
//! that speak the worker contract — the brief on stdin, the result on stdout, JSON lines for
//! progress, questions and results — since no agent CLI exists on these machines; everything
//! around them (process groups, files, limits) is real. Each scenario is one transcript
//! snapshot (`snapshots/vibe_*.snap`): every call, and what the model reads back, in text and
//! structure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tools_test_support::{Transcript, snapshot_settings};

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
/// first word says, and the `good` tier at one that echoes its environment and stdin. The
/// workspace, the scripts and the state folder are siblings in one temp folder, which a
/// transcript shows as `[ROOT]`.
struct Setup {
    dir: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
}

impl Setup {
    /// A transcript of a scenario in this setup.
    fn transcript(&self) -> Transcript {
        Transcript::new(self.dir.path())
    }
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
    Setup { dir, root, state }
}

async fn start(setup: &Setup, extra: &[&str]) -> Server {
    let state = setup.state.display().to_string();
    let mut args = vec!["--vibe", "--state-dir", state.as_str()];
    args.extend(extra);
    Server::start(&setup.root, &args, Client::without_elicitation()).await
}

/// The arguments of a spawn whose label is the brief's first word.
fn brief(brief: &str, tier: &str) -> Value {
    json!({"brief": brief, "label": brief.split(' ').next().unwrap(), "tier": tier})
}

/// Spawns a worker for a test about processes rather than answers; returns its id.
async fn spawn(server: &Server, brief_text: &str, tier: &str) -> String {
    let result = server.call("vibe_spawn", brief(brief_text, tier)).await;
    assert!(!is_error(&result), "{}", text(&result));
    result.structured_content.unwrap()["worker_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Spawns a worker, recorded in `t`; returns its id.
async fn spawned(t: &mut Transcript, server: &Server, brief_text: &str, tier: &str) -> String {
    let view = t.call(server, "vibe_spawn", brief(brief_text, tier)).await;
    view["worker_id"].as_str().unwrap_or("none").to_owned()
}

/// Waits for a worker, recorded in `t`; returns the structured answer.
async fn wait(t: &mut Transcript, server: &Server, id: &str, seconds: u64) -> Value {
    t.call(
        server,
        "vibe_wait",
        json!({"worker_id": id, "timeout_seconds": seconds}),
    )
    .await
}

/// Polls the list, outside the transcript, until worker `id`'s run has said its progress: a
/// snapshot that shows a script's first line must not race the script.
async fn until_progress(server: &Server, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = server.call("vibe_list", json!({})).await;
        let said = listed.structured_content.is_some_and(|list| {
            list["workers"].as_array().is_some_and(|workers| {
                workers
                    .iter()
                    .any(|w| w["worker_id"] == id && w["progress"].is_string())
            })
        });
        if said {
            return;
        }
        assert!(Instant::now() < deadline, "{id} said no progress");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Snapshots the transcript `t` as `name`, with this test's own `extra` filters.
fn assert_transcript(name: &str, t: Transcript, extra: &[(&str, &str)]) {
    let transcript = t.finish_with(extra);
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!(name, transcript);
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
    let mut t = setup.transcript();
    // VIBE-2: spawn returns at once while the worker runs.
    let started = Instant::now();
    let sleeper = spawned(&mut t, &server, "sleep for a while", "fast").await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let finisher = spawned(&mut t, &server, "finish the task", "fast").await;
    let view = wait(&mut t, &server, &finisher, 30).await;
    // The result is in a file, not only in memory, and outside the workspace.
    let files = PathBuf::from(view["files"].as_str().unwrap_or_default());
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(files.join("result.json")).unwrap()).unwrap();
    assert_eq!(record["result"], "done: finish the task");
    assert!(
        !files.starts_with(&setup.root),
        "the state folder must be outside the workspace"
    );

    let failing = spawned(&mut t, &server, "fail please", "fast").await;
    wait(&mut t, &server, &failing, 30).await;

    // A question, answered by a send (VIBE-3).
    let asker = spawned(&mut t, &server, "ask something", "fast").await;
    wait(&mut t, &server, &asker, 30).await;
    t.call(
        &server,
        "vibe_send",
        json!({"worker_id": asker, "message": "answer: Postgres"}),
    )
    .await;
    wait(&mut t, &server, &asker, 30).await;

    // A chatty worker: its result is capped, and the cut is counted.
    let chatty = spawned(&mut t, &server, "chatty worker", "fast").await;
    wait(&mut t, &server, &chatty, 30).await;

    // VIBE-4: a wait that times out is not an error and leaves the worker running.
    until_progress(&server, &sleeper).await;
    let arguments = json!({"worker_id": sleeper, "timeout_seconds": 1});
    let waited = server.call("vibe_wait", arguments.clone()).await;
    t.record_mcp("vibe_wait", &arguments, &waited);
    // The second the call asked for, which the snapshot shows as a duration.
    assert!(
        text(&waited).contains("still running after waiting 1s"),
        "{}",
        text(&waited)
    );

    // VIBE-6: the list shows all of them.
    t.call(&server, "vibe_list", json!({})).await;

    // VIBE-5: kill stops the sleeper's whole group; killing again changes nothing.
    t.call(&server, "vibe_kill", json!({"worker_id": sleeper}))
        .await;
    let left = until_processes(&server.mark, |found| {
        !found.iter().any(|p| p.contains("sleep"))
    })
    .await;
    assert!(!left.iter().any(|p| p.contains("sleep")), "{left:?}");
    t.note("no process of the sleeper is left");
    t.call(&server, "vibe_kill", json!({"worker_id": sleeper}))
        .await;
    // The 305 lines of the chatty worker's result kept before the cut, shown by their first
    // three and their last.
    let elide = (
        r"line 3 of a chatty worker, padded to be long enough(\n|\\n)(?:line \d+ of a chatty worker, padded to be long enough(?:\n|\\n))*(line \d+ of a chatty worker, padded to be long enough(?:\n|\\n)\[output cut)",
        "[LINES ELIDED BY THE TEST]${1}${2}",
    );
    assert_transcript(
        "vibe_2_to_6_workers_finish_fail_ask_print_a_lot_and_are_listed",
        t,
        &[elide],
    );
}

#[tokio::test]
async fn vibe_3_a_send_to_a_running_worker_stops_it_and_reruns_with_the_whole_brief() {
    let setup = setup(4);
    let server = start(&setup, &[]).await;
    let mut t = setup.transcript();
    let id = spawned(&mut t, &server, "sleep then echo", "fast").await;
    t.call(
        &server,
        "vibe_send",
        json!({"worker_id": id, "message": "echo this instead"}),
    )
    .await;
    // The brief now begins with "sleep", so it sleeps again: its brief file shows both parts.
    until_progress(&server, &id).await;
    let view = wait(&mut t, &server, &id, 1).await;
    let brief = std::fs::read_to_string(
        Path::new(view["files"].as_str().unwrap_or_default()).join("brief.txt"),
    )
    .unwrap();
    assert_eq!(brief, "sleep then echo\n\necho this instead");
    t.call(&server, "vibe_kill", json!({"worker_id": id})).await;
    // An echo worker gets the whole brief on stdin.
    let echo = spawned(&mut t, &server, "echo first", "fast").await;
    wait(&mut t, &server, &echo, 30).await;
    t.call(
        &server,
        "vibe_send",
        json!({"worker_id": echo, "message": "second"}),
    )
    .await;
    wait(&mut t, &server, &echo, 30).await;
    assert_transcript(
        "vibe_3_a_send_to_a_running_worker_stops_it_and_reruns_with_the_whole_brief",
        t,
        &[],
    );
}

/// VIBE-2 beyond `max_workers`, and VIBE-7: a worker of a tier runs that tier's command,
/// with the contract's environment.
#[tokio::test]
async fn vibe_2_workers_queue_beyond_max_workers_and_get_the_callers_surface() {
    let setup = setup(2);
    let server = start(&setup, &[]).await;
    let mut t = setup.transcript();
    let first = spawned(&mut t, &server, "sleep one", "fast").await;
    let second = spawned(&mut t, &server, "sleep two", "fast").await;
    let third = spawned(&mut t, &server, "sleep three", "fast").await;
    let fourth = spawned(&mut t, &server, "sleep four", "fast").await;
    until_progress(&server, &first).await;
    until_progress(&server, &second).await;
    t.call(&server, "vibe_list", json!({})).await;
    // A slot frees: the oldest queued worker starts.
    t.call(&server, "vibe_kill", json!({"worker_id": first}))
        .await;
    until_progress(&server, &third).await;
    wait(&mut t, &server, &third, 1).await;
    wait(&mut t, &server, &fourth, 1).await;
    // The queued one first, so that no kill starts it.
    for id in [&fourth, &second, &third] {
        t.call(&server, "vibe_kill", json!({"worker_id": id})).await;
    }
    // The environment of the contract; a full run's worker may do everything.
    let good = spawned(&mut t, &server, "report", "good").await;
    wait(&mut t, &server, &good, 30).await;
    // A plan run's workers are capped at plan.
    let plan = start(&setup, &["--surface", "plan"]).await;
    t.note("a second server, started with --surface plan");
    let id = spawned(&mut t, &plan, "report", "good").await;
    wait(&mut t, &plan, &id, 30).await;
    assert_transcript(
        "vibe_2_workers_queue_beyond_max_workers_and_get_the_callers_surface",
        t,
        &[],
    );
}

#[tokio::test]
async fn vibe_7_a_tier_with_no_command_says_what_to_configure() {
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
    let mut t = setup.transcript();
    t.call(&server, "vibe_spawn", json!({"brief": "x", "label": "x"}))
        .await;
    t.call(&server, "vibe_wait", json!({"worker_id": "w9"}))
        .await;
    assert_transcript(
        "vibe_7_a_tier_with_no_command_says_what_to_configure",
        t,
        &[],
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
    let mut t = setup.transcript();
    let view = t
        .call(
            &server,
            "vibe_spawn",
            json!({"brief": "pause then finish", "label": "pause"}),
        )
        .await;
    let files = PathBuf::from(view["files"].as_str().unwrap_or_default());
    // The next worker's brief file is taken by a folder: the spawn is refused, saying where.
    std::fs::create_dir_all(files.with_file_name("w2").join("brief.txt")).unwrap();
    t.note("a folder stands where w2's brief.txt would go");
    t.call(
        &server,
        "vibe_spawn",
        json!({"brief": "finish", "label": "second"}),
    )
    .await;
    // The running worker's brief file too: the send is refused and changes nothing.
    std::fs::remove_file(files.join("brief.txt")).unwrap();
    std::fs::create_dir(files.join("brief.txt")).unwrap();
    t.note("a folder replaces w1's brief.txt");
    t.call(
        &server,
        "vibe_send",
        json!({"worker_id": "w1", "message": "more"}),
    )
    .await;
    // Its result file: the worker completes, and its reason says the file is missing.
    std::fs::create_dir(files.join("result.json")).unwrap();
    t.note("a folder stands where w1's result.json would go");
    wait(&mut t, &server, "w1", 30).await;
    assert_transcript(
        "vibe_a_worker_file_that_cannot_be_written_is_reported",
        t,
        &[],
    );
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
async fn vibe_4_a_long_wait_is_a_task_and_cancelling_it_leaves_the_worker_running() {
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
    let mut t = setup.transcript();
    let arguments = brief("sleep for a while", "fast");
    let (spawned, _) = crate::protocol::call_to_end(&server, "vibe_spawn", arguments.clone()).await;
    let view = t.record_mcp("vibe_spawn", &arguments, &spawned);
    let id = view["worker_id"].as_str().unwrap_or("none").to_owned();
    until_progress(&server, &id).await;
    // A five-second wait outlasts the grace: a task, polled to its "still running" end.
    let arguments = json!({"worker_id": id, "timeout_seconds": 5});
    let (waited, as_task) =
        crate::protocol::call_to_end(&server, "vibe_wait", arguments.clone()).await;
    assert!(as_task, "a 5 s wait is a task");
    t.note("the wait is a task, polled to its end");
    t.record_mcp("vibe_wait", &arguments, &waited);
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
    t.note("a second wait, of a minute, is a task the client cancels");
    let (listed, _) = crate::protocol::call_to_end(&server, "vibe_list", json!({})).await;
    t.record_mcp("vibe_list", &json!({}), &listed);
    let arguments = json!({"worker_id": id});
    let (killed, _) = crate::protocol::call_to_end(&server, "vibe_kill", arguments.clone()).await;
    t.record_mcp("vibe_kill", &arguments, &killed);
    assert_transcript(
        "vibe_4_a_long_wait_is_a_task_and_cancelling_it_leaves_the_worker_running",
        t,
        &[],
    );
}
