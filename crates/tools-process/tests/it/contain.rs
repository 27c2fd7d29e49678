//! Containment (issue 22): what a child starts lives in a PID namespace that ends with the
//! child — daemons that left its group and session included — when the child exits, when it
//! is killed, and when the process that spawned it is SIGKILLed. The program itself keeps its
//! exit code, its signals and its pipes, and sees its own namespace in `/proc`.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tools_process::{Output, containment};

use crate::support::{eventually, helper, mark, marked_sh, running_with};

/// Whether this machine can contain children, by tools-test-support's rule for what is
/// missing: locally a loud skip, under `CI=true` a failure (CI's machines can contain, and a
/// regression there must not pass as a skip).
fn available() -> bool {
    let state = containment();
    tools_test_support::require(
        "PID and mount namespaces for children",
        state.is_active(),
        &format!(
            "run as root or allow unprivileged user namespaces ({})",
            state.describe()
        ),
    )
}

/// The marked `sleep` processes still running.
fn sleeps(mark: &str) -> Vec<String> {
    running_with(mark)
        .into_iter()
        .map(|p| p.cmdline.join(" "))
        .filter(|line| line.starts_with("sleep "))
        .collect()
}

#[tokio::test]
async fn a_daemon_a_child_started_ends_when_the_child_exits() {
    if !available() {
        return;
    }
    let mark = mark("contain-exit");
    let mut child = marked_sh("setsid sleep 1003 & sleep 0.3; exit 7", &mark)
        .spawn()
        .unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "the program's exit code is the child's"
    );
    eventually("the daemon ended with the child", || {
        sleeps(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_program_killed_by_a_signal_reads_as_killed_by_it() {
    if !available() {
        return;
    }
    let mut child = marked_sh("kill -TERM $$", &mark("contain-signal"))
        .spawn()
        .unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}

#[tokio::test]
async fn the_program_sees_its_own_namespace_and_its_pipes() {
    if !available() {
        return;
    }
    let mut child = marked_sh(
        "echo $$; ls /proc | grep -c '^[0-9]'",
        &mark("contain-proc"),
    )
    .stdout(Output::Piped)
    .spawn()
    .unwrap();
    let mut text = String::new();
    child
        .take_stdout()
        .unwrap()
        .read_to_string(&mut text)
        .await
        .unwrap();
    child.wait().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Its init is 1, the program 2; `ls` and `grep` are the others.
    assert_eq!(lines.first(), Some(&"2"), "{text}");
    let count: u32 = lines[1].parse().unwrap();
    assert!(
        count <= 4,
        "only the namespace's processes are listed: {text}"
    );
}

/// The pid a contained child says is the program's, as `ps` and `kill` know it; a wait after
/// SIGKILL to the group returns only once the program and its daemon are gone.
#[tokio::test]
async fn the_program_pid_is_the_machines_and_a_wait_outlasts_the_namespace() {
    if !available() {
        return;
    }
    let mark = mark("contain-pid");
    let mut child = marked_sh("setsid sleep 1005 & exec sleep 1006", &mark)
        .spawn()
        .unwrap();
    let program = child.program_pid();
    assert_ne!(program, child.pid(), "the leader is the keeper");
    eventually("the program runs", || {
        tools_process::process_info(program)
            .is_some_and(|p| p.cmdline.first().is_some_and(|c| c == "sleep"))
    })
    .await;
    assert!(child.group().leader_runs());
    eventually("the daemon runs", || sleeps(&mark).len() == 2).await;
    child.kill();
    child.wait().await.unwrap();
    assert!(
        tools_process::process_info(program).is_none_or(|p| p.is_zombie()),
        "the program outlived the wait: {:?}",
        tools_process::process_info(program)
    );
    assert!(!child.group().leader_runs());
    assert_eq!(
        sleeps(&mark),
        Vec::<String>::new(),
        "the daemon outlived the wait"
    );
}

#[tokio::test]
async fn sigterm_to_the_group_reaches_the_program_once_and_ends_everything() {
    if !available() {
        return;
    }
    let mark = mark("contain-term");
    let mut child = marked_sh(
        "trap 'echo term; exit 3' TERM; setsid sleep 1004 & while :; do sleep 0.05; done",
        &mark,
    )
    .stdout(Output::Piped)
    .spawn()
    .unwrap();
    let stdout = child.take_stdout().unwrap();
    eventually("the daemon runs", || !sleeps(&mark).is_empty()).await;
    let termination = child.terminate().await.unwrap();
    assert_eq!(termination.status.code(), Some(3), "{termination:?}");
    assert!(!termination.killed, "the program ended on SIGTERM");
    let mut said = String::new();
    BufReader::new(stdout)
        .read_to_string(&mut said)
        .await
        .unwrap();
    assert_eq!(said, "term\n");
    eventually("nothing the child started is left", || {
        sleeps(&mark).is_empty()
    })
    .await;
}

/// The promise for `serve`: SIGKILL of the process that spawned the child (here a helper in
/// its place) ends the child and the daemon it started, which left its group and session.
#[tokio::test]
async fn everything_ends_when_the_spawner_is_sigkilled() {
    if !available() {
        return;
    }
    let mark = mark("contain-sigkill");
    let mut serve = helper("contain", &mark)
        .stdout(Output::Piped)
        .stderr(Output::Null)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(serve.take_stdout().unwrap()).lines();
    loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the helper ended early");
        if let Some((_, contained)) = line.split_once("CONTAINED ") {
            assert_eq!(contained.trim(), "true");
            break;
        }
    }
    assert_eq!(sleeps(&mark).len(), 2, "{:?}", sleeps(&mark));
    serve.kill();
    serve.wait().await.unwrap();
    let killed = Instant::now();
    eventually("the child and its daemon ended", || {
        sleeps(&mark).is_empty()
    })
    .await;
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "gone within 2 s, took {:?}",
        killed.elapsed()
    );
    eventually("no marked process is left", || {
        running_with(&mark).is_empty()
    })
    .await;
}
