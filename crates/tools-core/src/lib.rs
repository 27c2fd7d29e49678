//! The shared ground of agent-tools: the `Tool` trait, tiers and surfaces, the registry that
//! binds tool families to a run's resources, and the one dispatch path every call takes.
//!
//! Nothing here spawns a process or knows a transport: agent-tools-mcp serves a
//! [`Dispatcher`] over MCP, and family crates register their tools through a
//! [`RegistryBuilder`].

mod approval;
mod context;
mod dispatch;
mod error;
mod family;
mod place;
mod question;
mod registry;
mod schema;
mod tier;
mod tool;
mod workspace;
mod written;

pub use crate::{
    approval::ApprovalPolicy,
    context::{CallContext, Origin, Progress, ProgressSink, report_progress},
    dispatch::{
        ALLOW_WITH_FLAG, Bridge, CallOptions, Dispatcher, DispatcherOptions, MAX_BRIDGE_DEPTH,
        Next, ShutdownSummary, ToolCall, Wrapper,
    },
    error::{ArgumentError, Error, Result, ToolError},
    family::{BindError, Binding, Family, NoConfig},
    place::{Line, Place},
    question::{
        Answer, Card, CardKind, CardOption, NoHuman, QuestionPort, Questions, UNSEEN_WITHIN,
    },
    registry::{
        FamilyTools, Registry, RegistryBuilder, Run, Shutdown, ToolSpec, default_state_dir,
        state_folder_name,
    },
    schema::{
        output_schema_for, schema_for, schema_signature, strict_schema, type_signature,
        without_descriptions,
    },
    tier::{Surface, Tier},
    tool::{AnyTool, Image, Lane, PreparedCall, RunCall, Tool, ToolOutput, ToolResult, Writes},
    workspace::{
        Change, CommitError, CommitWatcher, ContentHash, Expect, FileChange, Previous, Snapshot,
        UpdateError, Workspace, normalize_lexically, read_regular, read_regular_with_metadata,
    },
    written::{FileReport, FileState, IntroducedDiagnostic, UncheckedDependents, WriteReport},
};
