//! Every bound the rig layer enforces, in one place, each with the reason for its value.

/// Largest rig spec (or `rig expand` payload) accepted, in bytes. A rig is a page of YAML
/// naming a handful of seats; the bound keeps a mistaken path (a log, a binary) from reaching
/// the parser, and bounds the work of the check.
pub const RIG_SPEC_BYTES_MAX: usize = 256 * 1024;

/// Most members one rig holds, an expansion's new members included. Every member is a live
/// seat (an agent, a Claude Code or Codex session, a terminal) that someone watches; past a
/// few dozen a rig is a fleet and wants another tool.
pub const MEMBERS_MAX: usize = 128;

/// Longest rig or member id, in bytes; for a member of an OpenRig pod, its qualified id
/// `<pod>.<member>`. Ids appear in every status line and problem report, and name seats on the
/// command line; they stay short words.
pub const RIG_ID_BYTES_MAX: usize = 64;

/// Longest native id in a `session_source` reference, in bytes. Claude Code session ids and
/// Codex thread ids are UUIDs (36 bytes); 256 leaves room for other runtimes' tokens while
/// refusing a pasted transcript.
pub const NATIVE_ID_BYTES_MAX: usize = 256;

/// Longest `agent_ref` or `cwd`, in bytes: Linux's `PATH_MAX`.
pub const PATH_BYTES_MAX: usize = 4096;

/// Longest opening `prompt`, in bytes. The prompt is a seat's first message; 64 KiB is about
/// 16k tokens, already more than an opening message should spend.
pub const PROMPT_BYTES_MAX: usize = 64 * 1024;

/// Most problems one report lists. A spec wrong everywhere (a different file named by mistake)
/// would otherwise print a problem per line of it; past this the report says how many more it
/// left out.
pub const REPORT_PROBLEMS_MAX: usize = 200;

/// How many times a seat store write that may pass (the file locked by another process, a
/// failed write) is tried before the run reports it, 5: with [`STORE_WRITE_BACKOFF`] doubling
/// from 50 ms that is 1.5 s of waiting, longer than any one seat write holds the lock and
/// short enough that a person waiting on Ctrl-C is not kept.
pub const STORE_WRITE_ATTEMPTS: u32 = 5;

/// The first wait between two tries of a seat store write, 50 ms, doubled after each.
pub const STORE_WRITE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// Most edges one rig holds, its pods' and its top-level ones together. An edge is a relation
/// someone drew between two seats; eight per member of the largest rig is far past what a
/// person reads, and the bound keeps the check's endpoint lookups small.
pub const EDGES_MAX: usize = 8 * MEMBERS_MAX;

/// Longest OpenRig `version`, in bytes. A version is a short label (`1`, `0.1`, `2026-12`).
pub const VERSION_BYTES_MAX: usize = 64;

/// Longest pod `label`, in bytes. A label names a pod on one status line.
pub const LABEL_BYTES_MAX: usize = 256;

/// Longest OpenRig `summary`, in bytes: a paragraph or two saying what the rig is for.
pub const SUMMARY_BYTES_MAX: usize = 4096;

/// Longest excerpt of an agent configuration's refusal an `agent_config_invalid` problem
/// quotes, in bytes: its first problems, enough to say what is wrong on one line; the
/// configuration's own check says the rest.
pub const CONFIG_EXCERPT_BYTES_MAX: usize = 400;
