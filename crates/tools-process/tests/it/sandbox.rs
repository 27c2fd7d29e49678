//! The sandbox check a run makes once as it begins (EVAL-9): a prefix that keeps the workspace
//! at its own path passes, one that maps it elsewhere or cannot start anything here is refused
//! with one message, and a refused prefix starts nothing at all.

use std::path::{Path, PathBuf};

use tools_process::{
    Command, Error, Sandbox, SandboxProblem, probe_sandbox, probe_sandbox_blocking,
};
use tools_test_support::redact;
use tools_test_support::sandbox::{self, NESTED_BWRAP, bwrap_ready};

fn sandbox(argv: &[&str]) -> Sandbox {
    Sandbox::new(argv.iter().map(|word| (*word).to_owned()).collect())
}

/// A workspace folder, canonical (the run's root always is).
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// A bubblewrap prefix in which the workspace is mounted at `/workspace` and nowhere else.
fn bwrap_at_workspace(root: &Path) -> Sandbox {
    Sandbox::new(sandbox::bwrap_at_workspace(root))
}

#[tokio::test]
async fn eval_9_a_prefix_that_keeps_the_workspace_at_its_own_path_passes() {
    let (_dir, root) = workspace();
    probe_sandbox(&sandbox(&["env", "IN_SANDBOX=1"]), &root)
        .await
        .unwrap();
    if !bwrap_ready() {
        return;
    }
    let bwrap = sandbox(&["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--"]);
    probe_sandbox(&bwrap, &root).await.unwrap();
    // Binding the workspace elsewhere too is fine, as long as it is also at its own path.
    let also = root.display().to_string();
    let twice = sandbox(&[
        "bwrap",
        "--dev-bind",
        "/",
        "/",
        "--bind",
        &also,
        "/workspace",
        "--",
    ]);
    probe_sandbox(&twice, &root).await.unwrap();
}

#[tokio::test]
async fn eval_9_a_prefix_that_maps_the_workspace_elsewhere_is_refused_saying_why() {
    if !bwrap_ready() {
        return;
    }
    let (_dir, root) = workspace();
    let problem = probe_sandbox(&bwrap_at_workspace(&root), &root)
        .await
        .unwrap_err();
    assert!(
        matches!(&problem, SandboxProblem::MapsPaths { seen, .. } if seen.contains("/workspace") || seen.contains("finds itself in /")),
        "{problem:?}"
    );
    insta::assert_snapshot!(redact(&problem.to_string(), &root), @"the sandbox `bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --bind [ROOT] /workspace --` maps paths differently from the host: the workspace root is [ROOT], but a process started in it through the sandbox finds itself in /, and there is no [ROOT] inside");
}

#[tokio::test]
async fn eval_9_a_prefix_that_leaves_the_working_folder_or_hides_the_root_is_refused() {
    let (_dir, root) = workspace();
    // A wrapper that starts everything in `/`: the root is there, the working folder is not.
    let moves = sandbox(&["sh", "-c", "cd / && exec \"$@\"", "sh"]);
    let problem = probe_sandbox(&moves, &root).await.unwrap_err();
    let SandboxProblem::MapsPaths { seen, .. } = &problem else {
        panic!("{problem:?}");
    };
    assert_eq!(
        seen,
        "a process started in it through the sandbox finds itself in /: the sandbox does not \
         keep the working folder"
    );
    if !bwrap_ready() {
        return;
    }
    // An empty folder mounted over the root: the same path, another folder.
    let shown = root.display().to_string();
    let hidden = sandbox(&["bwrap", "--dev-bind", "/", "/", "--tmpfs", &shown, "--"]);
    let problem = probe_sandbox(&hidden, &root).await.unwrap_err();
    let SandboxProblem::MapsPaths { seen, .. } = &problem else {
        panic!("{problem:?}");
    };
    assert!(
        seen.starts_with(&format!(
            "{shown} inside the sandbox is another folder (inode "
        )),
        "{seen}"
    );
}

#[tokio::test]
async fn eval_9_isolation_that_cannot_nest_is_refused_with_the_sandboxs_own_words() {
    if !bwrap_ready() {
        return;
    }
    let (_dir, root) = workspace();
    let problem = probe_sandbox(&sandbox(NESTED_BWRAP), &root)
        .await
        .unwrap_err();
    let SandboxProblem::Fails {
        ran, status, said, ..
    } = &problem
    else {
        panic!("{problem:?}");
    };
    assert_eq!((ran.as_str(), status.as_str()), ("true", "exit status: 1"));
    assert!(said.starts_with("bwrap: "), "{said}");
    let message = problem.to_string();
    assert!(
        message.starts_with(
            "the sandbox `bwrap --unshare-user --disable-userns --dev-bind / / -- bwrap \
             --unshare-user --dev-bind / / --` cannot start processes here: `true` through it \
             failed (exit status: 1): bwrap: "
        ),
        "{message}"
    );
}

#[tokio::test]
async fn eval_9_a_prefix_that_cannot_be_run_is_refused() {
    let (_dir, root) = workspace();
    let problem = probe_sandbox(&sandbox(&["no-such-sandbox", "--"]), &root)
        .await
        .unwrap_err();
    assert!(
        matches!(&problem, SandboxProblem::CannotRun { .. }),
        "{problem:?}"
    );
    assert!(
        problem
            .to_string()
            .starts_with("the sandbox `no-such-sandbox --` cannot be run: cannot run `true` in "),
        "{problem}"
    );
}

#[test]
fn eval_9_the_check_blocks_outside_a_runtime_and_inside_one() {
    let (_dir, root) = workspace();
    probe_sandbox_blocking(&sandbox(&["env"]), &root).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let problem = runtime.block_on(async {
        probe_sandbox_blocking(&sandbox(&["sh", "-c", "exit 3", "sh"]), &root).unwrap_err()
    });
    assert!(
        matches!(&problem, SandboxProblem::Fails { status, .. } if status == "exit status: 3"),
        "{problem:?}"
    );
}

#[tokio::test]
async fn eval_9_a_refused_sandbox_starts_nothing_through_it_or_around_it() {
    let (dir, root) = workspace();
    // The prefix would record every start; refused, it never runs, and neither does the
    // program without it.
    let record = dir.path().join("record");
    let recorder = format!("echo started >> '{}'; exec \"$@\"", record.display());
    let problem = SandboxProblem::Fails {
        prefix: "bwrap --".into(),
        ran: "true".into(),
        status: "exit status: 1".into(),
        said: "bwrap: setting up uid map: Permission denied".into(),
    };
    let refused =
        sandbox(&["sh", "-c", &recorder, "sh"]).refuse(problem, "run without the sandbox");
    let command = Command::new("touch", &root)
        .arg(root.join("touched"))
        .sandbox(Some(refused));
    let error = command.spawn().unwrap_err();
    let Error::SandboxRefused { program, refusal } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(program, "touch");
    assert!(matches!(refusal.problem, SandboxProblem::Fails { .. }));
    assert_eq!(
        error.to_string(),
        "cannot run `touch`: the sandbox `bwrap --` cannot start processes here: `true` through \
         it failed (exit status: 1): bwrap: setting up uid map: Permission denied; run without \
         the sandbox"
    );
    assert!(!record.exists() && !root.join("touched").exists());
}
