//! The agentvisor process kernel.
//!
//! Three layers, each using only the one below it:
//!
//! - [`kernel`]: pure state and rules — ids, the process row and its status machine,
//!   capabilities, budgets, launch decisions. No tokio, no I/O, no clock reads.
//! - [`store`]: the durable record of that state behind the [`store::Store`] trait, with an
//!   embedded SQLite default and an in-memory store for tests and benches.
//! - [`runtime`]: the ractor shell — one actor per live process, a root supervisor, the
//!   host API, and the program context through which a process makes its tool calls.
//!
//! The JSON tool surface lives in the root crate; it drives the kernel through the typed calls
//! in [`runtime::calls`].

pub mod compact;
pub mod kernel;
pub mod limits;
mod pairs;
pub mod runtime;
pub mod store;
pub mod text;

pub use kernel::ids::{Epoch, GrantId, ImageId, Oid, Pid};
pub use kernel::status::{Outcome, Status, WaitState};
