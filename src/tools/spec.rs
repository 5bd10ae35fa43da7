//! [`ToolSpec`]: one tool as a model or a function-calling client sees it, and the JSON Schema
//! of a typed arguments struct.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One tool as a model (or an MCP or function-calling client) sees it: what a brain is
/// offered and what [`super::tool_schemas`] lists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does and when to call it, for the model.
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// The OpenAI function-tool shape: `{"type": "function", "function": {name, description,
    /// parameters}}`.
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// The names of the required parameters, in schema order.
    pub fn required(&self) -> Vec<&str> {
        self.parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// The JSON Schema of the arguments type `T` (JSON Schema 2020-12, every subschema inlined so
/// a function-calling client needs no `$ref` resolution).
pub(crate) fn parameters_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        // The struct's name and doc comment describe Rust, not the tool.
        map.remove("title");
        map.remove("description");
        // An arguments object with no required parameter still lists `required: []`, so a
        // client can check requiredness uniformly.
        map.entry("required").or_insert_with(|| json!([]));
        // Likewise `properties: {}` for a tool that takes none (`list_objects`).
        map.entry("properties").or_insert_with(|| json!({}));
    }
    schema
}
