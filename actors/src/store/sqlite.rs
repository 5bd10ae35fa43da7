//! Placeholder: the SQLite store is being written in its own module.
#![allow(missing_docs, unreachable_pub)]
/// The SQLite store (not yet implemented in this placeholder).
pub struct SqliteStore;
