//! The one schema generator every tool goes through, so all schemas have the same shape:
//! subschemas inlined, no `$schema` noise, and `additionalProperties: false` on every object
//! (inputs also deny unknown fields when decoding, so the schema tells the truth).
//!
//! They are also portable: every client validates them, and the strict ones (the TypeScript
//! SDK's Ajv, the Inspector's strict mode, Gemini's OpenAPI subset) refuse schemars' own
//! number formats (`uint32`, `double`) and `type` arrays. So an optional field is simply
//! absent from `required`, with its plain type (not `["integer", "null"]`, no `default:
//! null`); inputs still accept an explicit `null` for it as absent, and outputs leave it out
//! rather than send `null`.

use schemars::{JsonSchema, Schema, generate::SchemaSettings, transform::Transform};
use serde_json::{Map, Value};

/// The JSON schema of `T` as arguments decode into it, in the shape every tool's schema has:
/// wholly inline, since some model APIs' schema subsets take no `$ref`.
pub fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    generate::<T>(SchemaSettings::draft2020_12(), Subschemas::Inline)
}

/// The JSON schema of `T` as results serialise from it: a field skipped when empty
/// (`skip_serializing_if`) is optional, whatever its type. A type used more than once (a
/// write report's file entry, a worker view) is defined once under `$defs` and referenced;
/// the rest is inline.
pub fn output_schema_for<T: JsonSchema>() -> Map<String, Value> {
    let mut schema = generate::<T>(
        SchemaSettings::draft2020_12().for_serialize(),
        Subschemas::Referenced,
    );
    inline_single_uses(&mut schema);
    schema
}

/// Inlines every `$defs` entry referenced once, until none is (an inlined one may hold the
/// only reference to another), and drops `$defs` when it ends empty.
fn inline_single_uses(schema: &mut Map<String, Value>) {
    loop {
        let Some(Value::Object(defs)) = schema.get("$defs") else {
            return;
        };
        let mut uses = std::collections::BTreeMap::<String, usize>::new();
        count_refs(&Value::Object(schema.clone()), &mut uses);
        let once: Vec<String> = defs
            .keys()
            .filter(|name| uses.get(&reference(name)).copied().unwrap_or(0) <= 1)
            .cloned()
            .collect();
        if once.is_empty() {
            return;
        }
        let mut defs = match schema.remove("$defs") {
            Some(Value::Object(defs)) => defs,
            _ => return,
        };
        let inlined: Map<String, Value> = once
            .iter()
            .filter_map(|name| Some((reference(name), defs.remove(name)?)))
            .collect();
        let mut root = Value::Object(std::mem::take(schema));
        replace_refs(&mut root, &inlined);
        let mut remaining = Value::Object(defs);
        replace_refs(&mut remaining, &inlined);
        *schema = match root {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        if let Value::Object(remaining) = remaining
            && !remaining.is_empty()
        {
            schema.insert("$defs".to_owned(), Value::Object(remaining));
        }
    }
}

fn reference(name: &str) -> String {
    format!("#/$defs/{name}")
}

fn count_refs(value: &Value, uses: &mut std::collections::BTreeMap<String, usize>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                *uses.entry(target.clone()).or_default() += 1;
            }
            map.values().for_each(|v| count_refs(v, uses));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, uses)),
        _ => {}
    }
}

/// Replaces each `{"$ref": target, …}` whose target is in `inlined` by that schema, the
/// referring schema's own keys (its description) kept over the definition's.
fn replace_refs(value: &mut Value, inlined: &Map<String, Value>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref")
                && let Some(Value::Object(definition)) = inlined.get(target)
            {
                map.remove("$ref");
                for (key, field) in definition {
                    map.entry(key.clone()).or_insert_with(|| field.clone());
                }
            }
            map.values_mut().for_each(|v| replace_refs(v, inlined));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_refs(v, inlined)),
        _ => {}
    }
}

/// Where the generator puts the schema of a type the root uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subschemas {
    /// Written out wherever it is used: inputs, for APIs that take no `$ref`.
    Inline,
    /// Defined once under `$defs` and referenced (outputs; single uses are inlined later).
    Referenced,
}

fn generate<T: JsonSchema>(settings: SchemaSettings, subschemas: Subschemas) -> Map<String, Value> {
    let generator = settings
        .with(|settings| {
            settings.inline_subschemas = subschemas == Subschemas::Inline;
            settings.meta_schema = None;
        })
        .with_transform(ClosedObjects)
        .with_transform(Portable)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(mut map) => {
            map.remove("title");
            map
        }
        // A boolean schema ("anything") only arises for `()`-like types; give it an object form.
        other => Map::from_iter([(
            "not".to_owned(),
            Value::Bool(!other.as_bool().unwrap_or(true)),
        )]),
    }
}

/// Marks every object schema closed unless it already says otherwise.
#[derive(Clone)]
struct ClosedObjects;

impl Transform for ClosedObjects {
    fn transform(&mut self, schema: &mut Schema) {
        schemars::transform::transform_subschemas(self, schema);
        if let Some(map) = schema.as_object_mut()
            && map.contains_key("properties")
            && !map.contains_key("additionalProperties")
        {
            map.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
    }
}

/// The formats JSON Schema defines (draft 2020-12, section 7.3); schemars adds its own for
/// Rust's number types, which validators warn about or reject.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Drops non-standard formats, and the `null` schemars adds to optional fields.
#[derive(Clone)]
struct Portable;

impl Transform for Portable {
    fn transform(&mut self, schema: &mut Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(map) = schema.as_object_mut() else {
            return;
        };
        if map
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
        {
            map.remove("format");
        }
        fold_constants(map);
        let required = required_names(map);
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                if !required.contains(name)
                    && let Value::Object(property) = property
                {
                    not_null(property);
                }
            }
        }
    }
}

/// A `oneOf` of string constants (a Rust enum whose variants have doc comments) as a plain
/// `enum`, each variant's doc folded into the description: one short line per choice instead
/// of a schema per choice, and a form Gemini's schema subset and strict validators take.
fn fold_constants(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("oneOf") else {
        return;
    };
    let mut names = Vec::new();
    let mut docs = Vec::new();
    for variant in variants {
        let Some(variant) = variant.as_object() else {
            return;
        };
        let (Some(Value::String(name)), true) = (
            variant.get("const"),
            variant
                .keys()
                .all(|k| ["const", "type", "description"].contains(&k.as_str())),
        ) else {
            return;
        };
        names.push(Value::String(name.clone()));
        match variant.get("description").and_then(Value::as_str) {
            Some(doc) => docs.push(format!(
                "`{name}`: {}",
                doc.replace('\n', " ").trim_end_matches('.')
            )),
            None => docs.push(format!("`{name}`")),
        }
    }
    map.remove("oneOf");
    map.insert("type".to_owned(), Value::String("string".to_owned()));
    map.insert("enum".to_owned(), Value::Array(names));
    if docs.iter().any(|doc| doc.contains(':')) {
        let lead = map
            .get("description")
            .and_then(Value::as_str)
            .map(|lead| format!("{lead} "))
            .unwrap_or_default();
        map.insert(
            "description".to_owned(),
            Value::String(format!("{lead}{}", docs.join("; "))),
        );
    }
}

/// The names an object schema lists as `required`.
fn required_names(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// An optional field's schema without its `null` alternative.
fn not_null(property: &mut Map<String, Value>) {
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
    }
    // An optional enum (`Option<Severity>`) lists `null` among its values; with the plain
    // `type: "string"` that is a contradiction Gemini's subset refuses.
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            property.insert("type".to_owned(), only);
        }
    }
    let Some(Value::Array(variants)) = property.get_mut("anyOf") else {
        return;
    };
    variants.retain(|variant| variant.get("type").is_none_or(|t| t != "null"));
    if variants.len() == 1
        && let Some(Value::Object(only)) = variants.pop()
    {
        property.remove("anyOf");
        for (key, value) in only {
            // The field's own description and default win over the variant type's.
            property.entry(key).or_insert(value);
        }
    }
}

/// `schema` without its descriptions, for the output schema on the wire: there it is a contract
/// for validators (field names and types), while the meanings are in the tool's generated
/// documentation (`docs/tools/`) and the model reads the answer itself.
pub fn without_descriptions(schema: &Map<String, Value>) -> Map<String, Value> {
    schema
        .iter()
        .filter(|(key, _)| *key != "description")
        .map(|(key, value)| {
            let value = match (key.as_str(), value) {
                // Names of properties and definitions are not keywords: a field may be
                // called `description`.
                ("properties" | "$defs", Value::Object(named)) => Value::Object(
                    named
                        .iter()
                        .map(|(name, schema)| (name.clone(), stripped(schema)))
                        .collect(),
                ),
                ("items" | "additionalProperties" | "not", schema) => stripped(schema),
                ("anyOf" | "oneOf" | "allOf", Value::Array(schemas)) => {
                    Value::Array(schemas.iter().map(stripped).collect())
                }
                (_, other) => other.clone(),
            };
            (key.clone(), value)
        })
        .collect()
}

fn stripped(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(without_descriptions(map)),
        other => other.clone(),
    }
}

/// The keywords OpenAI's strict mode (Structured Outputs) accepts; others are dropped.
const STRICT_KEYWORDS: &[&str] = &[
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

/// An input schema in the form OpenAI's strict mode takes: every object closed and listing
/// all its properties as required, an optional field made nullable instead (the model sends
/// `null` for it, which decoding takes as absent), `oneOf` as `anyOf`, and no keyword that
/// mode refuses (`default`, `format`).
pub fn strict_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in schema {
        if !STRICT_KEYWORDS.contains(&key.as_str()) && key != "oneOf" {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => Value::Object(
                properties
                    .iter()
                    .map(|(name, property)| (name.clone(), strict_value(property)))
                    .collect(),
            ),
            ("items", item) => strict_value(item),
            ("anyOf" | "oneOf", Value::Array(variants)) => {
                Value::Array(variants.iter().map(strict_value).collect())
            }
            (_, other) => other.clone(),
        };
        let key = if key == "oneOf" {
            "anyOf"
        } else {
            key.as_str()
        };
        out.insert(key.to_owned(), value);
    }
    if out.get("type").is_some_and(|t| t == "object") {
        let properties = out
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object()
            .cloned()
            .unwrap_or_default();
        let required = required_names(schema);
        let mut nullable = properties.clone();
        for (name, property) in nullable.iter_mut() {
            if !required.contains(name)
                && let Value::Object(property) = property
            {
                or_null(property);
            }
        }
        out.insert("properties".to_owned(), Value::Object(nullable));
        out.insert(
            "required".to_owned(),
            Value::Array(properties.keys().cloned().map(Value::String).collect()),
        );
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    out
}

fn strict_value(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(strict_schema(map)),
        other => other.clone(),
    }
}

/// A strict-mode property that may also be `null`.
fn or_null(property: &mut Map<String, Value>) {
    if let Some(Value::Array(variants)) = property.get_mut("anyOf") {
        if !variants
            .iter()
            .any(|v| v.get("type").is_some_and(|t| t == "null"))
        {
            variants.push(serde_json::json!({"type": "null"}));
        }
        return;
    }
    if let Some(Value::Array(values)) = property.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match property.get_mut("type") {
        Some(Value::String(one)) if one != "null" => {
            let one = Value::String(std::mem::take(one));
            property.insert("type".to_owned(), Value::Array(vec![one, "null".into()]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push("null".into());
        }
        _ => {}
    }
}

/// A one-line rendering of an object schema's shape, for argument errors:
/// `{path: string, offset?: integer, limit?: integer}`.
pub fn schema_signature(schema: &Map<String, Value>) -> String {
    render(&Value::Object(schema.clone()), 0)
}

/// A one-line rendering of any schema's type: `string`, `[{label: string}]`, `"a" | "b"`.
pub fn type_signature(schema: &Value) -> String {
    render(schema, 1)
}

fn render(schema: &Value, depth: usize) -> String {
    let Some(map) = schema.as_object() else {
        return "any".to_owned();
    };
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values.iter().map(Value::to_string).collect();
        return names.join(" | ");
    }
    if let Some(constant) = map.get("const") {
        return constant.to_string();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = map.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = variants.iter().map(|v| render(v, depth)).collect();
            return parts.join(" | ");
        }
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let rendered: Vec<String> = types
        .iter()
        .filter(|t| **t != "null")
        .map(|t| match *t {
            "object" if depth < 3 => render_object(map, depth),
            "array" => match map.get("items") {
                Some(items) => format!("[{}]", render(items, depth + 1)),
                None => "[any]".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect();
    match rendered.len() {
        0 => "any".to_owned(),
        _ => rendered.join(" | "),
    }
}

fn render_object(map: &Map<String, Value>, depth: usize) -> String {
    let Some(properties) = map.get("properties").and_then(Value::as_object) else {
        return "object".to_owned();
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, field)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{optional}: {}", render(field, depth + 1))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Reads a file.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// The file.
        path: String,
        offset: Option<u32>,
        inner: Vec<Inner>,
        mode: Mode,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        label: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        Accept,
        Discard,
    }

    #[test]
    fn core_7_schemas_are_inline_closed_and_carry_the_doc_comment() {
        let schema = schema_for::<Example>();
        assert!(!schema.contains_key("$schema"));
        assert!(!schema.contains_key("$defs"));
        assert!(!schema.contains_key("title"));
        assert_eq!(schema["description"], "Reads a file.");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["inner"]["items"]["additionalProperties"],
            false
        );
    }

    #[test]
    fn signature_names_each_field_and_marks_optional_ones() {
        let schema = schema_for::<Example>();
        assert_eq!(
            schema_signature(&schema),
            r#"{path: string, offset?: integer, inner: [{label: string}], mode: "accept" | "discard"}"#
        );
    }
}
