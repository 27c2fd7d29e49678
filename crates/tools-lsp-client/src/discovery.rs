//! Deciding at call time whether a server can run here (LSP-2, CORE-2): where its root marker
//! is, and whether its binary resolves — in the project's own tool folders, the configured
//! folders, then `PATH` — with rustup proxies checked for an installed component.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use tools_process::{Command, RunLimits, RunOutput, Sandbox, SearchPath, run_to_end};

use crate::servers::{Candidate, ServerSpec, VersionProbe};

/// How long a version probe or `rustup which` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How much of a probe's output is kept: a version is one line.
const PROBE_OUTPUT: usize = 64 * 1024;

/// What the binary lookup found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Binary {
    /// A runnable server: its path and the whole command line.
    Found {
        path: PathBuf,
        argv: Vec<String>,
        candidate: Candidate,
    },
    /// Nothing runnable, and where it was looked for.
    Missing(MissingBinary),
}

/// Why no binary of a server runs here: where it was looked for, and how to install it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.reason())]
pub struct MissingBinary {
    /// The programs looked for, in order, each with whether `name-NN` versions count.
    pub programs: Vec<(String, bool)>,
    /// Where they were looked for, as tools-process describes the search path.
    pub searched: String,
    /// Programs found as rustup proxies without their component for the project's
    /// toolchain, each as a sentence with rustup's answer.
    pub proxies: Vec<String>,
    /// How to install it, from the server table; `None` for a server the configuration adds.
    pub install_hint: Option<String>,
}

impl MissingBinary {
    /// Whether nothing was found at all, as opposed to a rustup proxy without its component.
    pub fn not_found(&self) -> bool {
        self.proxies.is_empty()
    }

    fn reason(&self) -> String {
        if !self.proxies.is_empty() {
            return self.proxies.join("; ");
        }
        let names: Vec<String> = self
            .programs
            .iter()
            .map(|(program, versioned)| match versioned {
                true => format!("`{program}` (or `{program}-NN`)"),
                false => format!("`{program}`"),
            })
            .collect();
        format!(
            "its binary was not found: looked for {} in {}",
            names.join(", "),
            self.searched
        )
    }
}

/// Why rustup has no real binary behind one of its proxies.
#[derive(Debug, thiserror::Error)]
enum RustupError {
    /// It answered, and this is the first line it wrote to stderr.
    #[error("rustup says: {0}")]
    Says(String),
    /// It could not be asked.
    #[error(transparent)]
    Run(#[from] tools_process::Error),
}

/// Resolves the server's binary for a project at `root` (rustup needs the folder to pick the
/// toolchain); rustup is asked inside the run's `sandbox`.
pub(crate) async fn resolve_binary(
    spec: &ServerSpec,
    search: &SearchPath,
    root: &Path,
    sandbox: Option<&Sandbox>,
) -> Binary {
    let mut proxies = Vec::new();
    for candidate in &spec.candidates {
        let found = search.find(&candidate.program, root).or_else(|| {
            candidate
                .versioned
                .then(|| search.find_versioned(&candidate.program))
                .flatten()
                .map(|found| found.path)
        });
        let Some(path) = found else {
            continue;
        };
        let path = match rustup_proxy(&path) {
            None => path,
            Some(rustup) => match rustup_which(&rustup, &candidate.program, root, sandbox).await {
                Ok(real) => real,
                Err(error) => {
                    proxies.push(format!(
                        "{} is a rustup proxy, but rustup has no `{}` for the toolchain of this \
                         project ({error})",
                        path.display(),
                        candidate.program
                    ));
                    continue;
                }
            },
        };
        let mut argv = vec![path.display().to_string()];
        argv.extend(candidate.args.iter().cloned());
        return Binary::Found {
            path,
            argv,
            candidate: candidate.clone(),
        };
    }
    Binary::Missing(MissingBinary {
        programs: spec
            .candidates
            .iter()
            .map(|candidate| (candidate.program.clone(), candidate.versioned))
            .collect(),
        searched: search.described().to_owned(),
        proxies,
        install_hint: spec.install_hint.clone(),
    })
}

/// The `rustup` binary behind `path` when `path` is one of rustup's proxies (a link to, or
/// the same file as, `rustup`).
fn rustup_proxy(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let canonical = path.canonicalize().ok()?;
    if canonical.file_name().is_some_and(|name| name == "rustup") {
        return Some(canonical);
    }
    let beside = path.parent()?.join("rustup");
    let (ours, theirs) = (
        std::fs::metadata(path).ok()?,
        std::fs::metadata(&beside).ok()?,
    );
    (ours.dev() == theirs.dev() && ours.ino() == theirs.ino()).then_some(beside)
}

/// Asks rustup which real binary the proxy would run in `root`; an error means the
/// component is not installed for that toolchain.
async fn rustup_which(
    rustup: &Path,
    program: &str,
    root: &Path,
    sandbox: Option<&Sandbox>,
) -> Result<PathBuf, RustupError> {
    let which = ["which".to_owned(), program.to_owned()];
    let output = quick_output(rustup, &which, root, sandbox).await?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() && !text.is_empty() && Path::new(&text).is_file() {
        return Ok(PathBuf::from(text));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("no answer");
    Err(RustupError::Says(first.to_owned()))
}

/// Runs a short command (a version probe, `rustup which`) to its end, through the one
/// process path: its own group, killed with the run, a timeout and an output cap, inside the
/// run's sandbox like every other child (the binary may be the project's own).
async fn quick_output(
    program: &Path,
    args: &[String],
    cwd: &Path,
    sandbox: Option<&Sandbox>,
) -> tools_process::Result<RunOutput> {
    let command = Command::new(program, cwd)
        .args(args)
        .sandbox(sandbox.cloned());
    run_to_end(
        &command,
        None,
        RunLimits {
            timeout: PROBE_TIMEOUT,
            max_output_bytes: PROBE_OUTPUT,
        },
    )
    .await
}

/// Versions by binary path, asked once per run: a probe spawns a process.
#[derive(Debug, Default)]
pub struct VersionCache {
    known: Mutex<HashMap<PathBuf, Option<String>>>,
}

impl VersionCache {
    /// The first line the binary prints about its version, if it says anything; it is asked
    /// inside the run's `sandbox`.
    pub async fn version(
        &self,
        path: &Path,
        candidate: &Candidate,
        sandbox: Option<&Sandbox>,
    ) -> Option<String> {
        if let Ok(known) = self.known.lock()
            && let Some(version) = known.get(path)
        {
            return version.clone();
        }
        let (program, args) = match &candidate.version {
            VersionProbe::Args(args) => (path.to_path_buf(), args.clone()),
            VersionProbe::Sibling { program, args } => (path.with_file_name(program), args.clone()),
        };
        let cwd = path.parent().unwrap_or(Path::new("/"));
        let version = quick_output(&program, &args, cwd, sandbox)
            .await
            .ok()
            .and_then(|out| {
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                stdout
                    .lines()
                    .chain(stderr.lines())
                    .map(str::trim)
                    .find(|line| !line.is_empty())
                    .map(|line| line.chars().take(120).collect())
            });
        if let Ok(mut known) = self.known.lock() {
            known.insert(path.to_path_buf(), version.clone());
        }
        version
    }
}

/// The project root of `spec` for `file` (LSP-2).
pub(crate) fn root_for(spec: &ServerSpec, workspace_root: &Path, file: &Path) -> Option<PathBuf> {
    let mut root = tools_process::root_for(&spec.markers, spec.root_rule, workspace_root, file)?;
    // A root marked only weakly belongs to the root above it, if there is one.
    while !is_own_project(spec, &root) {
        let Some(above) = root.parent().filter(|_| root != workspace_root) else {
            break;
        };
        match tools_process::root_for(
            &spec.markers,
            spec.root_rule,
            workspace_root,
            &above.join("_"),
        ) {
            Some(outer) => root = outer,
            None => break,
        }
    }
    Some(root)
}

/// Whether a folder holding a marker of `spec` is a project of its own: it holds a marker
/// that is not weak (see [`ServerSpec::weak_markers`]).
fn is_own_project(spec: &ServerSpec, dir: &Path) -> bool {
    spec.markers
        .iter()
        .filter(|marker| !spec.weak_markers.contains(marker))
        .any(|marker| dir.join(marker).exists())
}

/// Every project root of `spec` in the workspace: a folder marked only weakly inside another
/// root is part of that root, so no file is counted under two.
pub fn scan_roots(spec: &ServerSpec, workspace_root: &Path) -> Vec<PathBuf> {
    let all = tools_process::scan_roots(&spec.markers, spec.root_rule, workspace_root);
    all.iter()
        .filter(|root| {
            is_own_project(spec, root)
                || !all
                    .iter()
                    .any(|other| other != *root && root.starts_with(other))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::builtin;

    fn spec(name: &str) -> ServerSpec {
        builtin()
            .unwrap()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
    }

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
        let rust = spec("rust-analyzer");
        assert_eq!(
            root_for(&rust, &root, &root.join("crates/a/src/lib.rs")),
            Some(root.clone())
        );
        assert_eq!(scan_roots(&rust, &root), vec![root.clone()]);
    }

    #[test]
    fn lsp_2_other_roots_are_the_nearest_marker() {
        let dir = tree(&["package.json", "web/tsconfig.json", "web/src/a.ts"]);
        let root = dir.path().canonicalize().unwrap();
        let ts = spec("typescript-language-server");
        assert_eq!(
            root_for(&ts, &root, &root.join("web/src/a.ts")),
            Some(root.join("web"))
        );
        assert_eq!(scan_roots(&ts, &root), vec![root.clone(), root.join("web")]);
    }

    #[test]
    fn lsp_2_a_folder_with_only_a_package_json_inside_a_typescript_root_is_part_of_it() {
        // An npm package whose subfolders hold a `package.json` each for its build: one
        // root, so `diagnostics "*"` runs `tsc` once (issue 40: five times, every error
        // listed five times).
        let dir = tree(&[
            "package.json",
            "tsconfig.json",
            "src/a.ts",
            "ajax/package.json",
            "ajax/b.ts",
            "packages/web/tsconfig.json",
            "packages/web/package.json",
            "packages/web/c.ts",
        ]);
        let root = dir.path().canonicalize().unwrap();
        let ts = spec("typescript-language-server");
        assert_eq!(
            root_for(&ts, &root, &root.join("ajax/b.ts")),
            Some(root.clone())
        );
        // A folder with its own `tsconfig.json` is still a project of its own.
        assert_eq!(
            root_for(&ts, &root, &root.join("packages/web/c.ts")),
            Some(root.join("packages/web"))
        );
        assert_eq!(
            scan_roots(&ts, &root),
            vec![root.clone(), root.join("packages/web")]
        );
    }

    #[test]
    fn lsp_2_a_weakly_marked_folder_inside_a_root_is_part_of_it() {
        // `docs/requirements.txt` beside `docs/conf.py` is not a project: the files belong
        // to the root above, and a check of every root counts them once.
        let dir = tree(&[
            "pyproject.toml",
            "docs/requirements.txt",
            "docs/conf.py",
            "tools/pyproject.toml",
            "tools/run.py",
            "extra/requirements.txt",
        ]);
        let root = dir.path().canonicalize().unwrap();
        let python = spec("basedpyright");
        assert_eq!(
            root_for(&python, &root, &root.join("docs/conf.py")),
            Some(root.clone())
        );
        assert_eq!(
            root_for(&python, &root, &root.join("tools/run.py")),
            Some(root.join("tools"))
        );
        assert_eq!(
            scan_roots(&python, &root),
            [root.clone(), root.join("tools")]
        );
        // Alone, a weak marker still makes a root.
        let alone = tree(&["scripts/requirements.txt", "scripts/a.py"]);
        let alone = alone.path().canonicalize().unwrap();
        assert_eq!(
            root_for(&python, &alone, &alone.join("scripts/a.py")),
            Some(alone.join("scripts"))
        );
        // A subfolder's CMakeLists.txt does not hide the compile database above it.
        let c = tree(&[
            "compile_commands.json",
            "CMakeLists.txt",
            "lib/CMakeLists.txt",
            "lib/a.c",
        ]);
        let c = c.path().canonicalize().unwrap();
        assert_eq!(
            root_for(&spec("clangd"), &c, &c.join("lib/a.c")),
            Some(c.clone())
        );
    }

    #[test]
    fn lsp_2_no_marker_means_no_root() {
        let dir = tree(&["src/main.py", "node_modules/x/package.json"]);
        let root = dir.path().canonicalize().unwrap();
        let python = spec("basedpyright");
        assert_eq!(root_for(&python, &root, &root.join("src/main.py")), None);
        assert_eq!(scan_roots(&python, &root), Vec::<PathBuf>::new());
        let ts = spec("typescript-language-server");
        assert_eq!(scan_roots(&ts, &root), Vec::<PathBuf>::new());
    }

    #[tokio::test]
    async fn lsp_2_a_missing_binary_says_where_it_looked_and_how_to_install() {
        let dir = tree(&[]);
        let root = dir.path().canonicalize().unwrap();
        let mut gopls = spec("gopls");
        gopls.candidates[0].program = "gopls-that-does-not-exist".into();
        let search = SearchPath::new(&root, None, &[]);
        let Binary::Missing(missing) = resolve_binary(&gopls, &search, &root, None).await else {
            panic!("found a binary that does not exist");
        };
        assert!(missing.not_found());
        assert_eq!(
            missing.to_string(),
            "its binary was not found: looked for `gopls-that-does-not-exist` in .venv/bin, \
             venv/bin, node_modules/.bin and PATH"
        );
        assert_eq!(
            missing.install_hint.as_deref(),
            Some("install it with `go install golang.org/x/tools/gopls@latest`")
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn lsp_2_versioned_names_are_found_highest_first() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tree(&[
            ".venv/bin/clangd-14",
            ".venv/bin/clangd-17",
            ".venv/bin/clangd-x",
        ]);
        let root = dir.path().canonicalize().unwrap();
        for name in ["clangd-14", "clangd-17", "clangd-x"] {
            let path = root.join(".venv/bin").join(name);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let search = SearchPath::from_dirs(vec![root.join(".venv/bin")], "");
        let Binary::Found { path, .. } =
            resolve_binary(&spec("clangd"), &search, &root, None).await
        else {
            panic!("no clangd found");
        };
        assert_eq!(path, root.join(".venv/bin/clangd-17"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn lsp_2_a_rustup_proxy_without_its_component_is_not_a_binary() {
        // A fake rustup whose `which` fails the way rustup does for a missing component.
        use std::os::unix::fs::PermissionsExt;
        let dir = tree(&[]);
        let root = dir.path().canonicalize().unwrap();
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("rustup"),
            "#!/bin/sh\necho \"error: 'rust-analyzer' is not installed for the toolchain 'x'\" >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(bin.join("rustup"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
        let search = SearchPath::from_dirs(vec![bin.clone()], "bin");
        let Binary::Missing(missing) =
            resolve_binary(&spec("rust-analyzer"), &search, &root, None).await
        else {
            panic!("a proxy without its component counted as a binary");
        };
        assert!(!missing.not_found());
        let reason = missing.to_string();
        assert!(
            reason.starts_with(&format!(
                "{} is a rustup proxy, but rustup has no `rust-analyzer` for the toolchain of \
                 this project (rustup says: error: 'rust-analyzer' is not installed",
                bin.join("rust-analyzer").display()
            )),
            "{reason}"
        );
        assert_eq!(
            missing.install_hint.as_deref(),
            Some("install it with `rustup component add rust-analyzer`")
        );
    }
}
