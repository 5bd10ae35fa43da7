//! Agent configuration: brains, profiles and declared state machines, loaded from YAML or
//! TOML and checked as a whole before anything launches.
//!
//! Two stages, so that a value that exists is a valid one ("parse, don't validate"):
//!
//! 1. **Parse** ([`parse_yaml`], [`parse_toml`]) into the raw file format, [`AgentConfig`]:
//!    plain serde types that refuse unknown fields and leave every required value optional,
//!    so that leaving one out is reported with everything else rather than alone.
//! 2. **Check** ([`check`]) the whole configuration in one pass: a [`CheckedConfig`], whose
//!    types can only be built by the check, or a [`LaunchReport`] naming every value that
//!    cannot be honoured as written and every required value left out, each with its path,
//!    stable code, the capability that comes up short, and what to do.
//!
//! [`load_yaml`], [`load_toml`] and [`load_path`] do both. The format, every field and every
//! problem code are in `docs/agent-config.md`.
//!
//! ```
//! let config = agentvisor::agent::config::load_yaml(
//!     "
//! brains:
//!   - {id: demo, kind: scripted, script: echo}
//! profiles:
//!   - id: solo
//!     brain: demo
//!     window_tokens: 32000
//!     capabilities: {tasks: true}
//! ",
//! )
//! .expect("a valid configuration");
//! assert_eq!(config.profile("solo").map(|p| p.window_tokens().get()), Some(32000));
//! ```

mod brain_ref;
mod budget;
mod capability;
mod check;
mod checked;
mod error;
mod external;
mod ids;
mod machine;
mod parse;
mod profile;
mod prompt;
mod report;
mod telemetry;
mod words;

pub use brain_ref::{BrainBackend, BrainKind, BrainSpec, HttpSettings, RawFloat};
pub use budget::{AgentBudget, Guards};
pub use capability::{Capability, CapabilitySet, ChildProcesses, Memories, MemoryScope, ProgramLibrary};
pub use check::check;
pub use checked::CheckedConfig;
pub use error::{ConfigFormat, LoadError, ParseError};
pub use external::{
    CLAUDE_PERMISSION_MODES, CODEX_APPROVAL_POLICIES, CODEX_SANDBOXES, CliSettings, EnvValue,
    ExternalProfile, ExternalRuntime, MissingEnv, ProfileRuntime,
};
pub use ids::{BrainId, IdError, MachineId, ProfileId, StateId, Target};
pub use machine::{Machine, State};
pub(crate) use parse::take_out;
pub use parse::{AgentConfig, load_path, load_toml, load_yaml, parse_toml, parse_yaml};
pub use profile::{Compaction, CompactionKind, CompactionStrategy, Profile};
pub use prompt::{DEFAULT_SYSTEM_PROMPT, PromptTemplate, PromptVar, Segment, TemplateError};
pub use report::{LaunchReport, Problem, ProblemCode};
pub use telemetry::TelemetrySettings;
pub use words::{plain_words, problem_count};

/// The file format's entries as written, below [`AgentConfig`]: what [`check`] reads.
pub mod raw {
    pub use super::brain_ref::{RawBrain, RawPrices};
    pub use super::budget::{RawBudget, RawGuards};
    pub use super::capability::{
        RawCapabilities, RawEntry, RawMemories, RawProgramLibrary, RawSwitch, Switchable,
    };
    pub use super::external::{RawCli, RawEnvValue};
    pub use super::machine::{RawMachine, RawState, RawTransition};
    pub use super::profile::{RawCompaction, RawProfile};
    pub use super::telemetry::RawTelemetry;
}
