//! The five tools over the run's [`Roster`].

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Tier, Tool, ToolError, ToolOutput};

use crate::config::WorkerTier;
use crate::roster::Roster;
use crate::worker::{Status, Worker};

/// The longest `vibe_wait` may block in one call.
const MAX_WAIT_SECONDS: u64 = 600;

/// How a worker's result is shown in a list: its first lines.
const LIST_LINES: usize = 3;

/// A worker as a result shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkerView {
    /// Its id, e.g. "w1".
    pub worker_id: String,
    /// The label it was spawned with.
    pub label: String,
    /// `fast` or `good`.
    pub tier: WorkerTier,
    /// queued, running, needs_input, completed, failed, timed_out or killed.
    pub status: Status,
    /// Seconds since it was spawned (until it settled).
    pub elapsed_seconds: f64,
    /// How many times its command has run (a send reruns it).
    pub runs: u32,
    /// Its result, or its output so far.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub result: String,
    /// Its latest progress line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// The question it asked (status needs_input); answer with vibe_send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Why it failed or stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The folder of its transcript and result files.
    pub files: String,
    /// What to do next, as the text says it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl WorkerView {
    fn of(worker: &Worker) -> Self {
        WorkerView {
            worker_id: format!("w{}", worker.id),
            label: worker.label.clone(),
            tier: worker.tier,
            status: worker.status,
            elapsed_seconds: (worker.elapsed() * 10.0).round() / 10.0,
            runs: worker.runs,
            result: worker.result_text(),
            progress: worker.progress.clone(),
            question: worker.question.clone(),
            reason: worker.reason.clone(),
            files: worker.dir.display().to_string(),
            notes: Vec::new(),
        }
    }

    /// `note` said in the text and kept in the structure, which is all that some clients
    /// show the model; returns it for the text.
    fn note(&mut self, note: String) -> String {
        self.notes.push(note.clone());
        note
    }

    /// One line: id, label, tier, status, elapsed.
    fn headline(&self) -> String {
        format!(
            "{} \"{}\" ({}): {} after {:.1}s",
            self.worker_id,
            self.label,
            self.tier.as_str(),
            self.status.as_str(),
            self.elapsed_seconds
        )
    }

    /// The headline and everything the model needs to act on it.
    fn full(&mut self) -> String {
        let mut text = self.headline();
        if let Some(reason) = &self.reason {
            text.push_str(&format!("\nWhy: {reason}"));
        }
        if let Some(question) = self.question.clone() {
            let answer = self.note(format!("answer with vibe_send to {}", self.worker_id));
            text.push_str(&format!("\nIt asks: {question}\n({answer})"));
        }
        if !self.status.settled()
            && let Some(progress) = &self.progress
        {
            text.push_str(&format!("\nLatest progress: {progress}"));
        }
        match (self.result.is_empty(), self.status.settled()) {
            (true, true) => {
                let none = self.note("It printed no result.".to_owned());
                text.push_str(&format!("\n{none}"));
            }
            (true, false) => {}
            (false, true) => text.push_str(&format!("\nResult:\n{}", self.result)),
            (false, false) => text.push_str(&format!("\nOutput so far:\n{}", self.result)),
        }
        text
    }
}

fn parse_id(roster: &Roster, given: &str) -> Result<u64, ToolError> {
    let trimmed = given.trim();
    trimmed
        .strip_prefix('w')
        .unwrap_or(trimmed)
        .parse::<u64>()
        .map_err(|_| {
            let ids = roster.ids();
            ToolError::failed(format!(
                "`worker_id` {given:?} is not a worker id; ids look like \"w1\"{}",
                match ids.is_empty() {
                    true => " (none was spawned in this run)".to_owned(),
                    false => format!("; the workers are {}", ids.join(", ")),
                }
            ))
        })
}

/// Start a background worker on a brief; returns at once with its id while it runs.
///
/// A worker is another agent run by the command configured for its tier: `fast` for
/// mechanical work with a clear spec, `good` for design, judgment or reviewing a fast
/// worker's output. Write the brief as a complete task: the worker sees nothing else. Follow
/// it with vibe_wait (its result), vibe_list (all workers), vibe_send (more instructions or
/// an answer) or vibe_kill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VibeSpawnInput {
    /// The whole task for the worker.
    pub brief: String,
    /// A short name for it in lists, e.g. "port the parser tests".
    pub label: String,
    /// `fast` (default) or `good`.
    #[serde(default)]
    pub tier: Option<WorkerTier>,
}

/// The `vibe_spawn` tool.
pub struct VibeSpawn {
    roster: Roster,
}

impl VibeSpawn {
    /// `vibe_spawn` over `roster`.
    pub fn new(roster: Roster) -> Self {
        VibeSpawn { roster }
    }
}

impl Tool for VibeSpawn {
    type Input = VibeSpawnInput;
    type Output = WorkerView;
    const NAME: &'static str = "vibe_spawn";
    const TITLE: &'static str = "Start a background worker";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        _: CallContext,
        input: VibeSpawnInput,
    ) -> Result<ToolOutput<WorkerView>, ToolError> {
        if input.brief.trim().is_empty() {
            return Err(ToolError::failed(
                "`brief` is empty: give the worker its whole task",
            ));
        }
        if input.label.trim().is_empty() {
            return Err(ToolError::failed(
                "`label` is empty: give the worker a short name for lists",
            ));
        }
        let tier = input.tier.unwrap_or(WorkerTier::Fast);
        let worker = self
            .roster
            .spawn(input.brief, input.label.trim().to_owned(), tier)
            .await?;
        let mut view = WorkerView::of(&worker);
        let state = match view.status {
            Status::Queued => {
                view.note("queued until a running worker ends ([vibe] max_workers)".to_owned())
            }
            _ => "running".to_owned(),
        };
        let next = view.note(format!(
            "Call vibe_wait with worker_id \"{}\" for its result.",
            view.worker_id
        ));
        let text = format!(
            "Spawned {} \"{}\" ({}): {state}. {next}",
            view.worker_id,
            view.label,
            tier.as_str(),
        );
        Ok(ToolOutput::new(text, view))
    }
}

/// Send a worker more instructions, or the answer to its question: the message is appended
/// to its brief and the worker runs again with the whole brief (a running one is stopped
/// first). Returns at once; vibe_wait for the new result.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VibeSendInput {
    /// The worker, e.g. "w1".
    pub worker_id: String,
    /// What to add to its brief.
    pub message: String,
}

/// The `vibe_send` tool.
pub struct VibeSend {
    roster: Roster,
}

impl VibeSend {
    /// `vibe_send` over `roster`.
    pub fn new(roster: Roster) -> Self {
        VibeSend { roster }
    }
}

impl Tool for VibeSend {
    type Input = VibeSendInput;
    type Output = WorkerView;
    const NAME: &'static str = "vibe_send";
    const TITLE: &'static str = "Send a worker a message";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        _: CallContext,
        input: VibeSendInput,
    ) -> Result<ToolOutput<WorkerView>, ToolError> {
        if input.message.trim().is_empty() {
            return Err(ToolError::failed(
                "`message` is empty: say what to add to the worker's brief",
            ));
        }
        let id = parse_id(&self.roster, &input.worker_id)?;
        let stopped = self.roster.send(id, &input.message).await?;
        let worker = self
            .roster
            .get(id)
            .ok_or_else(|| ToolError::failed("the worker vanished"))?;
        let mut view = WorkerView::of(&worker);
        let what = match stopped {
            true => "stopped its running command and started it again",
            false => "started it again",
        };
        let text = view.note(format!(
            "Added the message to {}'s brief and {what} with the whole brief ({}). Call \
             vibe_wait for its new result.",
            view.worker_id,
            view.status.as_str()
        ));
        Ok(ToolOutput::new(text, view))
    }
}

/// Wait for a worker to finish, at most `timeout_seconds` (default 60, up to 600); then
/// return its status and result. A timeout is not an error and does not stop the worker:
/// call vibe_wait again, or vibe_kill it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VibeWaitInput {
    /// The worker, e.g. "w1".
    pub worker_id: String,
    /// How long to wait, in seconds (default 60, at most 600).
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

/// The `vibe_wait` tool.
pub struct VibeWait {
    roster: Roster,
}

impl VibeWait {
    /// `vibe_wait` over `roster`.
    pub fn new(roster: Roster) -> Self {
        VibeWait { roster }
    }
}

impl Tool for VibeWait {
    type Input = VibeWaitInput;
    type Output = WorkerView;
    const NAME: &'static str = "vibe_wait";
    const TITLE: &'static str = "Wait for workers";
    const TIER: Tier = Tier::Read;

    const MAY_RUN_LONG: bool = true;

    /// A wait lasts up to its timeout.
    fn may_run_long(&self, _input: &VibeWaitInput) -> bool {
        true
    }

    async fn call(
        &self,
        context: CallContext,
        input: VibeWaitInput,
    ) -> Result<ToolOutput<WorkerView>, ToolError> {
        let id = parse_id(&self.roster, &input.worker_id)?;
        let seconds = input.timeout_seconds.unwrap_or(60).min(MAX_WAIT_SECONDS);
        let label = format!("w{id}");
        // The worker's progress keeps the call alive for clients that time calls out.
        let report = |line: &str| context.progress(format!("{label}: {line}"));
        let worker = self
            .roster
            .wait(id, Duration::from_secs(seconds), &report)
            .await?;
        let mut view = WorkerView::of(&worker);
        let mut text = view.full();
        if !view.status.settled() {
            let again = view.note(format!(
                "still {} after waiting {seconds}s; it keeps running — vibe_wait again, or \
                 vibe_kill it",
                view.status.as_str()
            ));
            text.push_str(&format!("\n({again})"));
        }
        Ok(ToolOutput::new(text, view))
    }
}

/// Stop a worker: SIGINT, then SIGTERM, then SIGKILL to its process group. Its partial output
/// is kept; killing a worker that already ended changes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VibeKillInput {
    /// The worker, e.g. "w1".
    pub worker_id: String,
}

/// The `vibe_kill` tool.
pub struct VibeKill {
    roster: Roster,
}

impl VibeKill {
    /// `vibe_kill` over `roster`.
    pub fn new(roster: Roster) -> Self {
        VibeKill { roster }
    }
}

impl Tool for VibeKill {
    type Input = VibeKillInput;
    type Output = WorkerView;
    const NAME: &'static str = "vibe_kill";
    const TITLE: &'static str = "Stop a worker";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        _: CallContext,
        input: VibeKillInput,
    ) -> Result<ToolOutput<WorkerView>, ToolError> {
        let id = parse_id(&self.roster, &input.worker_id)?;
        let before = self.roster.get(id).map(|w| w.status);
        let worker = self.roster.kill(id).await?;
        let mut view = WorkerView::of(&worker);
        let text = match before {
            Some(status) if status.settled() => {
                let ended = view.note(format!(
                    "{} had already ended ({}); nothing was stopped.",
                    view.worker_id,
                    status.as_str(),
                ));
                format!("{ended}\n{}", view.full())
            }
            _ => {
                let full = view.full();
                format!("Stopped {}.\n{full}", view.worker_id)
            }
        };
        Ok(ToolOutput::new(text, view))
    }
}

/// List every worker of this run: id, label, tier, status, elapsed time and the first lines of
/// its result or latest progress.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VibeListInput {}

/// Every worker.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VibeListOutput {
    /// The workers, oldest first.
    pub workers: Vec<WorkerView>,
    /// What to do when there is none, as the text says it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `vibe_list` tool.
pub struct VibeList {
    roster: Roster,
}

impl VibeList {
    /// `vibe_list` over `roster`.
    pub fn new(roster: Roster) -> Self {
        VibeList { roster }
    }
}

impl Tool for VibeList {
    type Input = VibeListInput;
    type Output = VibeListOutput;
    const NAME: &'static str = "vibe_list";
    const TITLE: &'static str = "List workers";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        _: CallContext,
        _: VibeListInput,
    ) -> Result<ToolOutput<VibeListOutput>, ToolError> {
        let workers: Vec<WorkerView> = self.roster.all().iter().map(WorkerView::of).collect();
        if workers.is_empty() {
            let none = "No workers in this run; start one with vibe_spawn.";
            return Ok(ToolOutput::new(
                none,
                VibeListOutput {
                    workers,
                    notes: vec![none.to_owned()],
                },
            ));
        }
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for worker in &workers {
            *counts.entry(worker.status.as_str()).or_insert(0) += 1;
        }
        let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let noun = if workers.len() == 1 {
            "worker"
        } else {
            "workers"
        };
        let mut text = format!("{} {noun}: {}", workers.len(), summary.join(", "));
        for worker in &workers {
            text.push('\n');
            text.push_str(&worker.headline());
            let shown = match (&worker.question, worker.status.settled()) {
                (Some(question), _) => format!("asks: {question}"),
                (None, false) => worker.progress.clone().unwrap_or_default(),
                (None, true) => worker.result.clone(),
            };
            let lines: Vec<&str> = shown.lines().filter(|l| !l.trim().is_empty()).collect();
            for line in lines.iter().take(LIST_LINES) {
                text.push_str(&format!("\n    {line}"));
            }
            if lines.len() > LIST_LINES {
                text.push_str(&format!(
                    "\n    (… {} more lines; vibe_wait shows all)",
                    lines.len() - LIST_LINES
                ));
            }
            if let Some(reason) = &worker.reason {
                text.push_str(&format!("\n    why: {reason}"));
            }
        }
        Ok(ToolOutput::new(
            text,
            VibeListOutput {
                workers,
                notes: Vec::new(),
            },
        ))
    }
}
