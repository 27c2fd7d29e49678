//! The run's workers: their states, the queue, the limits (VIBE-2, VIBE-3, VIBE-4, VIBE-5, VIBE-6).
//! A worker's transcript and result are written under the run's state directory as they come, so a
//! result is never only in memory; the task that runs one worker's command lives in
//! `roster/run.rs`.

mod run;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;
use tools_core::{Shutdown, Surface};
use tools_process::Sandbox;

use crate::config::{VibeConfig, WorkerTier};
use crate::error::{Error, Result};
use crate::worker::{Status, Stop, Worker};
use run::Ended;

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
    sandbox: Option<Sandbox>,
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
        sandbox: Option<Sandbox>,
    ) -> Self {
        let base = config
            .state_dir
            .clone()
            .unwrap_or_else(VibeConfig::default_state_dir);
        let state_dir = base
            .join("runs")
            .join(tools_core::state_folder_name(conversation));
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
    ) -> Result<Worker> {
        let config = &self.inner.config;
        if config.command(tier).is_empty() {
            return Err(Error::NoCommand { tier });
        }
        // Refused before a worker is counted: its start would fail the same way, later, in
        // its status instead of this answer.
        if let Some(refusal) = self.inner.sandbox.as_ref().and_then(Sandbox::refusal) {
            return Err(Error::Sandbox(std::sync::Arc::clone(refusal)));
        }
        let id = {
            let mut spawned = self
                .inner
                .spawned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *spawned as usize >= config.max_spawns {
                return Err(Error::SpawnLimit {
                    max_spawns: config.max_spawns,
                });
            }
            *spawned += 1;
            *spawned
        };
        let dir = self.inner.state_dir.join(format!("w{id}"));
        let folder = dir.clone();
        blocking(move || std::fs::create_dir_all(&folder))
            .await
            .map_err(|source| Error::CreateFolder {
                dir: dir.clone(),
                source,
            })?;
        let brief_file = dir.join("brief.txt");
        write_file(&brief_file, brief.clone().into_bytes())
            .await
            .map_err(|source| Error::WriteBrief {
                path: brief_file,
                source,
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
        self.get(id).ok_or(Error::Vanished)
    }

    /// Appends `message` to a worker's brief and runs it again, stopping the current run
    /// first (VIBE-3). Returns whether a run was stopped.
    pub(crate) async fn send(&self, id: u64, message: &str) -> Result<bool> {
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
                .map_err(|source| Error::WriteMessage { path, source })?;
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
    pub(crate) async fn kill(&self, id: u64) -> Result<Worker> {
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
    ) -> Result<Worker> {
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

    fn unknown(&self, id: u64) -> Error {
        Error::UnknownWorker {
            id,
            known: self.ids(),
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
