//! Rig specs from YAML, in two shapes: **flat** (a rig `id` and its `members`) and **OpenRig**
//! (a `name`, a `version`, and `pods` of members with edges between them; a pod member's id is
//! qualified, `<pod>.<member>`). Each member is a seat on one runtime that may start from a
//! prior conversation source. The format, every field and every problem code are in
//! `docs/rigs.md`.
//!
//! Two stages, as for agent configurations:
//!
//! 1. **Parse** the text into raw serde types that refuse unknown fields and leave every value
//!    optional, each value with its place in the file. A text that is not YAML of the spec's
//!    shape is refused here, as one problem with its line.
//! 2. **Check** the whole spec in one pass: a [`RigSpec`](crate::rig::RigSpec), whose values the
//!    check vouches for, or a [`RigSpecReport`] naming every problem with its path, line and
//!    column, stable code, and what to do. [`load_rig`] reads each member's agent configuration
//!    in the same pass and checks the member's `profile` against it.
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
//!
//! let rig = agentvisor::rig::parse_rig(
//!     "
//! name: review-rig
//! version: 1
//! pods:
//!   - id: review
//!     members:
//!       - {id: alice, runtime: claude-code, agent_ref: 'local:agents.yaml', profile: reviewer}
//!       - {id: shell, runtime: terminal, agent_ref: 'builtin:terminal', profile: none}
//!     edges:
//!       - {kind: can_observe, from: alice, to: shell}
//! ",
//! )
//! .expect("a valid OpenRig spec");
//! assert_eq!(rig.members[0].id.as_str(), "review.alice");
//! assert_eq!(rig.members[0].agent_ref.as_deref(), Some("agents.yaml"));
//! assert_eq!((rig.members[1].agent_ref.as_deref(), rig.members[1].profile.as_deref()), (None, None));
//! assert_eq!(rig.edges[0].to.as_str(), "review.shell");
//!
//! let report = agentvisor::rig::parse_rig("id: r\npods:\n  - {id: p, members: [{id: a, runtime: codex}]}\n")
//!     .expect_err("one shape per spec");
//! assert_eq!(report.problems[0].code().as_str(), "mixed_shapes");
//! assert_eq!(report.problems[0].path, "id");
//! ```

mod check;
mod error;
mod expand;
mod parse;
mod raw;
mod report;
mod text;
mod yaml;

pub(crate) use check::profile_refusal;
pub use error::LoadRigError;
pub use expand::{check_expansion, check_expansion_ids};
pub use parse::{load_rig, parse_expansion, parse_members, parse_rig};
pub use report::{RigProblem, RigProblemCode, RigSpecReport};
