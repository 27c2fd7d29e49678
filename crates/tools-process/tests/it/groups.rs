//! Process groups: a child and everything it starts go together, on drop, terminate and kill.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tools_process::{Command, Error, Output, live_groups};

use crate::support::{eventually, mark, marked_sh, running_with};

const GRANDCHILDREN: &str = "sleep 100 & sleep 100 & wait";
const SIGTERM: i32 = 15;

/// Spawns `sh` with two sleeping children and waits until all three run.
async fn family(mark: &str) -> tools_process::Child {
    let child = marked_sh(GRANDCHILDREN, mark).spawn().unwrap();
    eventually("the shell and its two sleeps run", || {
        running_with(mark).len() == 3
    })
    .await;
    for process in running_with(mark) {
        assert_eq!(process.pgid, child.pid(), "{process:?} is not in the group");
    }
    child
}

#[tokio::test]
async fn dropping_a_child_kills_its_whole_group() {
    let mark = mark("drop");
    let child = family(&mark).await;
    drop(child);
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn terminate_ends_the_whole_group_with_sigterm() {
    let mark = mark("terminate");
    let mut child = family(&mark).await;
    let ended = child.terminate().await.unwrap();
    assert!(!ended.killed, "a shell and sleeps end on SIGTERM");
    assert_eq!(ended.status.signal(), Some(SIGTERM));
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
    let mark = mark("ignores-term");
    // An ignored signal stays ignored across exec, so the sleep ignores it too.
    let mut child = marked_sh("trap '' TERM; sleep 100 & echo ready; wait", &mark)
        .stdout(Output::Piped)
        .grace(Duration::from_millis(200))
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.take_stdout().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
    let ended = child.terminate().await.unwrap();
    assert!(ended.killed);
    assert_eq!(ended.status.signal(), Some(9));
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn kill_ends_the_whole_group_at_once() {
    let mark = mark("kill");
    let mut child = family(&mark).await;
    child.kill();
    assert_eq!(child.wait().await.unwrap().signal(), Some(9));
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn the_parts_of_a_child_are_owned_apart() {
    let mark = mark("parts");
    let child = family(&mark).await;
    let pid = child.pid();
    let parts = child.into_parts();
    let mut leader = parts.leader;
    assert_eq!(leader.pid(), pid);
    assert_eq!(parts.group.pgid(), pid);
    assert!(parts.group.leader_runs());
    assert!(parts.group.is_alive());
    // The group's owner goes away while someone still waits on the leader.
    drop(parts.group);
    assert_eq!(leader.wait().await.unwrap().signal(), Some(9));
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn live_groups_are_the_groups_a_handle_owns() {
    let mark = mark("live");
    let mut child = family(&mark).await;
    let pgid = child.pid();
    let live = live_groups();
    let ours = live.iter().find(|group| group.pgid == pgid).unwrap();
    assert_eq!(ours.command, format!("sh -c '{GRANDCHILDREN}'"));
    child.kill();
    child.wait().await.unwrap();
    assert!(!child.group().leader_runs());
    drop(child);
    assert!(live_groups().iter().all(|group| group.pgid != pgid));
}

#[tokio::test]
async fn the_environment_is_set_removed_and_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let limits = tools_process::RunLimits {
        timeout: Duration::from_secs(60),
        max_output_bytes: 1024,
    };
    let set = Command::new("sh", dir.path())
        .args(["-c", r#"echo "$A|${HOME-unset}|$(pwd)""#])
        .env("A", "1")
        .env_remove("HOME");
    let output = tools_process::run_to_end(&set, None, limits).await.unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(output.stdout_text(), format!("1|unset|{}\n", cwd.display()));

    let cleared = Command::new("/usr/bin/env", dir.path())
        .env("DROPPED", "1")
        .env_clear()
        .env("ONLY", "this");
    let output = tools_process::run_to_end(&cleared, None, limits)
        .await
        .unwrap();
    assert_eq!(output.stdout_text(), "ONLY=this\n");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_an_error_naming_it_and_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let error = Command::new("no-such-program-anywhere", dir.path())
        .arg("--stdio")
        .spawn()
        .unwrap_err();
    assert!(matches!(error, Error::Spawn { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with(&format!(
            "cannot run `no-such-program-anywhere --stdio` in {}: ",
            dir.path().display()
        )),
        "{error}"
    );
    let error = Command::new("sh", dir.path().join("missing"))
        .spawn()
        .unwrap_err();
    assert!(matches!(error, Error::Spawn { .. }), "{error:?}");
}
