//! One worker as the roster keeps it: where it stands, what it printed, and how its current
//! run is stopped (VIBE-2, VIBE-3, VIBE-4, VIBE-5, VIBE-6).

use std::path::PathBuf;

use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::WorkerTier;

/// Where a worker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a free slot (`max_workers`).
    Queued,
    /// Its command is running.
    Running,
    /// It asked a question and ended; answer it with `vibe_send`.
    NeedsInput,
    /// It exited 0.
    Completed,
    /// It exited with another status, or could not start.
    Failed,
    /// It ran past its tier's wall-clock limit, or printed nothing for the stall limit.
    TimedOut,
    /// `vibe_kill` stopped it.
    Killed,
}

impl Status {
    /// Whether it has settled (nothing runs or waits to run).
    pub fn settled(self) -> bool {
        !matches!(self, Status::Queued | Status::Running)
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::NeedsInput => "needs_input",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::TimedOut => "timed_out",
            Status::Killed => "killed",
        }
    }
}

/// One worker.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    pub(crate) id: u64,
    pub(crate) label: String,
    pub(crate) tier: WorkerTier,
    pub(crate) brief: String,
    pub(crate) status: Status,
    /// When it was spawned.
    pub(crate) created: Instant,
    /// When its current (or last) run started.
    pub(crate) started: Option<Instant>,
    /// When its last run ended.
    pub(crate) ended: Option<Instant>,
    /// How many times its command has run.
    pub(crate) runs: u32,
    /// Its result so far: the `result` line, or its plain output.
    pub(crate) output: String,
    /// Bytes of output past [`RESULT_CAP`], not kept in memory.
    pub(crate) output_cut: u64,
    /// Its explicit `result` line, when it printed one.
    pub(crate) result: Option<String>,
    /// Its latest progress line.
    pub(crate) progress: Option<String>,
    /// The question it asked.
    pub(crate) question: Option<String>,
    /// Why it failed or was stopped, in words.
    pub(crate) reason: Option<String>,
    /// The folder of its transcript and result.
    pub(crate) dir: PathBuf,
    /// Fires to stop the current run (kill, or a send that restarts it).
    pub(crate) stop: Option<watch::Sender<Option<Stop>>>,
    /// A file of this run that could not be written (its transcript), said in its reason.
    pub(crate) unsaved: Option<String>,
}

impl Worker {
    /// What it produced, as the model reads it: the `result` line or the plain output.
    pub(crate) fn result_text(&self) -> String {
        let mut text = self
            .result
            .clone()
            .unwrap_or_else(|| self.output.trim_end().to_owned());
        if self.output_cut > 0 && self.result.is_none() {
            text.push_str(&format!(
                "\n[output cut: {} more bytes not shown; the whole transcript is in {}]",
                self.output_cut,
                self.dir.join("transcript.txt").display()
            ));
        }
        text
    }

    /// Seconds since it was spawned.
    pub(crate) fn elapsed(&self) -> f64 {
        let end = match self.status.settled() {
            true => self.ended.unwrap_or_else(Instant::now),
            false => Instant::now(),
        };
        end.saturating_duration_since(self.created).as_secs_f64()
    }
}

/// Why a run is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `vibe_kill`.
    Kill,
    /// `vibe_send` restarts it with a longer brief.
    Restart,
    /// The run is ending.
    Shutdown,
}
