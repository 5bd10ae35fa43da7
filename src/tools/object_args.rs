//! Arguments of the object-memory tools (`merge_child_memory`, `create_object`,
//! `read_object`, `write_object`, `list_objects`, `checkpoint_object`, `delegate_object`,
//! `load_skills`) and
//! their conversion into typed calls.

use super::INVALID_ARGUMENTS;
use super::args::{parse_oid, parse_pid};
use crate::actors::kernel::objects::{ObjectRights, Skill};
use crate::actors::runtime::calls::{Call, CreateObject, ObjectTarget, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `merge_child_memory`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeArgs {
    /// The direct, terminal child whose memory to collect.
    #[schemars(extend("format" = "uuid"))]
    pub child_pid: String,
    /// Also consider the child's PROCESS-owned objects that are not its roots (default
    /// false: roots only).
    #[serde(default)]
    pub include_child_created: bool,
}

/// Arguments of `create_object`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateObjectArgs {
    /// The payload: any JSON value, `null` included. Runtime-local unless `durable`.
    pub payload: serde_json::Value,
    /// A name to bind in this process's namespace (local to it: never seen by others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Data-flow labels beyond this process's context, which the object always carries.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Scratch: a merge never adopts it (default false).
    #[serde(default)]
    pub ephemeral: bool,
    /// Add it to this process's roots: what a default fork shares and a merge considers
    /// (default false).
    #[serde(default)]
    pub root: bool,
    /// Checkpoint the payload now: it and every later write survive a reopen (default
    /// false).
    #[serde(default)]
    pub durable: bool,
}

/// Arguments of `read_object` and `checkpoint_object`: exactly one of `oid` or `name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectRefArgs {
    /// The object's OID. Give exactly one of `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub oid: Option<String>,
    /// A name bound in this process's namespace (its goal is `goal`). Give exactly one of
    /// `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Arguments of `write_object`: exactly one of `oid` or `name`, and the new payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteObjectArgs {
    /// The object's OID. Give exactly one of `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub oid: Option<String>,
    /// A name bound in this process's namespace. Give exactly one of `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The new payload: any JSON value, `null` included. It replaces the old one in place:
    /// every holder of the OID sees it.
    pub payload: serde_json::Value,
}

/// Arguments of `delegate_object`: exactly one of `oid` or `name`, the child, the rights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateObjectArgs {
    /// The object's OID. Give exactly one of `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub oid: Option<String>,
    /// A name bound in this process's namespace. Give exactly one of `oid` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The direct, live child that receives the handle.
    #[schemars(extend("format" = "uuid"))]
    pub to: String,
    /// The rights to give: `read`, `write`, `delegate` (at least one).
    pub rights: Vec<ObjectRightArg>,
}

/// One object right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObjectRightArg {
    /// Read the payload.
    Read,
    /// Replace the payload in place.
    Write,
    /// Hand the object on.
    Delegate,
}

/// Arguments of `list_objects`: none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListObjectsArgs {}

/// Arguments of `load_skills`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSkillsArgs {
    /// The whole new snapshot: it replaces the loaded one.
    pub skills: Vec<SkillArg>,
}

/// One skill to load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArg {
    /// Its name, unique in the snapshot.
    pub name: String,
    /// The tools it allows. A cross-image fork keeps the skill only if the child's image
    /// offers every one of them.
    pub allowed_tools: Vec<String>,
}

/// The one object named by `oid` or `name`; both or neither is `invalid_arguments`.
fn target(oid: Option<&str>, name: Option<&str>) -> Result<ObjectTarget, ToolError> {
    match (oid, name) {
        (Some(oid), None) => Ok(ObjectTarget::Oid(parse_oid("oid", oid)?)),
        (None, Some(name)) => Ok(ObjectTarget::Name(name.to_string())),
        (Some(_), Some(_)) => {
            Err(ToolError::new(INVALID_ARGUMENTS, "oid, name: give exactly one of `oid` or `name`, not both"))
        }
        (None, None) => Err(ToolError::new(
            INVALID_ARGUMENTS,
            "oid, name: give exactly one of `oid` or `name`; neither was given",
        )),
    }
}

impl MergeArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::Merge {
            child_pid: parse_pid("child_pid", &self.child_pid)?,
            include_child_created: self.include_child_created,
        })
    }
}

impl CreateObjectArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::CreateObject(CreateObject {
            name: self.name,
            payload: self.payload,
            labels: self.labels.into_iter().collect(),
            ephemeral: self.ephemeral,
            root: self.root,
            durable: self.durable,
        }))
    }
}

impl ObjectRefArgs {
    /// The object named.
    pub fn target(&self) -> Result<ObjectTarget, ToolError> {
        target(self.oid.as_deref(), self.name.as_deref())
    }

    /// The typed `read_object` call.
    pub fn into_read_call(self) -> Result<Call, ToolError> {
        Ok(Call::ReadObject { target: self.target()? })
    }

    /// The typed `checkpoint_object` call.
    pub fn into_checkpoint_call(self) -> Result<Call, ToolError> {
        Ok(Call::CheckpointObject { target: self.target()? })
    }
}

impl WriteObjectArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        let target = target(self.oid.as_deref(), self.name.as_deref())?;
        Ok(Call::WriteObject { target, payload: self.payload })
    }
}

impl DelegateObjectArgs {
    /// The typed call. An empty `rights` is the kernel's to refuse (`empty_rights`).
    pub fn into_call(self) -> Result<Call, ToolError> {
        let target = target(self.oid.as_deref(), self.name.as_deref())?;
        let rights = self.rights.iter().fold(ObjectRights::empty(), |all, right| {
            all | match right {
                ObjectRightArg::Read => ObjectRights::READ,
                ObjectRightArg::Write => ObjectRights::WRITE,
                ObjectRightArg::Delegate => ObjectRights::DELEGATE,
            }
        });
        Ok(Call::DelegateObject { target, to: parse_pid("to", &self.to)?, rights })
    }
}

impl ListObjectsArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::ListObjects)
    }
}

impl LoadSkillsArgs {
    /// The typed call. Names, duplicates and sizes are the kernel's to check
    /// (`invalid_skill`, `too_many_entries`).
    pub fn into_call(self) -> Result<Call, ToolError> {
        let skills = self
            .skills
            .into_iter()
            .map(|s| Skill { name: s.name, allowed_tools: s.allowed_tools.into_iter().collect() })
            .collect();
        Ok(Call::LoadSkills(skills))
    }
}
