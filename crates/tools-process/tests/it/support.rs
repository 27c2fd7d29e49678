//! What the tests share: unique marks, finding marked processes, waiting for a condition with
//! a generous bound, and starting this binary as a helper process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tools_process::{Command, ProcessInfo, list_processes, process_env_var, process_info};

/// The environment variable every test process carries, with a value unique to the test.
pub const MARK: &str = "TOOLS_PROCESS_TEST_MARK";

/// Which helper role this binary plays when re-executed.
pub const HELPER: &str = "TOOLS_PROCESS_TEST_HELPER";

/// A mark no other test, in this or another process, uses.
pub fn mark(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{test}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `sh -c script`, marked, in a temporary folder, stdio discarded.
pub fn marked_sh(script: &str, mark: &str) -> Command {
    Command::new("sh", std::env::temp_dir())
        .args(["-c", script])
        .env(MARK, mark)
        .stdout(tools_process::Output::Null)
        .stderr(tools_process::Output::Null)
}

/// The running (not zombie) processes that carry `mark`, other than this one (a helper
/// process carries its test's mark too).
pub fn running_with(mark: &str) -> Vec<ProcessInfo> {
    let me = std::process::id();
    list_processes()
        .into_iter()
        .filter(|process| process.pid != me && !process.is_zombie())
        .filter(|process| process_env_var(process.pid, MARK).as_deref() == Some(mark))
        .collect()
}

/// Whether `pid` is running (exists and is not a zombie).
pub fn runs(pid: u32) -> bool {
    process_info(pid).is_some_and(|process| !process.is_zombie())
}

/// Waits until `check` holds; fails the test if it still does not after a bound far above
/// what any healthy run needs (this is a hang guard, not a timing assertion).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: still not so after 30s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// This test binary, re-executed to play helper `role` (see `helper.rs`). A helper plays the
/// part of `serve`: it runs uncontained, as the binary does, and its own children run
/// contained unless `NO_CONTAINMENT_ENV` is passed to it.
pub fn helper(role: &str, mark: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    Command::new(exe, std::env::temp_dir())
        .contained(false)
        .args([
            "helper::helper_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER, role)
        .env(MARK, mark)
}
