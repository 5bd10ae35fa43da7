//! Running a rig: the agent hosts its native seats run on, the runner that launches every
//! seat and persists its state, and each seat's outcome.

mod delegation;
mod hosts;
mod persist;
mod restore;
mod resume;
mod runner;
mod seat;
mod settings;

pub use delegation::DELEGATION_CHANNEL;
pub use hosts::{HostError, RigHosts, scripts_beside};
pub use restore::{RESTORE_PROMPT, RESTORE_STEP, RestoreError, restores_on_run, seats_to_restore};
pub use resume::{RESUME_REASON, ResumeError, has_work, nothing_to_resume};
pub use runner::{
    Adapters, EXTERNAL_COMMAND_TIMEOUT, INTERRUPTED_STEP, RigRunner, RunError, SEAT_REF_PREFIX, SeatProgress,
};
pub use seat::SeatOutcome;
