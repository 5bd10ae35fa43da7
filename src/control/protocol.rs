//! The control socket's wire format: JSON lines.
//!
//! A client writes one [`Request`] line and reads [`Line`]s back: zero or more
//! `{"progress": {...}}` lines while a call waits, then exactly one `{"result": ...}` or
//! `{"error": {"code", "message"}}` line. A connection carries one request at a time; it may
//! carry several in turn. Closing the connection while a request is in flight withdraws the
//! request's answer (see [`super::server`] for what that leaves behind).

use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::capability::CapabilityRequest;
use crate::actors::kernel::status::SignalKind;
use crate::actors::runtime::RootSpec;
use crate::actors::{GrantId, ImageId, Pid};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// The tools `pid` may call, as `[{name, description, parameters}]`.
    ListTools {
        /// The process.
        pid: Pid,
    },
    /// A tool call as `pid`; the result is the tool's JSON answer (a tool error is a result
    /// too, `{"error": …}`).
    Call {
        /// The caller.
        pid: Pid,
        /// The tool's name.
        tool: String,
        /// Its arguments object.
        #[serde(default)]
        args: Value,
    },
    /// A process's committed row (`null` if there is none).
    Process {
        /// The process.
        pid: Pid,
    },
    /// Makes a host-driven process ready for a session acting as it (see
    /// [`super::host::attach`]); the result is its row.
    Attach {
        /// The process.
        pid: Pid,
    },
    /// Launches a root; the result is `{"pid": …}`.
    SpawnRoot {
        /// What the root gets.
        root: RootRequest,
    },
    /// A host signal to any live process; the result is the signal's outcome.
    Signal {
        /// The target.
        pid: Pid,
        /// `pause`, `resume`, `cancel` or `terminate`.
        signal: SignalKind,
        /// Why.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Sets the host-only resume gate; the result is the row.
    Gate {
        /// The target.
        pid: Pid,
        /// The gate's reason.
        reason: String,
    },
    /// Clears the host gate (does not resume); the result is the row.
    Ungate {
        /// The target.
        pid: Pid,
    },
    /// Revokes a grant and everything derived from it; the result is
    /// `{"revoked": [{grant_id, holder}]}`.
    Revoke {
        /// The grant.
        grant_id: GrantId,
    },
}

/// A root as a client asks for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootRequest {
    /// Its goal.
    pub goal: String,
    /// Its image.
    pub image: ImageId,
    /// Its absolute working directory.
    pub cwd: String,
    /// Host grants.
    #[serde(default)]
    pub capabilities: Vec<CapabilityRequest>,
    /// Its budget (omitted dimensions are unlimited).
    #[serde(default)]
    pub budget: Budget,
    /// An idempotency key: a second launch with the same key launches nothing and answers
    /// the first launch's pid, also from a runtime that took the store over after the first
    /// died before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_key: Option<String>,
}

impl From<RootRequest> for RootSpec {
    fn from(r: RootRequest) -> RootSpec {
        RootSpec {
            goal: r.goal,
            image: r.image,
            cwd: r.cwd,
            capabilities: r.capabilities,
            budget: r.budget,
            clearance: None,
            goal_labels: Default::default(),
            supervision: None,
        }
    }
}

/// One answer line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Line {
    /// A call is still waiting; `message` says on what.
    Progress(Progress),
    /// The request's result.
    Result(Value),
    /// The request could not be served (a malformed request, a refused host action).
    Error(HostError),
}

/// A progress report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// What the call waits for.
    pub message: String,
}

/// A refused request, with a stable snake_case code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    /// A stable snake_case code.
    pub code: String,
    /// A sentence saying what to fix.
    pub message: String,
}

impl HostError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        HostError { code: code.to_string(), message: message.into() }
    }
}

impl From<crate::actors::runtime::calls::ToolError> for HostError {
    fn from(e: crate::actors::runtime::calls::ToolError) -> Self {
        HostError { code: e.code, message: e.message }
    }
}
