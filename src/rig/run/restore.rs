//! `RigRunner::restore`: continuing realized seats from their OWN sessions, never from their
//! source (seed 004: "Restoring the seat later is restore of the new seat, not re-fork from
//! parent").
//!
//! - a `claude-code` seat runs `claude -p … --resume <seat token>`, a `codex` seat `codex exec
//!   resume <thread id>`, each with its profile's settings and the restore prompt; what the
//!   command used is added to the seat's recorded usage;
//! - a `native` seat's process continues from its last checkpointed turn: every process of its
//!   subtree the runtime paused is resumed (as `run --resume` does) and the seat is waited for;
//!   a native seat whose process has ended has nothing live to continue;
//! - a `terminal` seat has no conversation: its restore names the shell's place again.
//!
//! A seat that is not realized has no session of its own and is never restored (no fresh seat
//! is launched in its place). A member's `restore_policy` (when it has one) is honoured:
//! `checkpoint_only` and `relaunch_fresh` seats are left as recorded.

use super::persist::record_usage;
use super::resume::seat_states;
use super::runner::{
    RigRunner, adapter_failure, external_outcome, failed_outcome, instance, native_outcome, seat_launch,
    source_value,
};
use super::seat::SeatOutcome;
use crate::actors::Pid;
use crate::rig::store::{SeatRecord, SeatStatus};
use crate::rig::{Member, NativeId, RestorePolicy, RigId, RigSpec, SeatRuntime};

/// The prompt a restored seat continues with when the command line gives none.
pub const RESTORE_PROMPT: &str = "Continue where you left off.";

/// The failed step of a restore the seat could not take.
pub const RESTORE_STEP: &str = "restore";

/// Why seats cannot be restored. Nothing is run or changed when a restore is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// No rig has this id.
    #[error("no rig {rig:?} in this state directory; `agentvisor rig status` lists the rigs")]
    UnknownRig {
        /// The id asked for.
        rig: String,
    },
    /// The rig has no seat with this member id.
    #[error("rig {rig} has no seat {member} (its seats: {known})")]
    UnknownMember {
        /// The rig.
        rig: String,
        /// The member asked for.
        member: String,
        /// Its seats, comma-separated.
        known: String,
    },
    /// A seat named on the command line has no session of its own.
    #[error(
        "seat {member} of rig {rig} is {status}, so it has no session of its own to restore; no seat \
         is launched in its place (`agentvisor run --resume {rig}` launches seats a run never reached)"
    )]
    NotRealized {
        /// The rig.
        rig: String,
        /// The member.
        member: String,
        /// Its status.
        status: SeatStatus,
    },
    /// A seat named on the command line whose member's `restore_policy` keeps it as recorded.
    #[error("seat {member} of rig {rig} has restore_policy {policy}: {why}")]
    PolicyRefuses {
        /// The rig.
        rig: String,
        /// The member.
        member: String,
        /// The policy.
        policy: String,
        /// What the policy means for this seat.
        why: String,
    },
    /// Nothing in the rig can be restored.
    #[error("rig {rig} has no realized seat to restore ({seats})")]
    NothingToRestore {
        /// The rig.
        rig: String,
        /// Its seats, `member=status` each.
        seats: String,
    },
    /// A seat's stored member could not be read back.
    #[error("seat {member} of rig {rig}: its stored member does not parse: {error}")]
    BadSeat {
        /// The rig.
        rig: String,
        /// The member.
        member: String,
        /// Why.
        error: String,
    },
    /// The seat store refused a read.
    #[error("the seat store refused: {0}")]
    Store(#[from] crate::rig::store::StoreError),
}

impl RestoreError {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            RestoreError::UnknownRig { .. } => "unknown_rig",
            RestoreError::UnknownMember { .. } => "unknown_member",
            RestoreError::NotRealized { .. } => "not_realized",
            RestoreError::PolicyRefuses { .. } => "restore_policy",
            RestoreError::NothingToRestore { .. } => "nothing_to_restore",
            RestoreError::BadSeat { .. } => "bad_seat",
            RestoreError::Store(_) => "seat_store",
        }
    }
}

/// What the member's restore policy says about restoring its seat: `None` to go on, or why
/// not.
fn policy_refusal(member: &Member) -> Option<(String, String)> {
    let policy = member.restore_policy?;
    let why = match policy {
        RestorePolicy::ResumeIfPossible => return None,
        RestorePolicy::CheckpointOnly => "its session is kept as recorded, never continued",
        RestorePolicy::RelaunchFresh => "it is launched fresh by running the spec again, never continued",
    };
    Some((policy.as_str().to_string(), why.to_string()))
}

/// The member a seat was declared as.
fn member_of(rig: &RigId, seat: &SeatRecord) -> Result<Member, RestoreError> {
    seat.member().map_err(|e| RestoreError::BadSeat {
        rig: rig.to_string(),
        member: seat.member.to_string(),
        error: e.to_string(),
    })
}

/// The seats to restore, checked before anything runs: every one named (each realized and
/// allowed by its policy), or, when none is named, every realized seat its policy allows.
pub fn seats_to_restore(
    rig: &RigId,
    seats: &[SeatRecord],
    named: &[String],
) -> Result<Vec<(SeatRecord, Member)>, RestoreError> {
    let decode = |seat: &SeatRecord| member_of(rig, seat);
    let mut chosen = Vec::new();
    if named.is_empty() {
        for seat in seats.iter().filter(|s| s.status == SeatStatus::Realized) {
            let member = decode(seat)?;
            if policy_refusal(&member).is_none() {
                chosen.push((seat.clone(), member));
            }
        }
        if chosen.is_empty() {
            return Err(RestoreError::NothingToRestore { rig: rig.to_string(), seats: seat_states(seats) });
        }
        return Ok(chosen);
    }
    for name in named {
        let Some(seat) = seats.iter().find(|s| s.member.as_str() == name) else {
            let known = seats.iter().map(|s| s.member.to_string()).collect::<Vec<_>>().join(", ");
            return Err(RestoreError::UnknownMember { rig: rig.to_string(), member: name.clone(), known });
        };
        if seat.status != SeatStatus::Realized {
            return Err(RestoreError::NotRealized {
                rig: rig.to_string(),
                member: name.clone(),
                status: seat.status,
            });
        }
        let member = decode(seat)?;
        if let Some((policy, why)) = policy_refusal(&member) {
            return Err(RestoreError::PolicyRefuses {
                rig: rig.to_string(),
                member: name.clone(),
                policy,
                why,
            });
        }
        if !chosen.iter().any(|(s, _): &(SeatRecord, Member)| s.member == seat.member) {
            chosen.push((seat.clone(), member));
        }
    }
    Ok(chosen)
}

/// Whether `spec` asks `run` to restore a rig it already ran rather than start a new instance:
/// some member says `resume_if_possible` or `checkpoint_only`.
pub fn restores_on_run(spec: &RigSpec) -> bool {
    spec.members.iter().any(|m| {
        matches!(m.restore_policy, Some(RestorePolicy::ResumeIfPossible | RestorePolicy::CheckpointOnly))
    })
}

impl RigRunner {
    /// The instance of `spec`'s rig `run` restores instead of starting a new one: the latest
    /// instance (`<id>`, `<id>-2`, …) that has a realized seat, when [`restores_on_run`].
    pub fn instance_to_restore(&self, spec: &RigSpec) -> Result<Option<RigId>, RestoreError> {
        if !restores_on_run(spec) {
            return Ok(None);
        }
        let mut latest = None;
        let mut n = 1u32;
        loop {
            let candidate = instance(&spec.id, n);
            if self.store.rig(&candidate)?.is_none() {
                return Ok(latest);
            }
            if self.store.seats(&candidate)?.iter().any(|s| s.status == SeatStatus::Realized) {
                latest = Some(candidate);
            }
            n += 1;
        }
    }

    /// `run` on a rig it already ran, by its members' restore policies: a realized seat whose
    /// member says `resume_if_possible` is restored from its own token; every other realized
    /// or failed seat is left as recorded (its outcome says why); a seat the earlier run never
    /// reached is launched.
    pub async fn rerun(&self, rig: &RigId, prompt: &str) -> Result<Vec<SeatOutcome>, RestoreError> {
        let seats = self.store.seats(rig)?;
        let mut kept: Vec<(usize, SeatOutcome)> = Vec::new();
        let mut restore: Vec<(usize, SeatRecord, Member)> = Vec::new();
        let mut launch: Vec<(usize, Member)> = Vec::new();
        for (index, seat) in seats.iter().enumerate() {
            let member = member_of(rig, seat)?;
            match (seat.status, member.restore_policy) {
                (SeatStatus::Realized, Some(RestorePolicy::ResumeIfPossible)) => {
                    restore.push((index, seat.clone(), member));
                }
                (SeatStatus::Declared, _) => launch.push((index, member)),
                (_, policy) => kept.push((index, kept_outcome(seat, &member, policy))),
            }
        }
        let restores = restore.iter().map(|(_, seat, member)| self.restore_seat(rig, seat, member, prompt));
        let members: Vec<Member> = launch.iter().map(|(_, m)| m.clone()).collect();
        let (restored, launched) =
            tokio::join!(futures_util::future::join_all(restores), self.launch_all(rig, &members));
        let mut outcomes: Vec<(usize, SeatOutcome)> = kept;
        outcomes.extend(restore.iter().map(|(i, _, _)| *i).zip(restored));
        outcomes.extend(launch.iter().map(|(i, _)| *i).zip(launched));
        outcomes.sort_by_key(|(index, _)| *index);
        Ok(outcomes.into_iter().map(|(_, outcome)| outcome).collect())
    }

    /// Restores the seats `named` of `rig` (every realized seat when none is named; see the
    /// module documentation), each from its own token, all at once; returns each one's
    /// outcome once every restored session has ended.
    pub async fn restore(
        &self,
        rig: &RigId,
        named: &[String],
        prompt: &str,
    ) -> Result<Vec<SeatOutcome>, RestoreError> {
        if self.store.rig(rig)?.is_none() {
            return Err(RestoreError::UnknownRig { rig: rig.to_string() });
        }
        let seats = self.store.seats(rig)?;
        let chosen = seats_to_restore(rig, &seats, named)?;
        let restores = chosen.iter().map(|(seat, member)| self.restore_seat(rig, seat, member, prompt));
        Ok(futures_util::future::join_all(restores).await)
    }

    async fn restore_seat(
        &self,
        rig: &RigId,
        seat: &SeatRecord,
        member: &Member,
        prompt: &str,
    ) -> SeatOutcome {
        let Some(token) = seat.token.clone() else {
            return failed_outcome(member, RESTORE_STEP, "a realized seat without a token");
        };
        let mut outcome = match member.runtime {
            SeatRuntime::Native => self.restore_native(rig, seat, member, &token).await,
            runtime => self.restore_external(rig, seat, member, runtime, &token, prompt).await,
        };
        outcome.restored = true;
        outcome.token = Some(token.to_string());
        outcome
    }

    async fn restore_external(
        &self,
        rig: &RigId,
        seat: &SeatRecord,
        member: &Member,
        runtime: SeatRuntime,
        token: &NativeId,
        prompt: &str,
    ) -> SeatOutcome {
        let failed = |step: &str, error: String, stderr: Option<String>| {
            let mut outcome = failed_outcome(member, step, &error);
            // Still realized: a failed restore leaves the seat and its token as they were.
            outcome.status = SeatStatus::Realized;
            outcome.stderr = stderr.filter(|text| !text.trim().is_empty());
            outcome
        };
        let launch =
            match seat_launch(&self.hosts, &self.adapters, &self.base, rig, member, prompt.to_string()) {
                Ok(launch) => launch,
                Err(e) => return failed(RESTORE_STEP, e, None),
            };
        self.report(member, SeatStatus::Realized, None, format!("restoring its own session {token}"));
        let realized = match self.adapters.for_runtime(runtime).restore(&launch, token).await {
            Ok(realized) => realized,
            Err(e) => {
                let failure = adapter_failure(e);
                self.report(member, SeatStatus::Realized, None, format!("restore failed: {}", failure.error));
                return failed(&failure.step, failure.error, failure.stderr);
            }
        };
        if let Some(used) = &realized.usage {
            let total = seat.usage.map_or(*used, |before| before.plus(used));
            record_usage(self.store.as_ref(), rig, &member.id, &total).await;
        }
        self.report(member, SeatStatus::Realized, None, format!("restored its own session {token}"));
        let mut outcome = external_outcome(member, realized);
        outcome.restored = true;
        outcome
    }

    async fn restore_native(
        &self,
        rig: &RigId,
        seat: &SeatRecord,
        member: &Member,
        token: &NativeId,
    ) -> SeatOutcome {
        let still_realized = |error: String| {
            let mut outcome = failed_outcome(member, RESTORE_STEP, &error);
            outcome.status = SeatStatus::Realized;
            outcome.pid = seat.pid.clone();
            outcome
        };
        let Some(pid) = seat.pid.as_deref().and_then(|p| p.parse::<Pid>().ok()) else {
            return still_realized("a realized native seat without a process".to_string());
        };
        match self.rt.process(pid) {
            Ok(Some(row)) if row.status.is_terminal() => {
                let mut outcome = still_realized(format!(
                    "its process {pid} has ended ({}); a native seat continues from its checkpoint only \
                     while its process lives",
                    row.status
                ));
                outcome.process_status = Some(row.status.to_string());
                outcome
            }
            Ok(Some(row))
                if row.host_gate.is_some()
                    || row.pause_reason.as_ref().is_some_and(|reason| !reason.left_by_the_runtime()) =>
            {
                still_realized(format!(
                    "its process {pid} is held by the host ({}); `agentvisor ungate` or `agentvisor signal {pid} \
                     resume` lets it go on, and a restore never overrides the host",
                    row.pause_reason.as_ref().map_or("a gate", |reason| reason.kind())
                ))
            }
            Ok(Some(_)) => {
                let done = self.begin_continue(rig, member, pid).await;
                let outcome = match self.rt.wait_terminal(pid).await {
                    Ok(row) => native_outcome(&self.rt, member, token, &row),
                    Err(e) => still_realized(e.to_string()),
                };
                let _ = done.send(Some(pid));
                if let Some(usage) = &outcome.usage {
                    record_usage(self.store.as_ref(), rig, &member.id, usage).await;
                }
                outcome
            }
            _ => still_realized(format!("its process {pid} has no row in this state directory")),
        }
    }
}

/// The outcome of a seat `run` leaves as recorded when it restores its rig.
fn kept_outcome(seat: &SeatRecord, member: &Member, policy: Option<RestorePolicy>) -> SeatOutcome {
    let why = match (seat.status, policy) {
        (SeatStatus::Realized, Some(RestorePolicy::CheckpointOnly)) => {
            "kept as recorded (restore_policy checkpoint_only)".to_string()
        }
        (SeatStatus::Realized, Some(policy)) => format!(
            "kept as recorded (restore_policy {}: a fresh seat needs a new instance, which this run of a \
             restored rig does not start)",
            policy.as_str()
        ),
        (SeatStatus::Realized, None) => "kept as recorded (no restore_policy)".to_string(),
        (status, _) => format!("kept as recorded ({status})"),
    };
    let failed = seat.status != SeatStatus::Realized;
    SeatOutcome {
        member: member.id.to_string(),
        runtime: member.runtime.to_string(),
        status: seat.status,
        token: seat.token.as_ref().map(ToString::to_string),
        source: source_value(member),
        pid: seat.pid.clone(),
        process_status: None,
        result: None,
        failed_step: if failed { seat.failed_step.clone() } else { None },
        error: if failed { seat.error.clone() } else { Some(why) },
        usage: seat.usage,
        stderr: None,
        unrecorded_token: None,
        restored: false,
    }
}
