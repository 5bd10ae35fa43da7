//! Rig specs from YAML: a rig id and its members, each a seat on one runtime that may start
//! from a prior conversation source. The format, every field and every problem code are in
//! `docs/rigs.md`.
//!
//! Two stages, as for agent configurations:
//!
//! 1. **Parse** the text into raw serde types that refuse unknown fields and leave every value
//!    optional, each value with its place in the file. A text that is not YAML of the spec's
//!    shape is refused here, as one problem with its line.
//! 2. **Check** the whole spec in one pass: a [`RigSpec`](crate::rig::RigSpec), whose values the
//!    check vouches for, or a [`RigSpecReport`] naming every problem with its path, line and
//!    column, stable code, and what to do.
//!
//! `session_source` follows the v1 rules: `mode: fork` from `ref.kind: native_id` with a
//! `value`, and never on a `terminal` member. Every other mode and kind is refused before
//! launch with its own code (`unsupported_mode`, `deferred_ref_kind`, `weaker_ref_kind`,
//! `wrong_mode_ref_kind`, `unknown_ref_kind`), so no runtime adapter ever sees one.
//!
//! ```
//! let rig = agentvisor::rig::parse_rig(
//!     "
//! id: review-rig
//! members:
//!   - id: reviewer-2
//!     runtime: claude-code
//!     session_source:
//!       mode: fork
//!       ref: {kind: native_id, value: 0b0165d7-cb4d-4650-90de-15c0a1ede9e6}
//! ",
//! )
//! .expect("a valid rig spec");
//! assert_eq!(rig.members[0].cwd, ".");
//!
//! let report = agentvisor::rig::parse_rig("id: r\nmembers:\n  - {id: t, runtime: terminal, session_source: {}}\n")
//!     .expect_err("a terminal seat takes no session source");
//! assert_eq!(report.problems[0].code().as_str(), "terminal_session_source");
//! assert_eq!(report.problems[0].line, Some(3));
//! ```

mod check;
mod error;
mod expand;
mod parse;
mod raw;
mod report;
mod text;
mod yaml;

pub use error::LoadRigError;
pub use expand::{check_expansion, check_expansion_ids};
pub use parse::{load_rig, parse_expansion, parse_members, parse_rig};
pub use report::{RigProblem, RigProblemCode, RigSpecReport};
