//! The one schema generator every tool goes through, so all schemas have the same shape:
//! subschemas inlined, no `$schema` noise, and `additionalProperties: false` on every object
//! (inputs also deny unknown fields when decoding, so the schema tells the truth).

use schemars::{JsonSchema, Schema, generate::SchemaSettings, transform::Transform};
use serde_json::{Map, Value};

/// The JSON schema of `T`, in the shape every tool's schema has.
pub fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .with_transform(ClosedObjects)
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
