//! The persisted records: a rig as created, and each seat's state on the way from declared to
//! realized or failed.

use crate::agent::brain::Usage;
use crate::rig::{Member, MemberId, NativeId, RigId, SeatRuntime, SessionSource};
use std::fmt;

/// Where a seat is on its one way through launch: declared → resolved → realized, or failed
/// from either of the first two. Realized and failed are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatStatus {
    /// Present in the rig spec or an expansion; nothing has been looked up or started.
    Declared,
    /// Its session source (if any) was resolved against its runtime; not yet started.
    Resolved,
    /// Started, and its own new native token is durably written. Final.
    Realized,
    /// Resolution or launch failed; the seat was not launched. Final.
    Failed,
}

impl SeatStatus {
    /// Every status, in the order a seat moves through them.
    pub const ALL: [SeatStatus; 4] =
        [SeatStatus::Declared, SeatStatus::Resolved, SeatStatus::Realized, SeatStatus::Failed];

    /// The status as stored and printed (`declared`, `resolved`, `realized`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            SeatStatus::Declared => "declared",
            SeatStatus::Resolved => "resolved",
            SeatStatus::Realized => "realized",
            SeatStatus::Failed => "failed",
        }
    }

    /// The status written as `text`, if it is one.
    pub fn parse(text: &str) -> Option<SeatStatus> {
        SeatStatus::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// Whether no transition leaves this status.
    pub fn is_final(self) -> bool {
        matches!(self, SeatStatus::Realized | SeatStatus::Failed)
    }

    /// Whether a seat may move from this status to `to`: declared → resolved → realized, and
    /// declared or resolved → failed. Nothing moves back to declared: restoring a realized
    /// seat later is a restore of that seat, never a new fork from its source.
    pub fn may_move_to(self, to: SeatStatus) -> bool {
        matches!(
            (self, to),
            (SeatStatus::Declared, SeatStatus::Resolved)
                | (SeatStatus::Resolved, SeatStatus::Realized)
                | (SeatStatus::Declared | SeatStatus::Resolved, SeatStatus::Failed)
        )
    }
}

impl fmt::Display for SeatStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One seat's persisted state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeatRecord {
    /// The rig it belongs to.
    pub rig: RigId,
    /// Its member id, unique in the rig.
    pub member: MemberId,
    /// The runtime it runs on.
    pub runtime: SeatRuntime,
    /// Where it is between declared and realized or failed.
    pub status: SeatStatus,
    /// The declared `session_source` value: the conversation it forks from. History once the
    /// seat is realized; never the seat's own token.
    pub source: Option<NativeId>,
    /// The seat's own new native token (a Claude session id, a Codex thread id, an agentvisor
    /// session id). Set only by a realize, and only on a realized seat.
    pub token: Option<NativeId>,
    /// On a failed seat: the step that failed (for example `resolve_source` or `fork_launch`).
    pub failed_step: Option<String>,
    /// On a failed seat: the error, naming the runtime and what was missing or went wrong.
    pub error: Option<String>,
    /// On a failed seat: the runtime's standard error, as much of its end as the store keeps.
    pub stderr: Option<String>,
    /// On a realized `native` seat: the agentvisor process it runs as.
    pub pid: Option<String>,
    /// When it was declared, in milliseconds since the Unix epoch.
    pub declared_at_ms: u64,
    /// When its status last changed, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// The member as declared, as JSON.
    pub member_json: String,
    /// On a realized seat: what its runtime reported it used, over every command run for it
    /// (its launch and each restore) — for a native seat, its process subtree's usage once
    /// the process ended. `None` until something was reported.
    #[serde(default)]
    pub usage: Option<Usage>,
}

impl SeatRecord {
    /// The member as declared, decoded from [`SeatRecord::member_json`].
    pub fn member(&self) -> Result<Member, serde_json::Error> {
        serde_json::from_str(&self.member_json)
    }

    /// Checks the record's invariants; the broken one, as a sentence, if any. Stores check a
    /// record before writing it and again after reading it back.
    ///
    /// - a token is set exactly when the seat is realized, and it is never the source;
    /// - a failed step and an error are set exactly when the seat failed, standard error only
    ///   then, and a pid and usage only on a realized seat;
    /// - the declared member decodes, and its id, runtime and source are the record's;
    /// - it was not updated before it was declared.
    pub fn check(&self) -> Result<(), String> {
        let realized = self.status == SeatStatus::Realized;
        let failed = self.status == SeatStatus::Failed;
        if self.token.is_some() != realized {
            return Err(format!("a {} seat {} a token", self.status, if realized { "lacks" } else { "has" }));
        }
        if self.token.is_some() && self.token == self.source {
            return Err("the seat's token is its source's token".into());
        }
        if self.failed_step.is_some() != failed || self.error.is_some() != failed {
            return Err(format!("a {} seat has a failed step and error only if it failed", self.status));
        }
        if self.stderr.is_some() && !failed {
            return Err(format!("a {} seat has standard error", self.status));
        }
        if self.pid.is_some() && !realized {
            return Err(format!("a {} seat has a pid", self.status));
        }
        if self.usage.is_some() && !realized {
            return Err(format!("a {} seat has usage", self.status));
        }
        if self.updated_at_ms < self.declared_at_ms {
            return Err("the seat was updated before it was declared".into());
        }
        let member = self.member().map_err(|e| format!("the declared member does not decode: {e}"))?;
        if member.id != self.member || member.runtime != self.runtime || source_of(&member) != self.source {
            return Err("the declared member's id, runtime or source is not the record's".into());
        }
        Ok(())
    }
}

/// The native id a member's `session_source` names, if it has one.
pub(crate) fn source_of(member: &Member) -> Option<NativeId> {
    // One mode today; a second would have to say here what its source id is.
    member.session_source.as_ref().map(|SessionSource::Fork { native_id }| native_id.clone())
}

/// A rig as created.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RigRecord {
    /// Its id.
    pub id: RigId,
    /// The spec file it was created from, as given.
    pub spec_path: String,
    /// The checked spec as created, as JSON. Members added later are seats, not part of it.
    pub spec_json: String,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}
