//! Writers racing each other and the file system through `agent-tools serve`: concurrent
//! `edit`s on one file all land; an `edit` racing `resolve` or `lsp_rename` never has its
//! change overwritten with stale text; a folder swapped for a symlink between staging and
//! accepting, or a symlink a language server's edit goes through, never leads a write out
//! of the workspace (PROD-5).

use std::path::Path;

use serde_json::json;

use tools_test_support::write_files;

use crate::lsp::{basedpyright_available, config};
use crate::support::{Client, Server, is_error, text};

async fn start(root: &Path) -> Server {
    Server::start(
        root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await
}

#[tokio::test]
async fn twenty_edits_sent_at_once_on_one_file_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..20).map(|n| format!("line {n} old\n")).collect();
    std::fs::write(dir.path().join("many.txt"), &lines).unwrap();
    let server = start(dir.path()).await;
    let calls = (0..20).map(|n| {
        server.call(
            "edit",
            json!({"path": "many.txt", "old_string": format!("line {n} old"), "new_string": format!("line {n} new")}),
        )
    });
    let results = futures::future::join_all(calls).await;
    for result in &results {
        assert!(!is_error(result), "{}", text(result));
    }
    let after = std::fs::read_to_string(dir.path().join("many.txt")).unwrap();
    let expected: String = (0..20).map(|n| format!("line {n} new\n")).collect();
    assert_eq!(after, expected, "an edit was lost");
}

#[tokio::test]
async fn an_edit_racing_resolve_is_never_overwritten_with_stale_text() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    for trial in 0..8 {
        let file = format!("race{trial}.py");
        std::fs::write(
            dir.path().join(&file),
            "def f():\n    print(1)\n\nTOP = 'untouched'\n",
        )
        .unwrap();
        let staged = server
            .call(
                "ast_edit",
                json!({"pattern": "print($X)", "rewrite": "log($X)", "language": "python", "path": file.clone()}),
            )
            .await;
        assert!(!is_error(&staged), "{}", text(&staged));
        let id = staged.structured_content.clone().unwrap()["edit_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (edited, resolved) = tokio::join!(
            server.call(
                "edit",
                json!({"path": file, "old_string": "'untouched'", "new_string": "'edited'"}),
            ),
            server.call("resolve", json!({"edit_id": id, "action": "accept"})),
        );
        let after = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert!(!is_error(&edited), "{}", text(&edited));
        assert!(after.contains("'edited'"), "the edit was lost: {after}");
        match is_error(&resolved) {
            // The edit landed first: the staged text is stale and nothing was written.
            true => {
                assert!(
                    text(&resolved).contains("changed since the edit was staged"),
                    "{}",
                    text(&resolved)
                );
                assert!(after.contains("print(1)"), "{after}");
            }
            // The resolve landed first, and the edit applied on top of it.
            false => assert!(after.contains("log(1)"), "{after}"),
        }
    }
}

#[tokio::test]
async fn prod_5_a_folder_swapped_for_a_symlink_after_staging_is_refused_at_accept() {
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("workspace");
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let text_before = "def f():\n    print(1)\n";
    std::fs::write(root.join("pkg/mod.py"), text_before).unwrap();
    std::fs::write(outside.join("mod.py"), text_before).unwrap();
    let server = start(&root).await;
    let staged = server
        .call(
            "ast_edit",
            json!({"pattern": "print($X)", "rewrite": "log($X)", "language": "python"}),
        )
        .await;
    assert!(!is_error(&staged), "{}", text(&staged));
    // The folder becomes a symlink to an outside folder holding an identical file.
    std::fs::remove_dir_all(root.join("pkg")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("pkg")).unwrap();
    let accepted = server
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(is_error(&accepted), "{}", text(&accepted));
    assert!(
        text(&accepted).contains("outside the workspace root"),
        "{}",
        text(&accepted)
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("mod.py")).unwrap(),
        text_before,
        "the outside file was rewritten"
    );
}

/// A Python package with a function used in two modules.
fn python_package(root: &Path) {
    write_files(
        root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"renames\"\nversion = \"0\"\n",
            ),
            ("pkg/__init__.py", ""),
            (
                "pkg/core.py",
                "def total(x: int) -> int:\n    return x + 1\n",
            ),
            (
                "pkg/use.py",
                "from pkg.core import total\n\nVALUE = total(1)\nOTHER = 'untouched'\n",
            ),
            ("agent-tools.toml", &config(root)),
        ],
    );
}

#[tokio::test]
async fn prod_5_a_rename_through_a_symlink_out_of_the_workspace_is_refused() {
    if !basedpyright_available() {
        return;
    }
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("workspace");
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    python_package(&root);
    // A module of the package that is a symlink to a file outside, using the function:
    // basedpyright sees it as part of the project and renames in it.
    let outside_text = "from pkg.core import total\n\nFAR = total(2)\n";
    std::fs::write(outside.join("far.py"), outside_text).unwrap();
    std::os::unix::fs::symlink(outside.join("far.py"), root.join("pkg/far.py")).unwrap();
    let server = start(&root).await;
    let renamed = server
        .call(
            "lsp_rename",
            json!({"path": "pkg/core.py", "line": 1, "symbol": "total", "new_name": "grand_total"}),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(outside.join("far.py")).unwrap(),
        outside_text,
        "the rename wrote outside the workspace: {}",
        text(&renamed)
    );
    assert!(is_error(&renamed), "{}", text(&renamed));
    assert!(
        text(&renamed).contains("outside the workspace root"),
        "{}",
        text(&renamed)
    );
    // All or nothing: the files inside were left as they were too.
    assert!(
        std::fs::read_to_string(root.join("pkg/core.py"))
            .unwrap()
            .contains("def total")
    );
}

#[tokio::test]
async fn an_edit_racing_a_rename_is_never_overwritten_with_stale_text() {
    if !basedpyright_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    python_package(&root);
    let server = start(&root).await;
    // Warm the server up, so the race is with the rename and not with its start.
    let warm = server
        .call(
            "lsp",
            json!({"operation": "references", "path": "pkg/core.py", "line": 1, "symbol": "total"}),
        )
        .await;
    assert!(!is_error(&warm), "{}", text(&warm));
    let mut names = ["total".to_owned(), String::new()];
    let mut other = "OTHER = ".to_owned();
    for trial in 0..6 {
        names[1] = format!("total_{trial}");
        let next = format!("OTHER{trial} = ");
        let (edited, renamed) = tokio::join!(
            server.call(
                "edit",
                json!({"path": "pkg/use.py", "old_string": other, "new_string": next}),
            ),
            server.call(
                "lsp_rename",
                json!({"path": "pkg/core.py", "line": 1, "symbol": names[0], "new_name": names[1]}),
            ),
        );
        let used = std::fs::read_to_string(root.join("pkg/use.py")).unwrap();
        assert!(!is_error(&edited), "{}", text(&edited));
        assert!(used.contains(&next), "the edit was lost: {used}");
        other = next;
        match is_error(&renamed) {
            true => {
                assert!(
                    text(&renamed).contains("changed since this call read it"),
                    "{}",
                    text(&renamed)
                );
                assert!(used.contains(&format!("{}(1)", names[0])), "{used}");
            }
            false => {
                assert!(used.contains(&format!("{}(1)", names[1])), "{used}");
                names[0] = names[1].clone();
            }
        }
    }
}
