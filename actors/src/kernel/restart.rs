//! Restart policies: OTP's supervisor semantics for child processes.
//!
//! A child is launched with a [`RestartPolicy`] (`permanent`, `transient`, or the default
//! `temporary`), and a process declares a [`Supervision`] (strategy, intensity, period) for its
//! own children. When a child ends, its parent decides here whether it is restarted
//! ([`RestartPolicy::restarts_after`]), whether the restart fits the intensity
//! ([`Supervision::admit`]), and which siblings restart with it ([`Strategy::group`]).
//!
//! A restart is a new launch from the child's kept [`ChildSpec`]: a new pid, the same child id
//! (the first incarnation's pid), the next incarnation number, a generation continuing from
//! the ended incarnation's. The ended row keeps its outcome: terminal is final. Times are
//! inputs (milliseconds from the runtime's clock); nothing here reads a clock.

use super::ids::Pid;
use super::launch::LaunchRequest;
use super::process::ProcessRow;
use super::status::{Outcome, Sender};
use crate::limits;
use serde::{Deserialize, Serialize};

/// When a child is restarted after it ends.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    /// Restarted whenever it ends, unless its parent or the host cancelled or terminated it.
    Permanent,
    /// Restarted only when it ends abnormally (`failed`): not after an exit, not when killed.
    Transient,
    /// Never restarted (the default).
    #[default]
    Temporary,
}

impl RestartPolicy {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Permanent => "permanent",
            RestartPolicy::Transient => "transient",
            RestartPolicy::Temporary => "temporary",
        }
    }

    /// Whether a child of `parent` with this policy is restarted after ending with `outcome`.
    pub fn restarts_after(self, outcome: &Outcome, parent: Pid) -> bool {
        match self {
            RestartPolicy::Temporary => false,
            RestartPolicy::Transient => matches!(outcome, Outcome::Failed { .. }),
            RestartPolicy::Permanent => match outcome {
                Outcome::Killed { sender, .. } => {
                    !matches!(sender, Sender::Host) && *sender != Sender::Process(parent)
                }
                Outcome::Exited { .. } | Outcome::Failed { .. } => true,
            },
        }
    }
}

/// Which children restart when one of them needs a restart.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Only the child that ended (the default).
    #[default]
    OneForOne,
    /// Every restartable child: the live ones are stopped, then all restart in launch order.
    OneForAll,
    /// The child that ended and the restartable children launched after it.
    RestForOne,
}

impl Strategy {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::OneForOne => "one_for_one",
            Strategy::OneForAll => "one_for_all",
            Strategy::RestForOne => "rest_for_one",
        }
    }

    /// The live siblings to stop and restart with a child launched `seq`-th: restartable
    /// (not `temporary`) siblings, all of them for `one_for_all`, those launched later for
    /// `rest_for_one`, none for `one_for_one`. In launch order.
    pub fn group<'a>(self, seq: u64, live_siblings: impl IntoIterator<Item = &'a ProcessRow>) -> Vec<Pid> {
        let mut group: Vec<(u64, Pid)> = live_siblings
            .into_iter()
            .filter_map(|row| {
                let spec = row.restart.spec.as_ref()?;
                let member = row.restart.policy != RestartPolicy::Temporary
                    && match self {
                        Strategy::OneForOne => false,
                        Strategy::OneForAll => true,
                        Strategy::RestForOne => spec.seq > seq,
                    };
                member.then_some((spec.seq, row.pid))
            })
            .collect();
        group.sort();
        group.into_iter().map(|(_, pid)| pid).collect()
    }
}

/// How a process supervises its children: OTP's strategy, intensity and period.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Supervision {
    /// Which children restart together (default `one_for_one`).
    #[serde(default)]
    pub strategy: Strategy,
    /// How many restarts are allowed within `period_ms` (default 1); one more fails the
    /// supervising process with `restart_intensity_exceeded`.
    #[serde(default = "default_intensity")]
    pub intensity: u32,
    /// The sliding window the intensity counts restarts in, in milliseconds (default 5000).
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
}

fn default_intensity() -> u32 {
    Supervision::DEFAULT.intensity
}

fn default_period_ms() -> u64 {
    Supervision::DEFAULT.period_ms
}

impl Supervision {
    /// OTP's defaults: `one_for_one`, at most 1 restart in 5000 ms.
    pub const DEFAULT: Supervision =
        Supervision { strategy: Strategy::OneForOne, intensity: 1, period_ms: 5000 };

    /// Admits one more restart at `now_ms` given the supervisor's `history`, or says by how
    /// much it exceeds the intensity. Only performed restarts within the period count.
    pub fn admit(&self, history: &[RestartRecord], now_ms: u64) -> Result<(), IntensityExceeded> {
        let recent = history
            .iter()
            .filter(|r| {
                r.refused.is_none()
                    && r.sibling_of.is_none()
                    && now_ms.saturating_sub(r.at_ms) < self.period_ms
            })
            .count();
        let count = u32::try_from(recent).unwrap_or(u32::MAX).saturating_add(1);
        if count > self.intensity {
            return Err(IntensityExceeded { count, intensity: self.intensity, period_ms: self.period_ms });
        }
        Ok(())
    }
}

impl Default for Supervision {
    fn default() -> Self {
        Supervision::DEFAULT
    }
}

/// One restart more than the intensity allows.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("restart {count} within {period_ms} ms exceeds the intensity of {intensity}")]
pub struct IntensityExceeded {
    /// The restart that was asked for, counting the ones within the period.
    pub count: u32,
    /// The supervisor's intensity.
    pub intensity: u32,
    /// The supervisor's period.
    pub period_ms: u64,
}

/// What a restartable child keeps so that it can be launched again.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ChildSpec {
    /// The launch request it was first launched with (without its idempotency key).
    pub request: LaunchRequest,
    /// Its place in its parent's launch order; kept across restarts.
    pub seq: u64,
    /// Its first incarnation's pid: the child's stable id across restarts.
    pub child_id: Pid,
    /// 0 for the first launch, +1 per restart.
    pub incarnation: u32,
    /// The incarnation it replaced, for a restart.
    pub restart_of: Option<Pid>,
}

/// One restart decision a supervisor made, kept on its row.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RestartRecord {
    /// When, in milliseconds since the Unix epoch by the runtime's clock.
    pub at_ms: u64,
    /// The child's stable id.
    pub child_id: Pid,
    /// The incarnation that ended.
    pub old_pid: Pid,
    /// The new incarnation, unless refused.
    pub new_pid: Option<Pid>,
    /// The new incarnation's number.
    pub incarnation: u32,
    /// The new incarnation's first generation (the ended one's + 1).
    pub state_generation: u64,
    /// Why: the ended incarnation's outcome in a few words, or the sibling that needed it.
    pub reason: String,
    /// Why the restart was not done (`budget: …`, `capability: …`), if it was not.
    pub refused: Option<String>,
    /// For a sibling stopped and restarted with another child (`one_for_all`,
    /// `rest_for_one`): that child's id. Only the restart it triggered counts toward the
    /// intensity.
    #[serde(default)]
    pub sibling_of: Option<Pid>,
}

/// A process's supervision state, on its row: how it restarts (as a child) and how it
/// supervises (as a parent).
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct RestartState {
    /// Its own policy as a child.
    #[serde(default)]
    pub policy: RestartPolicy,
    /// What it is relaunched from; present for every `permanent` or `transient` child. Boxed:
    /// most processes are temporary, and every row (in the store and in the process's state)
    /// would otherwise carry a launch request's worth of bytes inline.
    #[serde(default)]
    pub spec: Option<Box<ChildSpec>>,
    /// How it supervises its children; `None` means [`Supervision::DEFAULT`].
    #[serde(default)]
    pub supervision: Option<Supervision>,
    /// The restarts it made, oldest first, at most [`limits::RESTART_HISTORY_MAX`].
    #[serde(default)]
    pub history: Vec<RestartRecord>,
}

impl RestartState {
    /// Whether this is the default (a temporary child that supervised nothing).
    pub fn is_default(&self) -> bool {
        *self == RestartState::default()
    }

    /// Its supervision, or the default.
    pub fn supervision(&self) -> Supervision {
        self.supervision.unwrap_or_default()
    }

    /// Appends a record, dropping the oldest past the bound.
    pub fn record(&mut self, record: RestartRecord) {
        self.history.push(record);
        let excess = self.history.len().saturating_sub(limits::RESTART_HISTORY_MAX);
        self.history.drain(..excess);
    }

    /// The state of a child launched `seq`-th with `request` as pid `pid`.
    pub fn launched(request: &LaunchRequest, seq: u64, pid: Pid) -> RestartState {
        let spec = (request.restart != RestartPolicy::Temporary).then(|| {
            Box::new(ChildSpec {
                request: LaunchRequest { launch_key: None, ..request.clone() },
                seq,
                child_id: pid,
                incarnation: 0,
                restart_of: None,
            })
        });
        RestartState { policy: request.restart, spec, supervision: request.supervision, history: Vec::new() }
    }
}
