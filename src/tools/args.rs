//! The argument of each kernel tool as an LLM sends it, and its conversion into the typed
//! [`Call`].
//!
//! Parameter names, defaults and shapes are exactly those of the process-kernel
//! specification. Deserialization refuses unknown fields; conversion parses every id, right
//! and constraint, so a [`Call`] that comes out of here is well-formed and only the kernel's
//! rules can still refuse it.

use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::capability::{CapabilityRequest, ConstraintValue, Constraints};
use crate::actors::kernel::launch::{LaunchRequest, PathRequest};
use crate::actors::kernel::restart::{RestartPolicy, Supervision};
use crate::actors::kernel::status::SignalKind;
use crate::actors::runtime::calls::{Call, ToolError, parse_rights};
use crate::actors::{ImageId, Oid, Pid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::INVALID_ARGUMENTS;

/// Arguments of `spawn_child_process`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The child's goal: a concrete deliverable, stop condition and expected evidence. It
    /// becomes the child's goal object, always one of its roots (a spawned child's only one).
    pub goal: String,
    /// The child's image; default the parent's. A different image requires read authority
    /// on it (a live `image:<id>` grant with `read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The child's working directory, absolute or relative to the parent's cwd; default
    /// the parent's cwd. A path that climbs above `/` is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// Capabilities to delegate. The matching parent grant must be live and delegable;
    /// rights may only shrink and constraints only tighten.
    #[serde(default)]
    pub inherit_capabilities: Vec<CapabilityArg>,
    /// Files and directories to delegate. Relative paths resolve against the parent's cwd
    /// at launch, even if the child gets another cwd.
    #[serde(default)]
    pub inherit_paths: Vec<PathArg>,
    /// An explicit budget; it must fit the parent's remaining budget. Omitted dimensions
    /// (or an omitted budget) are attenuated from the parent's remaining budget, not copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_budget: Option<Budget>,
    /// The data-flow labels the child is cleared for: no wider than the parent's clearance
    /// (`clearance_exceeds` otherwise). Omitted, the child keeps the parent's clearance; `[]`
    /// clears it for no label. A launch whose child would not be cleared for its own goal (the
    /// parent's context) or for an object it inherits is refused (`flow_denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearance: Option<Vec<String>>,
    /// An idempotency key, unique per parent: a second launch with the same key launches
    /// nothing and returns the first launch's result (the same pid), even after a crash and
    /// restart. Give one to every launch a restarted program might issue again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_key: Option<String>,
    /// When the child is restarted after it ends: `permanent` (whenever it ends, unless you or
    /// the host cancelled or terminated it), `transient` (only when it fails), `temporary`
    /// (default: never). A restart is a new pid with the same child id, launched from these
    /// same arguments with your live capabilities and remaining budget at that time; a wait
    /// on the child follows it to the new pid. Not for `fork_child_process`.
    #[serde(default, skip_serializing_if = "is_temporary")]
    pub restart: RestartPolicy,
    /// How the child restarts its own children: `strategy` (`one_for_one` default,
    /// `one_for_all`, `rest_for_one`), `intensity` (default 1) restarts per `period_ms`
    /// (default 5000); one more fails the child with `restart_intensity_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervision: Option<Supervision>,
}

fn is_temporary(policy: &RestartPolicy) -> bool {
    *policy == RestartPolicy::Temporary
}

/// One capability to delegate (also the shape of a root's host-made grants).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityArg {
    /// The resource, e.g. `process:spawn`, `fs:/data`, `provider:openai`, `image:<id>`.
    pub resource: String,
    /// Non-empty rights: any of `read`, `write`, `execute`, `create`, `delete`.
    #[schemars(length(min = 1))]
    pub rights: Vec<String>,
    /// Constraints, each at least as tight as the parent grant's: a non-negative integer
    /// (an upper bound), an array of strings (an allow-list) or a string (a prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<BTreeMap<String, ConstraintArg>>,
    /// Whether the child may delegate it further.
    #[serde(default)]
    pub delegable: bool,
}

/// One constraint value: an upper bound, an allow-list, or a prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a constraint: a non-negative integer (an upper bound), an array of strings (an allow-list) or a string (a prefix)"
)]
pub enum ConstraintArg {
    /// An upper bound (e.g. `max_calls`); tighter means smaller.
    Max(u64),
    /// An allow-list (e.g. `models`); tighter means a subset.
    OneOf(Vec<String>),
    /// A prefix (e.g. `path_prefix`); tighter means longer.
    Prefix(String),
}

/// One path to delegate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArg {
    /// An absolute path, or one relative to the parent's cwd at launch.
    pub path: String,
    /// Rights on it.
    #[serde(default = "read_only")]
    #[schemars(length(min = 1))]
    pub rights: Vec<String>,
    /// Whether the child may delegate it further.
    #[serde(default)]
    pub delegable: bool,
}

fn read_only() -> Vec<String> {
    vec!["read".to_string()]
}

/// Arguments of `list_child_processes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Include terminal (exited, failed, killed) children.
    #[serde(default = "yes")]
    pub include_terminal: bool,
}

/// Arguments of `wait_child_process`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// The direct child's pid.
    #[schemars(extend("format" = "uuid"))]
    pub child_pid: String,
    /// Suspend until the child is terminal (`true`), or observe it now (`false`).
    #[serde(default = "yes")]
    pub block: bool,
}

/// Arguments of `signal_child_process`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalArgs {
    /// The direct, nonterminal child's pid.
    #[schemars(extend("format" = "uuid"))]
    pub child_pid: String,
    /// The lifecycle signal.
    pub signal: SignalKind,
    /// Why, for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Arguments of `process_exit`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitArgs {
    /// The result, any JSON value; made into a PROCESS_RESULT object whose handle the
    /// parent's wait publishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
}

pub(crate) fn yes() -> bool {
    true
}

/// An `invalid_arguments` error naming `field`.
pub(crate) fn invalid(field: &str, message: impl std::fmt::Display) -> ToolError {
    ToolError::new(INVALID_ARGUMENTS, format!("{field}: {message}"))
}

pub(crate) fn parse_pid(field: &str, text: &str) -> Result<Pid, ToolError> {
    text.parse::<Pid>().map_err(|e| invalid(field, e))
}

pub(crate) fn parse_oid(field: &str, text: &str) -> Result<Oid, ToolError> {
    text.parse::<Oid>().map_err(|e| invalid(field, e))
}

/// Parses right names; an empty or unknown right keeps the kernel's code (`empty_rights`,
/// `unknown_right`) and names the field.
fn rights_at(field: &str, names: &[String]) -> Result<crate::actors::kernel::capability::Rights, ToolError> {
    parse_rights(names).map_err(|e| ToolError::new(&e.code, format!("{field}: {}", e.message)))
}

impl CapabilityArg {
    /// The typed request; `field` names this entry in errors (e.g. `inherit_capabilities[0]`).
    pub fn to_request(&self, field: &str) -> Result<CapabilityRequest, ToolError> {
        let rights = rights_at(&format!("{field}.rights"), &self.rights)?;
        let mut constraints = Constraints::new();
        for (key, value) in self.constraints.iter().flatten() {
            let value = match value {
                ConstraintArg::Max(n) => ConstraintValue::Max(*n),
                ConstraintArg::OneOf(items) => ConstraintValue::OneOf(items.iter().cloned().collect()),
                ConstraintArg::Prefix(p) => ConstraintValue::Prefix(p.clone()),
            };
            constraints.insert(key.clone(), value);
        }
        Ok(CapabilityRequest {
            resource: self.resource.clone(),
            rights,
            constraints,
            delegable: self.delegable,
        })
    }
}

impl PathArg {
    /// The typed request; `field` names this entry in errors.
    pub fn to_request(&self, field: &str) -> Result<PathRequest, ToolError> {
        Ok(PathRequest {
            path: self.path.clone(),
            rights: rights_at(&format!("{field}.rights"), &self.rights)?,
            delegable: self.delegable,
        })
    }
}

impl SpawnArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        self.into_request().map(Call::Spawn)
    }

    /// The typed launch request, shared by `spawn_child_process` and `fork_child_process`.
    pub fn into_request(self) -> Result<LaunchRequest, ToolError> {
        let inherit_capabilities = self
            .inherit_capabilities
            .iter()
            .enumerate()
            .map(|(i, c)| c.to_request(&format!("inherit_capabilities[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let inherit_paths = self
            .inherit_paths
            .iter()
            .enumerate()
            .map(|(i, p)| p.to_request(&format!("inherit_paths[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LaunchRequest {
            goal: self.goal,
            image: self.image.map(ImageId),
            working_directory: self.working_directory,
            inherit_capabilities,
            inherit_paths,
            resource_budget: self.resource_budget,
            clearance: self.clearance.map(|labels| labels.into_iter().collect()),
            launch_key: self.launch_key,
            restart: self.restart,
            supervision: self.supervision,
        })
    }
}

impl ListArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::List { include_terminal: self.include_terminal })
    }
}

impl WaitArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::Wait { child_pid: parse_pid("child_pid", &self.child_pid)?, block: self.block })
    }
}

impl SignalArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::Signal {
            child_pid: parse_pid("child_pid", &self.child_pid)?,
            signal: self.signal,
            reason: self.reason,
        })
    }
}

impl ExitArgs {
    /// The typed call.
    pub fn into_call(self) -> Result<Call, ToolError> {
        Ok(Call::Exit { payload: self.payload })
    }
}
