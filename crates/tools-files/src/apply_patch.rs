//! `apply_patch`: a unified diff over several files, applied all or nothing. The patch format
//! itself (parsing, and applying one file's hunks to its text) is the apply-patch crate; this
//! tool reads and writes the files through the workspace and reports to the model.

use ::apply_patch::{FilePatch, HunkLine, apply_file_patch, parse_patch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    CallContext, Change, Expect, FileChange, Tier, Tool, ToolError, ToolOutput, Workspace, Writes,
};

use super::{read_snapshot, update_failed};

/// Apply a unified diff (as `git diff` prints it) to one or more files, all or nothing.
///
/// Paths are workspace-relative (`a/`, `b/` understood); `/dev/null` creates or deletes,
/// `rename from`/`rename to` renames. Hunks must match the current text (positions may
/// move); if one does not, nothing changes and the error says which and why.
///
/// Reports the errors it introduced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchInput {
    /// The whole patch text.
    pub patch: String,
}

/// One file the patch changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatchedFile {
    /// The file after the patch, relative to the workspace root (before, for a deletion).
    pub path: String,
    /// What happened to it.
    pub action: PatchAction,
    /// The old path, for a rename.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// What a patch did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchAction {
    /// A new file.
    Created,
    /// An existing file changed in place.
    Modified,
    /// A file removed.
    Deleted,
    /// A file moved, perhaps changed too.
    Renamed,
}

/// Every file the patch changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApplyPatchOutput {
    /// The files, in patch order.
    pub files: Vec<PatchedFile>,
}

/// The `apply_patch` tool.
pub struct ApplyPatch;

impl Tool for ApplyPatch {
    type Input = ApplyPatchInput;
    type Output = ApplyPatchOutput;
    const NAME: &'static str = "apply_patch";
    const TITLE: &'static str = "Apply a patch";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;

    /// Every old and new path of the patch's file sections.
    fn writes(&self, input: &ApplyPatchInput, workspace: &Workspace) -> Writes {
        let mut files = Vec::new();
        for patch in parse_patch(&input.patch).unwrap_or_default() {
            for name in [&patch.old_path, &patch.new_path].into_iter().flatten() {
                if let Ok(path) = workspace.resolve(name)
                    && !files.contains(&path)
                {
                    files.push(path);
                }
            }
        }
        Writes { files, more: false }
    }

    /// The patch parses and every hunk applies to the files as they are now.
    async fn check(&self, input: &ApplyPatchInput, workspace: &Workspace) -> Result<(), ToolError> {
        let patches =
            parse_patch(&input.patch).map_err(|error| ToolError::failed(error.to_string()))?;
        let workspace = workspace.clone();
        super::blocking(move || plan(&workspace, &patches).map(|_| ())).await
    }

    async fn call(
        &self,
        context: CallContext,
        input: ApplyPatchInput,
    ) -> Result<ToolOutput<ApplyPatchOutput>, ToolError> {
        let workspace = context.workspace();
        let patches =
            parse_patch(&input.patch).map_err(|error| ToolError::failed(error.to_string()))?;
        // Every file is read, patched and written as one step under the workspace's write
        // lock: a concurrent writer lands before or after, never in between.
        let (previous, (changes, files)) = workspace
            .update_async(move |workspace| {
                plan(workspace, &patches).map(|planned| {
                    let changes = planned.0.clone();
                    (changes, planned)
                })
            })
            .await
            .map_err(|error| update_failed(workspace, error))?;
        let mut text = format!(
            "Applied the patch to {}:",
            super::plural(files.len(), "file")
        );
        for file in &files {
            let letter = match file.action {
                PatchAction::Created => "A",
                PatchAction::Modified => "M",
                PatchAction::Deleted => "D",
                PatchAction::Renamed => "R",
            };
            let from = file
                .renamed_from
                .as_deref()
                .map(|f| format!("{f} → "))
                .unwrap_or_default();
            text.push_str(&format!(
                "\n  {letter} {from}{} (+{} −{})",
                file.path, file.added, file.removed
            ));
        }
        let touched = changes.into_iter().map(|change| change.path);
        Ok(ToolOutput::new(text, ApplyPatchOutput { files })
            .touching(touched)
            .previously(previous))
    }
}

/// Patches every file in memory: the changes to commit (each expecting the text it was computed
/// from) and what to report per file. Nothing is written here.
fn plan(
    workspace: &Workspace,
    patches: &[FilePatch],
) -> Result<(Vec<Change>, Vec<PatchedFile>), ToolError> {
    let mut changes: Vec<Change> = Vec::new();
    let mut files = Vec::new();
    for patch in patches {
        let resolve =
            |path: &Option<String>| path.as_deref().map(|p| workspace.resolve(p)).transpose();
        let old = resolve(&patch.old_path)?;
        let new = resolve(&patch.new_path)?;
        let source = old.as_ref().or(new.as_ref());
        let Some(source) = source else {
            return Err(ToolError::failed(
                "a file section of the patch names neither an old nor a new path",
            ));
        };
        let shown = workspace.display(new.as_ref().unwrap_or(source));
        if changes
            .iter()
            .any(|change| Some(&change.path) == new.as_ref() || Some(&change.path) == old.as_ref())
        {
            return Err(ToolError::failed(format!(
                "the patch changes {shown} in two sections: merge them into one section per file"
            )));
        }
        // A plain `diff -u x.orig x` names one file twice: patch whichever exists, keeping
        // the new name, as patch(1) does. A git copy reads the old file and keeps it.
        let renames = patch.moves && old.is_some() && new.is_some() && old != new;
        let read_from = match (&old, &new) {
            (Some(_), Some(n)) if !patch.moves && n.exists() => Some(n),
            (Some(o), _) => Some(o),
            (None, _) => None,
        };
        let (original, read_expect) = match read_from {
            Some(path) if path.exists() => {
                let (text, expect) = read_snapshot(workspace, path)?;
                (Some(text), Some((path.clone(), expect)))
            }
            _ => (None, None),
        };
        if old.is_none()
            && let Some(path) = &new
            && path.exists()
        {
            return Err(ToolError::failed(format!(
                "the patch creates {shown} but it already exists; make the patch against its current content, or use write"
            )));
        }
        let updated = apply_file_patch(patch, original.as_deref()).map_err(|problem| {
            ToolError::failed(format!("{shown}: {problem}; no file was changed"))
        })?;
        let (added, removed) =
            patch
                .hunks
                .iter()
                .flat_map(|h| &h.lines)
                .fold((0, 0), |(a, r), line| match line {
                    HunkLine::Added(_) => (a + 1, r),
                    HunkLine::Removed(_) => (a, r + 1),
                    HunkLine::Context(_) => (a, r),
                });
        let (action, renamed_from) = match (&old, &new) {
            (None, Some(_)) => (PatchAction::Created, None),
            (Some(_), None) => (PatchAction::Deleted, None),
            (Some(o), Some(_)) if renames => (PatchAction::Renamed, Some(workspace.display(o))),
            (Some(_), Some(n)) if !n.exists() => (PatchAction::Created, None),
            _ => (PatchAction::Modified, None),
        };
        // What each written path must hold: the text it was patched from, or no file at all.
        let expect = |path: &std::path::PathBuf| match &read_expect {
            Some((read, expect)) if read == path => *expect,
            _ if !path.exists() => Expect::Absent,
            _ => Expect::Anything,
        };
        match (&old, &new, updated) {
            (_, Some(new_path), Some(content)) => {
                changes.push(Change {
                    path: new_path.clone(),
                    expect: expect(new_path),
                    change: FileChange::Write(content.into_bytes()),
                });
                if let Some(old_path) = old.as_ref().filter(|_| renames) {
                    changes.push(Change {
                        path: old_path.clone(),
                        expect: expect(old_path),
                        change: FileChange::Delete,
                    });
                }
            }
            (Some(old_path), _, None) => changes.push(Change {
                path: old_path.clone(),
                expect: expect(old_path),
                change: FileChange::Delete,
            }),
            _ => {}
        }
        files.push(PatchedFile {
            path: shown,
            action,
            renamed_from,
            added,
            removed,
        });
    }
    Ok((changes, files))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::test_support::Fixture;

    const FILES: &str =
        "//- /src/a.rs\nfn a() {\n    1\n}\n//- /src/b.rs\nfn b() {\n    2\n}\n//- /old.txt\nbye\n";

    const PATCH: &str = "diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,3 +1,3 @@
 fn a() {
-    1
+    10
 }
diff --git a/src/c.rs b/src/c.rs
new file mode 100644
--- /dev/null
+++ b/src/c.rs
@@ -0,0 +1 @@
+fn c() {}
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";

    #[tokio::test]
    async fn applies_modifications_creations_and_deletions_together() {
        let fx = Fixture::new(FILES);
        let result = fx.call("apply_patch", json!({"patch": PATCH})).await;
        assert_eq!(
            result.text,
            "Applied the patch to 3 files:\n  M src/a.rs (+1 −1)\n  A src/c.rs (+1 −0)\n  D old.txt (+0 −1)"
        );
        assert_eq!(fx.file("src/a.rs"), "fn a() {\n    10\n}\n");
        assert_eq!(fx.file("src/c.rs"), "fn c() {}\n");
        // The files it wrote are named for wrappers (diagnostics on write syncs exactly these).
        let root = fx.dir.path().canonicalize().unwrap();
        let touched: Vec<_> = ["src/a.rs", "src/c.rs", "old.txt"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(result.touched, touched);
        assert!(!fx.dir.path().join("old.txt").exists());
    }

    /// Runs git in `dir`, failing the test when it fails; its standard output.
    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// Makes a patch with `git diff FLAGS` that undoes [`PATCH`], applies it with `git apply`
    /// to a copy of the tree and with this tool to the tree, and checks both agree.
    async fn undoes_like_git_apply(flags: &[&str]) {
        let fx = Fixture::new(FILES);
        let root = fx.dir.path();
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "before"]);
        let before = git(root, &["rev-parse", "HEAD"]);
        fx.call("apply_patch", json!({"patch": PATCH})).await;
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "after"]);
        let mut args = vec!["diff"];
        args.extend(flags);
        let range = [before.trim(), "HEAD"];
        args.extend(range);
        let undo = git(root, &args);
        // The oracle: git applies it to a copy of the tree, and this tool to the tree.
        let copy = tempfile::tempdir().unwrap();
        git(
            root,
            &[
                "worktree",
                "add",
                "-q",
                &copy.path().join("t").display().to_string(),
            ],
        );
        let oracle = copy.path().join("t");
        std::fs::write(oracle.join("undo.diff"), &undo).unwrap();
        git(&oracle, &["apply", "undo.diff"]);
        let result = fx.call("apply_patch", json!({"patch": undo})).await;
        assert!(!result.is_error, "{flags:?}: {}\n{undo}", result.text);
        for path in ["src/a.rs", "src/b.rs", "src/c.rs", "old.txt"] {
            assert_eq!(
                std::fs::read_to_string(root.join(path)).ok(),
                std::fs::read_to_string(oracle.join(path)).ok(),
                "{flags:?}: {path}"
            );
        }
        assert_eq!(fx.file("src/a.rs"), "fn a() {\n    1\n}\n");
        assert!(!root.join("src/c.rs").exists());
    }

    #[tokio::test]
    async fn prod_4_what_git_apply_takes_from_git_diff_r_applies_the_same() {
        // `git diff -R` swaps the sides' prefixes (`--- b/f`, `+++ a/f`); `git apply` takes
        // that patch, so this tool does too, and both leave the same files (issue 40).
        undoes_like_git_apply(&["-R"]).await;
        // And prefixes of the user's own (`--src-prefix`, `--dst-prefix`), which `git apply`
        // strips as the first component of each path.
        undoes_like_git_apply(&["-R", "--src-prefix=old/", "--dst-prefix=new/"]).await;
    }

    #[tokio::test]
    async fn a_hunk_that_does_not_apply_changes_no_file() {
        let fx = Fixture::new(FILES);
        let bad = format!(
            "{PATCH}diff --git a/src/b.rs b/src/b.rs\n--- a/src/b.rs\n+++ b/src/b.rs\n@@ -1,3 +1,3 @@\n fn b() {{\n-    3\n+    30\n }}\n"
        );
        let result = fx.call("apply_patch", json!({"patch": bad})).await;
        assert!(result.is_error);
        assert!(
            result.text.starts_with("src/b.rs: hunk 1"),
            "{}",
            result.text
        );
        assert!(
            result.text.ends_with("; no file was changed"),
            "{}",
            result.text
        );
        assert_eq!(fx.file("src/a.rs"), "fn a() {\n    1\n}\n");
        assert!(!fx.dir.path().join("src/c.rs").exists());
        assert_eq!(fx.file("old.txt"), "bye\n");
    }

    #[tokio::test]
    async fn renames_move_the_file() {
        let fx = Fixture::new(FILES);
        let patch = "diff --git a/src/b.rs b/src/d.rs\nsimilarity index 100%\nrename from src/b.rs\nrename to src/d.rs\n";
        let result = fx.call("apply_patch", json!({"patch": patch})).await;
        assert_eq!(
            result.text,
            "Applied the patch to 1 file:\n  R src/b.rs → src/d.rs (+0 −0)"
        );
        assert_eq!(fx.file("src/d.rs"), "fn b() {\n    2\n}\n");
        assert!(!fx.dir.path().join("src/b.rs").exists());
    }

    #[tokio::test]
    async fn prod_5_a_patch_reaching_outside_the_workspace_changes_nothing() {
        let fx = Fixture::new(FILES);
        let patch = format!("{PATCH}--- /dev/null\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+x\n");
        let result = fx.call("apply_patch", json!({"patch": patch})).await;
        assert!(
            result.text.contains("outside the workspace root"),
            "{}",
            result.text
        );
        assert_eq!(fx.file("src/a.rs"), "fn a() {\n    1\n}\n");
    }

    #[tokio::test]
    async fn a_plain_diff_u_between_two_names_patches_the_file_in_place() {
        let fx = Fixture::new(FILES);
        let patch = "--- src/b.rs.orig\t2026-01-01 00:00:00\n+++ src/b.rs\t2026-01-01 00:00:01\n@@ -1,3 +1,3 @@\n fn b() {\n-    2\n+    20\n }\n";
        let result = fx.call("apply_patch", json!({"patch": patch})).await;
        assert_eq!(
            result.text,
            "Applied the patch to 1 file:\n  M src/b.rs (+1 −1)"
        );
        assert_eq!(fx.file("src/b.rs"), "fn b() {\n    20\n}\n");
    }

    #[tokio::test]
    async fn creating_a_file_that_exists_is_refused() {
        let fx = Fixture::new(FILES);
        let patch = "--- /dev/null\n+++ b/src/a.rs\n@@ -0,0 +1 @@\n+x\n";
        let result = fx.call("apply_patch", json!({"patch": patch})).await;
        assert_eq!(
            result.text,
            "the patch creates src/a.rs but it already exists; make the patch against its current content, or use write"
        );
    }
}
