//! The typed [`Tool`] trait a family implements, its object-safe twin [`AnyTool`] that the
//! registry holds, and what a call returns.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{ArgumentError, Run, Tier, ToolError, Workspace, schema_for, schema_signature};

/// What every call can reach: the run and its workspace.
#[derive(Clone)]
pub struct CallContext {
    /// The run the call belongs to.
    pub run: Arc<Run>,
}

impl CallContext {
    /// The workspace every path argument is confined to.
    pub fn workspace(&self) -> &Workspace {
        &self.run.workspace
    }
}

/// A tool as a family writes it: typed input and output, a name, a tier.
///
/// The doc comment of `Input` is the description the model sees, so write it for a model:
/// what the tool does, when to use it, and what it returns.
pub trait Tool: Send + Sync + 'static {
    /// The arguments; its JSON schema is what surfaces list (CORE-7).
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The structured result; its JSON schema is the tool's output schema.
    type Output: Serialize + JsonSchema + Send + 'static;
    /// The name the model calls.
    const NAME: &'static str;
    /// What the tool may do (CORE-3).
    const TIER: Tier;
    /// Whether calls may overlap; `false` serialises them per run (CORE-6).
    const PARALLEL_SAFE: bool = true;

    /// Runs one call with decoded arguments.
    fn call(
        &self,
        context: CallContext,
        input: Self::Input,
    ) -> impl Future<Output = Result<ToolOutput<Self::Output>, ToolError>> + Send;
}

/// A successful call: text for the model, the structured result, and any images.
#[derive(Debug)]
pub struct ToolOutput<O> {
    /// What the model reads.
    pub text: String,
    /// The same result as data, matching the output schema.
    pub structured: O,
    /// Pictures the call produced (a plot, a screenshot).
    pub images: Vec<Image>,
    /// Files the call created, changed or removed (absolute), so wrappers can act on them:
    /// diagnostics on write syncs exactly these (LSP-6).
    pub touched: Vec<PathBuf>,
    /// The text touched files had before the call, where the tool knew it: lets diagnostics
    /// on write tell what the call introduced in files its arguments did not name (LSP-7).
    pub previous: Vec<(PathBuf, String)>,
}

impl<O> ToolOutput<O> {
    /// A result of text plus its structured form.
    pub fn new(text: impl Into<String>, structured: O) -> Self {
        ToolOutput {
            text: text.into(),
            structured,
            images: Vec::new(),
            touched: Vec::new(),
            previous: Vec::new(),
        }
    }

    /// The same result, naming the files the call wrote.
    pub fn touching(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.touched.extend(paths);
        self
    }

    /// The same result, with what the written files held before (as
    /// [`Workspace::commit`](crate::Workspace::commit) returns it); new and non-UTF-8 files
    /// are left out.
    pub fn previously(
        mut self,
        previous: impl IntoIterator<Item = (PathBuf, Option<Vec<u8>>)>,
    ) -> Self {
        self.previous.extend(
            previous
                .into_iter()
                .filter_map(|(path, bytes)| Some((path, String::from_utf8(bytes?).ok()?))),
        );
        self
    }
}

/// An image in a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The MIME type, `image/png` for what our tools produce.
    pub mime_type: String,
    /// The encoded bytes.
    pub data: Vec<u8>,
}

impl Image {
    /// A PNG image.
    pub fn png(data: Vec<u8>) -> Self {
        Image {
            mime_type: "image/png".to_owned(),
            data,
        }
    }
}

/// What a call returns through dispatch, success or failure alike.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// What the model reads.
    pub text: String,
    /// The structured result (absent on errors).
    pub structured: Option<Value>,
    /// Pictures, in order.
    pub images: Vec<Image>,
    /// Whether the call failed.
    pub is_error: bool,
    /// Files the call created, changed or removed (absolute).
    pub touched: Vec<PathBuf>,
    /// The text touched files had before the call, where the tool knew it.
    pub previous: Vec<(PathBuf, String)>,
}

impl ToolResult {
    /// A failed call.
    pub fn error(error: &ToolError) -> Self {
        ToolResult {
            text: error.to_string(),
            structured: None,
            images: Vec::new(),
            is_error: true,
            touched: Vec::new(),
            previous: Vec::new(),
        }
    }
}

/// A call whose arguments decoded, ready to run.
pub type PreparedCall =
    Box<dyn FnOnce(CallContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send>;

/// The object-safe twin of [`Tool`], implemented for every `Tool` by a blanket impl, so the
/// registry can hold `Arc<dyn AnyTool>`.
pub trait AnyTool: Send + Sync + 'static {
    /// The name the model calls.
    fn name(&self) -> &'static str;
    /// The tool's tier.
    fn tier(&self) -> Tier;
    /// Whether calls may overlap.
    fn parallel_safe(&self) -> bool;
    /// The input schema (its `description` is the tool's description).
    fn input_schema(&self) -> serde_json::Map<String, Value>;
    /// The output schema.
    fn output_schema(&self) -> serde_json::Map<String, Value>;
    /// Decodes arguments; a failure names the field and the expected shape (CORE-7).
    fn prepare(self: Arc<Self>, arguments: Value) -> Result<PreparedCall, ArgumentError>;
}

impl<T: Tool> AnyTool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn tier(&self) -> Tier {
        T::TIER
    }

    fn parallel_safe(&self) -> bool {
        T::PARALLEL_SAFE
    }

    fn input_schema(&self) -> serde_json::Map<String, Value> {
        schema_for::<T::Input>()
    }

    fn output_schema(&self) -> serde_json::Map<String, Value> {
        schema_for::<T::Output>()
    }

    fn prepare(self: Arc<Self>, arguments: Value) -> Result<PreparedCall, ArgumentError> {
        // A missing arguments object is an empty one: tools whose fields are all optional
        // can then be called bare, and the others say which field is missing.
        let arguments = if arguments.is_null() {
            Value::Object(Default::default())
        } else {
            arguments
        };
        let input: T::Input = serde_path_to_error::deserialize(arguments).map_err(|error| {
            let field = error.path().to_string();
            ArgumentError {
                tool: T::NAME.to_owned(),
                field: if field == "." { String::new() } else { field },
                problem: error.into_inner().to_string(),
                expected: schema_signature(&schema_for::<T::Input>()),
            }
        })?;
        Ok(Box::new(move |context| {
            Box::pin(async move {
                let output = self.call(context, input).await?;
                let structured = serde_json::to_value(&output.structured).map_err(|error| {
                    ToolError::Internal {
                        tool: T::NAME.to_owned(),
                        message: format!("the structured result did not serialise: {error}"),
                    }
                })?;
                Ok(ToolResult {
                    text: output.text,
                    structured: Some(structured),
                    images: output.images,
                    is_error: false,
                    touched: output.touched,
                    previous: output.previous,
                })
            })
        }))
    }
}
