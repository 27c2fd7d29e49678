//! Binary resolution over the search path.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tools_process::{SearchPath, Versioned, is_executable};

fn file(path: &Path, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn lsp_2_versioned_names_are_found_highest_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (first, second) = (root.join("first"), root.join("second"));
    file(&first.join("clangd-14"), 0o755);
    file(&first.join("clangd-9"), 0o755);
    file(&first.join("clangd-x"), 0o755);
    file(&first.join("clangd-20"), 0o644);
    file(&second.join("clangd-17"), 0o755);
    file(&second.join("clangd-14"), 0o755);
    let search = SearchPath::from_dirs(vec![first.clone(), second.clone()], "first, second");
    assert_eq!(
        search.find_versioned("clangd"),
        Some(Versioned {
            version: 17,
            path: second.join("clangd-17"),
        })
    );
    assert_eq!(search.find_versioned("gopls"), None);
    assert_eq!(search.find("clangd", &root), None);
}

#[test]
fn lsp_2_project_tool_folders_come_before_configured_ones_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    file(&root.join("web/node_modules/.bin/tool"), 0o755);
    file(&root.join(".venv/bin/tool"), 0o755);
    file(&root.join("tools/tool"), 0o755);
    file(&root.join("tools/other"), 0o755);
    file(&root.join("tools/plain"), 0o644);
    let project = root.join("web");
    let search = SearchPath::new(&root, Some(&project), &[PathBuf::from("tools")]);
    assert_eq!(
        search.find("tool", &root),
        Some(root.join("web/node_modules/.bin/tool"))
    );
    let workspace_only = SearchPath::new(&root, None, &[PathBuf::from("tools")]);
    assert_eq!(
        workspace_only.find("tool", &root),
        Some(root.join(".venv/bin/tool"))
    );
    assert_eq!(
        workspace_only.find("other", &root),
        Some(root.join("tools/other"))
    );
    assert_eq!(workspace_only.find("plain", &root), None, "not executable");
    assert_eq!(
        workspace_only.find("sh", &root).map(|p| p.ends_with("sh")),
        Some(true)
    );
    assert_eq!(
        workspace_only.find("./tools/other", &root),
        Some(root.join("./tools/other")),
        "a path is taken from the base"
    );
    assert!(is_executable(&root.join("tools/tool")));
    assert!(!is_executable(&root.join("tools")));
}
