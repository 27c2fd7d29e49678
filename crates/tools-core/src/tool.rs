//! The typed [`Tool`] trait a family implements, its object-safe twin [`AnyTool`] that the
//! registry holds, and what a call returns.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    ArgumentError, CallContext, Tier, ToolError, Workspace, output_schema_for, schema_for,
    schema_signature,
};

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
    /// A short human title for a client's tool list ("Read a file"), no icon.
    const TITLE: &'static str;
    /// What the tool may do (CORE-3).
    const TIER: Tier;
    /// The lane its calls serialise on, one lock per lane per run (CORE-6); `None` lets
    /// calls overlap freely.
    const LANE: Option<Lane> = None;
    /// Whether a call may write files; diagnostics on write (LSP-6) wraps exactly these, and
    /// their output schema gains the optional `diagnostics` report (`Written`), so `Output`
    /// does not declare it.
    const WRITES_FILES: bool = false;
    /// Whether the tool stops by itself when its call's cancellation token fires (interrupts a
    /// kernel, pauses a debuggee); dispatch then waits the cancel grace for it to return before
    /// dropping it. Tools that never look at the token are dropped at once.
    const GRACEFUL_CANCEL: bool = false;
    /// Whether some calls may run long ([`Tool::may_run_long`] can say yes): a client that
    /// asks ahead of a call whether it may become a task is told so from this.
    const MAY_RUN_LONG: bool = false;
    /// Whether the tool's whole purpose is to show a person a card (`ask_user`): a server
    /// does not offer it to a client that takes no cards, and answers a call to it from
    /// such a client without running it (ASK-5). Other tools that may raise a card (an
    /// approval) still run: their card fails closed (CORE-5).
    const NEEDS_PERSON: bool = false;

    /// The files a call will write, from its decoded arguments, resolved in `workspace`; known
    /// before the call runs, so wrappers can act first (diagnostics on write takes the
    /// baseline of these). Paths that do not resolve are left out: the call itself reports
    /// them.
    fn writes(&self, input: &Self::Input, workspace: &Workspace) -> Writes {
        let _ = (input, workspace);
        Writes::default()
    }

    /// Refusals that need no resource: the decoded arguments checked against the workspace as
    /// it is now (a file that is missing or outside the workspace, text that does not occur
    /// exactly once, a staged edit that went stale). Dispatch runs this before the approval
    /// gate and every wrapper, so a call that cannot succeed costs no card, starts no
    /// language server and waits for none. The call itself still checks again when it runs:
    /// the workspace may change in between.
    fn check(
        &self,
        input: &Self::Input,
        workspace: &Workspace,
    ) -> impl Future<Output = Result<(), ToolError>> + Send {
        let _ = (input, workspace);
        async { Ok(()) }
    }

    /// Whether a call with these arguments can run long enough to outlast a client's call
    /// timeout (a cell, a debugger `continue`, a wait on a worker): such calls may be answered
    /// as tasks, and keep their progress flowing (PROD-2).
    fn may_run_long(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

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

/// A named lane calls serialise on (CORE-6): one lock per lane per run, so a five-minute cell
/// holds `eval` and never blocks `debug`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Lane(&'static str);

impl Lane {
    /// The debugger's lane (`debug`).
    pub const DEBUG: Lane = Lane("debug");
    /// The kernels' lane (`eval`).
    pub const EVAL: Lane = Lane("eval");

    /// A lane of another name.
    pub const fn new(name: &'static str) -> Self {
        Lane(name)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// The files a call declares it will write, before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// Absolute paths inside the workspace, as its arguments name them.
    pub files: Vec<PathBuf>,
    /// Whether it may also write files its arguments do not name (a rename's other files);
    /// those are known only from its result's `touched`.
    pub more: bool,
}

/// A call whose arguments decoded: what it will write, and the call itself, which runs
/// [`Tool::check`] first and then hands back what runs it.
pub struct PreparedCall {
    /// The files it declared (empty for tools that do not write).
    pub writes: Writes,
    /// Runs the tool's own [`Tool::check`] against the workspace; on success, the call.
    pub check: Box<dyn FnOnce(Workspace) -> BoxFuture<'static, Result<RunCall, ToolError>> + Send>,
}

/// A checked call, ready to run with its context.
pub type RunCall =
    Box<dyn FnOnce(CallContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send>;

impl Writes {
    /// The one file an argument names (nothing when it does not resolve inside the
    /// workspace: the call itself reports that).
    pub fn path(workspace: &Workspace, given: &str) -> Self {
        Writes {
            files: workspace.resolve(given).into_iter().collect(),
            more: false,
        }
    }

    /// The same, for a call that may also write files its arguments do not name.
    pub fn and_more(self) -> Self {
        Writes { more: true, ..self }
    }
}

impl std::fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCall")
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

/// The object-safe twin of [`Tool`], implemented for every `Tool` by a blanket impl, so the
/// registry can hold `Arc<dyn AnyTool>`.
pub trait AnyTool: Send + Sync + 'static {
    /// The name the model calls.
    fn name(&self) -> &'static str;
    /// The short human title.
    fn title(&self) -> &'static str;
    /// Whether a call with these (raw) arguments may run long; `false` when they do not
    /// decode.
    fn may_run_long(&self, arguments: &Value) -> bool;
    /// The tool's tier.
    fn tier(&self) -> Tier;
    /// The lane its calls serialise on.
    fn lane(&self) -> Option<Lane>;
    /// Whether a call may write files.
    fn writes_files(&self) -> bool;
    /// Whether it stops by itself on cancellation.
    fn graceful_cancel(&self) -> bool;
    /// Whether some calls may run long.
    fn can_run_long(&self) -> bool;
    /// Whether it exists to show a person a card.
    fn needs_person(&self) -> bool;
    /// The input schema (its `description` is the tool's description).
    fn input_schema(&self) -> serde_json::Map<String, Value>;
    /// The output schema.
    fn output_schema(&self) -> serde_json::Map<String, Value>;
    /// Decodes arguments; a failure names the field and the expected shape (CORE-7).
    fn prepare(
        self: Arc<Self>,
        arguments: Value,
        workspace: &Workspace,
    ) -> Result<PreparedCall, ArgumentError>;
}

impl<T: Tool> AnyTool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn title(&self) -> &'static str {
        T::TITLE
    }

    fn may_run_long(&self, arguments: &Value) -> bool {
        let arguments = match arguments {
            Value::Null => Value::Object(Default::default()),
            other => other.clone(),
        };
        let long = serde_json::from_value::<T::Input>(arguments)
            .is_ok_and(|input| Tool::may_run_long(self, &input));
        debug_assert!(
            !long || T::MAY_RUN_LONG,
            "{} may run long but does not say so in MAY_RUN_LONG",
            T::NAME
        );
        long
    }

    fn tier(&self) -> Tier {
        T::TIER
    }

    fn lane(&self) -> Option<Lane> {
        T::LANE
    }

    fn writes_files(&self) -> bool {
        T::WRITES_FILES
    }

    fn graceful_cancel(&self) -> bool {
        T::GRACEFUL_CANCEL
    }

    fn can_run_long(&self) -> bool {
        T::MAY_RUN_LONG
    }

    fn needs_person(&self) -> bool {
        T::NEEDS_PERSON
    }

    fn input_schema(&self) -> serde_json::Map<String, Value> {
        input_schema::<T::Input>(T::NAME).schema.clone()
    }

    fn output_schema(&self) -> serde_json::Map<String, Value> {
        // A writing tool's result gains `diagnostics` (LSP-6), declared here once for all.
        let mut schema = match T::WRITES_FILES {
            true => output_schema_for::<crate::written::Written<T::Output>>(),
            false => output_schema_for::<T::Output>(),
        };
        // Every result may say which client-added fields its call ran without.
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert(
                IGNORED_FIELD.to_owned(),
                serde_json::json!({
                    "description": "Fields the client added to the call that the tool does not take, which it ran without.",
                    "type": "array",
                    "items": {"type": "string"},
                }),
            );
        }
        schema
    }

    fn prepare(
        self: Arc<Self>,
        arguments: Value,
        workspace: &Workspace,
    ) -> Result<PreparedCall, ArgumentError> {
        let input_schema = input_schema::<T::Input>(T::NAME);
        let schema = &input_schema.schema;
        // A missing arguments object is an empty one: tools whose fields are all optional
        // can then be called bare, and the others say which field is missing.
        let arguments = match arguments {
            Value::Null => Value::Object(Default::default()),
            Value::Object(_) => arguments,
            // serde would read an array as the struct's fields in order ("invalid length 0,
            // expected struct …"): say plainly that an object is expected.
            other => {
                let kind = match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    _ => "a boolean",
                };
                return Err(ArgumentError {
                    tool: T::NAME.to_owned(),
                    field: String::new(),
                    problem: format!("the arguments are {kind}, not an object of named fields"),
                    expected: schema_signature(schema),
                });
            }
        };
        let mut arguments = arguments;
        let ignored = drop_injected(&mut arguments, schema);
        // Building the output schema costs; only a call that carried such a field needs it.
        let structured_note =
            !ignored.is_empty() && self.output_schema().contains_key("properties");
        absent_when_null(&mut arguments, schema);
        let unlisted = unlisted_fields(&arguments, schema);
        let given = arguments.clone();
        let input: T::Input = serde_path_to_error::deserialize(arguments).map_err(|error| {
            let field = error.path().to_string();
            let problem = error.into_inner().to_string();
            // Of the fields the schema does not list, the older names of the duplicated one
            // are those whose removal ends the duplicate (another may be a plain mistake).
            let older: Vec<String> = match problem.starts_with("duplicate field") {
                true => unlisted
                    .iter()
                    .filter(|name| !fails_alike::<T::Input>(&given, name, &problem))
                    .cloned()
                    .collect(),
                false => Vec::new(),
            };
            ArgumentError {
                tool: T::NAME.to_owned(),
                field: if field == "." { String::new() } else { field },
                problem: sent_twice(problem, &older),
                expected: schema_signature(schema),
            }
        })?;
        // What serde let through is then held to the published schema, before the tool sees
        // it: bounds and patterns serde does not know (`line: 0` under `minimum: 1`) are
        // refused by name whatever the operation, rather than ignored or blamed on something
        // the call reaches later.
        check_schema(T::NAME, &given, &input_schema)?;
        let writes = match T::WRITES_FILES {
            true => self.writes(&input, workspace),
            false => Writes::default(),
        };
        let check = Box::new(move |workspace: Workspace| -> BoxFuture<'static, _> {
            Box::pin(async move {
                Tool::check(&*self, &input, &workspace).await?;
                let run: RunCall = Box::new(move |context: CallContext| -> BoxFuture<'static, _> {
                    Box::pin(async move {
                        let output = self.call(context, input).await?;
                        let structured =
                            serde_json::to_value(&output.structured).map_err(|error| {
                                ToolError::Internal {
                                    tool: T::NAME.to_owned(),
                                    message: format!(
                                        "the structured result did not serialise: {error}"
                                    ),
                                }
                            })?;
                        let (text, structured) =
                            note_ignored(output.text, structured, &ignored, structured_note);
                        Ok(ToolResult {
                            text,
                            structured: Some(structured),
                            images: output.images,
                            is_error: false,
                            touched: output.touched,
                            previous: output.previous,
                        })
                    })
                });
                Ok(run)
            })
        });
        Ok(PreparedCall { writes, check })
    }
}

/// An input type's schema, made and compiled once: every call is decoded against it and held
/// to it (making it anew with schemars on every call cost more than the call's own work).
struct InputSchema {
    schema: serde_json::Map<String, Value>,
    /// `None`, logged, if it does not compile: calls are then held to serde's decoding alone.
    validator: Option<jsonschema::Validator>,
}

static INPUT_SCHEMAS: std::sync::LazyLock<
    std::sync::RwLock<HashMap<std::any::TypeId, Arc<InputSchema>>>,
> = std::sync::LazyLock::new(Default::default);

/// The schema of `I`, made on first use.
fn input_schema<I: JsonSchema + 'static>(tool: &str) -> Arc<InputSchema> {
    let key = std::any::TypeId::of::<I>();
    let known = INPUT_SCHEMAS
        .read()
        .ok()
        .and_then(|map| map.get(&key).cloned());
    if let Some(known) = known {
        return known;
    }
    let schema = schema_for::<I>();
    let validator = match jsonschema::validator_for(&Value::Object(schema.clone())) {
        Ok(validator) => Some(validator),
        Err(error) => {
            tracing::error!(tool, %error, "the input schema does not compile");
            None
        }
    };
    let made = Arc::new(InputSchema { schema, validator });
    if let Ok(mut map) = INPUT_SCHEMAS.write() {
        map.insert(key, Arc::clone(&made));
    }
    made
}

/// Holds decoded arguments to the tool's published schema. Missing and unlisted fields are
/// serde's to judge (it takes a renamed field's older name, which the schema does not list);
/// every other violation is refused, naming the field.
fn check_schema(tool: &str, arguments: &Value, input: &InputSchema) -> Result<(), ArgumentError> {
    let Some(validator) = &input.validator else {
        return Ok(());
    };
    if validator.is_valid(arguments) {
        return Ok(());
    }
    let Some(error) = validator.iter_errors(arguments).find(|error| {
        !matches!(
            error.kind(),
            jsonschema::error::ValidationErrorKind::Required { .. }
                | jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
        )
    }) else {
        return Ok(());
    };
    let field = error
        .instance_path()
        .as_str()
        .trim_start_matches('/')
        .replace('/', ".");
    Err(ArgumentError {
        tool: tool.to_owned(),
        field,
        problem: error.to_string(),
        expected: schema_signature(&input.schema),
    })
}

/// Fields that clients add to every tool's arguments on their own, with who adds them: they
/// are not the model's, so a call that carries one is run without it and says so, rather
/// than refused (a refusal the model can do nothing about).
const INJECTED: &[(&str, &str)] = &[(
    "wait_for_previous",
    "Gemini CLI adds it to every tool's schema and call",
)];

/// Removes the [`INJECTED`] fields the tool's schema does not list; the names removed.
fn drop_injected(
    arguments: &mut Value,
    schema: &serde_json::Map<String, Value>,
) -> Vec<&'static str> {
    let listed = schema.get("properties").and_then(Value::as_object);
    let Some(fields) = arguments.as_object_mut() else {
        return Vec::new();
    };
    INJECTED
        .iter()
        .filter(|(name, _)| listed.is_none_or(|listed| !listed.contains_key(*name)))
        .filter_map(|(name, _)| fields.remove(*name).map(|_| *name))
        .collect()
}

/// Where a result's structure says which client-added fields its call ran without.
const IGNORED_FIELD: &str = "ignored_arguments";

/// A result that says which client-added fields its call ran without, in its text and, when
/// its output schema has named fields (`in_structure`), in its structure.
fn note_ignored(
    mut text: String,
    mut structured: Value,
    ignored: &[&str],
    in_structure: bool,
) -> (String, Value) {
    if ignored.is_empty() {
        return (text, structured);
    }
    let named: Vec<String> = ignored
        .iter()
        .map(|name| {
            let who = INJECTED
                .iter()
                .find(|(injected, _)| injected == name)
                .map_or("", |(_, who)| *who);
            format!("`{name}` ({who})")
        })
        .collect();
    text.push_str(&format!(
        "\n[note: ran without {}, which the tool does not take]",
        named.join(", ")
    ));
    if in_structure && let Some(fields) = structured.as_object_mut() {
        fields.insert(IGNORED_FIELD.to_owned(), serde_json::json!(ignored));
    }
    (text, structured)
}

/// Drops every optional field sent as `null`, as the schema says which are optional: an
/// explicit `null` means absent, whatever the field's Rust type (a `bool` with a default, an
/// enum), so clients that fill every field (OpenAI's strict mode sends `null` for the ones
/// the model leaves out) decode as those that omit them. Required fields keep their `null`
/// and are refused by name.
fn absent_when_null(value: &mut Value, schema: &serde_json::Map<String, Value>) {
    match value {
        Value::Object(fields) => {
            let Some(Value::Object(properties)) = schema.get("properties") else {
                return;
            };
            let required = |name: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|names| names.iter().any(|n| n == name))
            };
            // Only a field the schema lists is absent when null: an unknown one (`$schema`,
            // `__proto__`) is kept, and refused by name like any unknown field.
            fields.retain(|name, field| {
                !field.is_null() || required(name) || !properties.contains_key(name)
            });
            for (name, field) in fields.iter_mut() {
                if let Some(Value::Object(property)) = properties.get(name) {
                    absent_when_null(field, property);
                }
            }
        }
        Value::Array(items) => {
            if let Some(Value::Object(item)) = schema.get("items") {
                for value in items {
                    absent_when_null(value, item);
                }
            }
        }
        _ => {}
    }
}

/// The top-level fields of `arguments` the schema does not list: the older names (serde
/// aliases) a tool still takes for a renamed argument, such as `file` for `path`. Empty when
/// the schema lists no properties (an input that is not a plain object of fields).
fn unlisted_fields(arguments: &Value, schema: &serde_json::Map<String, Value>) -> Vec<String> {
    let (Some(given), Some(listed)) = (
        arguments.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return Vec::new();
    };
    given
        .keys()
        .filter(|name| !listed.contains_key(*name))
        .cloned()
        .collect()
}

/// Whether `arguments` without the field `name` still fail to decode with `problem`.
fn fails_alike<I: DeserializeOwned>(arguments: &Value, name: &str, problem: &str) -> bool {
    let mut without = arguments.clone();
    if let Some(fields) = without.as_object_mut() {
        fields.remove(name);
    }
    serde_json::from_value::<I>(without).is_err_and(|error| error.to_string() == problem)
}

/// serde's "duplicate field `path`" for arguments that sent a field under its name and under
/// an older name too, which reads as if `path` were sent twice: say which names collided and
/// which one to keep.
fn sent_twice(problem: String, unlisted: &[String]) -> String {
    let Some(field) = problem
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.strip_suffix('`'))
    else {
        return problem;
    };
    match unlisted {
        [] => problem,
        older => format!(
            "`{field}` was sent twice, also as {}, an older name of it: keep `{field}`",
            older
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// CORE-7: a field sent under its name and an older one (a serde alias) is refused with
    /// both names, not as if the one field had been sent twice.
    #[test]
    fn core_7_a_field_sent_under_two_names_names_both() {
        let schema = json!({"properties": {"path": {}, "line": {}}});
        let schema = schema.as_object().unwrap();
        let arguments = json!({"path": "a.rs", "file": "a.rs", "line": 3});
        let unlisted = unlisted_fields(&arguments, schema);
        assert_eq!(unlisted, ["file"]);
        assert_eq!(
            sent_twice("duplicate field `path`".to_owned(), &unlisted),
            "`path` was sent twice, also as `file`, an older name of it: keep `path`"
        );
        // Other problems, and a duplicate without an older name, are serde's words.
        assert_eq!(
            sent_twice("missing field `line`".to_owned(), &unlisted),
            "missing field `line`"
        );
        assert_eq!(
            sent_twice("duplicate field `path`".to_owned(), &[]),
            "duplicate field `path`"
        );
        // Only the field whose removal ends the duplicate is its older name.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Input {
            #[serde(alias = "file")]
            path: String,
            #[serde(default)]
            line: Option<u32>,
        }
        let given = json!({"path": "a.rs", "file": "a.rs", "bogus": 1});
        let problem = serde_json::from_value::<Input>(given.clone())
            .unwrap_err()
            .to_string();
        assert_eq!(problem, "duplicate field `path`");
        assert!(!fails_alike::<Input>(&given, "file", &problem));
        assert!(fails_alike::<Input>(&given, "bogus", &problem));
        // An input that lists no properties has no older names to tell apart.
        assert!(unlisted_fields(&arguments, json!({}).as_object().unwrap()).is_empty());
    }
}
