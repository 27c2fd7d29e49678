//! What the sandbox tests (EVAL-9) share: whether bubblewrap can make namespaces here, a
//! bubblewrap that cannot nest, and a prefix that records every command line it is given.

use std::path::{Path, PathBuf};

use crate::require;

/// Whether bubblewrap can make namespaces here (said loudly when not; fails under `CI=true`).
pub fn bwrap_ready() -> bool {
    let ready = std::process::Command::new("bwrap")
        .args(["--dev-bind", "/", "/", "--unshare-pid", "--", "true"])
        .output()
        .is_ok_and(|out| out.status.success());
    require("bubblewrap", ready, "apt-get install bubblewrap")
}

/// Bubblewrap inside a bubblewrap that forbids making namespaces: isolation that cannot nest,
/// as inside a container without user namespaces.
pub const NESTED_BWRAP: &[&str] = &[
    "bwrap",
    "--unshare-user",
    "--disable-userns",
    "--dev-bind",
    "/",
    "/",
    "--",
    "bwrap",
    "--unshare-user",
    "--dev-bind",
    "/",
    "/",
    "--",
];

/// A bubblewrap prefix in which the workspace `root` is mounted at `/workspace` and nowhere
/// else (the system's programs, but not the host's folders): one that maps paths elsewhere.
pub fn bwrap_at_workspace(root: &Path) -> Vec<String> {
    let root = root.display().to_string();
    [
        "bwrap",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--bind",
        &root,
        "/workspace",
        "--",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A wrapper in `dir` (outside the workspace) that appends each command line it is given to
/// `dir/record`, then runs it: put first in a prefix, the record is every start through the
/// sandbox. Returns the wrapper's path and the record's.
pub fn recorder(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let record = dir.join("record");
    let script = dir.join("record-and-run");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec \"$@\"\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, record)
}
