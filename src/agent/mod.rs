//! The agent layer: agents running on kernel processes.
//!
//! An agent is a profile (brain, window limit, system-prompt template, delegation roster,
//! capability set, compaction strategy) and the modules its capabilities hold: `history`
//! always, and the task list, notebook, memories and program library when enabled. Agents
//! change what they are with `exec`, copy themselves with `fork`, and run declared processes
//! as state machines whose states each name a profile.
//!
//! Its parts:
//!
//! - [`brain`]: the `Brain` trait (a window in, the model's next turn out), the scripted and
//!   OpenAI-compatible brains, the conversation types and the token estimator.
//! - [`code`]: responses-as-code, programs the model writes run in an embedded JavaScript
//!   interpreter whose functions are the agent's tools, within limits.
//! - [`compaction`]: when a window is compacted, where it is cut, and the `truncate` and
//!   `summarize` strategies.
//! - [`config`]: loading brains, profiles and machines from YAML or TOML, and the launch
//!   check that refuses a configuration naming every value it cannot honour, in one pass.
//! - [`telemetry`]: typed agent events, one stream per incarnation, kept in memory,
//!   broadcast, and appended to a JSONL file that `agentvisor events` reads.
//! - [`window`]: the conversation window, a persistent structure, so that fork copies it in
//!   O(1) and a durable fork writes only new chunks.
//! - [`modules`]: the task list, notebook, memories and program library as serializable
//!   data, the module tool calls, and the exec module table.
//! - [`run`]: agents on processes: the turn loop, exec, fork, state machines, turn finality,
//!   modules as kernel objects, checkpoints and cost (`docs/agents.md`).
//! - [`limits`]: the agent layer's named bounds.
//!
//! The agent layer uses the kernel ([`crate::actors`]) only through its public API.

pub mod brain;
pub mod code;
pub mod compaction;
pub mod config;
pub mod external;
pub mod limits;
pub mod modules;
pub mod money;
pub mod run;
pub mod telemetry;
pub mod window;
