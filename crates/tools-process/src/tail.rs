//! The last lines a process wrote to one of its streams, kept for `status` reports and error
//! messages ("the server stopped: …" and its last words), with every line also trace-logged.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How many lines a tail keeps.
pub const TAIL_LINES: usize = 20;

/// How many characters of a line a tail keeps; a longer line is cut and ends in `…`.
pub const TAIL_LINE_CHARS: usize = 300;

/// The most bytes of one line held while it is read: a process that writes megabytes without
/// a newline must not grow our memory. A line cut here is far over [`TAIL_LINE_CHARS`] anyway.
const LINE_BYTES: usize = 4 * 1024;

/// The last lines a process wrote, shared between the task reading its stream and whoever
/// reports on it. One tail may be fed by several processes in turn (a server and its restarts).
#[derive(Debug)]
pub struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    /// How many streams are feeding this tail right now.
    feeding: watch::Sender<usize>,
}

impl Default for StderrTail {
    fn default() -> Self {
        StderrTail {
            lines: Mutex::new(VecDeque::new()),
            feeding: watch::Sender::new(0),
        }
    }
}

impl StderrTail {
    /// An empty tail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `line` (trailing whitespace trimmed, cut to [`TAIL_LINE_CHARS`]); empty lines are
    /// not kept, so a blank line cannot push a useful one out.
    pub fn push(&self, line: &str) {
        let line = line.trim_end();
        if line.is_empty() {
            return;
        }
        let mut kept: String = line.chars().take(TAIL_LINE_CHARS).collect();
        if kept.len() < line.len() {
            kept.push('…');
        }
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(kept);
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The last `count` kept lines, oldest first.
    pub fn last(&self, count: usize) -> Vec<String> {
        let lines = self.lines();
        lines[lines.len().saturating_sub(count)..].to_vec()
    }

    /// Resolves once no stream feeds this tail any more: every process writing into it has
    /// closed its end (normally by exiting). A process's last lines may arrive a moment after
    /// its exit status; await this before reading them for a message.
    pub async fn closed(&self) {
        let mut feeding = self.feeding.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = feeding.wait_for(|count| *count == 0).await;
    }

    /// Reads `stream` to its end on a task of the current runtime, keeping its lines here and
    /// trace-logging each under `program`.
    pub(crate) fn feed<R>(self: &Arc<Self>, stream: R, program: String) -> JoinHandle<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        // Counted before the task starts, so `closed` cannot resolve in between.
        self.feeding.send_modify(|count| *count += 1);
        let guard = Feeding(Arc::clone(self));
        tokio::spawn(async move {
            let tail = &guard.0;
            read_lines(stream, |line| {
                tracing::trace!(target: "tools_process::output", program = %program, "{line}");
                tail.push(line);
            })
            .await;
        })
    }
}

/// Counts a stream off when its reading task ends, however it ends (EOF, error, abort).
struct Feeding(Arc<StderrTail>);

impl Drop for Feeding {
    fn drop(&mut self) {
        self.0
            .feeding
            .send_modify(|count| *count = count.saturating_sub(1));
    }
}

/// Calls `each` with every line of `stream` (lossily decoded, at most [`LINE_BYTES`] of it)
/// until EOF or a read error. Invalid UTF-8 does not stop the reading: a writer blocked on a
/// full pipe nobody reads would hang.
async fn read_lines<R, F>(mut stream: R, mut each: F)
where
    R: AsyncRead + Unpin,
    F: FnMut(&str),
{
    let mut chunk = vec![0u8; 8 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let read = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            let (piece, ended) = match rest.iter().position(|&byte| byte == b'\n') {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            let room = LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            cut |= piece.len() > room;
            rest = &rest[(piece.len() + usize::from(ended)).min(rest.len())..];
            if ended {
                emit(&mut line, &mut cut, &mut each);
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line, &mut cut, &mut each);
    }
}

fn emit<F: FnMut(&str)>(line: &mut Vec<u8>, cut: &mut bool, each: &mut F) {
    let mut text = String::from_utf8_lossy(line).into_owned();
    if *cut {
        text.push('…');
    }
    each(&text);
    line.clear();
    *cut = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_lines_and_cuts_long_ones() {
        let tail = StderrTail::new();
        for i in 1..=30 {
            tail.push(&format!("line {i}"));
        }
        tail.push("");
        tail.push(&"é".repeat(TAIL_LINE_CHARS));
        tail.push(&"x".repeat(TAIL_LINE_CHARS + 1));
        let lines = tail.lines();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines[0], "line 13");
        assert_eq!(
            lines[18],
            "é".repeat(TAIL_LINE_CHARS),
            "exactly the limit is not cut"
        );
        assert_eq!(lines[19], format!("{}…", "x".repeat(TAIL_LINE_CHARS)));
        assert_eq!(tail.last(2).len(), 2);
        assert_eq!(tail.last(100).len(), TAIL_LINES);
    }

    #[tokio::test]
    async fn lines_are_split_across_reads_and_bounded() {
        let long = "y".repeat(LINE_BYTES * 3);
        let input = format!("one\ntw\u{fffd}o\n{long}\nlast without newline");
        let mut seen = Vec::new();
        read_lines(input.as_bytes(), |line| seen.push(line.to_owned())).await;
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], "one");
        assert_eq!(seen[1], "tw\u{fffd}o");
        assert_eq!(seen[2], format!("{}…", "y".repeat(LINE_BYTES)));
        assert_eq!(seen[3], "last without newline");
    }

    #[tokio::test]
    async fn invalid_utf8_does_not_stop_the_reading() {
        let input: &[u8] = b"a\xff\xfeb\nnext\n";
        let mut seen = Vec::new();
        read_lines(input, |line| seen.push(line.to_owned())).await;
        assert_eq!(seen, ["a\u{fffd}\u{fffd}b", "next"]);
    }
}
