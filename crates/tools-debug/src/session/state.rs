//! What the events of a session have told so far: where the debuggee is (running, stopped
//! where, exited with what), the output it printed since the last call and over its whole run,
//! and its pid. Applied on the transport's reader task, one message at a time.

use std::collections::VecDeque;

use crate::dap::events::{AdapterEvent, Stopped};
use crate::transport::Incoming;

/// How much of the debuggee's output is held between two calls; the rest is counted.
pub(crate) const OUTPUT_HELD_CHARS: usize = 8_000;

/// How many of its last output lines are kept for the exit report.
const TAIL_LINES: usize = 20;

/// How much of the debuggee's whole output is kept for `output` after it ended (its end,
/// where a traceback or a final result is); what came before is counted (DBG-5).
pub(crate) const RUN_OUTPUT_CHARS: usize = 16_000;

/// Where a session's debuggee is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunState {
    /// The handshake is under way.
    Starting,
    /// Running; `pause` stops it.
    Running,
    /// Stopped, as the adapter said.
    Stopped(Stopped),
    /// The debuggee exited (with its code, when the adapter said).
    Exited(Option<i64>),
    /// The session ended without an exit code: the adapter terminated it or went away.
    Ended(String),
}

impl RunState {
    /// Whether the debuggee can still be controlled.
    pub(crate) fn is_live(&self) -> bool {
        matches!(
            self,
            RunState::Starting | RunState::Running | RunState::Stopped(_)
        )
    }

    /// A few words for `status` and refusals.
    pub(crate) fn describe(&self) -> String {
        match self {
            RunState::Starting => "starting".to_owned(),
            RunState::Running => "running".to_owned(),
            RunState::Stopped(stop) => format!(
                "stopped ({}) on thread {}",
                stop.reason,
                stop.thread_id.map_or("?".to_owned(), |t| t.to_string())
            ),
            RunState::Exited(Some(code)) => format!("exited with code {code}"),
            RunState::Exited(None) => "exited".to_owned(),
            RunState::Ended(why) => format!("ended ({why})"),
        }
    }
}

/// What the events of a session have told so far.
#[derive(Debug)]
pub(super) struct State {
    pub(super) run: RunState,
    pub(super) initialized: bool,
    pub(super) output: String,
    pub(super) output_cut: usize,
    /// Everything the debuggee printed, up to its last [`RUN_OUTPUT_CHARS`].
    pub(super) run_output: String,
    /// How many characters were dropped from the front of `run_output`.
    pub(super) run_output_cut: usize,
    pub(super) tail: VecDeque<String>,
    pub(super) partial_line: String,
    pub(super) debuggee_pid: Option<u32>,
    /// Grows with every stop, exit or end (never with other events).
    pub(super) settled: u64,
    /// The connection to the adapter ended.
    pub(super) closed: bool,
}

impl State {
    pub(super) fn new() -> Self {
        State {
            run: RunState::Starting,
            initialized: false,
            output: String::new(),
            output_cut: 0,
            run_output: String::new(),
            run_output_cut: 0,
            tail: VecDeque::new(),
            partial_line: String::new(),
            debuggee_pid: None,
            settled: 0,
            closed: false,
        }
    }

    pub(super) fn add_output(&mut self, text: &str) {
        let room = OUTPUT_HELD_CHARS.saturating_sub(self.output.chars().count());
        let kept: String = text.chars().take(room).collect();
        self.output_cut += text.chars().count() - kept.chars().count();
        self.output.push_str(&kept);
        self.run_output.push_str(text);
        let over = self
            .run_output
            .chars()
            .count()
            .saturating_sub(RUN_OUTPUT_CHARS);
        if over > 0 {
            let cut_at = self
                .run_output
                .char_indices()
                .nth(over)
                .map_or(self.run_output.len(), |(at, _)| at);
            self.run_output.drain(..cut_at);
            self.run_output_cut += over;
        }
        self.partial_line.push_str(text);
        while let Some(end) = self.partial_line.find('\n') {
            let line: String = self.partial_line.drain(..=end).collect();
            let line = line.trim_end().chars().take(400).collect::<String>();
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
    }

    /// Applies one message; whether anything a waiter looks at changed.
    pub(super) fn apply(&mut self, incoming: Incoming) -> bool {
        let event = match incoming {
            Incoming::Closed => {
                // The end of the connection ends any wait.
                self.settled += 1;
                self.closed = true;
                if self.run.is_live() {
                    self.run = RunState::Ended("the adapter closed the connection".to_owned());
                }
                return true;
            }
            Incoming::Event(event) => AdapterEvent::read(event),
        };
        let settled = event.settles();
        if settled {
            self.settled += 1;
        }
        self.update(event) || settled
    }

    fn update(&mut self, event: AdapterEvent) -> bool {
        match event {
            AdapterEvent::Initialized => {
                self.initialized = true;
                true
            }
            AdapterEvent::Stopped(stopped) => {
                self.run = RunState::Stopped(stopped);
                true
            }
            AdapterEvent::Continued => {
                if self.run.is_live() {
                    self.run = RunState::Running;
                }
                false
            }
            AdapterEvent::Exited(exited) => {
                self.run = RunState::Exited(exited.exit_code);
                true
            }
            AdapterEvent::Terminated => {
                if self.run.is_live() {
                    self.run = RunState::Ended("the adapter ended the session".to_owned());
                }
                true
            }
            AdapterEvent::Process(process) => {
                self.debuggee_pid = process
                    .system_process_id
                    .and_then(|pid| u32::try_from(pid).ok());
                false
            }
            AdapterEvent::Output(output) => match output.category.as_deref() {
                // The adapter's own messages are not the program's output (DBG-5 `output` is
                // its stdout and stderr), but delve tells the exit code only there, after
                // `terminated`.
                Some("console") => match console_exit_code(&output.output) {
                    Some(code) if !matches!(self.run, RunState::Exited(Some(_))) => {
                        self.run = RunState::Exited(Some(code));
                        true
                    }
                    _ => false,
                },
                Some("telemetry") | Some("important") => false,
                _ => {
                    self.add_output(&output.output);
                    false
                }
            },
            AdapterEvent::Other => false,
        }
    }
}

/// The exit code in an adapter's console message "Process 1234 has exited with status 7"
/// (delve) or "Process 1234 exited with status = 7" (lldb).
fn console_exit_code(message: &str) -> Option<i64> {
    let rest = message.trim().strip_prefix("Process ")?;
    let (_, status) = rest.split_once("exited with status")?;
    status
        .trim_start_matches([' ', '='])
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dap::Event;
    use serde_json::{Value, json};

    fn event(name: &str, body: Value) -> Incoming {
        Incoming::Event(Event {
            seq: 0,
            event: name.into(),
            body,
        })
    }

    #[test]
    fn output_is_held_up_to_its_cap_and_the_rest_counted() {
        let mut state = State::new();
        state.apply(event(
            "output",
            json!({"category": "stdout", "output": "a\nb"}),
        ));
        state.apply(event(
            "output",
            json!({"category": "stdout", "output": "x".repeat(OUTPUT_HELD_CHARS)}),
        ));
        assert_eq!(state.output.chars().count(), OUTPUT_HELD_CHARS);
        assert_eq!(state.output_cut, 3);
        assert_eq!(state.tail, ["a"]);
        // The whole run's record keeps its end and counts what it dropped from the front.
        state.apply(event(
            "output",
            json!({"category": "stderr", "output": format!("{}Traceback\n", "é".repeat(RUN_OUTPUT_CHARS))}),
        ));
        assert_eq!(state.run_output.chars().count(), RUN_OUTPUT_CHARS);
        assert!(state.run_output.ends_with("éTraceback\n"));
        assert_eq!(state.run_output_cut, 3 + OUTPUT_HELD_CHARS + 10);
    }

    #[test]
    fn delve_and_lldb_say_the_exit_code_on_the_console() {
        assert_eq!(
            console_exit_code("Process 12812 has exited with status 7\n"),
            Some(7)
        );
        assert_eq!(
            console_exit_code("Process 9 exited with status = 1 (0x00000001)"),
            Some(1)
        );
        assert_eq!(console_exit_code("Detaching"), None);
    }

    #[test]
    fn an_exit_code_survives_the_terminated_event() {
        let mut state = State::new();
        assert!(state.apply(event("exited", json!({"exitCode": 3}))));
        assert!(state.apply(event("terminated", json!({}))));
        assert!(state.apply(Incoming::Closed));
        assert_eq!(state.run, RunState::Exited(Some(3)));
    }
}
