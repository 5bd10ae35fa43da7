//! Pure kernel state and rules.
//!
//! Everything here is a function of (state, input): no tokio, no clock, no I/O, no randomness.
//! Fresh ids and the current time are inputs supplied by the runtime.

pub mod budget;
pub mod capability;
pub mod codes;
pub mod ids;
pub mod launch;
pub mod mailbox;
pub mod objects;
pub mod path;
pub mod process;
pub mod restart;
pub mod status;
