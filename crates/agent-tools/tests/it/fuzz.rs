//! A schema-driven fuzz of every tool the binary registers (so a tool added later is covered
//! without a line here): arguments are generated from each tool's input schema — valid
//! values, edge values (huge integers, `..` paths, NUL bytes, a named pipe, a symlink out of
//! the workspace), wrong types, missing and unknown fields — and sent through the same
//! dispatch an MCP call takes. Every call must answer (no hang), never with an internal error
//! or a panic, an argument error must name its field, and nothing outside the workspace may
//! change.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_tools::RunBuilder;
use serde_json::{Map, Value, json};
use tools_core::{ApprovalPolicy, Dispatcher, DispatcherOptions, NoHuman, ToolCall, Workspace};

/// Calls per tool.
const CALLS: usize = 60;

/// A small deterministic generator (xorshift), so a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const STRINGS: &[&str] = &[
    "src/lib.rs",
    "notes.txt",
    "pipe",
    "link/secret.txt",
    "../outside/secret.txt",
    "/etc/passwd",
    "",
    " ",
    "*",
    "a\u{0}b",
    "src/../../outside/x",
    "new/dir/file.rs",
    "answer",
    "fn $NAME() -> u32 { $$$BODY }",
    "$X",
    "rust",
    "python",
    "edit_1",
    "edit_99999999999999999999",
    "accept",
    "ünïcödé ✓",
    "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-alpha\n+gamma\n",
    "--- a/link/secret.txt\n+++ b/link/secret.txt\n@@ -1 +1 @@\n-secret\n+owned\n",
    "--- /dev/null\n+++ b/../outside/new.txt\n@@ -0,0 +1 @@\n+x\n",
];

fn long_string() -> String {
    "x".repeat(5_000)
}

const INTEGERS: &[i128] = &[
    0,
    1,
    2,
    -1,
    41,
    1 << 31,
    (1 << 32) + 1,
    1 << 53,
    i64::MAX as i128,
    u64::MAX as i128,
    i64::MIN as i128,
];

fn integer(rng: &mut Rng) -> Value {
    let n = *rng.pick(INTEGERS);
    match (i64::try_from(n), u64::try_from(n)) {
        (Ok(n), _) => json!(n),
        (_, Ok(n)) => json!(n),
        _ => json!(0),
    }
}

/// Anything at all, for a wrong-type value.
fn anything(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => integer(rng),
        3 => json!(1e300),
        4 => json!(rng.pick(STRINGS)),
        5 => Value::Array(
            (0..rng.below(3))
                .map(|_| anything(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut object = Map::new();
            object.insert("x".into(), anything(rng, depth + 1));
            Value::Object(object)
        }
    }
}

/// A value for `schema`: mostly of its type, sometimes of another.
fn value(rng: &mut Rng, schema: &Value, depth: usize) -> Value {
    if rng.chance(8) {
        return anything(rng, depth);
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return rng.pick(options).clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let chosen = rng.pick(options).clone();
            return value(rng, &chosen, depth);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => rng.pick(kinds).as_str().unwrap_or("null").to_owned(),
        _ => return anything(rng, depth),
    };
    match kind.as_str() {
        "string" => match rng.chance(5) {
            true => json!(long_string()),
            false => json!(rng.pick(STRINGS)),
        },
        "integer" => integer(rng),
        "number" => json!(*rng.pick(&[0.0, -1.5, 1e300, 3.0])),
        "boolean" => json!(rng.chance(50)),
        "null" => Value::Null,
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            let count = rng.below(if depth > 2 { 2 } else { 4 });
            Value::Array((0..count).map(|_| value(rng, &items, depth + 1)).collect())
        }
        "object" => object(rng, schema, depth + 1),
        _ => anything(rng, depth),
    }
}

/// An arguments object for `schema`: required fields mostly present, optional ones often,
/// now and then an unknown one.
fn object(rng: &mut Rng, schema: &Value, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let keep = match required.contains(&name.as_str()) {
                true => !rng.chance(7),
                false => rng.chance(50),
            };
            if keep {
                out.insert(name.clone(), value(rng, property, depth));
            }
        }
    }
    if rng.chance(5) {
        out.insert("unexpected_field".into(), json!(1));
    }
    Value::Object(out)
}

/// Every file under `dir` with its bytes (symlinks not followed).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if kind.is_dir() {
                stack.push(path);
                files.insert(format!("{name}/"), Vec::new());
            } else if kind.is_file() {
                files.insert(name, std::fs::read(&path).unwrap());
            } else {
                files.insert(format!("{name} (special)"), Vec::new());
            }
        }
    }
    files
}

// Several workers, and each call on a task of its own: a call that blocks its thread still
// lets the test's timeout fire and name it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_tool_survives_generated_arguments() {
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("workspace");
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let state = sandbox.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(root.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let before_outside = snapshot(&outside);
    let siblings_before: Vec<_> = std::fs::read_dir(sandbox.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();

    let registry = every_tool(&root, &state);
    let specs: Vec<(String, Value)> = registry
        .specs()
        .map(|spec| {
            (
                spec.name.to_owned(),
                Value::Object(spec.input_schema.clone()),
            )
        })
        .collect();
    assert!(specs.len() >= 16, "only {} tools registered", specs.len());
    let dispatcher = Arc::new(Dispatcher::new(
        registry,
        DispatcherOptions {
            approval: ApprovalPolicy::Allow,
            ..DispatcherOptions::default()
        },
    ));

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut argument_errors = 0;
    for (name, schema) in &specs {
        for _ in 0..CALLS {
            let arguments = match rng.chance(3) {
                true => anything(&mut rng, 0),
                false => object(&mut rng, schema, 0),
            };
            let call = ToolCall {
                name: name.clone(),
                arguments: arguments.clone(),
            };
            let running = {
                let dispatcher = Arc::clone(&dispatcher);
                tokio::spawn(async move { dispatcher.dispatch(call).await })
            };
            let result = tokio::time::timeout(Duration::from_secs(60), running)
                .await
                .unwrap_or_else(|_| panic!("`{name}` hung on {arguments}"))
                .unwrap();
            let text = &result.text;
            assert!(
                !text.contains("internal error") && !text.contains("panicked"),
                "`{name}` failed inside on {arguments}: {text}"
            );
            if text.starts_with("bad arguments") {
                argument_errors += 1;
                assert!(
                    text.contains("field `")
                        || text.contains("missing field")
                        || text.contains("not an object of named fields"),
                    "`{name}`: an argument error that names nothing: {text}"
                );
                assert!(text.contains("send an object of the shape"), "{text}");
            }
            if !result.is_error {
                assert!(
                    result.structured.is_some(),
                    "`{name}` succeeded without structured content on {arguments}"
                );
            }
        }
    }
    assert!(
        argument_errors > 0,
        "the generator never produced a bad argument"
    );
    assert_eq!(
        snapshot(&outside),
        before_outside,
        "a call changed files outside the workspace"
    );
    let siblings_after: Vec<_> = std::fs::read_dir(sandbox.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        siblings_after, siblings_before,
        "a call created something beside the workspace"
    );
}

/// A run with every family the binary has, over `root`.
fn every_tool(root: &Path, state: &Path) -> tools_core::Registry {
    let workspace = Workspace::new(root).unwrap();
    let supervisor =
        tools_lsp::LspSupervisor::new(workspace.root(), tools_lsp::LspConfig::default()).unwrap();
    RunBuilder::new(workspace)
        .bind::<tools_files::FilesFamily>(())
        .bind::<tools_ast::AstFamily>((
            tools_ast::SearchOptions::default(),
            tools_ast::SyntaxIndex::new(tools_ast::DEFAULT_CACHE_MB),
        ))
        .bind::<tools_lsp::LspFamily>(supervisor)
        .bind::<tools_vibe::VibeFamily>((
            tools_vibe::VibeConfig {
                fast: vec!["cat".into()],
                good: vec!["cat".into()],
                max_workers: 2,
                state_dir: Some(state.to_path_buf()),
                ..Default::default()
            },
            tools_core::Surface::Full,
        ))
        .bind::<tools_ask::AskFamily>(())
        .with_ask(
            Arc::new(NoHuman {
                reason: "the fuzz test has no person".into(),
            }),
            Duration::from_secs(1),
        )
        .registry()
}

/// Clients that fill every field (OpenAI's strict mode) send `null` for each one the model
/// leaves out: every optional argument of every tool takes it as absent.
#[tokio::test]
async fn every_optional_argument_takes_null_as_absent() {
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("workspace");
    let state = sandbox.path().join("state");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let registry = every_tool(&root, &state);
    let specs: Vec<(String, Map<String, Value>)> = registry
        .specs()
        .map(|spec| (spec.name.to_owned(), spec.input_schema.clone()))
        .collect();
    // Refused at the gate, so no call that decodes does anything.
    let dispatcher = Dispatcher::new(
        registry,
        DispatcherOptions {
            approval: ApprovalPolicy::Deny,
            ..DispatcherOptions::default()
        },
    );
    let mut tried = 0;
    for (name, schema) in &specs {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for field in properties
            .keys()
            .filter(|f| !required.contains(&f.as_str()))
        {
            tried += 1;
            let arguments = json!({ field: null });
            let result = dispatcher
                .dispatch(ToolCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                })
                .await;
            assert!(
                !result.text.contains(&format!("field `{field}`")),
                "`{name}` refused {arguments}: {}",
                result.text
            );
        }
    }
    assert!(tried > 20, "only {tried} optional arguments found");
    dispatcher.shutdown(Duration::from_secs(5)).await;
}

/// Where `schema` breaks a rule of OpenAI's strict mode (Structured Outputs): every object
/// closed with all its properties required, only the keywords that mode supports, `anyOf`
/// rather than `oneOf`, and a type on every schema.
fn strict_violations(schema: &Value, at: &str, out: &mut Vec<String>) {
    const SUPPORTED: &[&str] = &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
        "minItems",
        "maxItems",
    ];
    let Some(map) = schema.as_object() else {
        out.push(format!("{at}: not an object schema"));
        return;
    };
    for key in map.keys() {
        if !SUPPORTED.contains(&key.as_str()) {
            out.push(format!("{at}: `{key}` is not supported"));
        }
    }
    if !["type", "anyOf", "enum", "const"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        out.push(format!("{at}: no type"));
    }
    if map.get("type").is_some_and(|t| t == "object") {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(format!("{at}: additionalProperties is not false"));
        }
        let properties = map.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match properties {
            None => out.push(format!("{at}: an object without properties")),
            Some(properties) => {
                for (name, property) in properties {
                    if !required.contains(&name.as_str()) {
                        out.push(format!("{at}.{name}: not required"));
                    }
                    strict_violations(property, &format!("{at}.{name}"), out);
                }
            }
        }
    }
    if let Some(items) = map.get("items") {
        strict_violations(items, &format!("{at}[]"), out);
    }
    if let Some(Value::Array(variants)) = map.get("anyOf") {
        for (i, variant) in variants.iter().enumerate() {
            strict_violations(variant, &format!("{at}|{i}"), out);
        }
    }
}

/// Every tool's input schema, in its strict form, passes OpenAI's strict rules; the plain
/// form has no format and no `null` in a type (what the TypeScript SDK's Ajv and Gemini's
/// subset refuse).
#[test]
fn every_input_schema_is_portable_and_has_a_strict_form() {
    let sandbox = tempfile::tempdir().unwrap();
    let root = sandbox.path().join("workspace");
    let state = sandbox.path().join("state");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let registry = every_tool(&root, &state);
    let mut problems = Vec::new();
    for spec in registry.specs() {
        let strict = Value::Object(tools_core::strict_schema(&spec.input_schema));
        strict_violations(&strict, spec.name, &mut problems);
        for (kind, schema) in [
            ("input", &spec.input_schema),
            ("output", &spec.output_schema),
        ] {
            let text = serde_json::to_string(schema).unwrap();
            assert!(!text.contains("\"format\""), "{} {kind}: {text}", spec.name);
            assert!(!text.contains("\"null\""), "{} {kind}: {text}", spec.name);
            // Nor among an enum's values (`enum: ["error", null]` beside `type: "string"`).
            assert!(!text.contains(",null"), "{} {kind}: {text}", spec.name);
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
