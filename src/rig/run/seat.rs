//! What happened to one seat: the outcome the runner reports and the summary prints.

use crate::agent::brain::Usage;
use crate::rig::store::SeatStatus;
use serde::Serialize;

/// How one seat's launch ended.
#[derive(Clone, Debug, Serialize)]
pub struct SeatOutcome {
    /// The member.
    pub member: String,
    /// Its runtime.
    pub runtime: String,
    /// Its state: `realized` or `failed` (or `declared` for a seat the run did not reach).
    pub status: SeatStatus,
    /// Its own new token, when realized.
    pub token: Option<String>,
    /// The source it was forked from, if any.
    pub source: Option<String>,
    /// For a native seat, its process and how it ended.
    pub pid: Option<String>,
    /// The process's final status (`exited`, `failed`, `killed`), for a native seat.
    pub process_status: Option<String>,
    /// The seat's result: a native agent's `finish` result, or what an external runtime
    /// reported.
    pub result: Option<serde_json::Value>,
    /// The step that failed, and why.
    pub failed_step: Option<String>,
    /// The error, for a failed seat.
    pub error: Option<String>,
    /// What the seat used: a native seat's whole subtree, or what its external runtime
    /// reported (tokens, and cost when the runtime reports one).
    pub usage: Option<Usage>,
    /// The end of the runtime's standard error, for a failed seat whose runtime wrote any.
    pub stderr: Option<String>,
    /// A new native token the runtime created for this seat that the seat store refused to
    /// record: the session exists under it, and this is the only place it is reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrecorded_token: Option<String>,
    /// Whether this outcome is a restore of the seat's own session (`rig restore`); left out
    /// of JSON for a launch.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restored: bool,
}

impl SeatOutcome {
    /// How the seat started, in words a person reads: a launch is never called "resumed" or
    /// "restored"; a restore names the seat's own session.
    pub fn origin(&self) -> String {
        if self.restored {
            let token = self.token.as_deref().unwrap_or("-");
            return format!("restored seat {} (its own session {token})", self.member);
        }
        match &self.source {
            Some(source) => format!("forked from source session {source}"),
            None => "fresh session".to_string(),
        }
    }
}
