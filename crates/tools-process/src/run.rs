//! Running a short command to its end — a project checker, a version probe, `rustup which` —
//! with a timeout and a cap on what is kept of its output.

use std::borrow::Cow;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::time::Instant;

use crate::{Command, Error, Input, Output, Result};

/// After the leader exits and its group is ended, how long its pipes may stay open: a process
/// that left the group (setsid) can hold them, and we do not wait on it.
const DRAIN: Duration = Duration::from_secs(1);

/// The bounds of one [`run_to_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// How long the command may run before its group is killed.
    pub timeout: Duration,
    /// How many bytes of stdout, and of stderr, are kept (each); the rest is read and counted.
    pub max_output_bytes: usize,
}

/// What a command that ran to its end produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub status: ExitStatus,
    /// The first [`RunLimits::max_output_bytes`] of stdout.
    pub stdout: Vec<u8>,
    /// The first [`RunLimits::max_output_bytes`] of stderr.
    pub stderr: Vec<u8>,
    /// How many bytes of stdout were read past the cap and dropped.
    pub stdout_cut: u64,
    /// How many bytes of stderr were read past the cap and dropped.
    pub stderr_cut: u64,
}

impl RunOutput {
    /// Stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }

    /// Stderr as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }
}

/// Runs `command` to its end: writes `stdin_input` (or gives it no stdin), reads stdout and
/// stderr to their ends keeping the head of each up to the cap — and reading on past it, so
/// the child never blocks on a full pipe — and waits for it. Whatever it left running in its
/// group is then ended too. Past `limits.timeout` the whole group is killed and the result is
/// [`Error::Timeout`]. The command's own stdio settings are replaced.
pub async fn run_to_end(
    command: &Command,
    stdin_input: Option<Vec<u8>>,
    limits: RunLimits,
) -> Result<RunOutput> {
    let deadline = Instant::now() + limits.timeout;
    let input = match stdin_input {
        Some(_) => Input::Piped,
        None => Input::Null,
    };
    let mut child = command
        .clone()
        .stdin(input)
        .stdout(Output::Piped)
        .stderr(Output::Piped)
        .spawn()?;
    let (stdin, stdout, stderr) = (child.take_stdin(), child.take_stdout(), child.take_stderr());
    let mut out = Capped::new(limits.max_output_bytes);
    let mut err = Capped::new(limits.max_output_bytes);
    let status = {
        let io = async {
            tokio::join!(
                write_input(stdin, stdin_input),
                out.fill(stdout),
                err.fill(stderr)
            );
        };
        tokio::pin!(io);
        let mut io_done = false;
        let waited = loop {
            tokio::select! {
                waited = tokio::time::timeout_at(deadline, child.wait()) => break waited,
                () = &mut io, if !io_done => io_done = true,
            }
        };
        let Ok(status) = waited else {
            child.kill();
            let _ = child.wait().await;
            return Err(Error::Timeout {
                command: child.command().to_owned(),
                timeout: limits.timeout,
            });
        };
        let status = status?;
        // It is done; what it left behind in its group is not wanted, and holds the pipes.
        if tokio::time::timeout_at(deadline, child.group().terminate())
            .await
            .is_err()
        {
            child.group().kill();
        }
        if !io_done {
            let _ = tokio::time::timeout_at((Instant::now() + DRAIN).min(deadline), &mut io).await;
        }
        status
    };
    Ok(RunOutput {
        status,
        stdout: out.kept,
        stderr: err.kept,
        stdout_cut: out.cut,
        stderr_cut: err.cut,
    })
}

/// Writes the input and closes the pipe; a child that stops reading early (EPIPE) is fine.
async fn write_input(stdin: Option<ChildStdin>, input: Option<Vec<u8>>) {
    if let (Some(mut pipe), Some(input)) = (stdin, input) {
        let _ = pipe.write_all(&input).await;
        let _ = pipe.shutdown().await;
    }
}

/// The head of a stream up to a cap, and a count of what came after.
struct Capped {
    kept: Vec<u8>,
    cap: usize,
    cut: u64,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Capped {
            kept: Vec::new(),
            cap,
            cut: 0,
        }
    }

    async fn fill<R: AsyncRead + Unpin>(&mut self, stream: Option<R>) {
        let Some(mut stream) = stream else {
            return;
        };
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let read = match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            let room = self.cap.saturating_sub(self.kept.len()).min(read);
            self.kept.extend_from_slice(&chunk[..room]);
            self.cut += (read - room) as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_head_is_kept_and_the_rest_counted() {
        let mut capped = Capped::new(5);
        capped.fill(Some(&b"hello, world"[..])).await;
        assert_eq!(capped.kept, b"hello");
        assert_eq!(capped.cut, 7);
    }
}
