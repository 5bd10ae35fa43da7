//! Refusal codes that more than one rule (or more than one crate) answers with, spelled once.

/// Malformed arguments: a bad shape, a missing or unknown field, a bad id, a name given twice.
/// The message names what to fix.
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";

/// Anything asked of a process that has ended (a signal, a message, a delegation, a
/// transition).
pub const PROCESS_TERMINAL: &str = "process_terminal";
