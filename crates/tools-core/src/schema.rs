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

/// The JSON schema of `T` as arguments decode into it, in the shape every tool's schema has.
pub fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    generate::<T>(SchemaSettings::draft2020_12())
}

/// The JSON schema of `T` as results serialise from it: a field skipped when empty
/// (`skip_serializing_if`) is optional, whatever its type.
pub fn output_schema_for<T: JsonSchema>() -> Map<String, Value> {
    generate::<T>(SchemaSettings::draft2020_12().for_serialize())
}

fn generate<T: JsonSchema>(settings: SchemaSettings) -> Map<String, Value> {
    let generator = settings
        .with(|settings| {
            settings.inline_subschemas = true;
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
        let required: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
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

/// An optional field's schema without its `null` alternative.
fn not_null(property: &mut Map<String, Value>) {
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
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
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
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
