//! Where binaries are looked for: the project's own tool folders first (so a project's pinned
//! basedpyright or typescript-language-server wins over a global one), then the configured
//! folders, then `PATH`.

use std::path::{Path, PathBuf};

/// Folders inside a project where its own tools live, searched before `PATH`.
pub const PROJECT_TOOL_DIRS: &[&str] = &[".venv/bin", "venv/bin", "node_modules/.bin"];

/// The folders binaries are looked for in, in order, and how to name them in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPath {
    dirs: Vec<PathBuf>,
    described: String,
}

/// A binary found under a versioned name (`clangd-17`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub version: u32,
    pub path: PathBuf,
}

impl SearchPath {
    /// The project tool folders of `project_root` (when given) and then of `workspace_root`,
    /// the `configured` folders (relative ones from `workspace_root`), then `PATH` as it is now.
    pub fn new(workspace_root: &Path, project_root: Option<&Path>, configured: &[PathBuf]) -> Self {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for base in project_root.into_iter().chain([workspace_root]) {
            for dir in PROJECT_TOOL_DIRS {
                let full = base.join(dir);
                if !dirs.contains(&full) {
                    dirs.push(full);
                }
            }
        }
        let mut shown: Vec<String> = PROJECT_TOOL_DIRS.iter().map(|d| (*d).to_owned()).collect();
        for dir in configured {
            let full = workspace_root.join(dir);
            shown.push(full.display().to_string());
            dirs.push(full);
        }
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        SearchPath {
            dirs,
            described: format!("{} and PATH", shown.join(", ")),
        }
    }

    /// Exactly these folders, described as `described` in messages.
    pub fn from_dirs(dirs: Vec<PathBuf>, described: impl Into<String>) -> Self {
        SearchPath {
            dirs,
            described: described.into(),
        }
    }

    /// The folders, in search order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The folders as a message names them: `.venv/bin, venv/bin, node_modules/.bin and PATH`.
    pub fn described(&self) -> &str {
        &self.described
    }

    /// The first executable file called `program`; a program with a `/` in it is a path,
    /// taken from `base` when relative.
    pub fn find(&self, program: &str, base: &Path) -> Option<PathBuf> {
        if program.contains('/') {
            let path = base.join(program);
            return is_executable(&path).then_some(path);
        }
        self.dirs
            .iter()
            .map(|dir| dir.join(program))
            .find(|path| is_executable(path))
    }

    /// The highest-versioned executable `program-NN` in any folder (distributions ship
    /// `clangd-17` beside `clangd-14`); on a tie, the earlier folder's.
    pub fn find_versioned(&self, program: &str) -> Option<Versioned> {
        let prefix = format!("{program}-");
        let mut best: Option<Versioned> = None;
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut found: Vec<(u32, PathBuf)> = entries
                .flatten()
                .filter_map(|entry| {
                    let version = entry
                        .file_name()
                        .to_str()?
                        .strip_prefix(&prefix)?
                        .parse::<u32>()
                        .ok()?;
                    Some((version, entry.path()))
                })
                .collect();
            // Highest first, so the first executable one is this folder's best.
            found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let Some((version, path)) = found.into_iter().find(|(_, path)| is_executable(path))
            else {
                continue;
            };
            if best.as_ref().is_none_or(|seen| version > seen.version) {
                best = Some(Versioned { version, path });
            }
        }
        best
    }
}

/// Whether `path` is a file (or a link to one) that someone may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_path_is_described_for_messages() {
        let search = SearchPath::new(Path::new("/w"), Some(Path::new("/w/p")), &[]);
        assert_eq!(
            search.described(),
            ".venv/bin, venv/bin, node_modules/.bin and PATH"
        );
        assert_eq!(
            &search.dirs()[..4],
            [
                PathBuf::from("/w/p/.venv/bin"),
                PathBuf::from("/w/p/venv/bin"),
                PathBuf::from("/w/p/node_modules/.bin"),
                PathBuf::from("/w/.venv/bin"),
            ]
        );
        let configured = SearchPath::new(Path::new("/w"), None, &[PathBuf::from("tools")]);
        assert_eq!(
            configured.described(),
            ".venv/bin, venv/bin, node_modules/.bin, /w/tools and PATH"
        );
        assert_eq!(configured.dirs()[3], PathBuf::from("/w/tools"));
    }
}
