//! `run_to_end`: output capped without deadlock, timeouts that take the group along, stdin,
//! and the sandbox prefix.

use std::time::Duration;

use tools_process::{Command, Error, RunLimits, Sandbox, run_to_end};

use crate::support::{eventually, mark, marked_sh, running_with};

fn limits(timeout: Duration, max_output_bytes: usize) -> RunLimits {
    RunLimits {
        timeout,
        max_output_bytes,
    }
}

#[tokio::test]
async fn output_past_the_cap_is_read_and_counted_without_deadlock() {
    let command = marked_sh(
        "yes | head -c 10000000; yes | head -c 3000000 >&2; exit 3",
        &mark("cap"),
    );
    let output = run_to_end(&command, None, limits(Duration::from_secs(120), 10_000))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(output.stdout.len(), 10_000);
    assert_eq!(output.stdout_cut, 10_000_000 - 10_000);
    assert!(output.stdout.starts_with(b"y\ny\n"));
    assert_eq!(output.stderr.len(), 10_000);
    assert_eq!(output.stderr_cut, 3_000_000 - 10_000);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group() {
    let mark = mark("timeout");
    let command = marked_sh("sleep 100 & sleep 100 & wait", &mark);
    let watch = async {
        eventually("the shell and its sleeps run", || {
            running_with(&mark).len() == 3
        })
        .await;
    };
    let (result, ()) = tokio::join!(
        run_to_end(&command, None, limits(Duration::from_secs(3), 1024)),
        watch
    );
    let error = result.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "`sh -c 'sleep 100 & sleep 100 & wait'` did not finish within 3s and was stopped"
    );
    eventually("every process of the group ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn what_a_finished_command_left_running_is_ended() {
    let mark = mark("leftover");
    // The sleep keeps stdout open: without ending it, reading to EOF would wait 100s.
    let command = marked_sh("sleep 100 & echo done", &mark);
    let output = run_to_end(&command, None, limits(Duration::from_secs(60), 1024))
        .await
        .unwrap();
    assert!(output.status.success());
    assert_eq!(output.stdout_text(), "done\n");
    eventually("the leftover sleep ended", || {
        running_with(&mark).is_empty()
    })
    .await;
}

#[tokio::test]
async fn input_is_written_to_stdin_and_closed() {
    let command = Command::new("cat", std::env::temp_dir());
    let output = run_to_end(
        &command,
        Some(b"hello\nworld\n".to_vec()),
        limits(Duration::from_secs(60), 1024),
    )
    .await
    .unwrap();
    assert_eq!(output.stdout_text(), "hello\nworld\n");
    assert_eq!(output.stdout_cut, 0);
}

#[tokio::test]
async fn eval_9_the_sandbox_prefix_runs_the_command() {
    let command = Command::new("sh", std::env::temp_dir())
        .args(["-c", "echo \"FOO=$FOO\""])
        .sandbox(Some(Sandbox::new(vec!["env".into(), "FOO=1".into()])));
    let output = run_to_end(&command, None, limits(Duration::from_secs(60), 1024))
        .await
        .unwrap();
    assert_eq!(output.stdout_text(), "FOO=1\n");

    let missing = Command::new("sh", "/").sandbox(Some(Sandbox::new(vec![
        "no-such-sandbox".into(),
        "--".into(),
    ])));
    let error = missing.spawn().unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot run `sh` in / (through the sandbox `no-such-sandbox --`): "),
        "{error}"
    );
}
