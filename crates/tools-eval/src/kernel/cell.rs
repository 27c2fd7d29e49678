//! One cell's run (EVAL-8): its state between the events of the cell loop ([`Run`]) — the
//! clocks of the idle window, the cap and the heartbeat, the `tool()` call it waits on, the
//! stop ladder — and what it produced ([`Cell`]). `Kernel::execute` waits for the next
//! [`Event`] and hands it to a method here; only what needs the kernel's process (writing to
//! its pipe, signalling its group) stays there.

use base64::Engine;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tools_core::{CallContext, Image, ToolCall, ToolResult};

use super::protocol::{Done, HostMessage, KernelMessage, Shown};
use crate::{EvalOptions, images::png_size, transcript::Transcript};

/// How long each interrupt gets to land before the next step.
const INTERRUPT_STEP: Duration = Duration::from_millis(1500);
/// How often a cell that prints nothing still reports that it runs.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// The least time between two progress reports of output.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How a cell ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// It ran to its end; `error` is the exception it raised, if any.
    Done {
        error: Option<String>,
        images_dropped: u64,
    },
    /// It was interrupted and the kernel lives on with its state.
    Interrupted(Stop),
    /// It did not stop on interrupt: the kernel was killed, its state is lost.
    Killed(Stop),
    /// The kernel died during the cell; `how` says how.
    Died { how: String, stderr: Vec<String> },
}

/// Why a cell was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Idle(Duration),
    Cap(Duration),
    Output(u64),
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Idle(window) => write!(
                f,
                "it printed nothing for {} s (the idle timeout)",
                window.as_secs_f64()
            ),
            Stop::Cap(cap) => write!(
                f,
                "it ran for {} s (the cap on one cell)",
                cap.as_secs_f64()
            ),
            Stop::Output(bytes) => write!(
                f,
                "it printed more than {bytes} bytes (the output cap); is it an endless loop?"
            ),
            Stop::Cancelled => f.write_str("the client cancelled the call"),
        }
    }
}

/// What a cell produced.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) transcript: Transcript,
    pub(crate) images: Vec<Image>,
    pub(crate) ending: Ending,
}

/// A cell on its way: what it produced so far, its clocks, the `tool()` call it waits on, and
/// once it is being stopped, how far the stop ladder went.
pub(super) struct Run<'a> {
    id: u64,
    context: &'a CallContext,
    options: &'a EvalOptions,
    cell: Cell,
    started: Instant,
    /// When the cell reaches the cap on one cell.
    cap: Instant,
    /// When the cell will have printed nothing for the idle window (EVAL-8).
    idle: Instant,
    /// When to say that a silent cell still runs.
    heartbeat: Instant,
    last_progress: Instant,
    pending: Option<PendingCall>,
    stopping: Option<Stopping>,
}

/// A `tool()` call of the cell, running through the bridge (CORE-8).
struct PendingCall {
    id: u64,
    result: BoxFuture<'static, ToolResult>,
}

/// A cell being stopped: why, how many steps of the ladder were taken, and when the next is
/// due.
#[derive(Debug, Clone, Copy)]
struct Stopping {
    why: Stop,
    steps: u32,
    next: Instant,
}

/// What woke a cell's loop.
pub(super) enum Event {
    /// A message from the kernel; None when its pipe closed.
    Message(Option<KernelMessage>),
    /// The pending `tool()` call ended.
    ToolDone(ToolResult),
    /// The idle window, the cap or the client's cancellation says to stop the cell.
    Stop(Stop),
    /// The cell has printed nothing for a while.
    Heartbeat,
    /// The next step of stopping the cell is due.
    Step,
}

/// A step of stopping a cell, for the kernel to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The first two: an interrupt (`Kernel::interrupt` says how each is sent).
    Interrupt(u32),
    /// The third: the kernel's group is killed.
    Kill,
    /// After the kill the kernel is gone, whether or not its pipe closed.
    Gone(Stop),
}

impl<'a> Run<'a> {
    pub(super) fn new(id: u64, context: &'a CallContext, options: &'a EvalOptions) -> Self {
        let started = Instant::now();
        Run {
            id,
            context,
            options,
            cell: Cell::new(Ending::Done {
                error: None,
                images_dropped: 0,
            }),
            started,
            cap: started + options.max_cell,
            idle: started + options.idle_timeout,
            heartbeat: started + HEARTBEAT,
            last_progress: started - PROGRESS_EVERY,
            pending: None,
            stopping: None,
        }
    }

    /// Waits for the next thing the cell's loop acts on.
    pub(super) async fn next_event(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<KernelMessage>,
    ) -> Event {
        let stopping = self.stopping.is_some();
        let next_step = self.stopping.map(|stopping| stopping.next);
        let (idle, cap, heartbeat) = (self.idle, self.cap, self.heartbeat);
        let (context, options) = (self.context, self.options);
        let waiting_on_tool = self.pending.is_some();
        let pending = &mut self.pending;
        let tool_done = async {
            match pending {
                Some(call) => (&mut call.result).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            message = events.recv() => Event::Message(message),
            result = tool_done => Event::ToolDone(result),
            // EVAL-8: the idle window does not run while a `tool()` call is pending.
            () = tokio::time::sleep_until(idle), if !waiting_on_tool && !stopping => {
                Event::Stop(Stop::Idle(options.idle_timeout))
            }
            () = tokio::time::sleep_until(cap), if !stopping => Event::Stop(Stop::Cap(options.max_cell)),
            () = context.cancellation().cancelled(), if !stopping => Event::Stop(Stop::Cancelled),
            () = tokio::time::sleep_until(heartbeat), if !stopping => Event::Heartbeat,
            () = sleep_until_some(next_step) => Event::Step,
        }
    }

    /// Acts on one message of the kernel; the cell's ending once its `done` came.
    pub(super) fn on_message(&mut self, message: KernelMessage) -> Option<Ending> {
        let now = Instant::now();
        self.idle = now + self.options.idle_timeout;
        match message {
            KernelMessage::Stream { text } => self.on_output(&text, now),
            KernelMessage::Display(shown) => self.cell.show(shown),
            KernelMessage::ToolCall { id, name, args } => self.call_tool(
                id,
                ToolCall {
                    name,
                    arguments: args,
                },
            ),
            KernelMessage::Done(done) if done.id == self.id => return Some(self.ending(done)),
            // `ready` came before the first cell; the `done` of an earlier cell, one the host
            // gave up on, ends nothing now.
            KernelMessage::Done(_) | KernelMessage::Ready { .. } => {}
        }
        None
    }

    /// Output: into the transcript, as progress at most every [`PROGRESS_EVERY`], and past
    /// the output cap, a reason to stop the cell.
    fn on_output(&mut self, text: &str, now: Instant) {
        self.cell.transcript.push(text);
        if now >= self.last_progress + PROGRESS_EVERY {
            self.last_progress = now;
            self.heartbeat = now + HEARTBEAT;
            if let Some(line) = self.cell.transcript.last_line() {
                self.context.progress(cut(line, 200));
            }
        }
        if self.cell.transcript.received > self.options.max_output_bytes {
            self.stop(Stop::Output(self.options.max_output_bytes), now);
        }
    }

    /// Starts the cell's `tool()` call through the run's bridge; its result goes back down
    /// the pipe when it ends ([`Run::on_tool_done`]).
    fn call_tool(&mut self, id: u64, call: ToolCall) {
        self.context
            .progress(format!("calling `{}` from the cell", call.name));
        let bridge = self.context.bridge().cloned();
        let result = Box::pin(async move {
            match bridge {
                Some(bridge) => bridge.call(call).await,
                None => ToolResult::error(&tools_core::ToolError::failed(
                    "tool() is not available here: this call was not made through a \
                     dispatcher",
                )),
            }
        });
        self.pending = Some(PendingCall { id, result });
    }

    /// The pending `tool()` call ended: the reply for the kernel; the idle window starts
    /// again.
    pub(super) fn on_tool_done(&mut self, result: ToolResult) -> HostMessage {
        let id = self.pending.take().map(|call| call.id).unwrap_or_default();
        self.idle = Instant::now() + self.options.idle_timeout;
        HostMessage::ToolResult {
            id,
            ok: !result.is_error,
            text: result.text,
            structured: result.structured,
        }
    }

    pub(super) fn on_heartbeat(&mut self) {
        self.heartbeat = Instant::now() + HEARTBEAT;
        self.context.progress(format!(
            "the cell has run for {} s",
            self.started.elapsed().as_secs()
        ));
    }

    /// Starts stopping the cell, its first step due `now`; the first reason wins.
    pub(super) fn stop(&mut self, why: Stop, now: Instant) {
        if self.stopping.is_none() {
            self.stopping = Some(Stopping {
                why,
                steps: 0,
                next: now,
            });
        }
    }

    /// The next step of stopping the cell, now due; the one after is due
    /// [`INTERRUPT_STEP`] later. A pending bridged call is dropped, which cancels it.
    pub(super) fn next_step(&mut self) -> Option<Step> {
        let stopping = self.stopping.as_mut()?;
        self.pending = None;
        let step = match stopping.steps {
            0 | 1 => Step::Interrupt(stopping.steps),
            2 => Step::Kill,
            _ => return Some(Step::Gone(stopping.why)),
        };
        stopping.steps += 1;
        stopping.next = Instant::now() + INTERRUPT_STEP;
        Some(step)
    }

    /// Why the cell is being stopped, once it is.
    pub(super) fn stopped_by(&self) -> Option<Stop> {
        self.stopping.map(|stopping| stopping.why)
    }

    /// How the cell ended, from its `done`: an interrupt the host sent leaves the kernel's
    /// state as it was; anything else ran to its end, an exception included.
    fn ending(&self, done: Done) -> Ending {
        match (done.interrupted, self.stopping) {
            (true, Some(stopping)) => Ending::Interrupted(stopping.why),
            _ => Ending::Done {
                images_dropped: done.images_dropped,
                error: done.error_text(),
            },
        }
    }

    pub(super) fn end(mut self, ending: Ending) -> Cell {
        self.cell.ending = ending;
        self.cell
    }
}

impl Cell {
    pub(super) fn new(ending: Ending) -> Self {
        Cell {
            transcript: Transcript::default(),
            images: Vec::new(),
            ending,
        }
    }

    /// Adds a shown value: an image is kept and named in the transcript; text goes on a line
    /// of its own.
    fn show(&mut self, shown: Shown) {
        let text = match shown {
            Shown::Png { data } => {
                return match base64::engine::general_purpose::STANDARD.decode(data) {
                    Ok(bytes) => {
                        let size = png_size(&bytes)
                            .map(|(w, h)| format!(" {w}×{h}"))
                            .unwrap_or_default();
                        self.images.push(Image::png(bytes));
                        self.transcript
                            .push(&format!("\n[image {}: PNG{size}]\n", self.images.len()));
                    }
                    Err(error) => self
                        .transcript
                        .push(&format!("\n[an image that did not decode: {error}]\n")),
                };
            }
            Shown::Text { text } | Shown::Markdown { text } => text,
        };
        let mut shown = String::new();
        if !self.transcript.ends_with_newline() {
            shown.push('\n');
        }
        shown.push_str(&text);
        shown.push('\n');
        self.transcript.push(&shown);
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => futures::future::pending().await,
    }
}

fn cut(line: &str, chars: usize) -> String {
    let mut kept: String = line.chars().take(chars).collect();
    if kept.len() < line.len() {
        kept.push('…');
    }
    kept
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tools_core::{Run as ToolRun, Workspace};

    use super::*;

    fn context() -> CallContext {
        let workspace = Workspace::new(std::env::temp_dir()).unwrap_or_else(|e| panic!("{e}"));
        CallContext::detached(Arc::new(ToolRun::new(workspace)))
    }

    fn message(line: &str) -> KernelMessage {
        KernelMessage::from_line(line)
    }

    #[test]
    fn eval_7_only_the_cells_own_done_ends_it() {
        let (context, options) = (context(), EvalOptions::default());
        let mut run = Run::new(2, &context, &options);
        // A cell the host gave up on may still say it is done.
        assert!(
            run.on_message(message(r#"{"type": "done", "id": 1, "ok": true}"#))
                .is_none()
        );
        let ending = run.on_message(message(
            r#"{"type": "done", "id": 2, "ok": true, "images_dropped": 3}"#,
        ));
        assert!(
            matches!(
                ending,
                Some(Ending::Done {
                    error: None,
                    images_dropped: 3
                })
            ),
            "{ending:?}"
        );
    }

    #[test]
    fn eval_8_an_interrupt_the_host_sent_keeps_the_state_and_one_it_did_not_is_raised() {
        let (context, options) = (context(), EvalOptions::default());
        let interrupted = r#"{"type": "done", "id": 1, "ok": false, "interrupted": true}"#;
        let mut run = Run::new(1, &context, &options);
        let ending = run.on_message(message(interrupted));
        assert!(
            matches!(&ending, Some(Ending::Done { error: Some(error), .. }) if error == "KeyboardInterrupt"),
            "{ending:?}"
        );
        let mut run = Run::new(1, &context, &options);
        run.stop(Stop::Idle(options.idle_timeout), Instant::now());
        let ending = run.on_message(message(interrupted));
        assert!(
            matches!(ending, Some(Ending::Interrupted(Stop::Idle(_)))),
            "{ending:?}"
        );
    }

    #[tokio::test]
    async fn eval_8_output_past_the_cap_starts_stopping_and_the_first_reason_stays() {
        let context = context();
        let options = EvalOptions {
            max_output_bytes: 10,
            ..EvalOptions::default()
        };
        let mut run = Run::new(1, &context, &options);
        let before = run.idle;
        tokio::time::sleep(Duration::from_millis(5)).await;
        run.on_message(KernelMessage::Stream {
            text: "0123456789".to_owned(),
        });
        assert!(run.stopping.is_none());
        // Every message starts the idle window again.
        assert!(run.idle > before);
        run.on_message(KernelMessage::Stream {
            text: "!".to_owned(),
        });
        run.stop(Stop::Cancelled, Instant::now());
        let stopping = run.stopping.unwrap_or_else(|| panic!("not stopping"));
        assert_eq!((stopping.why, stopping.steps), (Stop::Output(10), 0));
        assert!(matches!(
            run.next_event(&mut mpsc::unbounded_channel().1).await,
            Event::Step
        ));
    }

    #[tokio::test]
    async fn eval_6_a_tool_result_answers_the_call_it_ends() {
        let (context, options) = (context(), EvalOptions::default());
        let mut run = Run::new(1, &context, &options);
        run.on_message(message(
            r#"{"type": "tool_call", "id": 5, "name": "hello", "args": {"name": "cell"}}"#,
        ));
        let (_sender, mut events) = mpsc::unbounded_channel();
        // Outside a dispatcher there is no bridge: the call fails, and says why.
        let Event::ToolDone(result) = run.next_event(&mut events).await else {
            panic!("the call did not end");
        };
        let reply = run.on_tool_done(result);
        assert!(run.pending.is_none());
        assert_eq!(
            serde_json::to_value(&reply).unwrap_or_else(|e| panic!("{e}")),
            json!({
                "type": "tool_result",
                "id": 5,
                "ok": false,
                "text": "tool() is not available here: this call was not made through a dispatcher",
                "structured": null,
            })
        );
    }

    #[test]
    fn eval_4_shown_values_stand_on_lines_of_their_own_and_images_are_named() {
        let mut cell = Cell::new(Ending::Killed(Stop::Cancelled));
        cell.transcript.push("no newline");
        cell.show(Shown::Text {
            text: "42".to_owned(),
        });
        cell.show(Shown::Markdown {
            text: "| a |".to_owned(),
        });
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(2u32.to_be_bytes());
        png.extend(3u32.to_be_bytes());
        cell.show(Shown::Png {
            data: base64::engine::general_purpose::STANDARD.encode(png),
        });
        cell.show(Shown::Png {
            data: "not base64!".to_owned(),
        });
        assert_eq!(cell.images.len(), 1);
        assert_eq!(
            cell.transcript.render(),
            "no newline\n42\n| a |\n\n[image 1: PNG 2×3]\n\n\
             [an image that did not decode: Invalid symbol 32, offset 3.]"
        );
    }

    #[tokio::test]
    async fn eval_8_the_stop_ladder_interrupts_twice_then_kills_and_cancels_a_pending_call() {
        let (context, options) = (context(), EvalOptions::default());
        let mut run = Run::new(1, &context, &options);
        assert_eq!(run.next_step(), None);
        run.on_message(message(
            r#"{"type": "tool_call", "id": 1, "name": "hello", "args": {}}"#,
        ));
        run.stop(Stop::Cancelled, Instant::now());
        assert_eq!(run.next_step(), Some(Step::Interrupt(0)));
        assert!(run.pending.is_none());
        let due = run.stopping.map(|stopping| stopping.next);
        assert!(due.is_some_and(|due| due > Instant::now() + INTERRUPT_STEP / 2));
        assert_eq!(run.next_step(), Some(Step::Interrupt(1)));
        assert_eq!(run.next_step(), Some(Step::Kill));
        assert_eq!(run.next_step(), Some(Step::Gone(Stop::Cancelled)));
        assert_eq!(run.stopped_by(), Some(Stop::Cancelled));
    }

    #[test]
    fn a_png_header_gives_its_size() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(640u32.to_be_bytes());
        png.extend(480u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((640, 480)));
        assert_eq!(png_size(b"GIF89a"), None);
    }
}
