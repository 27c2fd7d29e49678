//! The crate's one error type: spawning, waiting and the run-to-end timeout. Messages name the
//! command and the folder, so a caller can pass them on as they are.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::SandboxRefusal;

/// A failure to start, talk to or wait for a child process.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command line with no program in it.
    #[error("the command is empty")]
    EmptyCommand,
    /// The process could not be started (missing binary, bad folder, no permission).
    #[error("cannot run `{command}` in {}{}: {source}", cwd.display(), sandboxed(sandbox.as_deref()))]
    Spawn {
        command: String,
        cwd: PathBuf,
        /// The sandbox prefix it was started through, shown as a command line.
        sandbox: Option<String>,
        #[source]
        source: std::io::Error,
    },
    /// The command was to run through a sandbox that was refused when the run began
    /// ([`crate::probe_sandbox`]); nothing was started (EVAL-9). The message names only the
    /// program: the problem is the sandbox's, not its arguments' (a kernel's are its source).
    #[error("cannot run `{program}`: {refusal}")]
    SandboxRefused {
        /// The program's file name.
        program: String,
        #[source]
        refusal: Arc<SandboxRefusal>,
    },
    /// Spawning was asked for outside a tokio runtime.
    #[error("cannot run `{command}`: processes are spawned from inside a tokio runtime")]
    NoRuntime { command: String },
    /// Waiting for, reading from or writing to the process failed.
    #[error("{action} `{command}` failed: {source}")]
    Io {
        /// What was being done, e.g. "waiting for".
        action: &'static str,
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A request to the operating system about ourselves failed.
    #[error("cannot {action}: {source}")]
    Os {
        /// What was asked, e.g. "become a child subreaper".
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// [`crate::run_to_end`] ran out of time; the process group was killed.
    #[error("`{command}` did not finish within {} and was stopped", shown_duration(*timeout))]
    Timeout { command: String, timeout: Duration },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn sandboxed(sandbox: Option<&str>) -> String {
    sandbox
        .map(|prefix| format!(" (through the sandbox `{prefix}`)"))
        .unwrap_or_default()
}

/// `5s`, `1.5s` or `300ms`: how a timeout reads in a message.
pub(crate) fn shown_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    match millis {
        m if m < 1000 => format!("{m}ms"),
        m if m % 1000 == 0 => format!("{}s", m / 1000),
        m => format!("{:.1}s", m as f64 / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(shown_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(shown_duration(Duration::from_secs(5)), "5s");
        assert_eq!(shown_duration(Duration::from_millis(1500)), "1.5s");
    }
}
