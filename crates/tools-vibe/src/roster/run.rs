//! One run of a worker's command: its process group, its stdin (the brief), its stdout read
//! line by line into the transcript and the result, and the limits that stop it (the tier's
//! wall clock, the stall watchdog, `vibe_kill`, a restarting `vibe_send`, the run's end).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;
use tools_core::Surface;
use tools_process::{Command, Input, Output, StderrTail};

use super::Roster;
use crate::worker::{Status, Stop, Worker};

/// How much of a worker's output is kept in memory for its result; the rest is counted (the
/// transcript file keeps up to [`TRANSCRIPT_CAP`]).
const RESULT_CAP: usize = 16 * 1024;

/// How much of a worker's output its transcript file keeps.
const TRANSCRIPT_CAP: u64 = 8 << 20;

/// How long a stopping worker gets after SIGINT, and again after SIGTERM.
const STOP_STEP: Duration = Duration::from_secs(2);

impl Roster {
    /// Runs a worker's command once, to its end or until it is stopped.
    pub(super) async fn run(
        &self,
        worker: Worker,
        mut stopped: watch::Receiver<Option<Stop>>,
    ) -> Ended {
        let config = &self.inner.config;
        let argv = config.command(worker.tier);
        let surface = match self.inner.surface {
            Surface::Full => "full",
            Surface::Plan => "plan",
            Surface::Readonly => "readonly",
        };
        let tail = Arc::new(StderrTail::new());
        let command = match Command::from_argv(argv, &self.inner.root) {
            Ok(command) => command
                .env("AGENT_TOOLS_WORKER_ID", format!("w{}", worker.id))
                .env("AGENT_TOOLS_TIER", worker.tier.as_str())
                .env("AGENT_TOOLS_SURFACE", surface)
                .stdin(Input::Piped)
                .stdout(Output::Piped)
                .stderr(Output::Tail(Arc::clone(&tail)))
                .sandbox(self.inner.sandbox.clone())
                .grace(STOP_STEP),
            Err(error) => return Ended::failed(format!("the worker command is invalid: {error}")),
        };
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => return Ended::failed(format!("the worker did not start: {error}")),
        };
        if let Some(mut stdin) = child.take_stdin() {
            let brief = worker.brief.clone();
            // Written from a task: a worker that does not read its stdin must not block us.
            tokio::spawn(async move {
                let _ = stdin.write_all(brief.as_bytes()).await;
                let _ = stdin.shutdown().await;
            });
        }
        let Some(stdout) = child.take_stdout() else {
            return Ended::failed("the worker's output pipe was not set up".to_owned());
        };
        let transcript_path = worker.dir.join("transcript.txt");
        let mut transcript = match tokio::fs::File::create(&transcript_path).await {
            Ok(file) => Some(file),
            Err(error) => {
                self.note_unsaved(worker.id, &transcript_path, &error);
                None
            }
        };
        let mut written: u64 = 0;
        let mut lines = BufReader::new(stdout).lines();
        let wall = Instant::now() + config.timeout(worker.tier);
        let stall = Duration::from_secs(config.stall_seconds);
        let mut last_output = Instant::now();
        let mut eof = false;
        loop {
            let stall_at = last_output + stall;
            tokio::select! {
                line = lines.next_line(), if !eof => match line {
                    Ok(Some(line)) => {
                        last_output = Instant::now();
                        if let Some(file) = transcript.as_mut()
                            && written < TRANSCRIPT_CAP
                        {
                            let entry = format!("{line}\n");
                            // Flushed per line: the transcript is whole the moment the run ends.
                            let saved = match file.write_all(entry.as_bytes()).await {
                                Ok(()) => file.flush().await,
                                Err(error) => Err(error),
                            };
                            match saved {
                                Ok(()) => written += entry.len() as u64,
                                Err(error) => {
                                    self.note_unsaved(worker.id, &transcript_path, &error);
                                    transcript = None;
                                }
                            }
                        }
                        self.take_line(worker.id, &line);
                    }
                    Ok(None) | Err(_) => eof = true,
                },
                status = child.wait(), if eof => {
                    let status = match status {
                        Ok(status) => status,
                        Err(error) => return Ended::failed(format!("waiting for the worker failed: {error}")),
                    };
                    // The process group may hold helpers the worker started: they go too.
                    child.kill();
                    if status.success() {
                        return Ended::Status(Status::Completed, None);
                    }
                    // The tail's reader may still be on its way to the last lines.
                    let _ = tokio::time::timeout(Duration::from_secs(1), tail.closed()).await;
                    let lines = tail.last(5);
                    let stderr = match lines.is_empty() {
                        true => String::new(),
                        false => format!("; its stderr ended with:\n{}", lines.join("\n")),
                    };
                    return Ended::failed(format!("the worker exited with {status}{stderr}"));
                }
                changed = stopped.changed() => {
                    let why = match changed {
                        Ok(()) => stopped.borrow().unwrap_or(Stop::Shutdown),
                        Err(_) => Stop::Shutdown,
                    };
                    stop_group(&mut child).await;
                    return match why {
                        Stop::Restart => Ended::Restart,
                        Stop::Kill => Ended::Status(Status::Killed, Some("stopped by vibe_kill; its partial output is kept".to_owned())),
                        Stop::Shutdown => Ended::Status(Status::Killed, Some("stopped because the run ended".to_owned())),
                    };
                }
                () = tokio::time::sleep_until(wall) => {
                    stop_group(&mut child).await;
                    return Ended::Status(
                        Status::TimedOut,
                        Some(format!(
                            "ran past the {} limit of a {} worker ([vibe] {}_timeout_seconds)",
                            shown_seconds(config.timeout(worker.tier)),
                            worker.tier.as_str(),
                            worker.tier.as_str()
                        )),
                    );
                }
                () = tokio::time::sleep_until(stall_at) => {
                    stop_group(&mut child).await;
                    return Ended::Status(
                        Status::TimedOut,
                        Some(format!(
                            "printed nothing for {} and was stopped as stalled ([vibe] stall_seconds)",
                            shown_seconds(stall)
                        )),
                    );
                }
            }
        }
    }

    /// Records that a file of a worker's run could not be written; its reason will say so.
    fn note_unsaved(&self, id: u64, path: &Path, error: &std::io::Error) {
        let unsaved = format!(
            "its transcript {} could not be written: {error}",
            path.display()
        );
        tracing::warn!(worker = id, %unsaved);
        if let Some(worker) = self.workers().get_mut(&id) {
            worker.unsaved.get_or_insert(unsaved);
        }
    }

    /// Takes one line of a worker's output: a JSON line of the contract, or plain text.
    fn take_line(&self, id: u64, line: &str) {
        let mut workers = self.workers();
        let Some(worker) = workers.get_mut(&id) else {
            return;
        };
        match parse_line(line) {
            Line::Progress(text) => worker.progress = Some(text),
            Line::NeedsInput(question) => {
                worker.question = Some(question.clone());
                worker.progress = Some(format!("asks: {question}"));
            }
            Line::Result(text) => worker.result = Some(text),
            Line::Text => {
                if worker.output.len() + line.len() < RESULT_CAP {
                    worker.output.push_str(line);
                    worker.output.push('\n');
                } else {
                    worker.output_cut += line.len() as u64 + 1;
                }
            }
        }
        drop(workers);
        self.inner.changed.notify_waiters();
    }
}

/// How a run ended.
pub(super) enum Ended {
    /// Stopped by a send: queue it again with the longer brief.
    Restart,
    /// Settled.
    Status(Status, Option<String>),
}

impl Ended {
    pub(super) fn failed(reason: String) -> Self {
        Ended::Status(Status::Failed, Some(reason))
    }
}

/// SIGINT, then SIGTERM, then SIGKILL to the worker's group, a short wait between each
/// (VIBE-5); returns once the group is gone.
async fn stop_group(child: &mut tools_process::Child) {
    for step in 0..2 {
        let group = child.group();
        match step {
            0 => group.interrupt(),
            _ => group.term(),
        }
        if tokio::time::timeout(STOP_STEP, wait_gone(group))
            .await
            .is_ok()
        {
            break;
        }
    }
    child.kill();
    let _ = child.wait().await;
}

async fn wait_gone(group: &tools_process::ProcessGroup) {
    while group.is_alive() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One line of a worker's stdout, read by the contract.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Progress(String),
    NeedsInput(String),
    Result(String),
    Text,
}

fn parse_line(line: &str) -> Line {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return Line::Text;
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(trimmed) else {
        return Line::Text;
    };
    let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    match value.get("type").and_then(|t| t.as_str()) {
        Some("progress") => text("text").map_or(Line::Text, Line::Progress),
        Some("needs_input") => text("question").map_or(Line::Text, Line::NeedsInput),
        Some("result") => text("text").map_or(Line::Text, Line::Result),
        _ => Line::Text,
    }
}

fn shown_seconds(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        s if s % 60 == 0 && s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vibe_lines_of_the_contract_are_read_and_anything_else_is_text() {
        assert_eq!(
            parse_line(r#"{"type":"progress","text":"reading files"}"#),
            Line::Progress("reading files".into())
        );
        assert_eq!(
            parse_line(r#"{"type":"needs_input","question":"Which one?"}"#),
            Line::NeedsInput("Which one?".into())
        );
        assert_eq!(
            parse_line(r#"{"type":"result","text":"done"}"#),
            Line::Result("done".into())
        );
        assert_eq!(parse_line("plain words"), Line::Text);
        assert_eq!(parse_line(r#"{"type":"other"}"#), Line::Text);
        assert_eq!(parse_line("{not json"), Line::Text);
    }
}
