//! The sandbox a run's children start in (EVAL-9): the command line prefix every child runs
//! under, and the check made once, when the run begins, that the prefix starts processes here
//! and keeps the workspace at its own path ([`probe_sandbox`]). A prefix that fails the check
//! is kept, refused: every spawn through it fails with the one problem found, so no child runs
//! outside the sandbox the operator asked for and none fails with an obscure error of its own.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::{Command, Error, RunLimits, run_to_end};

/// The command line prefix that runs a program inside the conversation's sandbox (EVAL-9),
/// e.g. `["bwrap", "--dev-bind", "/", "/", "--"]`; the program and its arguments follow it.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    argv: Vec<String>,
    /// What [`probe_sandbox`] found wrong with it, once it was refused.
    refused: Option<Arc<SandboxRefusal>>,
}

impl Sandbox {
    /// The prefix `argv`; an empty one runs children directly.
    pub fn new(argv: Vec<String>) -> Self {
        Sandbox {
            argv,
            refused: None,
        }
    }

    /// The prefix's words.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The prefix as a command line, for messages.
    pub fn shown(&self) -> String {
        crate::command::shown_argv(&self.argv)
    }

    /// The same prefix, refused for `problem`, with `advice` on what to do: every
    /// [`Command::spawn`] through it fails with [`Error::SandboxRefused`] and starts nothing.
    pub fn refuse(mut self, problem: SandboxProblem, advice: impl Into<String>) -> Self {
        self.refused = Some(Arc::new(SandboxRefusal {
            problem,
            advice: advice.into(),
        }));
        self
    }

    /// Why it was refused, if it was.
    pub fn refusal(&self) -> Option<&Arc<SandboxRefusal>> {
        self.refused.as_ref()
    }
}

/// Why a sandbox prefix cannot be used for a run (EVAL-9): what was run through it and what
/// was seen, as data and as a technical sentence naming the prefix. What the operator does
/// about it is the caller's to say ([`SandboxRefusal`]): it knows where the prefix came from.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxProblem {
    /// The prefix could not be run at all (its program is missing), or did not end in time.
    #[error("the sandbox `{prefix}` cannot be run: {source}")]
    CannotRun {
        prefix: String,
        #[source]
        source: Arc<Error>,
    },
    /// It ran, and a command through it failed: for `true`, most often isolation that cannot
    /// nest (bubblewrap inside a container without user namespaces).
    #[error(
        "the sandbox `{prefix}` cannot start processes here: `{ran}` through it failed ({status}): {said}"
    )]
    Fails {
        prefix: String,
        /// The command run through it: `true`, or the check of where the workspace is.
        ran: String,
        /// How it ended, e.g. `exit status: 1`.
        status: String,
        /// The last lines it wrote.
        said: String,
    },
    /// The workspace is not at its own path inside the sandbox.
    #[error(
        "the sandbox `{prefix}` maps paths differently from the host: the workspace root is \
         {}, but {seen}",
        root.display()
    )]
    MapsPaths {
        prefix: String,
        root: PathBuf,
        /// What a process started in the root through the sandbox saw.
        seen: String,
    },
}

/// A sandbox refused for a run: the problem found, and what to do about it, as the run says
/// it. This is what every spawn through the refused prefix fails with.
#[derive(Debug, thiserror::Error)]
#[error("{problem}; {advice}")]
pub struct SandboxRefusal {
    #[source]
    pub problem: SandboxProblem,
    /// What the operator does about it, and what the tools do meanwhile.
    pub advice: String,
}

/// How long one run through the prefix may take: a container's `exec` takes a second, a
/// bubblewrap milliseconds.
const PROBE_LIMITS: RunLimits = RunLimits {
    timeout: Duration::from_secs(15),
    max_output_bytes: 16 * 1024,
};

/// Run inside the sandbox, started in the workspace root with the root as `$1`: where the
/// process finds itself, and the root's inode there (or `missing`). Only POSIX `sh`, `pwd`
/// and `ls`, which every program the tools start needs around it anyway.
const WHERE_AM_I: &str = r#"pwd -P && if [ -d "$1" ]; then ls -di -- "$1"; else echo missing; fi"#;

/// Checks, once as a run begins, that `sandbox` can start processes here and keeps the
/// workspace `root` at its own path (EVAL-9). It runs `true` through the prefix (a prefix
/// that cannot start anything, such as bubblewrap without user namespaces, fails here), then
/// a shell started in `root` through it that says where it is and which folder `root` is
/// there: the same path, and the same folder (its inode), or the prefix is refused. Both run
/// through [`Command`], as every child does.
pub async fn probe_sandbox(sandbox: &Sandbox, root: &Path) -> Result<(), SandboxProblem> {
    let prefix = sandbox.shown();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let through = Some(Sandbox::new(sandbox.argv.clone()));
    let cannot_run = |source: Error| SandboxProblem::CannotRun {
        prefix: prefix.clone(),
        source: Arc::new(source),
    };
    let trivial = Command::new("true", &root).sandbox(through.clone());
    let output = run_to_end(&trivial, None, PROBE_LIMITS)
        .await
        .map_err(cannot_run)?;
    if !output.status.success() {
        return Err(SandboxProblem::Fails {
            prefix,
            ran: "true".to_owned(),
            status: output.status.to_string(),
            said: last_words(&output.stderr_text(), &output.stdout_text()),
        });
    }
    let check = Command::new("sh", &root)
        .args(["-c", WHERE_AM_I, "sh"])
        .arg(&root)
        .sandbox(through);
    let output = run_to_end(&check, None, PROBE_LIMITS)
        .await
        .map_err(cannot_run)?;
    let stdout = output.stdout_text();
    let mut lines = stdout.lines().map(str::trim);
    let (Some(cwd), Some(found)) = (lines.next(), lines.next()) else {
        return Err(SandboxProblem::Fails {
            prefix,
            ran: check.shown(),
            status: output.status.to_string(),
            said: last_words(&output.stderr_text(), &stdout),
        });
    };
    let inode_inside = match found {
        "missing" => None,
        line => line.split_whitespace().next().and_then(|n| n.parse().ok()),
    };
    let inode_here = std::fs::metadata(&root).map(|m| m.ino()).ok();
    let seen = match (Path::new(cwd) == root, inode_inside) {
        (true, Some(inside)) if inode_here.is_none_or(|here| here == inside) => return Ok(()),
        (true, Some(inside)) => format!(
            "{} inside the sandbox is another folder (inode {inside} there, {} here)",
            root.display(),
            inode_here.unwrap_or_default()
        ),
        (true, None) => format!(
            "a process started in it through the sandbox is in {cwd} and cannot see it as a \
             folder"
        ),
        (false, None) => format!(
            "a process started in it through the sandbox finds itself in {cwd}, and there is \
             no {} inside",
            root.display()
        ),
        (false, Some(_)) => format!(
            "a process started in it through the sandbox finds itself in {cwd}: the sandbox \
             does not keep the working folder"
        ),
    };
    Err(SandboxProblem::MapsPaths { prefix, root, seen })
}

/// [`probe_sandbox`] for a caller that is not async, or is but may block a while as a run is
/// built: the check runs on a thread of its own with a runtime of its own, so it works from
/// inside a runtime and outside one alike.
pub fn probe_sandbox_blocking(sandbox: &Sandbox, root: &Path) -> Result<(), SandboxProblem> {
    let failed = |source: std::io::Error| SandboxProblem::CannotRun {
        prefix: sandbox.shown(),
        source: Arc::new(Error::Os {
            action: "check the sandbox",
            source,
        }),
    };
    std::thread::scope(|scope| {
        let checking = std::thread::Builder::new()
            .name("tools-process-sandbox-probe".into())
            .spawn_scoped(scope, || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(failed)?;
                runtime.block_on(probe_sandbox(sandbox, root))
            })
            .map_err(failed)?;
        checking
            .join()
            .unwrap_or_else(|_| Err(failed(std::io::Error::other("the check panicked"))))
    })
}

/// The last few lines a failed run wrote (stderr first), for a message.
fn last_words(stderr: &str, stdout: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return "it wrote nothing".to_owned();
    }
    let words = lines[lines.len().saturating_sub(3)..].join(" | ");
    match words.char_indices().nth(400) {
        Some((cut, _)) => format!("{}…", &words[..cut]),
        None => words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_words_keep_the_end_of_what_it_said() {
        assert_eq!(last_words("", "\n"), "it wrote nothing");
        assert_eq!(
            last_words("a\n\nb\nc\nbwrap: no permissions\n", "out"),
            "c | bwrap: no permissions | out"
        );
    }
}
