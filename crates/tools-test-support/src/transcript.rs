//! Whole answers as snapshots (STYLE: "whole transcripts as snapshots"): the calls of one
//! scenario and, for each, what the model reads, in the text and in the structured content
//! (and the kind of each picture beside them), as one redacted text for
//! `insta::assert_snapshot!`. Agent CLIs differ in which half they show the model (Claude Code
//! and Codex the structure, Gemini CLI the text), so a snapshot holds both: a reviewer reads
//! exactly what either would have read.

use std::fmt::Write as _;
use std::path::Path;

use rmcp::model::CallToolResult;
use serde_json::Value;
use tools_core::ToolResult;

use crate::mcp::{Server, is_error, text};

/// The calls of one scenario and what each answered, to snapshot as one text.
#[derive(Debug)]
pub struct Transcript {
    root: std::path::PathBuf,
    text: String,
}

impl Transcript {
    /// A transcript of a scenario in the workspace `root` (redacted as `[ROOT]`), showing
    /// each answer's text and structured content.
    pub fn new(root: &Path) -> Self {
        Transcript {
            root: root.to_path_buf(),
            text: String::new(),
        }
    }

    /// Calls `tool` on `server`, records the call and its whole answer, and returns the
    /// structured content (`null` when there is none).
    pub async fn call(&mut self, server: &Server, tool: &str, arguments: Value) -> Value {
        let result = server.call(tool, arguments.clone()).await;
        self.record_mcp(tool, &arguments, &result)
    }

    /// Records an MCP answer to `tool` called with `arguments`; returns its structured
    /// content.
    pub fn record_mcp(&mut self, tool: &str, arguments: &Value, result: &CallToolResult) -> Value {
        let structured = result.structured_content.clone().unwrap_or(Value::Null);
        let images: Vec<&str> = result
            .content
            .iter()
            .filter_map(|content| content.as_image())
            .map(|image| image.mime_type.as_str())
            .collect();
        self.record(
            tool,
            arguments,
            &Answer {
                text: &text(result),
                images: &images,
                structured: &structured,
                is_error: is_error(result),
            },
        );
        structured
    }

    /// Records a dispatcher's answer (a test that calls tools without MCP); returns its
    /// structured content.
    pub fn record_result(&mut self, tool: &str, arguments: &Value, result: &ToolResult) -> Value {
        let structured = result.structured.clone().unwrap_or(Value::Null);
        let images: Vec<&str> = result
            .images
            .iter()
            .map(|image| image.mime_type.as_str())
            .collect();
        self.record(
            tool,
            arguments,
            &Answer {
                text: &result.text,
                images: &images,
                structured: &structured,
                is_error: result.is_error,
            },
        );
        structured
    }

    /// Adds a line of the test's own between calls: what happened outside the tools (a file
    /// changed on disk, the program was killed), so the reader follows the scenario.
    pub fn note(&mut self, note: &str) {
        writeln!(self.text, "// {note}\n").unwrap();
    }

    fn record(&mut self, tool: &str, arguments: &Value, answer: &Answer<'_>) {
        let outcome = if answer.is_error { " → error" } else { "" };
        writeln!(self.text, "### {tool} {arguments}{outcome}").unwrap();
        writeln!(self.text, "{}", answer.text.trim_end()).unwrap();
        // The pictures themselves are bytes a reviewer cannot read here: their kind and count
        // show, and the test checks what is in them.
        for image in answer.images {
            writeln!(self.text, "--- image {image}").unwrap();
        }
        if !answer.structured.is_null() {
            let pretty = serde_json::to_string_pretty(answer.structured).unwrap();
            writeln!(self.text, "--- structured\n{pretty}").unwrap();
        }
        self.text.push('\n');
    }

    /// The transcript, redacted ([`crate::redact`]).
    pub fn finish(self) -> String {
        self.finish_with(&[])
    }

    /// [`Transcript::finish`] with this test's own filters (regular expressions and their
    /// replacements: an adapter's frame ids, an interpreter's version).
    pub fn finish_with(self, extra: &[(&str, &str)]) -> String {
        crate::redact_with(&self.text, &self.root, extra)
    }
}

/// One answer, whichever way it came.
struct Answer<'a> {
    text: &'a str,
    /// The MIME type of each picture beside the text, in order.
    images: &'a [&'a str],
    structured: &'a Value,
    is_error: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_transcript_shows_the_call_the_text_and_the_structure() {
        let root = Path::new("/tmp/.tmpRoot1");
        let mut transcript = Transcript::new(root);
        transcript.record_result(
            "read",
            &json!({"path": "a.txt"}),
            &ToolResult {
                text: "   1\talpha\n".into(),
                structured: Some(json!({"path": "/tmp/.tmpRoot1/a.txt", "lines": 1})),
                images: vec![tools_core::Image::png(vec![0x89])],
                is_error: false,
                touched: vec![],
                previous: vec![],
            },
        );
        transcript.note("a.txt is removed on disk");
        transcript.record_result(
            "read",
            &json!({"path": "a.txt"}),
            &ToolResult {
                text: "a.txt does not exist".into(),
                structured: None,
                images: vec![],
                is_error: true,
                touched: vec![],
                previous: vec![],
            },
        );
        insta::assert_snapshot!(transcript.finish(), @r#"
        ### read {"path":"a.txt"}
           1	alpha
        --- image image/png
        --- structured
        {
          "path": "[ROOT]/a.txt",
          "lines": 1
        }

        // a.txt is removed on disk

        ### read {"path":"a.txt"} → error
        a.txt does not exist
        "#);
    }
}
