//! The stderr tail of a real process.

use std::sync::Arc;

use tools_process::{Command, Output, StderrTail, TAIL_LINE_CHARS, TAIL_LINES};

#[tokio::test]
async fn the_stderr_tail_keeps_the_last_lines_cut_to_length() {
    let tail = Arc::new(StderrTail::new());
    let script = r#"i=1; while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done; printf '%0400d\n' 0 >&2"#;
    let mut child = Command::new("sh", std::env::temp_dir())
        .args(["-c", script])
        .stdout(Output::Null)
        .stderr(Output::Tail(Arc::clone(&tail)))
        .spawn()
        .unwrap();
    assert!(child.take_stderr().is_none(), "a tailed stream is ours");
    assert!(child.wait().await.unwrap().success());
    tail.closed().await;
    let lines = tail.lines();
    assert_eq!(lines.len(), TAIL_LINES);
    assert_eq!(lines[0], "line 12");
    assert_eq!(lines[18], "line 30");
    assert_eq!(lines[19], format!("{}…", "0".repeat(TAIL_LINE_CHARS)));
    assert_eq!(tail.last(1), [lines[19].clone()]);
}

#[tokio::test]
async fn one_tail_is_fed_by_a_process_and_its_restart() {
    let tail = Arc::new(StderrTail::new());
    for run in ["first", "second"] {
        let mut child = Command::new("sh", std::env::temp_dir())
            .args(["-c", &format!("echo {run} >&2")])
            .stderr(Output::Tail(Arc::clone(&tail)))
            .spawn()
            .unwrap();
        child.wait().await.unwrap();
        tail.closed().await;
    }
    assert_eq!(tail.lines(), ["first", "second"]);
}
