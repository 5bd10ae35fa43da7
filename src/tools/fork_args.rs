//! Arguments of `fork_child_process`: every parameter of `spawn_child_process` plus the
//! memory view to share, and their conversion into the typed call.
//!
//! The launch parameters are [`SpawnArgs`] itself, flattened, so the two launch tools cannot
//! drift apart. serde refuses unknown fields only on a struct without flattened members, so
//! [`ForkArgs`] deserializes by hand: it checks every key against both structs' field lists,
//! then hands each struct its own keys, and each refuses what it does not know and names the
//! field of any bad value exactly as a plain struct would.

use super::args::{SpawnArgs, parse_oid, yes};
use crate::actors::kernel::objects::{ForkMode, RootSelection};
use crate::actors::runtime::calls::{Call, ForkRequest, ToolError};
use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Arguments of `fork_child_process`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkArgs {
    /// Goal, image, working directory, capabilities, paths, budget and clearance: exactly
    /// `spawn_child_process`'s parameters.
    #[serde(flatten)]
    pub launch: SpawnArgs,
    /// Which parent objects the child sees, and how.
    #[serde(flatten)]
    pub view: ForkViewArgs,
}

/// The parameters `fork_child_process` adds to a spawn's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkViewArgs {
    /// Exactly these parent objects (any the parent holds, not only its roots), deduplicated.
    /// Supplying it, even as `[]`, is an exact replacement of the parent's roots and
    /// `include_parent_roots` is ignored; `null` counts as omitted. The child's goal is always
    /// a separate root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("items" = {"type": "string", "format": "uuid"}))]
    pub root_oids: Option<Vec<String>>,
    /// With `root_oids` omitted: select every live parent root (`true`, the default) or none
    /// (`false`, a goal-only view).
    #[serde(default = "yes")]
    pub include_parent_roots: bool,
    /// How the selected objects are shared. `worker` (default) and `restricted`: read-only
    /// (restricted also drops delegation and the loaded skills). `copy`: read and write on
    /// the same OID, so a child write changes what the parent sees; not copy-on-write, not
    /// isolation. `speculative`: read-only and ephemeral; objects the child creates can still
    /// be merged; not rollback. The parent must hold every right the mode delegates.
    #[serde(default)]
    #[schemars(schema_with = "fork_mode_schema")]
    pub mode: ForkMode,
}

fn fork_mode_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let modes = [ForkMode::Worker, ForkMode::Restricted, ForkMode::Copy, ForkMode::Speculative];
    let names: Vec<Value> = modes.iter().map(|m| m.as_str().into()).collect();
    let mut schema = Map::new();
    schema.insert("type".into(), "string".into());
    schema.insert("enum".into(), names.into());
    schema.insert("default".into(), ForkMode::default().as_str().into());
    schema.into()
}

impl<'de> Deserialize<'de> for ForkArgs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let launch_fields = struct_fields::<SpawnArgs>();
        let view_fields = struct_fields::<ForkViewArgs>();
        let mut launch = Map::new();
        let mut view = Map::new();
        for (key, value) in map {
            if view_fields.contains(&key.as_str()) {
                view.insert(key, value);
            } else if launch_fields.contains(&key.as_str()) {
                launch.insert(key, value);
            } else {
                // serde's wording, with both structs' fields as the expected ones.
                let known: Vec<String> =
                    launch_fields.iter().chain(view_fields).map(|f| format!("`{f}`")).collect();
                return Err(de::Error::custom(format_args!(
                    "unknown field `{key}`, expected one of {}",
                    known.join(", ")
                )));
            }
        }
        Ok(ForkArgs { launch: part(launch)?, view: part(view)? })
    }
}

/// Deserializes one part, naming the field of a bad value (`resource_budget.tokens: …`).
fn part<T: DeserializeOwned, E: de::Error>(map: Map<String, Value>) -> Result<T, E> {
    serde_path_to_error::deserialize::<_, T>(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." { E::custom(inner) } else { E::custom(format!("{path}: {inner}")) }
    })
}

/// The field names serde's derive gives a struct (its `FIELDS`): the struct is asked to
/// deserialize from a deserializer that records them and refuses everything.
fn struct_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Recorder<'a>(&'a mut &'static [&'static str]);

    impl<'de> Deserializer<'de> for Recorder<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only the field names are read"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("only the field names are read"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Recorder(&mut fields));
    fields
}

impl ForkViewArgs {
    /// The typed root selection; each OID is parsed (`root_oids[i]` names a bad one).
    pub fn roots(&self) -> Result<RootSelection, ToolError> {
        let root_oids = match &self.root_oids {
            None => None,
            Some(texts) => Some(
                texts
                    .iter()
                    .enumerate()
                    .map(|(i, text)| parse_oid(&format!("root_oids[{i}]"), text))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(RootSelection::from_args(root_oids, Some(self.include_parent_roots)))
    }
}

impl ForkArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        let roots = self.view.roots()?;
        let mode = self.view.mode;
        Ok(Call::Fork(Box::new(ForkRequest { launch: self.launch.into_request()?, mode, roots })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field lists the strict deserializer checks keys against are exactly the
    /// parameters the schema advertises.
    #[test]
    fn recorded_fields_are_the_schema_properties() {
        let schema = serde_json::to_value(schemars::schema_for!(ForkArgs)).expect("schema");
        let mut properties: Vec<&str> =
            schema["properties"].as_object().expect("properties").keys().map(String::as_str).collect();
        let mut fields: Vec<&str> =
            struct_fields::<SpawnArgs>().iter().chain(struct_fields::<ForkViewArgs>()).copied().collect();
        properties.sort_unstable();
        fields.sort_unstable();
        assert_eq!(fields, properties);
        assert!(fields.contains(&"goal") && fields.contains(&"mode"), "{fields:?}");
    }
}
