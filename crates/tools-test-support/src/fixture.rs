//! Fixture files written from one string or a list.

use std::path::Path;

/// Writes fixture text into `root`: each `//- /path` header line starts a file, and the lines
/// up to the next header are its content (the rust-analyzer fixture format). Missing folders
/// are created.
pub fn write_fixture(root: &Path, fixture: &str) -> std::io::Result<()> {
    let mut files: Vec<(&str, String)> = Vec::new();
    for line in fixture.lines() {
        if let Some(path) = line.strip_prefix("//- /") {
            files.push((path.trim(), String::new()));
        } else if let Some((_, text)) = files.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    for (path, text) in files {
        let full = root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, text)?;
    }
    Ok(())
}

/// Writes each `(path, text)` under `root`, creating folders; panics (fails the test) when a
/// file cannot be written.
pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let full = root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(full, text).unwrap();
    }
}

/// Makes the test venv (the repository's `.venv`, with debugpy, pandas and basedpyright)
/// the project's own `.venv` in `root`, as a symlink: kernels and debug adapters then run
/// the project's interpreter, as they would in a user's project.
pub fn link_test_venv(root: &Path) {
    std::os::unix::fs::symlink(crate::repo_root().join(".venv"), root.join(".venv")).unwrap();
}

/// A temp Python project: a `pyproject.toml` naming it `app`, `files`, and the test venv as
/// its `.venv` ([`link_test_venv`]).
pub fn python_project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[(
            "pyproject.toml",
            "[project]\nname = \"app\"\nversion = \"0\"\n",
        )],
    );
    write_files(dir.path(), files);
    link_test_venv(dir.path());
    dir
}

#[cfg(test)]
mod tests {
    #[test]
    fn fixtures_write_every_file_with_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        super::write_fixture(
            dir.path(),
            "ignored\n//- /a.txt\none\n//- /deep/b.rs\nfn b() {}\n\n",
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("deep/b.rs")).unwrap(),
            "fn b() {}\n\n"
        );
    }
}
