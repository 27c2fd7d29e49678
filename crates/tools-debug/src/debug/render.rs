//! How the `debug` tool's answers read: plain text for a model, capped with a note saying what
//! was cut (30 frames, 50 children, 400 characters per value). Pure functions of what the
//! adapter answered, so each is tested with the text it writes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tools_core::{Line, Place, ToolOutput, Workspace};

use super::{CONTEXT_LINES, DebugOutput, MAX_CHILDREN, MAX_FRAMES, MAX_VALUE_CHARS};
use crate::adapters::AdapterReport;
use crate::dap::events::Stopped;
use crate::dap::requests::{EvaluateResponse, StackTraceResponse};
use crate::dap::types::{Scope, StackFrame, Thread, Variable};
use crate::session::{FileBreakpoints, Session};

pub(super) fn join(lines: &[u32]) -> String {
    lines
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` cut to `max` characters, with a note saying how much was cut.
pub(super) fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… ({} more characters cut)", total - max)
}

pub(super) fn render_adapters(reports: &[AdapterReport]) -> String {
    let mut text = String::new();
    for report in reports {
        let _ = write!(
            text,
            "{}: {}",
            report.adapter,
            if report.usable {
                "usable"
            } else {
                "not usable"
            }
        );
        match &report.marker {
            Some(marker) => {
                let _ = write!(text, "; marker {marker}");
            }
            None => text.push_str("; no marker"),
        }
        match &report.binary {
            Some(binary) => {
                let _ = write!(
                    text,
                    "; binary {} (as {}{})",
                    binary.path.display(),
                    binary.matched,
                    binary
                        .version
                        .as_ref()
                        .map(|v| format!(", {v}"))
                        .unwrap_or_default()
                );
            }
            None => text.push_str("; no binary"),
        }
        if let Some(problem) = &report.problem {
            let _ = write!(text, "\n  why not: {problem}");
        }
        text.push('\n');
    }
    text.trim_end().to_owned()
}

pub(super) fn render_breakpoints(workspace: &Workspace, set: &[FileBreakpoints]) -> String {
    let mut text = String::new();
    for file in set {
        let shown = workspace.display(&file.file);
        if file.asked.is_empty() {
            let _ = writeln!(text, "cleared the breakpoints of {shown}");
            continue;
        }
        let parts: Vec<String> = file
            .asked
            .iter()
            .enumerate()
            .map(|(index, asked)| match file.answered.get(index) {
                Some(bp) if bp.verified => match bp.line {
                    Some(line) if line != *asked => format!("{asked} verified (moved to {line})"),
                    _ => format!("{asked} verified"),
                },
                Some(bp) => format!(
                    "{asked} not verified{}",
                    bp.message
                        .as_ref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                ),
                None => format!("{asked} not answered"),
            })
            .collect();
        let _ = writeln!(text, "breakpoints in {shown}: {}", parts.join(", "));
    }
    text.trim_end().to_owned()
}

/// A frame as answers name it, `path:LINE` (the adapter's name for a source it gives no path
/// for, `<no source>` without either).
pub(super) fn frame_at(workspace: &Workspace, frame: &StackFrame) -> String {
    let name = frame
        .source
        .as_ref()
        .and_then(|s| s.path.clone().or_else(|| s.name.clone()))
        .map(|p| workspace.display(Path::new(&p)))
        .unwrap_or_else(|| "<no source>".to_owned());
    match Line::from_dap(frame.line) {
        Some(line) => Place::named(name, line, "").at().to_string(),
        // DAP's line 0 is a frame the adapter has no line for: no place, so it is shown as
        // the adapter gave it.
        None => format!("{name}:{}", frame.line),
    }
}

/// Where a frame is, as structured results give it: its source file at its line, with the
/// line's text; `None` when the adapter gives no path or no line for it.
pub(super) fn frame_place(workspace: &Workspace, frame: &StackFrame) -> Option<Place> {
    let path = frame.source.as_ref()?.path.as_deref()?;
    let line = Line::from_dap(frame.line)?;
    let source = frame_source(frame).unwrap_or_default();
    let text = source.lines().nth(line.index()).unwrap_or_default();
    Some(Place::new(workspace, Path::new(path), line, text))
}

/// The text of a frame's source file, when the adapter names its path and it is a file small
/// enough to quote from.
fn frame_source(frame: &StackFrame) -> Option<String> {
    frame
        .source
        .as_ref()
        .and_then(|s| s.path.as_ref())
        .map(PathBuf::from)
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() < 4 << 20))
        .and_then(|path| std::fs::read_to_string(path).ok())
}

/// The top frame as `path:LINE in NAME`, with the source lines around it (the stop line
/// marked).
pub(super) fn render_frame(workspace: &Workspace, frame: &StackFrame) -> String {
    let mut text = format!(
        "at {} in {} (frame {})",
        frame_at(workspace, frame),
        frame.name,
        frame.id
    );
    if let (Some(source), Some(stopped)) = (frame_source(frame), Line::from_dap(frame.line)) {
        let around = CONTEXT_LINES;
        let first = stopped.index().saturating_sub(around);
        for (index, line) in source
            .lines()
            .enumerate()
            .skip(first)
            .take(stopped.index() + around + 1 - first)
        {
            let number = Line::from_index(index);
            let marker = if number == stopped { ">" } else { " " };
            let _ = write!(text, "\n{marker}{number:>5} | {}", cap(line, 200));
        }
    }
    text
}

pub(super) fn render_locals(variables: &[Variable]) -> String {
    const SHOWN: usize = 12;
    let mut parts: Vec<String> = variables
        .iter()
        .filter(|v| {
            !v.name.starts_with("special variables") && !v.name.starts_with("function variables")
        })
        .take(SHOWN)
        .map(|v| format!("{} = {}", v.name, cap(&v.value, 60)))
        .collect();
    if variables.len() > SHOWN {
        parts.push(format!("… {} more", variables.len() - SHOWN));
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

pub(super) fn render_stack(
    workspace: &Workspace,
    thread: i64,
    trace: &StackTraceResponse,
) -> String {
    let mut text = format!("stack of thread {thread}:");
    for frame in trace.stack_frames.iter().take(MAX_FRAMES) {
        let _ = write!(
            text,
            "\nframe {}: {} at {}",
            frame.id,
            frame.name,
            frame_at(workspace, frame)
        );
    }
    let total = trace
        .total_frames
        .map(|t| t as usize)
        .unwrap_or(trace.stack_frames.len())
        .max(trace.stack_frames.len());
    if total > MAX_FRAMES {
        let _ = write!(
            text,
            "\n({} more frames not shown: the stack is capped at {MAX_FRAMES})",
            total - MAX_FRAMES
        );
    }
    text
}

pub(super) fn render_variables(reference: i64, variables: &[Variable]) -> String {
    let mut text = format!("variables of reference {reference}:");
    for variable in variables.iter().take(MAX_CHILDREN) {
        let _ = write!(text, "\n{}", variable.name);
        if let Some(type_name) = variable.type_name.as_ref().filter(|t| !t.is_empty()) {
            let _ = write!(text, " ({type_name})");
        }
        let _ = write!(text, " = {}", cap(&variable.value, MAX_VALUE_CHARS));
        if variable.variables_reference > 0 {
            let _ = write!(text, " [reference {}]", variable.variables_reference);
        }
    }
    if variables.is_empty() {
        text.push_str("\n(none)");
    }
    if variables.len() > MAX_CHILDREN {
        let _ = write!(
            text,
            "\n({} more children not shown: variables are capped at {MAX_CHILDREN}; evaluate an \
             expression such as a slice to see others)",
            variables.len() - MAX_CHILDREN
        );
    }
    text
}

/// `output` after the session ended: everything its program printed, up to its end (DBG-5),
/// until the next launch.
pub(super) fn ended_output(session: &Session) -> ToolOutput<DebugOutput> {
    let state = session.run_state();
    let (printed, cut) = session.run_output();
    let mut text = format!(
        "no debug session is running; the last one: {} {}",
        session.program,
        state.describe()
    );
    if printed.trim().is_empty() {
        text.push_str("; it printed nothing");
    } else {
        match cut {
            0 => text.push_str("; all it printed:\n"),
            cut => {
                let _ = writeln!(
                    text,
                    "; the last {} characters it printed ({cut} before them were cut):",
                    printed.chars().count()
                );
            }
        }
        text.push_str(printed.trim_end());
    }
    ToolOutput::new(
        text,
        DebugOutput {
            operation: "output".to_owned(),
            adapter: Some(session.adapter),
            state: Some(state.describe()),
            ..DebugOutput::default()
        },
    )
}

/// Which heading a block of the program's output has: the `output` operation's answer says
/// it holds everything since the last call; the same block below a stop, a "still running"
/// or a terminate is what the program printed on the way there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OutputHeading {
    /// `output:`, below another answer.
    OnTheWay,
    /// `output since the last call:`, the whole of the `output` operation's answer.
    SinceTheLastCall,
}

pub(super) fn render_output(printed: &str, cut: usize, heading: OutputHeading) -> String {
    if printed.is_empty() {
        return "no output since the last call".to_owned();
    }
    let mut text = match heading {
        OutputHeading::SinceTheLastCall => String::from("output since the last call:\n"),
        OutputHeading::OnTheWay => String::from("output:\n"),
    };
    text.push_str(printed.trim_end());
    if cut > 0 {
        let _ = write!(text, "\n({cut} more characters of output were cut)");
    }
    text
}

/// `threads`: one line each.
pub(super) fn render_threads(threads: &[Thread]) -> String {
    let mut text = String::new();
    for thread in threads {
        let _ = writeln!(text, "thread {}: {}", thread.id, thread.name);
    }
    text.trim_end().to_owned()
}

/// `scopes`: each with its reference, the expensive ones said.
pub(super) fn render_scopes(frame: i64, scopes: &[Scope]) -> String {
    let mut text = format!("scopes of frame {frame}:\n");
    for scope in scopes {
        let _ = writeln!(
            text,
            "{} (reference {}){}",
            scope.name,
            scope.variables_reference,
            if scope.expensive { ", expensive" } else { "" }
        );
    }
    text.trim_end().to_owned()
}

/// `evaluate`: the value (capped), its type, and its reference when it has children.
pub(super) fn render_evaluation(expression: &str, answer: &EvaluateResponse) -> String {
    let mut text = format!("{expression} = {}", cap(&answer.result, MAX_VALUE_CHARS));
    if let Some(type_name) = answer.type_name.as_ref().filter(|t| !t.is_empty()) {
        let _ = write!(text, " ({type_name})");
    }
    if answer.variables_reference > 0 {
        let _ = write!(text, " [reference {}]", answer.variables_reference);
    }
    text
}

/// The first line of a stop: why, and on which thread.
fn render_stop(stop: &Stopped) -> String {
    format!(
        "stopped: {}{} on thread {}",
        stop.reason,
        stop.description
            .as_ref()
            .filter(|d| !d.eq_ignore_ascii_case(&stop.reason))
            .map(|d| format!(" ({d})"))
            .unwrap_or_default(),
        stop.thread_id.map_or("?".to_owned(), |t| t.to_string())
    )
}

/// A control operation's answer at a stop: why, the top frame with its source and locals,
/// and what the program printed on the way (`printed`, and how much of it was cut).
pub(super) fn render_stopped(
    workspace: &Workspace,
    stop: &Stopped,
    top: Option<&StackFrame>,
    locals: Option<&str>,
    (printed, cut): (&str, usize),
) -> String {
    let mut text = render_stop(stop);
    if let Some(frame) = top {
        text.push('\n');
        text.push_str(&render_frame(workspace, frame));
        if let Some(locals) = locals {
            let _ = write!(text, "\nlocals: {locals}");
        }
    }
    if !printed.is_empty() {
        text.push('\n');
        text.push_str(&render_output(printed, cut, OutputHeading::OnTheWay));
    }
    text
}

/// A control operation's answer when the program did not stop within `timeout`.
pub(super) fn render_still_running(timeout: Duration, printed: &str, cut: usize) -> String {
    let mut text = format!(
        "still running after {}s; the program keeps running: call `pause` to stop it, or \
         `status` later",
        timeout.as_secs()
    );
    if !printed.is_empty() {
        text.push('\n');
        text.push_str(&render_output(printed, cut, OutputHeading::OnTheWay));
    }
    text
}

/// A control operation's answer when the program exited.
pub(super) fn render_exited(code: Option<i64>, last: &[String]) -> String {
    let mut text = format!(
        "the program exited{}",
        code.map(|c| format!(" with code {c}")).unwrap_or_default()
    );
    if !last.is_empty() {
        let _ = write!(text, "\nits last output lines:\n{}", last.join("\n"));
    }
    text
}

/// A control operation's answer when the session ended without an exit code.
pub(super) fn render_ended(why: &str, last: &[String]) -> String {
    let mut text = format!("the session ended: {why}");
    if !last.is_empty() {
        let _ = write!(
            text,
            "\nthe program's last output lines:\n{}",
            last.join("\n")
        );
    }
    text
}

/// `status`'s last lines: the breakpoints set, by file.
pub(super) fn render_breakpoints_set(
    workspace: &Workspace,
    breakpoints: &BTreeMap<PathBuf, Vec<u32>>,
) -> String {
    if breakpoints.is_empty() {
        return "breakpoints: none".to_owned();
    }
    let lines: Vec<String> = breakpoints
        .iter()
        .map(|(file, lines)| {
            format!(
                "breakpoints: {} lines {}",
                workspace.display(file),
                join(lines)
            )
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dap::types::{Breakpoint, Source};

    /// A workspace holding `app.py` with ten numbered lines.
    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("app.py"), text).unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    fn frame(workspace: &Workspace, id: i64, name: &str, line: u32) -> StackFrame {
        StackFrame {
            id,
            name: name.into(),
            source: Some(Source {
                name: Some("app.py".into()),
                path: Some(workspace.root().join("app.py").display().to_string()),
            }),
            line,
        }
    }

    #[test]
    fn dbg_5_a_stop_shows_its_line_marked_among_its_neighbours() {
        let (_dir, workspace) = workspace();
        assert_eq!(
            render_frame(&workspace, &frame(&workspace, 4, "main", 5)),
            "at app.py:5 in main (frame 4)\n     3 | line 3\n     4 | line 4\n>    5 | line 5\n     6 | line 6\n     7 | line 7"
        );
        // Near the top of the file there is less above.
        assert_eq!(
            render_frame(&workspace, &frame(&workspace, 1, "f", 1)),
            "at app.py:1 in f (frame 1)\n>    1 | line 1\n     2 | line 2\n     3 | line 3"
        );
    }

    #[test]
    fn dbg_5_a_stop_has_the_place_shape_of_every_tool() {
        let (_dir, workspace) = workspace();
        let stop = Stopped {
            reason: "breakpoint".into(),
            description: None,
            thread_id: Some(1),
        };
        let top = frame(&workspace, 4, "main", 2);
        let stopped = super::super::StopPlace::new(&workspace, &stop, Some(&top));
        assert_eq!(
            serde_json::to_value(&stopped).unwrap(),
            serde_json::json!({
                "reason": "breakpoint", "thread_id": 1, "path": "app.py", "line": 2,
                "text": "line 2", "frame_id": 4
            })
        );
        // DAP's line 0 with no source is a frame the adapter cannot place.
        let nowhere = StackFrame {
            id: 5,
            name: "start".into(),
            source: None,
            line: 0,
        };
        let stopped = super::super::StopPlace::new(&workspace, &stop, Some(&nowhere));
        assert_eq!(
            serde_json::to_value(&stopped).unwrap(),
            serde_json::json!({"reason": "breakpoint", "thread_id": 1, "frame_id": 5})
        );
        assert_eq!(frame_at(&workspace, &nowhere), "<no source>:0");
        assert_eq!(frame_at(&workspace, &top), "app.py:2");
    }

    #[test]
    fn dbg_5_the_stack_is_capped_at_thirty_frames() {
        let (_dir, workspace) = workspace();
        let trace = StackTraceResponse {
            stack_frames: (0..31).map(|i| frame(&workspace, i, "f", 2)).collect(),
            total_frames: Some(45),
        };
        let text = render_stack(&workspace, 1, &trace);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "stack of thread 1:");
        assert_eq!(lines[1], "frame 0: f at app.py:2");
        assert_eq!(lines.len(), 1 + 30 + 1);
        assert_eq!(
            lines[31],
            "(15 more frames not shown: the stack is capped at 30)"
        );
    }

    #[test]
    fn dbg_5_breakpoints_say_which_the_adapter_verified() {
        let (_dir, workspace) = workspace();
        let file = workspace.root().join("app.py");
        let set = [FileBreakpoints {
            file: file.clone(),
            asked: vec![2, 4, 9],
            answered: vec![
                Breakpoint {
                    verified: true,
                    line: Some(2),
                    message: None,
                },
                Breakpoint {
                    verified: true,
                    line: Some(5),
                    message: None,
                },
                Breakpoint {
                    verified: false,
                    line: None,
                    message: Some("no code here".into()),
                },
            ],
        }];
        assert_eq!(
            render_breakpoints(&workspace, &set),
            "breakpoints in app.py: 2 verified, 4 verified (moved to 5), 9 not verified (no code here)"
        );
        let cleared = [FileBreakpoints {
            file,
            asked: Vec::new(),
            answered: Vec::new(),
        }];
        assert_eq!(
            render_breakpoints(&workspace, &cleared),
            "cleared the breakpoints of app.py"
        );
    }

    #[test]
    fn dbg_5_locals_fit_one_line() {
        let variables: Vec<Variable> = ["special variables", "a", "b"]
            .iter()
            .chain(std::iter::repeat_n(&"x", 12))
            .map(|name| Variable {
                name: (*name).into(),
                value: "1".repeat(if *name == "b" { 100 } else { 1 }),
                ..Variable::default()
            })
            .collect();
        let line = render_locals(&variables);
        assert!(line.starts_with("a = 1, b = 111"), "{line}");
        assert!(line.contains("… (40 more characters cut)"), "{line}");
        assert!(line.ends_with("… 3 more"), "{line}");
        assert_eq!(render_locals(&[]), "none");
    }

    #[test]
    fn dbg_5_output_says_what_was_cut() {
        assert_eq!(
            render_output("", 0, OutputHeading::SinceTheLastCall),
            "no output since the last call"
        );
        assert_eq!(
            render_output("a\nb\n", 12, OutputHeading::SinceTheLastCall),
            "output since the last call:\na\nb\n(12 more characters of output were cut)"
        );
    }

    #[test]
    fn dbg_5_values_are_capped_with_a_note() {
        let long = "x".repeat(2_000);
        let capped = cap(&long, MAX_VALUE_CHARS);
        assert!(capped.starts_with(&"x".repeat(400)));
        assert!(capped.ends_with("… (1600 more characters cut)"), "{capped}");
        assert_eq!(cap("short", MAX_VALUE_CHARS), "short");
    }

    #[test]
    fn dbg_5_children_are_capped_at_fifty() {
        let variables: Vec<Variable> = (0..120)
            .map(|i| Variable {
                name: i.to_string(),
                value: i.to_string(),
                ..Variable::default()
            })
            .collect();
        let text = render_variables(7, &variables);
        assert_eq!(text.lines().count(), 1 + 50 + 1);
        assert!(
            text.ends_with("capped at 50; evaluate an expression such as a slice to see others)")
        );
    }

    #[test]
    fn dbg_5_a_stop_says_why_where_the_locals_and_what_was_printed() {
        let (_dir, workspace) = workspace();
        let stop = Stopped {
            reason: "breakpoint".into(),
            description: Some("Breakpoint".into()),
            thread_id: Some(1),
        };
        assert_eq!(
            render_stopped(
                &workspace,
                &stop,
                Some(&frame(&workspace, 4, "main", 2)),
                Some("a = 1"),
                ("hi\n", 0)
            ),
            "stopped: breakpoint on thread 1\nat app.py:2 in main (frame 4)\n     1 | line 1\n>    2 | line 2\n     3 | line 3\n     4 | line 4\nlocals: a = 1\noutput:\nhi"
        );
        let stepped = Stopped {
            reason: "step".into(),
            description: Some("a step".into()),
            thread_id: None,
        };
        assert_eq!(
            render_stopped(&workspace, &stepped, None, None, ("", 0)),
            "stopped: step (a step) on thread ?"
        );
    }

    #[test]
    fn dbg_5_a_run_that_did_not_stop_says_so_with_its_last_words() {
        assert_eq!(
            render_still_running(Duration::from_secs(30), "", 0),
            "still running after 30s; the program keeps running: call `pause` to stop it, or `status` later"
        );
        let last = ["one".to_owned(), "two".to_owned()];
        assert_eq!(
            render_exited(Some(3), &last),
            "the program exited with code 3\nits last output lines:\none\ntwo"
        );
        assert_eq!(render_exited(None, &[]), "the program exited");
        assert_eq!(
            render_ended("the adapter ended the session", &last),
            "the session ended: the adapter ended the session\nthe program's last output lines:\none\ntwo"
        );
    }

    #[test]
    fn dbg_5_status_lists_the_breakpoints_by_file() {
        let (_dir, workspace) = workspace();
        assert_eq!(
            render_breakpoints_set(&workspace, &BTreeMap::new()),
            "breakpoints: none"
        );
        let set = BTreeMap::from([(workspace.root().join("app.py"), vec![2, 7])]);
        assert_eq!(
            render_breakpoints_set(&workspace, &set),
            "breakpoints: app.py lines 2, 7"
        );
    }
}
