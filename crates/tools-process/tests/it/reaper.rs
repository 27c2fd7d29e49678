//! What happens to processes whose parent goes: a child dies with its parent
//! (PR_SET_PDEATHSIG), orphans are reaped by a subreaper, and `shutdown_all` ends every group.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tools_process::{NO_CONTAINMENT_ENV, Output, RunLimits, process_info, run_to_end};

use crate::support::{eventually, helper, mark, running_with, runs};

/// Runs a helper role to its end and checks it said it was content.
/// The roles here test the fallback's mechanisms (parent-death signal, subreaper, group
/// shutdown), so their children are not contained.
async fn run_helper(role: &str) {
    let output = run_to_end(
        &helper(role, &mark(role)).env(NO_CONTAINMENT_ENV, "1"),
        None,
        RunLimits {
            timeout: Duration::from_secs(120),
            max_output_bytes: 64 * 1024,
        },
    )
    .await
    .unwrap();
    let (stdout, stderr) = (output.stdout_text(), output.stderr_text());
    assert!(
        output.status.success() && stdout.contains("HELPER OK"),
        "the {role} helper failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

#[tokio::test]
async fn a_child_dies_with_its_parent() {
    let mark = mark("pdeathsig");
    let mut parent = helper("pdeathsig", &mark)
        .env(NO_CONTAINMENT_ENV, "1")
        .stdout(Output::Piped)
        .stderr(Output::Null)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(parent.take_stdout().unwrap()).lines();
    let grandchild: u32 = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the helper ended early");
        // libtest writes its "test … ... " before what the test prints, on the same line.
        if let Some((_, pid)) = line.split_once("GRANDCHILD ") {
            break pid.trim().parse().unwrap();
        }
    };
    let process = process_info(grandchild).unwrap();
    assert_eq!(process.ppid, parent.pid());
    assert_ne!(
        process.pgid,
        parent.group().pgid(),
        "the grandchild leads its own group, so killing the parent's group does not reach it"
    );
    // SIGKILL: the parent gets no chance to clean up; only the kernel's signal is left.
    parent.kill();
    parent.wait().await.unwrap();
    eventually("the grandchild died with its parent", || !runs(grandchild)).await;
    assert!(running_with(&mark).is_empty());
}

#[tokio::test]
async fn shutdown_all_terminates_every_group_and_kills_the_stubborn() {
    run_helper("shutdown").await;
}

#[tokio::test]
async fn a_subreaper_reaps_orphans_and_leaves_waited_children_alone() {
    run_helper("subreaper").await;
}
