//! `RigRunner::resume`: continuing a rig whose run ended before its seats did (a crash, a
//! kill). Each seat is taken as its persisted state says:
//!
//! - a realized native seat whose process ended stays as it is (its outcome is read back);
//! - a realized native seat whose process is live is continued: every process of its subtree
//!   the runtime paused (a lost execution, a shutdown) is resumed, so each agent restarts from
//!   its last checkpointed turn with the window note that effects since then may have happened
//!   in part (the agent layer's resume), and the seat is waited for as `run` waits;
//! - a declared seat (the run never reached it) is launched as `run` launches it;
//! - a resolved seat (the run ended between resolving it and recording its token, so no
//!   session counts as launched for it) is recorded failed at step `resume`, never re-forked;
//! - realized external seats and failed seats stay as they are.
//!
//! Nothing is replayed silently: a continued agent is told, and a seat whose token was never
//! recorded is not started again in its place.

use super::runner::{RigRunner, failed_outcome, native_outcome};
use super::seat::SeatOutcome;
use super::{RunError, SeatProgress};
use crate::actors::Pid;
use crate::actors::kernel::process::ProcessRow;
use crate::actors::kernel::status::{PauseReason, SignalKind};
use crate::actors::runtime::Runtime;
use crate::actors::store::ProcessQuery;
use crate::rig::store::{SeatRecord, SeatStatus};
use crate::rig::{Member, RigId, SeatRuntime};
use tokio::sync::watch;

/// The reason a continued process's resume carries.
pub const RESUME_REASON: &str = "continued by agentvisor run --resume";

/// Why a rig cannot be continued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// No rig has this id in the state directory.
    #[error("no rig {rig:?} in this state directory; `agentvisor rig status` lists the rigs")]
    UnknownRig {
        /// The id asked for.
        rig: String,
    },
    /// Every seat of the rig is finished (or failed): there is nothing to continue.
    #[error(
        "rig {rig} has nothing to resume: every seat is finished or failed ({seats}); `agentvisor rig status {rig}` shows them"
    )]
    NothingToResume {
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
    /// The seat store refused.
    #[error(transparent)]
    Run(#[from] RunError),
}

impl ResumeError {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            ResumeError::UnknownRig { .. } => "unknown_rig",
            ResumeError::NothingToResume { .. } => "nothing_to_resume",
            ResumeError::BadSeat { .. } => "bad_seat",
            ResumeError::Run(_) => "seat_store",
        }
    }
}

impl From<crate::rig::store::StoreError> for ResumeError {
    fn from(e: crate::rig::store::StoreError) -> Self {
        ResumeError::Run(RunError::Store(e))
    }
}

/// What to do with one seat.
enum Plan {
    /// Finished: its outcome as it stands.
    Stays(SeatOutcome),
    /// A live native session to continue.
    Continue { member: Member, token: crate::rig::NativeId, pid: Pid },
    /// Never launched: launch it.
    Launch(Member),
}

/// Whether `seats` leave anything to continue: a declared or resolved seat, or a realized
/// native seat whose process is not terminal on `rt` (any view of the state directory).
/// Otherwise a resume is refused with [`ResumeError::NothingToResume`] before anything opens.
pub fn has_work(rt: &Runtime, seats: &[SeatRecord]) -> bool {
    seats.iter().any(|seat| match (seat.status, seat.runtime) {
        (SeatStatus::Declared | SeatStatus::Resolved, _) => true,
        (SeatStatus::Realized, SeatRuntime::Native) => seat
            .pid
            .as_deref()
            .and_then(|p| p.parse().ok())
            .and_then(|pid| rt.process(pid).ok().flatten())
            .is_some_and(|row| !row.status.is_terminal()),
        _ => false,
    })
}

/// The refusal for a rig whose `seats` leave nothing to continue.
pub fn nothing_to_resume(rig: &RigId, seats: &[SeatRecord]) -> ResumeError {
    ResumeError::NothingToResume { rig: rig.to_string(), seats: seat_states(seats) }
}

/// `seats` as a refusal lists them: `member=status`, comma-separated.
pub(super) fn seat_states(seats: &[SeatRecord]) -> String {
    seats.iter().map(|s| format!("{}={}", s.member, s.status)).collect::<Vec<_>>().join(", ")
}

impl RigRunner {
    /// Continues the rig `rig` (see the module documentation) and returns every seat's
    /// outcome, in seat order, once every continued and launched seat has ended.
    pub async fn resume(&self, rig: &RigId) -> Result<Vec<SeatOutcome>, ResumeError> {
        if self.store.rig(rig)?.is_none() {
            return Err(ResumeError::UnknownRig { rig: rig.to_string() });
        }
        let seats = self.store.seats(rig)?;
        if !has_work(&self.rt, &seats) {
            return Err(nothing_to_resume(rig, &seats));
        }
        let mut plans = Vec::with_capacity(seats.len());
        for seat in &seats {
            plans.push(self.plan(rig, seat)?);
        }
        let mut outcomes: Vec<Option<SeatOutcome>> = Vec::new();
        let mut continued = Vec::new();
        let mut launch = Vec::new();
        for (index, plan) in plans.into_iter().enumerate() {
            match plan {
                Plan::Stays(outcome) => outcomes.push(Some(outcome)),
                Plan::Continue { member, token, pid } => {
                    outcomes.push(None);
                    let done = self.begin_continue(rig, &member, pid).await;
                    continued.push((index, member, token, pid, done));
                }
                Plan::Launch(member) => {
                    outcomes.push(None);
                    launch.push((index, member));
                }
            }
        }
        let members: Vec<Member> = launch.iter().map(|(_, m)| m.clone()).collect();
        // Every continued seat already runs; they are waited for in turn while the launched
        // ones run beside them.
        let waits = async {
            let mut ended = Vec::new();
            for (index, member, token, pid, done) in continued {
                ended.push((index, self.finish_continue(&member, &token, pid, done).await));
            }
            ended
        };
        let (continued_outcomes, launched) = tokio::join!(waits, self.launch_all(rig, &members));
        for (index, outcome) in continued_outcomes {
            outcomes[index] = Some(outcome);
        }
        for ((index, _), outcome) in launch.iter().zip(launched) {
            outcomes[*index] = Some(outcome);
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    fn plan(&self, rig: &RigId, seat: &SeatRecord) -> Result<Plan, ResumeError> {
        let member: Member = serde_json::from_str(&seat.member_json).map_err(|e| ResumeError::BadSeat {
            rig: rig.to_string(),
            member: seat.member.to_string(),
            error: e.to_string(),
        })?;
        let stays = |outcome: SeatOutcome| Ok(Plan::Stays(outcome));
        match (seat.status, seat.runtime) {
            (SeatStatus::Declared, _) => Ok(Plan::Launch(member)),
            (SeatStatus::Resolved, _) => {
                let error = "the run ended between resolving this seat and recording its token, so no session \
                             counts as launched for it; none is started in its place";
                self.store.fail(rig, &seat.member, "resume", error, None)?;
                self.report(&member, SeatStatus::Failed, None, format!("failed at resume: {error}"));
                stays(failed_outcome(&member, "resume", error))
            }
            (SeatStatus::Failed, _) => {
                let step = seat.failed_step.as_deref().unwrap_or("unknown");
                stays(failed_outcome(&member, step, seat.error.as_deref().unwrap_or("")))
            }
            (SeatStatus::Realized, SeatRuntime::Native) => {
                let (Some(token), Some(pid)) =
                    (seat.token.clone(), seat.pid.as_deref().and_then(|p| p.parse().ok()))
                else {
                    return stays(failed_outcome(
                        &member,
                        "resume",
                        "a realized native seat without a token or pid",
                    ));
                };
                match self.rt.process(pid) {
                    Ok(Some(row)) if row.status.is_terminal() => {
                        self.report(
                            &member,
                            SeatStatus::Realized,
                            Some(pid),
                            format!("{} (finished before)", row.status),
                        );
                        stays(native_outcome(&self.rt, &member, &token, &row))
                    }
                    Ok(Some(_)) => Ok(Plan::Continue { member, token, pid }),
                    _ => stays(failed_outcome(&member, "resume", &format!("its process {pid} has no row"))),
                }
            }
            (SeatStatus::Realized, runtime) => stays(SeatOutcome {
                member: member.id.to_string(),
                runtime: runtime.to_string(),
                status: SeatStatus::Realized,
                token: seat.token.as_ref().map(|t| t.to_string()),
                source: super::runner::source_value(&member),
                pid: None,
                process_status: None,
                result: None,
                failed_step: None,
                error: None,
                usage: seat.usage,
                stderr: None,
                unrecorded_token: None,
                restored: false,
            }),
        }
    }

    /// Resumes what the runtime paused in a live native seat's subtree. Returns what tells a
    /// later seat forked from this one (`seat:<member>`) that it ended, as in `run`.
    pub(super) async fn begin_continue(
        &self,
        rig: &RigId,
        member: &Member,
        pid: Pid,
    ) -> watch::Sender<Option<Pid>> {
        let (done, receiver) = watch::channel(None);
        self.ended.lock().insert((rig.clone(), member.id.to_string()), receiver);
        // A seat whose token was recorded but whose agent was never released (the run ended
        // in between) is released now, as the run would have released it.
        let agent_ref = member.agent_ref.clone().unwrap_or_default();
        if let Some(host) = self.hosts.get(&agent_ref)
            && let Err(e) = host.release_if_held(&self.rt, pid).await
        {
            tracing::warn!(%pid, error = %e, "failed to release a held seat");
        }
        let mut resumed = 0usize;
        for row in live_subtree(&self.rt, pid) {
            let paused_by_runtime = row.host_gate.is_none()
                && row.pause_reason.as_ref().is_some_and(PauseReason::left_by_the_runtime);
            if paused_by_runtime
                && self.rt.signal(row.pid, SignalKind::Resume, Some(RESUME_REASON.into())).await.is_ok()
            {
                resumed += 1;
            }
        }
        self.report(
            member,
            SeatStatus::Realized,
            Some(pid),
            format!("continued from its last checkpointed turn ({resumed} processes)"),
        );
        done
    }

    /// Waits for a continued seat's process to end.
    async fn finish_continue(
        &self,
        member: &Member,
        token: &crate::rig::NativeId,
        pid: Pid,
        done: watch::Sender<Option<Pid>>,
    ) -> SeatOutcome {
        let outcome = match self.rt.wait_terminal(pid).await {
            Ok(row) => {
                self.report(member, SeatStatus::Realized, Some(pid), format!("{} (continued)", row.status));
                native_outcome(&self.rt, member, token, &row)
            }
            Err(e) => failed_outcome(member, "run", &e.to_string()),
        };
        let _ = done.send(Some(pid));
        outcome
    }

    pub(super) fn report(&self, member: &Member, status: SeatStatus, pid: Option<Pid>, note: String) {
        let id = member.id.to_string();
        self.progress.send_modify(|seats| {
            seats.insert(id.clone(), SeatProgress { member: id, status, pid, note });
        });
    }
}

/// A process and its live descendants, parents before children.
fn live_subtree(rt: &Runtime, root: Pid) -> Vec<ProcessRow> {
    let mut out = Vec::new();
    let mut pending = vec![root];
    while let Some(pid) = pending.pop() {
        if let Ok(Some(row)) = rt.process(pid)
            && !row.status.is_terminal()
        {
            out.push(row);
        }
        let children = rt
            .processes(ProcessQuery { parent: Some(pid), include_terminal: false, ..ProcessQuery::default() })
            .unwrap_or_default();
        pending.extend(children.into_iter().map(|c| c.pid).rev());
    }
    out
}
