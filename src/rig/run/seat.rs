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
    /// Usage over the seat's whole subtree (native seats).
    pub usage: Option<Usage>,
}

impl SeatOutcome {
    /// How the seat started, in words a person reads: never "resumed" or "restored".
    pub fn origin(&self) -> String {
        match &self.source {
            Some(source) => format!("forked from source session {source}"),
            None => "fresh session".to_string(),
        }
    }
}
