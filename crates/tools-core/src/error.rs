//! The two error channels: [`ToolError`] is a failure the model reads and acts on, and comes
//! back as the tool's error result; [`Error`] is an infrastructure failure of the runtime itself.

use std::path::PathBuf;

/// A failure the model should see: what went wrong, with the offending value, and what to do
/// instead. Every variant's message is written to be read by a model that cannot see our code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and failed; the message says why and what to do next.
    #[error("{0}")]
    Failed(String),
    /// The arguments did not decode into the tool's input type (CORE-7).
    #[error("{0}")]
    Arguments(ArgumentError),
    /// No tool has this name on this run.
    #[error("unknown tool `{name}`: the tools on this surface are {available}")]
    UnknownTool { name: String, available: String },
    /// The tool exists but its tier is above what this surface admits (CORE-4).
    #[error(
        "`{tool}` is {} {tier}-tier tool and the {surface} surface allows only read tools: \
         it cannot be called here; use read tools, or ask to leave {surface} mode",
        article(*.tier)
    )]
    NotOnSurface {
        tool: String,
        tier: crate::Tier,
        surface: crate::Surface,
    },
    /// The approval gate refused the call (CORE-5).
    #[error("`{tool}` was not run: {reason}")]
    Denied { tool: String, reason: String },
    /// A path argument leaves the workspace (PROD-5).
    #[error(
        "`{given}` resolves to {}, which is outside the workspace root {}: \
         only paths inside the workspace can be used",
        resolved.display(),
        root.display()
    )]
    OutsideWorkspace {
        given: String,
        resolved: PathBuf,
        root: PathBuf,
    },
    /// The call was cancelled (by the client, its caller going away, or the run ending)
    /// before it finished; what it had done by then stays done.
    #[error(
        "`{tool}` was cancelled before it finished; anything it had already changed stays \
         changed — check before calling it again"
    )]
    Cancelled { tool: String },
    /// Something in the runtime broke while serving the call; not the model's fault.
    #[error("internal error in `{tool}`: {message}; the call may be retried")]
    Internal { tool: String, message: String },
}

impl ToolError {
    /// A failure with a message for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// Arguments that did not decode: the field path, what was wrong, and the expected shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    /// The tool whose arguments were bad.
    pub tool: String,
    /// Where in the arguments it went wrong, as `options[0].label`; empty for the top level.
    pub field: String,
    /// What serde said, e.g. "invalid type: integer `3`, expected a string".
    pub problem: String,
    /// The whole input shape, one line: `{path: string, offset?: integer}`.
    pub expected: String,
}

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tool = &self.tool;
        let problem = &self.problem;
        let expected = &self.expected;
        if self.field.is_empty() {
            write!(f, "bad arguments for `{tool}`: {problem}")?;
        } else {
            let field = &self.field;
            write!(f, "bad arguments for `{tool}`: field `{field}`: {problem}")?;
        }
        write!(f, "; send an object of the shape {expected}")
    }
}

/// An infrastructure failure of the runtime (not of a tool call).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workspace root could not be opened.
    #[error("cannot use {} as the workspace root: {source}", path.display())]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Reading or writing a file failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The result type of tools-core's fallible infrastructure.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// "a" or "an", as English puts it before the tier's name ("an exec-tier tool").
fn article(tier: crate::Tier) -> &'static str {
    match tier {
        crate::Tier::Exec => "an",
        crate::Tier::Read | crate::Tier::Write => "a",
    }
}
