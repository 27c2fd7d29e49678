//! The adapter table (DBG-6) and how an adapter is found here (DBG-2): its root markers, its
//! binary over the project's tool folders and `PATH` (versioned names included), and for
//! debugpy whether the chosen interpreter can import it (DBG-7).

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{ToolError, Workspace};
use tools_process::{Command, RootRule, RunLimits, Sandbox, SearchPath, run_to_end};

/// A debug adapter we know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AdapterId {
    /// Python, `python -m debugpy.adapter`.
    Debugpy,
    /// C, C++, Rust: `lldb-dap` (or `lldb-dap-NN`, `lldb-vscode[-NN]`).
    Lldb,
    /// Go: `dlv dap`.
    Delve,
    /// Dart and Flutter: `dart debug_adapter`.
    Dart,
}

impl AdapterId {
    /// Every adapter, in the order `adapters` lists them.
    pub const ALL: [AdapterId; 4] = [
        AdapterId::Debugpy,
        AdapterId::Lldb,
        AdapterId::Delve,
        AdapterId::Dart,
    ];

    /// Its name in arguments and results.
    pub fn name(self) -> &'static str {
        match self {
            AdapterId::Debugpy => "debugpy",
            AdapterId::Lldb => "lldb",
            AdapterId::Delve => "delve",
            AdapterId::Dart => "dart",
        }
    }

    /// The root markers of a project it debugs (DBG-6).
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            AdapterId::Debugpy => &["pyproject.toml", "setup.py", "requirements.txt"],
            AdapterId::Lldb => &["Cargo.toml", "CMakeLists.txt"],
            AdapterId::Delve => &["go.mod"],
            AdapterId::Dart => &["pubspec.yaml"],
        }
    }

    /// The binary names tried, in order; the versioned form `NAME-NN` of each is tried after it.
    fn binaries(self) -> &'static [&'static str] {
        match self {
            AdapterId::Debugpy => &["python3", "python"],
            AdapterId::Lldb => &["lldb-dap", "lldb-vscode"],
            AdapterId::Delve => &["dlv"],
            AdapterId::Dart => &["dart"],
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            AdapterId::Debugpy => {
                "install it into the project's environment: `.venv/bin/pip install debugpy` \
                 (or create one with `python3 -m venv .venv` first)"
            }
            AdapterId::Lldb => {
                "install lldb (Debian: `apt-get install lldb-19`, which ships lldb-dap-19)"
            }
            AdapterId::Delve => {
                "install delve (Debian: `apt-get install delve`, or `go install github.com/go-delve/delve/cmd/dlv@latest`)"
            }
            AdapterId::Dart => "install the Dart SDK, which ships `dart debug_adapter`",
        }
    }

    /// Which adapter a program needs, from its name and what is on disk; `None` when nothing
    /// tells.
    pub fn infer(program: &Path) -> Option<AdapterId> {
        let extension = program.extension().and_then(|e| e.to_str()).unwrap_or("");
        match extension {
            "py" => return Some(AdapterId::Debugpy),
            "go" => return Some(AdapterId::Delve),
            "dart" => return Some(AdapterId::Dart),
            _ => {}
        }
        if program.is_dir() {
            let has_go = std::fs::read_dir(program).ok()?.flatten().any(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".go") || name == "go.mod"
            });
            return has_go.then_some(AdapterId::Delve);
        }
        let mut head = [0u8; 4];
        let is_elf = std::fs::File::open(program)
            .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut head))
            .is_ok()
            && head == *b"\x7fELF";
        if is_elf {
            return Some(AdapterId::Lldb);
        }
        None
    }
}

impl std::fmt::Display for AdapterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A binary that was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Resolved {
    /// Where it is.
    pub path: PathBuf,
    /// The name that matched (`lldb-dap-19`).
    pub matched: String,
    /// The version it reports, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Whether one adapter can run here, and why not (DBG-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AdapterReport {
    /// Which adapter.
    pub adapter: AdapterId,
    /// The folder (workspace-relative, `.` for the root) holding a root marker, and which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The binary (for debugpy: the interpreter) found, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<Resolved>,
    /// Whether a session can start.
    pub usable: bool,
    /// Why not, and what to install or create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// How to start an adapter that was found usable.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub adapter: AdapterId,
    pub binary: PathBuf,
}

/// Resolves `adapter`'s binary in `workspace_root` (the project's `.venv/bin` and `venv/bin`
/// first: DBG-7).
pub(crate) fn resolve_binary(
    adapter: AdapterId,
    workspace_root: &Path,
) -> Option<(PathBuf, String)> {
    let search = SearchPath::new(workspace_root, None, &[]);
    for name in adapter.binaries() {
        if let Some(path) = search.find(name, workspace_root) {
            return Some((path, (*name).to_owned()));
        }
        if let Some(versioned) = search.find_versioned(name) {
            let matched = format!("{name}-{}", versioned.version);
            return Some((versioned.path, matched));
        }
    }
    None
}

/// The folder holding one of `adapter`'s markers: the nearest above `near` (a program),
/// else the first in the workspace.
pub(crate) fn marker_for(
    adapter: AdapterId,
    workspace_root: &Path,
    near: Option<&Path>,
) -> Option<(PathBuf, String)> {
    let markers = adapter.markers();
    let folder = near
        .and_then(|file| {
            // A Go package is a folder: look from inside it.
            let probe = if file.is_dir() {
                file.join("_")
            } else {
                file.to_path_buf()
            };
            tools_process::root_for(markers, RootRule::Nearest, workspace_root, &probe)
        })
        .or_else(|| {
            tools_process::scan_roots(markers, RootRule::Nearest, workspace_root)
                .into_iter()
                .next()
        })?;
    let marker = tools_process::marker_in(markers, &folder)?.to_owned();
    Some((folder, marker))
}

const PROBE: RunLimits = RunLimits {
    timeout: Duration::from_secs(10),
    max_output_bytes: 4096,
};

/// An interpreter that cannot import debugpy (DBG-7), in its own last words: the last line
/// it wrote to stderr.
#[derive(Debug, thiserror::Error)]
#[error("{last_words}")]
struct CannotImport {
    last_words: String,
}

/// Asks a binary its version; for debugpy, asks the interpreter for debugpy's, which also
/// proves it can import it. It runs inside the run's `sandbox`, as the adapter will (EVAL-9):
/// the binary may be the project's own.
async fn probe(
    adapter: AdapterId,
    binary: &Path,
    cwd: &Path,
    sandbox: Option<&Sandbox>,
) -> Result<Option<String>, CannotImport> {
    let argv: Vec<&str> = match adapter {
        AdapterId::Debugpy => vec![
            "-c",
            "import debugpy; print('debugpy', debugpy.__version__)",
        ],
        AdapterId::Delve => vec!["version"],
        AdapterId::Lldb | AdapterId::Dart => vec!["--version"],
    };
    let command = Command::new(binary, cwd)
        .args(argv)
        .sandbox(sandbox.cloned());
    match run_to_end(&command, None, PROBE).await {
        Ok(output) if output.status.success() => Ok(output
            .stdout_text()
            .lines()
            .map(str::trim)
            .find(|line| line.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_owned)),
        Ok(output) if adapter == AdapterId::Debugpy => Err(CannotImport {
            last_words: output
                .stderr_text()
                .lines()
                .last()
                .unwrap_or("the import failed")
                .to_owned(),
        }),
        Ok(_) | Err(_) => Ok(None),
    }
}

/// Reports on one adapter for `adapters`, probing its binary inside the run's `sandbox`.
pub(crate) async fn report(
    adapter: AdapterId,
    workspace: &Workspace,
    sandbox: Option<&Sandbox>,
) -> AdapterReport {
    let workspace_root = workspace.root();
    let marker = marker_for(adapter, workspace_root, None)
        .map(|(folder, marker)| format!("{} in {}", marker, workspace.display(&folder)));
    let mut problems = Vec::new();
    if marker.is_none() {
        problems.push(format!(
            "no root marker ({}) in the workspace",
            adapter.markers().join(", ")
        ));
    }
    let binary = match resolve_binary(adapter, workspace_root) {
        None => {
            let names: Vec<String> = adapter
                .binaries()
                .iter()
                .map(|name| format!("{name}, {name}-NN"))
                .collect();
            problems.push(format!(
                "no binary ({}) in .venv/bin, venv/bin or PATH: {}",
                names.join(", "),
                adapter.install_hint()
            ));
            None
        }
        Some((path, matched)) => {
            let version = match probe(adapter, &path, workspace_root, sandbox).await {
                Ok(version) => version,
                Err(why) => {
                    problems.push(format!(
                        "{} cannot import debugpy ({why}): {}",
                        path.display(),
                        adapter.install_hint()
                    ));
                    None
                }
            };
            let version = version.or_else(|| {
                matched
                    .rsplit_once('-')
                    .and_then(|(_, n)| n.parse::<u32>().ok())
                    .map(|n| format!("version {n} (from its name)"))
            });
            Some(Resolved {
                path,
                matched,
                version,
            })
        }
    };
    if adapter == AdapterId::Dart && binary.is_some() {
        problems.push("the Dart adapter is listed but not supported by this build yet".to_owned());
    }
    AdapterReport {
        adapter,
        usable: problems.is_empty(),
        marker,
        binary,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

/// Finds `adapter` for a session on `program`, or says why it cannot run (DBG-2): the
/// answer the model reads; for debugpy, the interpreter must import it (DBG-7), or the launch
/// would fail as if the code were broken. The probe runs inside the run's `sandbox`.
pub(crate) async fn find(
    adapter: AdapterId,
    workspace_root: &Path,
    program: Option<&Path>,
    sandbox: Option<&Sandbox>,
) -> Result<Found, ToolError> {
    if adapter == AdapterId::Dart {
        return Err(ToolError::failed(
            "the dart adapter is not supported by this build: no Dart session can start here",
        ));
    }
    if marker_for(adapter, workspace_root, program).is_none() {
        return Err(ToolError::failed(format!(
            "{adapter} needs a project root marker ({}) in the workspace and none was found: \
             create one, or call `debug` with operation `adapters` to see what is usable",
            adapter.markers().join(", ")
        )));
    }
    let Some((binary, _)) = resolve_binary(adapter, workspace_root) else {
        return Err(ToolError::failed(format!(
            "{adapter} is not installed: {}; call `debug` with operation `adapters` for details",
            adapter.install_hint()
        )));
    };
    if adapter == AdapterId::Debugpy
        && let Err(why) = probe(adapter, &binary, workspace_root, sandbox).await
    {
        return Err(ToolError::failed(format!(
            "{} cannot import debugpy ({why}): {}",
            binary.display(),
            adapter.install_hint()
        )));
    }
    Ok(Found { adapter, binary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dbg_6_the_adapter_follows_the_program() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.go"), "package main\n").unwrap();
        std::fs::write(dir.path().join("plain"), "#!/bin/sh\n").unwrap();
        assert_eq!(
            AdapterId::infer(Path::new("a/b.py")),
            Some(AdapterId::Debugpy)
        );
        assert_eq!(AdapterId::infer(dir.path()), Some(AdapterId::Delve));
        assert_eq!(AdapterId::infer(&dir.path().join("plain")), None);
        assert_eq!(
            AdapterId::infer(Path::new("/bin/sh")),
            Some(AdapterId::Lldb)
        );
    }

    #[test]
    fn dbg_6_lldb_is_found_under_its_versioned_name() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join(".venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = bin.join("lldb-vscode-14");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (path, matched) = resolve_binary(AdapterId::Lldb, dir.path()).unwrap();
        // An lldb-dap on PATH wins over the older name; otherwise ours is found.
        assert!(matched.starts_with("lldb-"), "{matched}");
        if !matched.starts_with("lldb-dap") {
            assert_eq!((path, matched.as_str()), (tool, "lldb-vscode-14"));
        }
    }
}
