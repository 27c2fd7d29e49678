//! Root-marker discovery (LSP-2), with the cases tools-lsp's table relies on.

use std::path::PathBuf;

use tools_process::{RootRule, marker_in, root_for, scan_roots};

const RUST: &[&str] = &["Cargo.toml", "rust-project.json"];
const TYPESCRIPT: &[&str] = &["tsconfig.json", "jsconfig.json", "package.json"];
const PYTHON: &[&str] = &[
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "pyrightconfig.json",
];

fn tree(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    dir
}

#[test]
fn lsp_2_rust_roots_are_the_outermost_cargo_toml() {
    let dir = tree(&["Cargo.toml", "crates/a/Cargo.toml", "crates/a/src/lib.rs"]);
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        root_for(
            RUST,
            RootRule::Outermost,
            &root,
            &root.join("crates/a/src/lib.rs")
        ),
        Some(root.clone())
    );
    assert_eq!(
        scan_roots(RUST, RootRule::Outermost, &root),
        vec![root.clone()]
    );
    assert_eq!(
        root_for(
            RUST,
            RootRule::Nearest,
            &root,
            &root.join("crates/a/src/lib.rs")
        ),
        Some(root.join("crates/a"))
    );
}

#[test]
fn lsp_2_other_roots_are_the_nearest_marker() {
    let dir = tree(&["package.json", "web/tsconfig.json", "web/src/a.ts"]);
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        root_for(
            TYPESCRIPT,
            RootRule::Nearest,
            &root,
            &root.join("web/src/a.ts")
        ),
        Some(root.join("web"))
    );
    assert_eq!(
        scan_roots(TYPESCRIPT, RootRule::Nearest, &root),
        vec![root.clone(), root.join("web")]
    );
    assert_eq!(
        marker_in(TYPESCRIPT, &root.join("web")),
        Some("tsconfig.json")
    );
}

#[test]
fn lsp_2_no_marker_means_no_root() {
    let dir = tree(&["src/main.py", "node_modules/x/package.json"]);
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        root_for(PYTHON, RootRule::Nearest, &root, &root.join("src/main.py")),
        None
    );
    assert_eq!(
        scan_roots(PYTHON, RootRule::Nearest, &root),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        scan_roots(TYPESCRIPT, RootRule::Nearest, &root),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn lsp_2_roots_are_never_above_the_workspace_or_in_skipped_folders() {
    let dir = tree(&[
        "pyproject.toml",
        "ws/src/main.py",
        "ws/.hidden/pyproject.toml",
        "ws/target/pyproject.toml",
        "ws/a/b/c/pyproject.toml",
        "ws/a/b/c/d/pyproject.toml",
    ]);
    let outer = dir.path().canonicalize().unwrap();
    let root = outer.join("ws");
    assert_eq!(
        root_for(PYTHON, RootRule::Nearest, &root, &root.join("src/main.py")),
        None
    );
    assert_eq!(
        scan_roots(PYTHON, RootRule::Nearest, &root),
        vec![root.join("a/b/c")],
        "hidden and build folders are skipped, and the scan stops three levels down"
    );
}
