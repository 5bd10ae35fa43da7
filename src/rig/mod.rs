//! Rigs: a declared set of seats (members) run together, each seat an agent session on one
//! runtime — `native` (an agentvisor agent), `claude-code`, `codex`, or `terminal` — that may
//! start from a prior conversation source (`session_source`, mode `fork`). See `docs/rigs.md`.
//!
//! - `types.rs`: the checked rig types (`RigSpec`, `Member`, `SeatRuntime`, `SessionSource`,
//!   `RestorePolicy`, `Pod`, `Edge`, `EdgeKind`).
//! - `spec/`: rig specs from YAML, flat or OpenRig-shaped, checked in one pass (`parse_rig`, `load_rig`,
//!   `parse_members`, `parse_expansion`, `check_expansion`, `RigSpecReport`).
//! - `adapter/`: the seat adapters (`SeatAdapter`: Claude Code, Codex, terminal) and the one
//!   command wrapper that runs a seat's runtime command.
//! - `run/`: the runner: agent hosts for native seats, launching and persisting every seat.
//! - `store/`: seats' persisted state, declared → resolved → realized or failed (`SeatStore`,
//!   `SqliteSeatStore`, `MemorySeatStore`, `FailingSeatStore`).
//! - `limits.rs`: the rig layer's bounds.

pub mod adapter;
pub mod limits;
pub mod run;
mod spec;
pub mod store;
mod types;

pub use spec::{
    LoadRigError, RigProblem, RigProblemCode, RigSpecReport, check_expansion, check_expansion_ids, load_rig,
    parse_expansion, parse_members, parse_rig,
};
pub use types::{
    Edge, EdgeKind, Member, MemberId, NativeId, Pod, RestorePolicy, RigId, RigSpec, SeatRuntime,
    SessionSource,
};
