//! The run's workers: their states, the queue, the limits, and the task that runs each one
//! (VIBE-2…6). A worker's transcript and result are written under the run's state directory
//! as they come, so a result is never only in memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;
use tools_core::{Shutdown, Surface};
use tools_process::{Command, Input, Output, Sandbox, StderrTail};

/// How much of a worker's output is kept in memory for its result; the rest is counted (the
/// transcript file keeps up to [`TRANSCRIPT_CAP`]).
const RESULT_CAP: usize = 16 * 1024;

/// How much of a worker's output its transcript file keeps.
const TRANSCRIPT_CAP: u64 = 8 << 20;

/// How long a stopping worker gets after SIGINT, and again after SIGTERM.
const STOP_STEP: Duration = Duration::from_secs(2);

/// Which kind of worker (VIBE-7).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum WorkerTier {
    /// Mechanical work with a clear spec.
    Fast,
    /// Design, judgment, or reviewing a fast worker's output.
    Good,
}

impl WorkerTier {
    /// Its name, as the config and the environment spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerTier::Fast => "fast",
            WorkerTier::Good => "good",
        }
    }
}

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

/// The `[vibe]` configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VibeConfig {
    /// Vibe mode on (also `serve --vibe`).
    pub enabled: bool,
    /// The command line of a `fast` worker.
    pub fast: Vec<String>,
    /// The command line of a `good` worker.
    pub good: Vec<String>,
    /// How many workers run at once; further spawns queue.
    pub max_workers: usize,
    /// How many workers one run may spawn.
    pub max_spawns: usize,
    /// Wall-clock limit of one run of a `fast` worker, in seconds.
    pub fast_timeout_seconds: u64,
    /// Wall-clock limit of one run of a `good` worker, in seconds.
    pub good_timeout_seconds: u64,
    /// A worker that prints nothing for this long is stopped as stalled, in seconds.
    pub stall_seconds: u64,
    /// Where transcripts and results go (outside the workspace); default: the platform's state
    /// folder, `$XDG_STATE_HOME/agent-tools` or `~/.local/state/agent-tools`.
    pub state_dir: Option<PathBuf>,
}

impl Default for VibeConfig {
    fn default() -> Self {
        VibeConfig {
            enabled: false,
            fast: Vec::new(),
            good: Vec::new(),
            max_workers: 4,
            max_spawns: 64,
            fast_timeout_seconds: 30 * 60,
            good_timeout_seconds: 2 * 60 * 60,
            stall_seconds: 10 * 60,
            state_dir: None,
        }
    }
}

impl VibeConfig {
    fn command(&self, tier: WorkerTier) -> &[String] {
        match tier {
            WorkerTier::Fast => &self.fast,
            WorkerTier::Good => &self.good,
        }
    }

    fn timeout(&self, tier: WorkerTier) -> Duration {
        Duration::from_secs(match tier {
            WorkerTier::Fast => self.fast_timeout_seconds,
            WorkerTier::Good => self.good_timeout_seconds,
        })
    }

    /// The state folder to use when none is configured.
    pub fn default_state_dir() -> PathBuf {
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("agent-tools")
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
    stop: Option<watch::Sender<Option<Stop>>>,
    /// A file of this run that could not be written (its transcript), said in its reason.
    unsaved: Option<String>,
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
enum Stop {
    /// `vibe_kill`.
    Kill,
    /// `vibe_send` restarts it with a longer brief.
    Restart,
    /// The run is ending.
    Shutdown,
}

/// The run's workers. Cloning shares them.
#[derive(Clone)]
pub struct Roster {
    inner: Arc<Inner>,
}

struct Inner {
    config: VibeConfig,
    root: PathBuf,
    state_dir: PathBuf,
    /// The most a worker may do: the surface of the run that spawns it.
    surface: Surface,
    sandbox: Option<Vec<String>>,
    workers: Mutex<BTreeMap<u64, Worker>>,
    spawned: Mutex<u64>,
    /// Wakes waiters on every change of any worker.
    changed: Notify,
    /// The tasks running workers, awaited at shutdown.
    tasks: TaskTracker,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roster")
            .field("state_dir", &self.inner.state_dir)
            .field("surface", &self.inner.surface)
            .finish_non_exhaustive()
    }
}

impl Roster {
    /// The workers of a run over `root`, spawned from a run on `surface`, started through
    /// `sandbox` when there is one; their files go under `state_dir/<conversation>`.
    pub fn new(
        config: VibeConfig,
        root: &Path,
        conversation: &str,
        surface: Surface,
        sandbox: Option<Vec<String>>,
    ) -> Self {
        let base = config
            .state_dir
            .clone()
            .unwrap_or_else(VibeConfig::default_state_dir);
        let state_dir = base.join("runs").join(sanitize(conversation));
        Roster {
            inner: Arc::new(Inner {
                config,
                root: root.to_path_buf(),
                state_dir,
                surface,
                sandbox,
                workers: Mutex::new(BTreeMap::new()),
                spawned: Mutex::new(0),
                changed: Notify::new(),
                tasks: Default::default(),
            }),
        }
    }

    /// Where this run's worker files go.
    pub fn state_dir(&self) -> &Path {
        &self.inner.state_dir
    }

    fn workers(&self) -> MutexGuard<'_, BTreeMap<u64, Worker>> {
        self.inner
            .workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A copy of one worker.
    pub(crate) fn get(&self, id: u64) -> Option<Worker> {
        self.workers().get(&id).cloned()
    }

    /// Copies of every worker, by id.
    pub(crate) fn all(&self) -> Vec<Worker> {
        self.workers().values().cloned().collect()
    }

    /// Every id, for error messages.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.workers().keys().map(|id| format!("w{id}")).collect()
    }

    /// Spawns a worker: it starts now, or queues when `max_workers` run (VIBE-2).
    pub(crate) async fn spawn(
        &self,
        brief: String,
        label: String,
        tier: WorkerTier,
    ) -> Result<Worker, String> {
        let config = &self.inner.config;
        if config.command(tier).is_empty() {
            return Err(format!(
                "no command is configured for `{}` workers; add one to agent-tools.toml, e.g.\n\
                 [vibe]\n{} = [\"claude\", \"-p\", \"--model\", \"haiku\"]\n\
                 (any command that reads the brief on stdin and prints its result; see the \
                 README's worker profiles)",
                tier.as_str(),
                tier.as_str()
            ));
        }
        let id = {
            let mut spawned = self
                .inner
                .spawned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *spawned as usize >= config.max_spawns {
                return Err(format!(
                    "this run has spawned {} workers, its limit ([vibe] max_spawns); reuse one \
                     with vibe_send, or raise the limit",
                    config.max_spawns
                ));
            }
            *spawned += 1;
            *spawned
        };
        let dir = self.inner.state_dir.join(format!("w{id}"));
        let folder = dir.clone();
        blocking(move || std::fs::create_dir_all(&folder))
            .await
            .map_err(|error| {
                format!(
                    "cannot create the worker's folder {}: {error}; set [vibe] state_dir to a \
                     writable folder",
                    dir.display()
                )
            })?;
        let brief_file = dir.join("brief.txt");
        write_file(&brief_file, brief.clone().into_bytes())
            .await
            .map_err(|error| {
                format!(
                    "cannot write the worker's brief to {}: {error}; set [vibe] state_dir to a \
                     writable folder",
                    brief_file.display()
                )
            })?;
        let worker = Worker {
            id,
            label,
            tier,
            brief,
            status: Status::Queued,
            created: Instant::now(),
            started: None,
            ended: None,
            runs: 0,
            output: String::new(),
            output_cut: 0,
            result: None,
            progress: None,
            question: None,
            reason: None,
            dir,
            stop: None,
            unsaved: None,
        };
        self.workers().insert(id, worker);
        self.schedule();
        self.get(id)
            .ok_or_else(|| "the worker vanished while it was spawned".to_owned())
    }

    /// Appends `message` to a worker's brief and runs it again, stopping the current run
    /// first (VIBE-3). Returns whether a run was stopped.
    pub(crate) async fn send(&self, id: u64, message: &str) -> Result<bool, String> {
        // The longer brief is on disk before the worker runs with it; a send that raced this
        // one (the brief changed while the file was written) is folded in and written again.
        let brief = loop {
            let (before, path) = {
                let workers = self.workers();
                let worker = workers.get(&id).ok_or_else(|| self.unknown(id))?;
                (worker.brief.clone(), worker.dir.join("brief.txt"))
            };
            let brief = format!("{before}\n\n{message}");
            write_file(&path, brief.clone().into_bytes())
                .await
                .map_err(|error| {
                    format!(
                        "cannot write the longer brief to {}: {error}; the message was not \
                         sent and the worker goes on as it was",
                        path.display()
                    )
                })?;
            let unchanged = self
                .workers()
                .get(&id)
                .is_some_and(|worker| worker.brief == before);
            if unchanged {
                break brief;
            }
        };
        let (stopped, runs) = {
            let mut workers = self.workers();
            let worker = workers.get_mut(&id).ok_or_else(|| self.unknown(id))?;
            let runs = worker.runs;
            worker.brief = brief;
            let stopped = match &worker.stop {
                Some(stop) if worker.status == Status::Running => {
                    let _ = stop.send(Some(Stop::Restart));
                    true
                }
                _ => {
                    // Settled or queued: it will run with the longer brief.
                    if worker.status.settled() {
                        worker.status = Status::Queued;
                        worker.question = None;
                    }
                    false
                }
            };
            (stopped, runs)
        };
        if stopped {
            // The run task re-queues it once its process group is gone, and the queue may
            // start it again at once: the stopped run is over when the run count moves on or
            // it waits in the queue.
            self.wait_while(id, |w| w.runs == runs && w.status == Status::Running)
                .await;
        }
        self.schedule();
        Ok(stopped)
    }

    /// Stops a worker (SIGINT, SIGTERM, then SIGKILL to its group), keeping its partial
    /// output; a settled worker is left as it is (VIBE-5). Returns its status afterwards.
    pub(crate) async fn kill(&self, id: u64) -> Result<Worker, String> {
        let stopping = {
            let mut workers = self.workers();
            let worker = workers.get_mut(&id).ok_or_else(|| self.unknown(id))?;
            match worker.status {
                Status::Queued => {
                    worker.status = Status::Killed;
                    worker.reason = Some("killed before it started".to_owned());
                    worker.ended = Some(Instant::now());
                    false
                }
                Status::Running => {
                    if let Some(stop) = &worker.stop {
                        let _ = stop.send(Some(Stop::Kill));
                    }
                    true
                }
                _ => false,
            }
        };
        if stopping {
            self.wait_while(id, |w| !w.status.settled()).await;
        }
        self.inner.changed.notify_waiters();
        self.get(id).ok_or_else(|| self.unknown(id))
    }

    /// Waits until the worker settles or `timeout` passes; `on_progress` hears each new
    /// progress line (VIBE-4). Returns the worker as it stands then.
    pub(crate) async fn wait(
        &self,
        id: u64,
        timeout: Duration,
        on_progress: &(dyn Fn(&str) + Sync),
    ) -> Result<Worker, String> {
        let deadline = Instant::now() + timeout;
        let mut heard: Option<String> = None;
        loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let worker = self.get(id).ok_or_else(|| self.unknown(id))?;
            if worker.progress.is_some() && worker.progress != heard {
                heard = worker.progress.clone();
                on_progress(heard.as_deref().unwrap_or_default());
            }
            if worker.status.settled() || Instant::now() >= deadline {
                return Ok(worker);
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    async fn wait_while(&self, id: u64, busy: impl Fn(&Worker) -> bool) {
        loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.get(id).is_some_and(|w| busy(&w)) {
                return;
            }
            notified.await;
        }
    }

    fn unknown(&self, id: u64) -> String {
        let ids = self.ids();
        match ids.is_empty() {
            true => format!("there is no worker w{id}: none was spawned in this run"),
            false => format!(
                "there is no worker w{id}: the workers are {}",
                ids.join(", ")
            ),
        }
    }

    /// Starts queued workers, oldest first, while slots are free.
    fn schedule(&self) {
        let mut to_start = Vec::new();
        {
            let mut workers = self.workers();
            let mut running = workers
                .values()
                .filter(|w| w.status == Status::Running)
                .count();
            for worker in workers.values_mut() {
                if running >= self.inner.config.max_workers {
                    break;
                }
                if worker.status == Status::Queued {
                    let (stop, stopped) = watch::channel(None);
                    worker.status = Status::Running;
                    worker.started = Some(Instant::now());
                    worker.ended = None;
                    worker.runs += 1;
                    worker.output.clear();
                    worker.output_cut = 0;
                    worker.result = None;
                    worker.progress = None;
                    worker.question = None;
                    worker.reason = None;
                    worker.unsaved = None;
                    worker.stop = Some(stop);
                    running += 1;
                    to_start.push((worker.clone(), stopped));
                }
            }
        }
        for (worker, stopped) in to_start {
            let roster = self.clone();
            self.inner.tasks.spawn(async move {
                let id = worker.id;
                let ended = roster.run(worker, stopped).await;
                roster.finish(id, ended).await;
                roster.inner.changed.notify_waiters();
                roster.schedule();
            });
        }
        self.inner.changed.notify_waiters();
    }

    /// Records how a run ended, once its result file is on disk (a worker's result is
    /// written before it is reported); a file that cannot be written is said in its reason.
    async fn finish(&self, id: u64, ended: Ended) {
        let written = {
            let workers = self.workers();
            let Some(worker) = workers.get(&id) else {
                return;
            };
            let (status, reason) = match &ended {
                Ended::Restart => (Status::Queued, None),
                Ended::Status(status, reason) => (
                    match (status, &worker.question) {
                        (Status::Completed, Some(_)) => Status::NeedsInput,
                        (status, _) => *status,
                    },
                    reason.clone(),
                ),
            };
            let record = serde_json::json!({
                "id": format!("w{id}"),
                "label": worker.label,
                "tier": worker.tier.as_str(),
                "status": status.as_str(),
                "runs": worker.runs,
                "reason": reason,
                "question": worker.question,
                "result": worker.result_text(),
            });
            let reason = match (reason, &worker.unsaved) {
                (Some(reason), Some(unsaved)) => Some(format!("{reason}; {unsaved}")),
                (reason, unsaved) => reason.or_else(|| unsaved.clone()),
            };
            let path = worker.dir.join("result.json");
            let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string());
            (path, text, status, reason)
        };
        let (path, text, status, mut reason) = written;
        let saved = match text {
            Ok(text) => write_file(&path, text.into_bytes())
                .await
                .map_err(|error| error.to_string()),
            Err(error) => Err(error),
        };
        if let Err(error) = saved {
            let unsaved = format!(
                "its result could not be written to {}: {error}",
                path.display()
            );
            tracing::warn!(worker = id, %unsaved);
            reason = Some(match reason {
                Some(reason) => format!("{reason}; {unsaved}"),
                None => unsaved,
            });
        }
        let mut workers = self.workers();
        let Some(worker) = workers.get_mut(&id) else {
            return;
        };
        worker.stop = None;
        worker.ended = Some(Instant::now());
        worker.status = status;
        worker.reason = reason;
    }

    /// Runs a worker's command once, to its end or until it is stopped.
    async fn run(&self, worker: Worker, mut stopped: watch::Receiver<Option<Stop>>) -> Ended {
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
                .sandbox(self.inner.sandbox.clone().map(|argv| Sandbox { argv }))
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

    /// Stops every worker and waits for their tasks, for the run's shutdown.
    pub async fn stop_all(&self) {
        {
            let mut workers = self.workers();
            for worker in workers.values_mut() {
                match worker.status {
                    Status::Queued => {
                        worker.status = Status::Killed;
                        worker.reason = Some("the run ended before it started".to_owned());
                    }
                    Status::Running => {
                        if let Some(stop) = &worker.stop {
                            let _ = stop.send(Some(Stop::Shutdown));
                        }
                    }
                    _ => {}
                }
            }
        }
        // Nothing is queued any more, so no task starts another: closing lets `wait` end
        // once every running worker's process group is gone.
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}

impl Shutdown for Roster {
    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(self.stop_all())
    }
}

/// How a run ended.
enum Ended {
    /// Stopped by a send: queue it again with the longer brief.
    Restart,
    /// Settled.
    Status(Status, Option<String>),
}

impl Ended {
    fn failed(reason: String) -> Self {
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

/// A conversation id as a folder name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// Runs blocking file work on tokio's blocking threads, off the async ones.
async fn blocking(
    work: impl FnOnce() -> std::io::Result<()> + Send + 'static,
) -> std::io::Result<()> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}

/// Writes `bytes` to `path` off the async threads.
async fn write_file(path: &Path, bytes: Vec<u8>) -> std::io::Result<()> {
    let path = path.to_owned();
    blocking(move || std::fs::write(path, bytes)).await
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

    #[test]
    fn conversation_ids_become_safe_folder_names() {
        assert_eq!(sanitize("conversation-1-2/3"), "conversation-1-2_3");
    }
}
