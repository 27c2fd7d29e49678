//! A run, its bound resources, and the registry of the tools those resources make possible
//! (CORE-1): a family registers its tools only when the resource under them is bound.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};
use tools_process::Sandbox;

use crate::{AnyTool, Lane, Questions, Tier, Tool, Workspace, Wrapper};

/// One agent run: the workspace and the resources bound to it that more than one family uses.
/// A family's own resource (a language-server supervisor, a kernel factory) lives in that
/// family's tools, handed to its `register` function; it registers its shutdown here.
pub struct Run {
    /// The root every path is confined to.
    pub workspace: Workspace,
    /// The question port with its card counter, when a person can be asked at all.
    pub questions: Option<Arc<Questions>>,
    /// The conversation this run serves (one per `serve` connection): debug sessions and
    /// workers are keyed by it (DBG-1, DBG-4).
    pub conversation: String,
    /// The command line prefix that runs a program inside the conversation's sandbox, when it
    /// has one (EVAL-9); every process of the run is started through it. A prefix found
    /// unusable as the run began is refused, so each spawn through it fails saying why.
    pub sandbox: Option<Sandbox>,
    /// The folder the run's state folders go under (`--state-dir`, `[vibe] state_dir`), when
    /// one was chosen; [`default_state_dir`] otherwise.
    state_base: Option<PathBuf>,
    shutdowns: Mutex<Vec<(String, Arc<dyn Shutdown>)>>,
}

/// The state folder when none is configured: `$XDG_STATE_HOME/agent-tools`, else
/// `~/.local/state/agent-tools`, else the temp folder's `agent-tools`. Outside any workspace.
pub fn default_state_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("agent-tools")
}

/// A conversation id as a folder name: what is not a letter, digit, `-` or `_` becomes `_`.
pub fn state_folder_name(conversation: &str) -> String {
    conversation
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// A resource bound to a run that must be stopped when the run ends (a language-server
/// supervisor, kernels, debug sessions, workers).
pub trait Shutdown: Send + Sync + 'static {
    /// Stops it: ends its calls, its sessions and its processes. The run bounds how long this
    /// may take and kills what is left after.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

impl Run {
    /// A run over `workspace`, with no person to ask, conversation `default`, no sandbox.
    pub fn new(workspace: Workspace) -> Self {
        Run {
            workspace,
            questions: None,
            conversation: "default".to_owned(),
            sandbox: None,
            state_base: None,
            shutdowns: Mutex::new(Vec::new()),
        }
    }

    /// The same run, with a question port.
    pub fn with_questions(mut self, questions: Option<Arc<Questions>>) -> Self {
        self.questions = questions;
        self
    }

    /// The same run, serving conversation `id`.
    pub fn with_conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation = id.into();
        self
    }

    /// The same run, starting its processes through `sandbox` (EVAL-9).
    pub fn with_sandbox(mut self, sandbox: Option<Sandbox>) -> Self {
        self.sandbox = sandbox.filter(|sandbox| !sandbox.argv().is_empty());
        self
    }

    /// The same run, keeping its state under `base` (`--state-dir`) rather than
    /// [`default_state_dir`].
    pub fn with_state_base(mut self, base: Option<PathBuf>) -> Self {
        self.state_base = base;
        self
    }

    /// The run's state directory, outside the workspace: `<state>/runs/<conversation>`.
    /// Files a run makes for the model to open go under it (an `eval` cell's images, a
    /// worker's transcript); whoever makes a folder there removes it when the run ends unless
    /// it is meant to outlive the run. Nothing is created here.
    pub fn state_dir(&self) -> PathBuf {
        self.state_base
            .clone()
            .unwrap_or_else(default_state_dir)
            .join("runs")
            .join(state_folder_name(&self.conversation))
    }

    /// Registers a resource to stop when the run ends; `name` says what it is in reports
    /// ("language servers"). All are stopped side by side when the run shuts down.
    pub fn on_shutdown(&self, name: impl Into<String>, resource: Arc<dyn Shutdown>) {
        if let Ok(mut shutdowns) = self.shutdowns.lock() {
            shutdowns.push((name.into(), resource));
        }
    }

    /// Takes every registered shutdown, newest first (each runs once).
    pub(crate) fn take_shutdowns(&self) -> Vec<(String, Arc<dyn Shutdown>)> {
        let mut taken = self
            .shutdowns
            .lock()
            .map(|mut shutdowns| std::mem::take(&mut *shutdowns))
            .unwrap_or_default();
        taken.reverse();
        taken
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("workspace", &self.workspace)
            .field("conversation", &self.conversation)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

/// What a surface lists about a tool: everything but the code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// A short human title, for clients that show one.
    pub title: &'static str,
    /// What it may do.
    pub tier: Tier,
    /// The lane its calls serialise on (CORE-6); `None`: calls overlap.
    pub lane: Option<Lane>,
    /// Whether its calls may write files (diagnostics on write wraps these).
    pub writes_files: bool,
    /// Whether some of its calls may run long, so may become tasks.
    pub may_run_long: bool,
    /// Whether it exists to show a person a card (`ask_user`), so is only offered where one
    /// can be shown ([`Tool::NEEDS_PERSON`]).
    pub needs_person: bool,
    /// What the model reads: the input type's doc comment.
    pub description: String,
    /// The input schema, without the description (which is above).
    pub input_schema: Map<String, Value>,
    /// The output schema.
    pub output_schema: Map<String, Value>,
}

impl ToolSpec {
    fn of(tool: &dyn AnyTool) -> Self {
        let mut input_schema = tool.input_schema();
        let description = match input_schema.remove("description") {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        let mut output_schema = tool.output_schema();
        output_schema.remove("description");
        ToolSpec {
            name: tool.name(),
            title: tool.title(),
            tier: tool.tier(),
            lane: tool.lane(),
            writes_files: tool.writes_files(),
            may_run_long: tool.can_run_long(),
            needs_person: tool.needs_person(),
            description,
            input_schema,
            output_schema,
        }
    }
}

pub(crate) struct Registered {
    pub(crate) spec: ToolSpec,
    pub(crate) tool: Arc<dyn AnyTool>,
    /// The output schema compiled, in builds that check every result against it.
    #[cfg(any(test, feature = "validate-output"))]
    pub(crate) output_validator: Arc<jsonschema::Validator>,
}

/// Collects a run's tools and wrappers; families call [`RegistryBuilder::register`] from
/// their own `register` functions once their resource is bound.
pub struct RegistryBuilder {
    run: Run,
    tools: BTreeMap<&'static str, Registered>,
    wrappers: Vec<Arc<dyn Wrapper>>,
    families: Vec<FamilyTools>,
}

/// One family of a registry and the tools it registered, in registration order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyTools {
    /// The family's name (`lsp`; `host` for the umbrella's file tools).
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// The names of its tools, in the order registered.
    pub tools: Vec<&'static str>,
}

impl RegistryBuilder {
    /// A builder for `run`, with no tools yet.
    pub fn new(run: Run) -> Self {
        RegistryBuilder {
            run,
            tools: BTreeMap::new(),
            wrappers: Vec::new(),
            families: Vec::new(),
        }
    }

    /// Starts family `name`: the tools registered from now on are its tools.
    pub fn family(&mut self, name: &'static str, about: &'static str) -> &mut Self {
        self.families.push(FamilyTools {
            name,
            about,
            tools: Vec::new(),
        });
        self
    }

    /// The run being built, so a family can check what is bound.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Adds a tool. A second tool of the same name replaces the first, with an error logged:
    /// two families claiming one name is a wiring bug in the umbrella.
    pub fn register<T: Tool>(&mut self, tool: T) -> &mut Self {
        let tool: Arc<dyn AnyTool> = Arc::new(tool);
        let spec = ToolSpec::of(tool.as_ref());
        if self.tools.contains_key(spec.name) {
            tracing::error!(
                tool = spec.name,
                "a tool of this name was already registered"
            );
        }
        #[cfg(any(test, feature = "validate-output"))]
        let output_validator =
            match jsonschema::validator_for(&Value::Object(spec.output_schema.clone())) {
                Ok(validator) => Arc::new(validator),
                Err(error) => panic!(
                    "the output schema of `{}` does not compile: {error}",
                    spec.name
                ),
            };
        if let Some(family) = self.families.last_mut() {
            family.tools.push(spec.name);
        }
        self.tools.insert(
            spec.name,
            Registered {
                spec,
                tool,
                #[cfg(any(test, feature = "validate-output"))]
                output_validator,
            },
        );
        self
    }

    /// Adds a wrapper around the tools it chooses (diagnostics on write plugs in here).
    pub fn wrap(&mut self, wrapper: Arc<dyn Wrapper>) -> &mut Self {
        self.wrappers.push(wrapper);
        self
    }

    /// The finished registry.
    pub fn build(self) -> Registry {
        Registry {
            run: Arc::new(self.run),
            tools: self.tools,
            wrappers: self.wrappers,
            families: self.families,
        }
    }
}

/// Every tool of a run, by name, with the wrappers around them.
pub struct Registry {
    pub(crate) run: Arc<Run>,
    pub(crate) tools: BTreeMap<&'static str, Registered>,
    pub(crate) wrappers: Vec<Arc<dyn Wrapper>>,
    families: Vec<FamilyTools>,
}

impl Registry {
    /// The families that registered tools, in registration order; a family that registered
    /// none (`ask` with no question port) is left out.
    pub fn families(&self) -> impl Iterator<Item = &FamilyTools> {
        self.families
            .iter()
            .filter(|family| !family.tools.is_empty())
    }

    /// The run the tools belong to.
    pub fn run(&self) -> &Arc<Run> {
        &self.run
    }

    /// Every registered tool's spec, sorted by name, regardless of surface.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|registered| &registered.spec)
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name).map(|registered| &registered.spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_keeps_its_state_under_its_conversation_as_a_safe_folder_name() {
        assert_eq!(
            state_folder_name("conversation-1-2/3"),
            "conversation-1-2_3"
        );
        let dir = tempfile::tempdir().unwrap();
        let run = Run::new(Workspace::new(dir.path()).unwrap())
            .with_conversation("conversation-1/2")
            .with_state_base(Some("/state".into()));
        assert_eq!(
            run.state_dir(),
            std::path::Path::new("/state/runs/conversation-1_2")
        );
    }
}
