//! A run, its bound resources, and the registry of the tools those resources make possible
//! (CORE-1): a family registers its tools only when the resource under them is bound.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{AnyTool, Questions, Tier, Tool, Workspace, Wrapper};

/// One agent run: the workspace and the resources bound to it that more than one family uses.
/// A family's own resource (a language-server supervisor, a kernel factory) lives in that
/// family's tools, handed to its `register` function.
pub struct Run {
    /// The root every path is confined to.
    pub workspace: Workspace,
    /// The question port with its card counter, when a person can be asked at all.
    pub questions: Option<Arc<Questions>>,
}

/// What a surface lists about a tool: everything but the code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// What it may do.
    pub tier: Tier,
    /// Whether calls may overlap (CORE-6).
    pub parallel_safe: bool,
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
            tier: tool.tier(),
            parallel_safe: tool.parallel_safe(),
            description,
            input_schema,
            output_schema,
        }
    }
}

pub(crate) struct Registered {
    pub(crate) spec: ToolSpec,
    pub(crate) tool: Arc<dyn AnyTool>,
}

/// Collects a run's tools and wrappers; families call [`RegistryBuilder::register`] from
/// their own `register` functions once their resource is bound.
pub struct RegistryBuilder {
    run: Run,
    tools: BTreeMap<&'static str, Registered>,
    wrappers: Vec<Arc<dyn Wrapper>>,
}

impl RegistryBuilder {
    /// A builder for `run`, with no tools yet.
    pub fn new(run: Run) -> Self {
        RegistryBuilder {
            run,
            tools: BTreeMap::new(),
            wrappers: Vec::new(),
        }
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
        self.tools.insert(spec.name, Registered { spec, tool });
        self
    }

    /// Adds a wrapper around the tools it names (diagnostics on write plugs in here).
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
        }
    }
}

/// Every tool of a run, by name, with the wrappers around them.
pub struct Registry {
    pub(crate) run: Arc<Run>,
    pub(crate) tools: BTreeMap<&'static str, Registered>,
    pub(crate) wrappers: Vec<Arc<dyn Wrapper>>,
}

impl Registry {
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
