//! A `tools/call` in flight, and the three ways it outlives one request in the 2026-07-28
//! protocol: parked behind an `input_required` answer while a card waits for the person
//! (multi-round-trip requests), or carried on by a task (the `io.modelcontextprotocol/tasks`
//! extension) when it runs long.
//!
//! The call itself runs as its own tokio task from the first request on; whichever request or
//! task drives it now takes its cards, its progress and its cancellation. Everything needed
//! to resume it stays here, behind an opaque random handle: the client only echoes the handle
//! back, and a handle that is unknown, already used or expired is refused (the client's copy
//! is untrusted input).

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, Task,
};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};
use tools_core::{
    Answer, CallOptions, Card, Dispatcher, Progress, ProgressSink, QuestionPort, ToolCall,
    ToolResult,
};

use crate::elicit::{answer_for, form_params};

/// How long a call that may run long is answered in the ordinary way before it becomes a
/// task: a quick cell answers at once.
pub(crate) const TASK_GRACE: Duration = Duration::from_secs(2);

/// How long a call that may run long goes without a progress report before the driving
/// request is sent one saying it still runs: clients that time a call out reset the clock on
/// progress, and a silent computation is still work.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(10);

/// How often a client is told to poll a task.
const POLL_INTERVAL_MS: u64 = 500;

/// How long a finished task stays readable, and the longest a call may run as one: far
/// beyond any call's own bound (a cell's cap is an hour by default), and finite, so a long
/// session does not keep every result it ever produced.
const TASK_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// How many expired cards' results are kept for a late answer, and for how long: a client
/// that answers after the card expired hears what the call did (ASK-3), not "unknown handle".
const TOMBSTONES: usize = 256;
const TOMBSTONE_TTL: Duration = Duration::from_secs(60 * 60);

/// How long an expired card's call gets to finish with its expiry result before it is
/// cancelled instead.
const EXPIRED_FINISH: Duration = Duration::from_secs(10);

/// A card a call raised, with the way back to the call.
pub(crate) struct Raised {
    card: Card,
    answer: oneshot::Sender<Answer>,
    /// When the run's question desk stops waiting for it (it was raised with the full expiry).
    deadline: Instant,
}

/// A question port for one call: each card goes to whoever drives the call now.
struct CallPort {
    raised: mpsc::UnboundedSender<Raised>,
}

impl QuestionPort for CallPort {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let deadline = Instant::now() + card.expires_in;
            let raised = Raised {
                card,
                answer,
                deadline,
            };
            // A card nobody will show (the call is being cancelled, the run ends) is withdrawn:
            // "dismissed", not "no person in this run", which would tell the model never to
            // ask again.
            if self.raised.send(raised).is_err() {
                return Answer::Cancelled;
            }
            answered.await.unwrap_or(Answer::Cancelled)
        })
    }
}

/// Where a call's cards go.
pub(crate) enum Asker {
    /// To this port (a 2025-11-25 session's elicitation requests, for a task that runs on
    /// after its request).
    Port(Arc<dyn QuestionPort>),
    /// Nowhere: this request declared no elicitation, so a card fails at once (ASK-5) and an
    /// approval is refused (CORE-5).
    Nobody(String),
    /// To whoever drives the call: `input_required` answers, or the task's input requests.
    Driver,
}

/// A running `tools/call`.
pub(crate) struct Flight {
    name: String,
    arguments: Value,
    result: JoinHandle<ToolResult>,
    raised: mpsc::UnboundedReceiver<Raised>,
    cancel: CancellationToken,
    /// Where its progress goes now: the current request's progress token, a task's status
    /// message, or nowhere between rounds.
    progress: Arc<Mutex<Option<ProgressSink>>>,
    /// When the call last reported progress (or started).
    reported: Arc<Mutex<Instant>>,
    /// When it started.
    started: Instant,
    /// Whether it may run long, so may become a task.
    long: bool,
    /// Dropping the flight (an expired card, a run that ends) cancels the call.
    _cancel_on_drop: DropGuard,
}

impl Flight {
    /// Starts `call` on `dispatcher`; its cards go where `asker` says, and `long` (the tool's
    /// `may_run_long` for these arguments) lets it become a task.
    pub(crate) fn start(
        dispatcher: Arc<Dispatcher>,
        call: ToolCall,
        asker: Asker,
        long: bool,
    ) -> Flight {
        let (sender, raised) = mpsc::unbounded_channel();
        let asker: Option<Arc<dyn QuestionPort>> = match asker {
            Asker::Port(port) => Some(port),
            Asker::Nobody(reason) => Some(Arc::new(tools_core::NoHuman { reason })),
            Asker::Driver => Some(Arc::new(CallPort { raised: sender })),
        };
        let progress: Arc<Mutex<Option<ProgressSink>>> = Arc::default();
        let started = Instant::now();
        let reported = Arc::new(Mutex::new(started));
        let relay = {
            let progress = Arc::clone(&progress);
            let reported = Arc::clone(&reported);
            Arc::new(move |report: Progress| {
                if let Ok(mut at) = reported.lock() {
                    *at = Instant::now();
                }
                let target = progress.lock().ok().and_then(|target| target.clone());
                if let Some(target) = target {
                    target(report);
                }
            }) as ProgressSink
        };
        let cancel = CancellationToken::new();
        let name = call.name.clone();
        let arguments = call.arguments.clone();
        let options = CallOptions {
            cancel: Some(cancel.clone()),
            progress: Some(relay),
            asker,
        };
        let result = tokio::spawn(async move { dispatcher.dispatch_with(call, options).await });
        Flight {
            name,
            arguments,
            result,
            raised,
            _cancel_on_drop: cancel.clone().drop_guard(),
            cancel,
            progress,
            reported,
            started,
            long,
        }
    }

    fn send_progress_to(&self, sink: Option<ProgressSink>) {
        if let Ok(mut target) = self.progress.lock() {
            *target = sink;
        }
    }

    async fn outcome(&mut self) -> ToolResult {
        let joined = (&mut self.result).await;
        joined_result(&self.name, joined)
    }
}

/// The call's result, or an internal error if its task did not end normally.
fn joined_result(tool: &str, joined: Result<ToolResult, tokio::task::JoinError>) -> ToolResult {
    joined.unwrap_or_else(|error| {
        ToolResult::error(&tools_core::ToolError::Internal {
            tool: tool.to_owned(),
            message: format!("the call's task ended abnormally: {error}"),
        })
    })
}

/// What driving a flight for one request came to.
pub(crate) enum Step {
    /// The call finished (or was cancelled by the request).
    Done(ToolResult),
    /// A card waits for the person: answer `input_required`.
    Park(Flight, Raised),
    /// The call runs long, or raised a card, with a client that takes tasks.
    Task(Flight, Option<Raised>),
}

/// How the request that drives a call shows the cards it raises.
pub(crate) enum Cards {
    /// As `elicitation/create` requests to this peer, sent while the request is served, so
    /// that over HTTP they ride that request's stream (2025-11-25).
    Elicit(Peer<RoleServer>),
    /// In an `input_required` answer (2026-07-28).
    Park,
    /// In a task's input requests, when the call may run long; otherwise parked (2026-07-28
    /// with the tasks extension).
    Task,
}

/// Drives `flight` for one request: until it finishes, raises a card it cannot ask in-line,
/// runs past the task grace (when the client takes tasks and it may run long), or the
/// request is cancelled.
pub(crate) async fn drive(
    mut flight: Flight,
    request: CancellationToken,
    progress: Option<ProgressSink>,
    cards: Cards,
) -> Step {
    let heartbeat_to = progress.clone().filter(|_| flight.long);
    flight.send_progress_to(progress);
    let becomes_task = matches!(cards, Cards::Task) && flight.long;
    let elicit = match cards {
        Cards::Elicit(peer) => Some(peer),
        Cards::Park | Cards::Task => None,
    };
    let mut asking = FuturesUnordered::new();
    let grace = tokio::time::sleep(TASK_GRACE);
    tokio::pin!(grace);
    let mut heartbeat = tokio::time::interval(HEARTBEAT / 2);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = heartbeat.tick(), if heartbeat_to.is_some() => {
                let quiet = flight.reported.lock().map(|at| at.elapsed()).unwrap_or_default();
                if quiet >= HEARTBEAT && let Some(sink) = &heartbeat_to {
                    sink(Progress {
                        message: format!(
                            "`{}` is still running ({} s so far)",
                            flight.name,
                            flight.started.elapsed().as_secs()
                        ),
                        done: None,
                        total: None,
                    });
                    if let Ok(mut at) = flight.reported.lock() {
                        *at = Instant::now();
                    }
                }
            }
            joined = &mut flight.result => {
                return Step::Done(joined_result(&flight.name, joined));
            }
            Some(raised) = flight.raised.recv() => {
                // A card that expired while nobody drove the call needs no answer.
                if raised.answer.is_closed() {
                    continue;
                }
                if let Some(peer) = &elicit {
                    asking.push(elicit_for(peer.clone(), raised));
                    continue;
                }
                flight.send_progress_to(None);
                return match becomes_task {
                    true => Step::Task(flight, Some(raised)),
                    false => Step::Park(flight, raised),
                };
            }
            Some(()) = asking.next(), if !asking.is_empty() => {}
            () = &mut grace, if becomes_task => {
                flight.send_progress_to(None);
                return Step::Task(flight, None);
            }
            () = request.cancelled() => {
                flight.cancel.cancel();
                asking.clear();
                // Cards raised while it winds down are withdrawn, not left to wait out their
                // expiry with nobody to show them.
                flight.raised.close();
                while flight.raised.try_recv().is_ok() {}
                let result = flight.outcome().await;
                return Step::Done(result);
            }
        }
    }
}

/// Asks `raised` of the person through `peer`'s elicitation and hands the answer back; a
/// card that expires first is left (its call already went on with "expired").
async fn elicit_for(peer: Peer<RoleServer>, mut raised: Raised) {
    let answer = tokio::select! {
        answer = crate::elicit::elicit(&peer, &raised.card) => answer,
        () = raised.answer.closed() => return,
    };
    let _ = raised.answer.send(answer);
}

/// A flight parked behind an `input_required` answer.
struct Parked {
    flight: Flight,
    raised: Raised,
    key: String,
}

/// What a call parked behind an expired card came to, kept under its handle for the client's
/// late answer: the call's own result for an unanswered card (an `ask_user` timeout error, an
/// approval's "not run").
struct Tombstone {
    handle: String,
    name: String,
    arguments: Value,
    result: ToolResult,
    at: Instant,
}

/// A re-sent call's way on: the parked call to drive, or what it already came to.
pub(crate) enum Resumed {
    Flight(Flight),
    Done(ToolResult),
}

/// The calls of one connection that wait on a card or run as tasks.
#[derive(Clone)]
pub(crate) struct Flights {
    parked: Arc<Mutex<HashMap<String, Parked>>>,
    /// The newest expired cards' outcomes, at most [`TOMBSTONES`], each for [`TOMBSTONE_TTL`].
    expired: Arc<Mutex<std::collections::VecDeque<Tombstone>>>,
    tasks: TaskManager,
    /// The ids of the tasks made, oldest first, for `tasks/list` (rmcp keeps no list).
    task_ids: Arc<Mutex<Vec<String>>>,
}

impl Flights {
    pub(crate) fn new() -> Self {
        Flights {
            parked: Arc::default(),
            expired: Arc::default(),
            tasks: TaskManager::new(),
            task_ids: Arc::default(),
        }
    }

    /// The task store, for `tasks/get`, `tasks/update` and `tasks/cancel`.
    pub(crate) fn tasks(&self) -> &TaskManager {
        &self.tasks
    }

    /// Parks `flight` until the client re-sends the call with the card's answer, and says
    /// what to ask. The handle expires with the card, and the call is then cancelled: no
    /// request is left to take its result.
    pub(crate) fn park(
        &self,
        flight: Flight,
        raised: Raised,
    ) -> Result<InputRequiredResult, McpError> {
        let handle = new_handle()?;
        let raised_deadline = raised.deadline;
        let key = format!("card-{}", raised.card.number);
        let request = elicit_request(&raised.card)?;
        let mut requests = InputRequests::new();
        requests.insert(key.clone(), InputRequest::Elicitation(request));
        if let Ok(mut parked) = self.parked.lock() {
            parked.insert(
                handle.clone(),
                Parked {
                    flight,
                    raised,
                    key,
                },
            );
        }
        let deadline = tokio::time::Instant::from_std(raised_deadline);
        let parked = Arc::clone(&self.parked);
        let tombstones = Arc::clone(&self.expired);
        let expired = handle.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            let dropped = parked.lock().ok().and_then(|mut map| map.remove(&expired));
            let Some(Parked {
                mut flight, raised, ..
            }) = dropped
            else {
                return;
            };
            // The card's own wait ends now too (whichever timer fires first, the answer is
            // "expired"): the call goes on with it, and its result waits for a late answer.
            let _ = raised.answer.send(Answer::Expired);
            let result = match tokio::time::timeout(EXPIRED_FINISH, flight.outcome()).await {
                Ok(result) => result,
                Err(_) => ToolResult::error(&tools_core::ToolError::failed(format!(
                    "`{}` was not run to its end: its card expired without an answer and the \
                     call was cancelled",
                    flight.name
                ))),
            };
            tracing::info!(tool = %flight.name, "a parked call's card expired; its result waits for a late answer");
            bury(
                &tombstones,
                Tombstone {
                    handle: expired,
                    name: flight.name.clone(),
                    arguments: flight.arguments.clone(),
                    result,
                    at: Instant::now(),
                },
            );
        });
        Ok(InputRequiredResult::new(Some(requests), Some(handle)))
    }

    /// Takes back the call parked under `handle`, answers its card from `responses`, and
    /// returns it to be driven by the re-sent request.
    ///
    /// The re-sent call must name the same tool with the same arguments; a handle that is
    /// unknown, already used or expired is refused, and a refused request leaves a valid
    /// parked call waiting.
    pub(crate) fn resume(
        &self,
        handle: &str,
        name: &str,
        arguments: &Value,
        responses: Option<&InputResponses>,
    ) -> Result<Resumed, McpError> {
        let mut parked = self
            .parked
            .lock()
            .map_err(|_| McpError::internal_error("the parked calls' lock was poisoned", None))?;
        let Some(entry) = parked.remove(handle) else {
            drop(parked);
            if let Some(result) = self.exhume(handle, name, arguments)? {
                return Ok(Resumed::Done(result));
            }
            return Err(McpError::invalid_params(
                format!(
                    "`requestState` does not name a call waiting on a card: it was already \
                     answered (an unanswered card's result is given once, for {} min after it \
                     expired), or this server never issued it; call `{name}` again without \
                     `requestState`",
                    TOMBSTONE_TTL.as_secs() / 60
                ),
                None,
            ));
        };
        if entry.flight.name != name || &entry.flight.arguments != arguments {
            let message = match entry.flight.name == name {
                true => format!(
                    "`requestState` belongs to a `{name}` call with other arguments; re-send \
                     that call unchanged, with `inputResponses` answering `{}`",
                    entry.key
                ),
                false => format!(
                    "`requestState` belongs to a `{}` call, not `{name}`; re-send that call \
                     unchanged, with `inputResponses` answering `{}`",
                    entry.flight.name, entry.key
                ),
            };
            parked.insert(handle.to_owned(), entry);
            return Err(McpError::invalid_params(message, None));
        }
        let response = responses.and_then(|responses| responses.get(&entry.key));
        let answer = match response.map(|value| answer_from(&entry.raised.card, value.clone())) {
            Some(Ok(answer)) => answer,
            Some(Err(problem)) => {
                let message = format!(
                    "`inputResponses.{}` is not an elicitation result ({problem}); send \
                     {{\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {{…}}}}",
                    entry.key
                );
                parked.insert(handle.to_owned(), entry);
                return Err(McpError::invalid_params(message, None));
            }
            None => {
                let message = format!(
                    "`inputResponses` has no `{}`: answer the elicitation request under that \
                     key and re-send the call with the same `requestState`",
                    entry.key
                );
                parked.insert(handle.to_owned(), entry);
                return Err(McpError::invalid_params(message, None));
            }
        };
        drop(parked);
        let Parked { flight, raised, .. } = entry;
        // A card that expired a moment ago takes no answer: the call goes on with its expiry
        // answer, and the re-sent request gets that result.
        let _ = raised.answer.send(answer);
        Ok(Resumed::Flight(flight))
    }

    /// The result an expired card's call came to, for the same call re-sent with its handle;
    /// taken once, so a replay is refused like any used handle.
    fn exhume(
        &self,
        handle: &str,
        name: &str,
        arguments: &Value,
    ) -> Result<Option<ToolResult>, McpError> {
        let mut expired = self
            .expired
            .lock()
            .map_err(|_| McpError::internal_error("the expired cards' lock was poisoned", None))?;
        expired.retain(|tombstone| tombstone.at.elapsed() < TOMBSTONE_TTL);
        let Some(at) = expired.iter().position(|t| t.handle == handle) else {
            return Ok(None);
        };
        let tombstone = &expired[at];
        if tombstone.name != name || &tombstone.arguments != arguments {
            return Err(McpError::invalid_params(
                format!(
                    "`requestState` belongs to a `{}` call whose card expired unanswered; \
                     re-send that call unchanged to read what it came to",
                    tombstone.name
                ),
                None,
            ));
        }
        Ok(expired.remove(at).map(|tombstone| tombstone.result))
    }

    /// Carries `flight` on as a task; `first` is a card it raised before becoming one.
    pub(crate) fn spawn_task(&self, flight: Flight, first: Option<Raised>) -> Task {
        let options = TaskOptions::new()
            .with_ttl_ms(TASK_TTL_MS)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message(format!("`{}` is running", flight.name));
        let task = self
            .tasks
            .spawn(options, move |task| Box::pin(run_task(flight, first, task)));
        if let Ok(mut ids) = self.task_ids.lock() {
            // Those rmcp dropped after their TTL go from the list too.
            ids.retain(|id| self.tasks.get_task(id).is_ok());
            ids.push(task.task_id.clone());
        }
        task
    }

    /// The ids of the tasks still kept, oldest first.
    pub(crate) fn task_ids(&self) -> Vec<String> {
        self.task_ids
            .lock()
            .map(|ids| ids.clone())
            .unwrap_or_default()
    }

    /// Drops every parked call and task (the run is ending): their calls are cancelled.
    pub(crate) fn clear(&self) {
        if let Ok(mut parked) = self.parked.lock() {
            parked.clear();
        }
        if let Ok(mut expired) = self.expired.lock() {
            expired.clear();
        }
        if let Ok(mut ids) = self.task_ids.lock() {
            ids.clear();
        }
        self.tasks.shutdown();
    }
}

/// Keeps `tombstone`, dropping the oldest beyond [`TOMBSTONES`] and any past its time.
fn bury(tombstones: &Mutex<std::collections::VecDeque<Tombstone>>, tombstone: Tombstone) {
    let Ok(mut kept) = tombstones.lock() else {
        return;
    };
    kept.retain(|t| t.at.elapsed() < TOMBSTONE_TTL);
    while kept.len() >= TOMBSTONES {
        kept.pop_front();
    }
    kept.push_back(tombstone);
}

/// Runs a call as a task: progress becomes the status message, cards become input requests,
/// and `tasks/cancel` cancels the call (a cell is interrupted, a debuggee paused).
async fn run_task(
    mut flight: Flight,
    first: Option<Raised>,
    task: TaskContext,
) -> Result<CallToolResult, TaskExit> {
    let status = task.clone();
    flight.send_progress_to(Some(Arc::new(move |progress: Progress| {
        status.set_status_message(progress.message);
    })));
    let mut inputs = FuturesUnordered::new();
    if let Some(raised) = first {
        inputs.push(ask_in_task(task.clone(), raised));
    }
    let mut cancelled = false;
    loop {
        tokio::select! {
            joined = &mut flight.result => {
                let result = joined_result(&flight.name, joined);
                if cancelled && result.is_error {
                    // A cancelled task carries no result; its status says what the call did.
                    task.set_status_message(status_line(&result.text));
                    return Err(TaskExit::Cancelled);
                }
                // The status names the outcome, not the last progress line ("`eval` is
                // running" would outlive the call).
                let verb = if result.is_error { "failed" } else { "completed" };
                task.set_status_message(format!(
                    "`{}` {verb}: {}",
                    flight.name,
                    status_line(result.text.lines().next().unwrap_or_default())
                ));
                // A call that finished its work anyway (a debuggee paused where it was) keeps
                // its result: cancellation is cooperative.
                return Ok(crate::wire::mcp_result(result));
            }
            Some(raised) = flight.raised.recv() => {
                if cancelled {
                    // The call is being cancelled: its new cards are withdrawn, not shown.
                    drop(raised);
                } else {
                    inputs.push(ask_in_task(task.clone(), raised));
                }
            }
            Some(()) = inputs.next(), if !inputs.is_empty() => {}
            () = task.cancelled(), if !cancelled => {
                cancelled = true;
                flight.cancel.cancel();
                inputs.clear();
            }
        }
    }
}

/// Shows `raised` as the task's input request and hands the answer back; an expired card
/// is left unanswered (its call already went on with "expired").
async fn ask_in_task(task: TaskContext, mut raised: Raised) {
    let key = format!("card-{}", raised.card.number);
    let request = match elicit_request(&raised.card) {
        Ok(request) => request,
        Err(error) => {
            let _ = raised
                .answer
                .send(Answer::NoHuman(error.message.to_string()));
            return;
        }
    };
    let answer = tokio::select! {
        value = task.request_input(key, InputRequest::Elicitation(request)) => match value {
            Ok(value) => answer_from(&raised.card, value).unwrap_or_else(|problem| {
                tracing::warn!(%problem, "a task's card was answered with something else");
                Answer::Cancelled
            }),
            // `tasks/cancel` cleared it: the call is being cancelled.
            Err(_) => Answer::Cancelled,
        },
        () = raised.answer.closed() => {
            // rmcp cannot withdraw an input request, so `tasks/get` keeps listing the card;
            // the status says it no longer counts.
            task.set_status_message(format!(
                "card {} expired without an answer; the call went on without it",
                raised.card.number
            ));
            return;
        }
    };
    let _ = raised.answer.send(answer);
}

/// The card as an `elicitation/create` request: the same form a 2025-11-25 client is sent.
fn elicit_request(card: &Card) -> Result<ElicitRequest, McpError> {
    let params =
        form_params(card).map_err(|problem| McpError::internal_error(problem.to_string(), None))?;
    Ok(ElicitRequest::new(params))
}

/// Reads a client's elicitation result for `card`.
fn answer_from(card: &Card, value: Value) -> Result<Answer, serde_json::Error> {
    let result: ElicitResult = serde_json::from_value(value)?;
    Ok(answer_for(card, result))
}

/// The first lines of a result, short enough for a task's status message.
fn status_line(text: &str) -> String {
    const MOST: usize = 1000;
    match text.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// 128 random bits, hex: the opaque handle a parked call is resumed by.
fn new_handle() -> Result<String, McpError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|error| {
            McpError::internal_error(format!("no randomness for a resume handle: {error}"), None)
        })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}
