//! The kernel protocol (EVAL-7): one JSON object per line, tagged by its `type`. The host
//! writes [`HostMessage`]s to a kernel's stdin and reads [`KernelMessage`]s from its stdout;
//! both kernel programs (`python.py`, `javascript.js`) speak exactly these. The tests below
//! pin the JSON of every message, as each kernel writes and reads it, so that a message or a
//! field renamed on one side only fails here.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// What the host sends a kernel.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum HostMessage {
    /// Run `code` as cell `id`; the kernel answers with a `done` of the same id.
    Execute { id: u64, code: String },
    /// Stop the running cell; between cells the kernels ignore it.
    Interrupt,
    /// The answer to the kernel's `tool_call` `id`: the tool's text (its error's when `ok` is
    /// false) and its structured result, `null` when it has none.
    ToolResult {
        id: u64,
        ok: bool,
        text: String,
        structured: Option<Value>,
    },
}

/// What a kernel sends the host.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum KernelMessage {
    /// The kernel started and waits for cells; sent once, first.
    Ready {
        /// Its pid as it sees itself: inside a sandbox's PID namespace, its number there.
        pid: u64,
        /// The interpreter (the path Python runs from, `node`); Python's may be unknown.
        interpreter: Option<String>,
        /// Its version (`3.12.3`, `v22.11.0`).
        version: Option<String>,
    },
    /// Text the cell printed.
    Stream { text: String },
    /// A value the cell showed (its last expression, `display()`, a figure).
    Display(Shown),
    /// The cell called `tool(name, args)`; the host answers with a `tool_result` of the same
    /// id.
    ToolCall {
        id: u64,
        /// The name as the cell gave it; one that is not a string reads as the empty name,
        /// which no tool has, so the call fails as an unknown tool.
        #[serde(deserialize_with = "name_or_empty")]
        name: String,
        args: Value,
    },
    /// Cell `id` ended.
    Done(Done),
}

/// A value shown, by its MIME type.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mime")]
pub(crate) enum Shown {
    /// A value's text (`repr`, `util.inspect`).
    #[serde(rename = "text/plain")]
    Text { text: String },
    /// A table or a `_repr_markdown_`.
    #[serde(rename = "text/markdown")]
    Markdown { text: String },
    /// A figure or a `_repr_png_`, base64.
    #[serde(rename = "image/png")]
    Png { data: String },
}

/// How a cell ended.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Done {
    pub(crate) id: u64,
    /// False when the cell raised or was interrupted; `error` and `interrupted` say which.
    pub(crate) ok: bool,
    /// The cell stopped on an interrupt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) interrupted: bool,
    /// What the cell raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<CellError>,
    /// Images the cell made beyond what one result holds (the Python kernel's caps).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) images_dropped: u64,
}

/// An exception a cell raised, as Jupyter names its parts; the host shows the traceback,
/// which already holds the other two.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellError {
    pub(crate) ename: String,
    pub(crate) evalue: String,
    pub(crate) traceback: String,
}

impl KernelMessage {
    /// One line of a kernel's stdout. A line that is not a message the host knows is output
    /// that reached the pipe around the kernel's capture (a child of the Node kernel writing
    /// to fd 1), and reads as the cell printing it; that holds for a JSON line of a `type`
    /// the protocol does not have, too, so nothing a child prints is lost. The line is
    /// parsed once, straight into the message.
    pub(crate) fn from_line(line: &str) -> KernelMessage {
        match serde_json::from_str(line) {
            Ok(message) => message,
            Err(error) => {
                // Both kernels write `type` first: a line that starts like a message and is
                // none is more likely a kernel's fault than a child's output.
                if line.starts_with(r#"{"type""#) {
                    tracing::debug!(%error, "a kernel line that looks like a message is read as output");
                }
                KernelMessage::Stream {
                    text: format!("{line}\n"),
                }
            }
        }
    }
}

impl Done {
    /// What the cell raised, as the model reads it; an interrupt the host did not send is a
    /// `KeyboardInterrupt` raised in the cell.
    pub(crate) fn error_text(self) -> Option<String> {
        match (self.error, self.interrupted) {
            (Some(error), _) => Some(error.traceback),
            (None, true) => Some("KeyboardInterrupt".to_owned()),
            (None, false) => None,
        }
    }
}

fn name_or_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(name) => name,
        _ => String::new(),
    })
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;

    /// Every kernel message, with the JSON a kernel writes for it (Python's spacing: each
    /// field as the kernel names it).
    fn kernel_messages() -> Vec<(KernelMessage, &'static str)> {
        vec![
            (
                KernelMessage::Ready {
                    pid: 4242,
                    interpreter: Some("/home/dev/project/.venv/bin/python".to_owned()),
                    version: Some("3.12.3".to_owned()),
                },
                r#"{"type": "ready", "pid": 4242, "interpreter": "/home/dev/project/.venv/bin/python", "version": "3.12.3"}"#,
            ),
            (
                KernelMessage::Stream {
                    text: "hello\n".to_owned(),
                },
                r#"{"type": "stream", "text": "hello\n"}"#,
            ),
            (
                KernelMessage::Display(Shown::Text {
                    text: "[1, 2]".to_owned(),
                }),
                r#"{"type": "display", "mime": "text/plain", "text": "[1, 2]"}"#,
            ),
            (
                KernelMessage::Display(Shown::Markdown {
                    text: "| a |\n|---|".to_owned(),
                }),
                r#"{"type": "display", "mime": "text/markdown", "text": "| a |\n|---|"}"#,
            ),
            (
                KernelMessage::Display(Shown::Png {
                    data: "iVBORw0KGgo=".to_owned(),
                }),
                r#"{"type": "display", "mime": "image/png", "data": "iVBORw0KGgo="}"#,
            ),
            (
                KernelMessage::ToolCall {
                    id: 1,
                    name: "read".to_owned(),
                    args: json!({"path": "a.txt"}),
                },
                r#"{"type": "tool_call", "id": 1, "name": "read", "args": {"path": "a.txt"}}"#,
            ),
            (
                KernelMessage::Done(Done {
                    id: 3,
                    ok: true,
                    interrupted: false,
                    error: None,
                    images_dropped: 0,
                }),
                r#"{"type": "done", "id": 3, "ok": true}"#,
            ),
            (
                KernelMessage::Done(Done {
                    id: 4,
                    ok: false,
                    interrupted: false,
                    error: Some(CellError {
                        ename: "ZeroDivisionError".to_owned(),
                        evalue: "division by zero".to_owned(),
                        traceback: "ZeroDivisionError: division by zero".to_owned(),
                    }),
                    images_dropped: 2,
                }),
                r#"{"type": "done", "id": 4, "ok": false, "error": {"ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": "ZeroDivisionError: division by zero"}, "images_dropped": 2}"#,
            ),
            (
                KernelMessage::Done(Done {
                    id: 5,
                    ok: false,
                    interrupted: true,
                    error: None,
                    images_dropped: 0,
                }),
                r#"{"type": "done", "id": 5, "ok": false, "interrupted": true}"#,
            ),
        ]
    }

    /// Every host message, with the exact line the host writes for it.
    fn host_messages() -> Vec<(HostMessage, &'static str)> {
        vec![
            (
                HostMessage::Execute {
                    id: 7,
                    code: "x = 1\nx".to_owned(),
                },
                r#"{"type":"execute","id":7,"code":"x = 1\nx"}"#,
            ),
            (HostMessage::Interrupt, r#"{"type":"interrupt"}"#),
            (
                HostMessage::ToolResult {
                    id: 2,
                    ok: true,
                    text: "hello, cell".to_owned(),
                    structured: Some(json!({"greeting": "hello, cell"})),
                },
                r#"{"type":"tool_result","id":2,"ok":true,"text":"hello, cell","structured":{"greeting":"hello, cell"}}"#,
            ),
            (
                HostMessage::ToolResult {
                    id: 3,
                    ok: false,
                    text: "unknown tool `nope`".to_owned(),
                    structured: None,
                },
                r#"{"type":"tool_result","id":3,"ok":false,"text":"unknown tool `nope`","structured":null}"#,
            ),
        ]
    }

    #[test]
    fn eval_7_every_kernel_message_round_trips_through_the_json_the_kernels_write() {
        for (message, line) in kernel_messages() {
            assert_eq!(KernelMessage::from_line(line), message, "{line}");
            let written: Value = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_value(&message).unwrap(), written, "{line}");
        }
        // The Node kernel writes the same fields without spaces.
        assert_eq!(
            KernelMessage::from_line(
                r#"{"type":"done","id":2,"ok":false,"error":{"ename":"Error","evalue":"x is not defined","traceback":"ReferenceError: x is not defined"}}"#
            ),
            KernelMessage::Done(Done {
                id: 2,
                ok: false,
                interrupted: false,
                error: Some(CellError {
                    ename: "Error".to_owned(),
                    evalue: "x is not defined".to_owned(),
                    traceback: "ReferenceError: x is not defined".to_owned(),
                }),
                images_dropped: 0,
            })
        );
    }

    #[test]
    fn eval_7_every_host_message_is_the_exact_line_the_kernels_read() {
        for (message, line) in host_messages() {
            assert_eq!(serde_json::to_string(&message).unwrap(), line);
            assert_eq!(serde_json::from_str::<HostMessage>(line).unwrap(), message);
        }
    }

    #[test]
    fn eval_7_a_line_that_is_no_message_is_output() {
        let output = |text: &str| KernelMessage::Stream {
            text: text.to_owned(),
        };
        // A child of the Node kernel writing to fd 1, in text and in JSON.
        assert_eq!(
            KernelMessage::from_line("from a child"),
            output("from a child\n")
        );
        assert_eq!(KernelMessage::from_line(""), output("\n"));
        assert_eq!(
            KernelMessage::from_line(r#"{"level": "info"}"#),
            output("{\"level\": \"info\"}\n")
        );
        // A type the protocol does not have, and a known type with a field of the wrong
        // kind, are not dropped: the cell shows them as it would any line.
        for line in [
            r#"{"type": "progress", "text": "50%"}"#,
            r#"{"type":"stream","text":5}"#,
            r#"{"type": "done"}"#,
        ] {
            assert_eq!(KernelMessage::from_line(line), output(&format!("{line}\n")));
        }
    }

    #[test]
    fn eval_6_a_tool_name_that_is_not_a_string_is_the_empty_name() {
        assert_eq!(
            KernelMessage::from_line(r#"{"type": "tool_call", "id": 1, "name": 42, "args": {}}"#),
            KernelMessage::ToolCall {
                id: 1,
                name: String::new(),
                args: json!({}),
            }
        );
    }

    #[test]
    fn a_cells_error_is_its_traceback_or_an_interrupt_it_raised() {
        let done = |line: &str| match KernelMessage::from_line(line) {
            KernelMessage::Done(done) => done,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            done(r#"{"type": "done", "id": 1, "ok": true}"#).error_text(),
            None
        );
        assert_eq!(
            done(r#"{"type": "done", "id": 1, "ok": false, "interrupted": true}"#).error_text(),
            Some("KeyboardInterrupt".to_owned())
        );
        assert_eq!(
            done(
                r#"{"type": "done", "id": 1, "ok": false, "error": {"ename": "E", "evalue": "v", "traceback": "E: v"}}"#
            )
            .error_text(),
            Some("E: v".to_owned())
        );
    }

    /// The `type` of every message, as the derive writes it.
    fn tags<T: Serialize>(messages: impl IntoIterator<Item = T>) -> BTreeSet<String> {
        messages
            .into_iter()
            .map(|message| serde_json::to_value(message).unwrap()["type"].to_string())
            .map(|tag| tag.trim_matches('"').to_owned())
            .collect()
    }

    /// The words in `source` that follow each `marker` up to `end`.
    fn after<'s>(source: &'s str, marker: &str, end: char) -> BTreeSet<&'s str> {
        source
            .split(marker)
            .skip(1)
            .filter_map(|rest| rest.split(end).next())
            .collect()
    }

    #[test]
    fn eval_7_the_kernels_send_and_read_exactly_the_messages_declared_here() {
        let python = super::super::PYTHON_KERNEL;
        let javascript = super::super::JAVASCRIPT_KERNEL;
        let sent = tags(kernel_messages().into_iter().map(|(message, _)| message));
        let read = tags(host_messages().into_iter().map(|(message, _)| message));
        let strings = |set: BTreeSet<&str>| -> BTreeSet<String> {
            set.into_iter().map(str::to_owned).collect()
        };
        assert_eq!(strings(after(python, r#""type": ""#, '"')), sent);
        assert_eq!(strings(after(python, r#"kind == ""#, '"')), read);
        // `eof` goes from the Node kernel's stdin reader to its main thread, never on a pipe.
        let mut node_sent = strings(after(javascript, "type: '", '\''));
        assert!(node_sent.remove("eof"));
        assert_eq!(node_sent, sent);
        let mut node_read = strings(after(javascript, "case '", '\''));
        assert!(node_read.remove("eof"));
        assert_eq!(node_read, read);
    }

    #[test]
    fn eval_7_the_kernels_name_every_field_declared_here() {
        let python = super::super::PYTHON_KERNEL;
        let javascript = super::super::JAVASCRIPT_KERNEL;
        let mut fields = BTreeSet::new();
        let lines = kernel_messages().into_iter().map(|(_, line)| line);
        let host_lines = host_messages().into_iter().map(|(_, line)| line);
        for line in lines.chain(host_lines) {
            collect_keys(&serde_json::from_str(line).unwrap(), &mut fields);
        }
        for field in fields {
            // A key of a dict, or a keyword of `reply.update(…)`.
            let named = [format!("\"{field}\""), format!("{field}=")];
            assert!(
                named.iter().any(|form| python.contains(form.as_str())),
                "python.py never names `{field}`"
            );
            // Images and their cap are the Python kernel's only.
            if matches!(field.as_str(), "data" | "images_dropped") {
                continue;
            }
            let named = [
                format!("{field}:"),
                format!(".{field}"),
                format!("{field},"),
            ];
            assert!(
                named.iter().any(|form| javascript.contains(form.as_str())),
                "javascript.js never names `{field}`"
            );
        }
    }

    fn collect_keys(value: &Value, keys: &mut BTreeSet<String>) {
        if let Value::Object(map) = value {
            for (key, inner) in map {
                // The arguments and structured results are the tools', not the protocol's.
                if !matches!(key.as_str(), "args" | "structured") {
                    collect_keys(inner, keys);
                }
                keys.insert(key.clone());
            }
        }
    }
}
