//! This test binary re-executed as a helper process, for what must not happen in the shared
//! test process: becoming a subreaper, ending every group, dying under a child. Run normally,
//! the helper "test" does nothing. A helper asserts what it can itself and prints `HELPER OK`
//! at the end; the test that started it checks that, and what only the outside can see.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tools_process::{
    Command, Output, RunLimits, ShutdownReport, become_subreaper, live_groups, process_info,
    reap_orphans, run_to_end, shutdown_all, spawn_orphan_reaper,
};

use crate::support::{HELPER, MARK, eventually, marked_sh, running_with};

#[test]
fn helper_process() {
    let Ok(role) = std::env::var(HELPER) else {
        return;
    };
    let mark = std::env::var(MARK).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        match role.as_str() {
            "pdeathsig" => pdeathsig(&mark).await,
            "shutdown" => shutdown(&mark).await,
            "subreaper" => subreaper(&mark).await,
            "contain" => contain(&mark).await,
            other => panic!("no helper role {other}"),
        }
    });
    println!("HELPER OK");
}

/// Plays `serve` with a child whose own child left its group and session (a daemon), says
/// they run, and waits to be SIGKILLed.
async fn contain(mark: &str) {
    let child = marked_sh("setsid sleep 1001 & sleep 1002", mark)
        .spawn()
        .unwrap();
    eventually("the child and its daemon run", || {
        let running = running_with(mark);
        ["sleep 1001", "sleep 1002"]
            .iter()
            .all(|sleep| running.iter().any(|p| p.cmdline.join(" ") == *sleep))
    })
    .await;
    println!("CONTAINED {}", tools_process::containment().is_active());
    tokio::time::sleep(Duration::from_secs(300)).await;
    drop(child);
}

/// Starts a grandchild for the test, says which, and waits to be killed.
async fn pdeathsig(mark: &str) {
    let child = marked_sh("exec sleep 1000", mark).spawn().unwrap();
    println!("GRANDCHILD {}", child.pid());
    tokio::time::sleep(Duration::from_secs(300)).await;
    drop(child);
}

/// Two groups, one of which ignores SIGTERM, ended by `shutdown_all`.
async fn shutdown(mark: &str) {
    let polite = marked_sh("sleep 1000 & sleep 1000 & wait", mark)
        .spawn()
        .unwrap();
    let stubborn = marked_sh("trap '' TERM; sleep 1000 & sleep 1000 & wait", mark)
        .spawn()
        .unwrap();
    eventually("both groups run with their sleeps", || {
        running_with(mark).len() == 6
    })
    .await;
    let mut live: Vec<u32> = live_groups().iter().map(|group| group.pgid).collect();
    live.sort();
    let mut ours = vec![polite.pid(), stubborn.pid()];
    ours.sort();
    assert_eq!(live, ours);
    let report = shutdown_all(Duration::from_millis(300)).await;
    assert_eq!(
        report,
        ShutdownReport {
            groups: 2,
            ended_after_term: 1,
            killed: 1,
        }
    );
    eventually("every process of both groups ended", || {
        running_with(mark).is_empty()
    })
    .await;
    assert!(live_groups().is_empty());
}

/// Orphans re-parented to a subreaper are reaped; children someone waits for are not.
async fn subreaper(mark: &str) {
    become_subreaper().unwrap();
    let me = std::process::id();

    // Reaped by a direct call.
    let orphan = make_orphan(mark).await;
    kill(orphan).await;
    eventually("the orphan is our zombie", || {
        process_info(orphan).is_some_and(|p| p.is_zombie() && p.ppid == me)
    })
    .await;
    assert!(reap_orphans() >= 1);
    assert_eq!(process_info(orphan), None, "no zombie is left");

    // A child a handle waits for is not taken, nor is one spawned without this crate.
    let mut ours = Command::new("sh", "/")
        .args(["-c", "exit 7"])
        .spawn()
        .unwrap();
    let mut theirs = std::process::Command::new("sh")
        .args(["-c", "exit 8"])
        .spawn()
        .unwrap();
    let (ours_pid, theirs_pid) = (ours.pid(), theirs.id());
    eventually("both children exited", || {
        [ours_pid, theirs_pid]
            .iter()
            .all(|pid| process_info(*pid).is_some_and(|p| p.is_zombie()))
    })
    .await;
    reap_orphans();
    assert_eq!(ours.wait().await.unwrap().code(), Some(7));
    assert_eq!(theirs.wait().unwrap().code(), Some(8));

    // Reaped by the background reaper.
    let _reaper = spawn_orphan_reaper();
    let orphan = make_orphan(mark).await;
    kill(orphan).await;
    eventually("the background reaper reaped the orphan", || {
        process_info(orphan).is_none()
    })
    .await;
}

/// A sleep whose parent shell has exited, so it is re-parented to us.
async fn make_orphan(mark: &str) -> u32 {
    let mut shell = marked_sh("sleep 1000 & echo $!", mark)
        .stdout(Output::Piped)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(shell.take_stdout().unwrap()).lines();
    let pid: u32 = lines.next_line().await.unwrap().unwrap().parse().unwrap();
    assert!(shell.wait().await.unwrap().success());
    let me = std::process::id();
    eventually("the sleep is re-parented to us", || {
        process_info(pid).is_some_and(|p| p.ppid == me && !p.is_zombie())
    })
    .await;
    // Its group is the exited shell's; keep the group's handle from killing it.
    std::mem::forget(shell.into_parts().group);
    pid
}

async fn kill(pid: u32) {
    let command = Command::new("kill", "/").args(["-KILL", &pid.to_string()]);
    let limits = RunLimits {
        timeout: Duration::from_secs(60),
        max_output_bytes: 1024,
    };
    assert!(
        run_to_end(&command, None, limits)
            .await
            .unwrap()
            .status
            .success()
    );
}
