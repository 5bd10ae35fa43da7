//! The launch report: every problem the launch check found, in one pass.

use super::capability::Capability;
use std::fmt;

macro_rules! problem_codes {
    ($($(#[$doc:meta])* $variant:ident = $code:literal,)*) => {
        /// What is wrong, as a stable machine code (`ProblemCode::as_str`, snake_case).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum ProblemCode {
            $($(#[$doc])* $variant,)*
        }

        impl ProblemCode {
            /// Every code, in the order `docs/agent-config.md` lists them.
            pub const ALL: &'static [ProblemCode] = &[$(ProblemCode::$variant,)*];

            /// The stable snake_case code.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ProblemCode::$variant => $code,)*
                }
            }
        }
    };
}

problem_codes! {
    /// A required value is left out (or written empty).
    MissingField = "missing_field",
    /// An id does not follow the id syntax.
    InvalidId = "invalid_id",
    /// An id is used twice where ids must be unique.
    DuplicateId = "duplicate_id",
    /// A list or text is longer than its named limit.
    LimitExceeded = "limit_exceeded",
    /// The configuration declares no profile.
    NoProfiles = "no_profiles",
    /// A brain field that its kind does not use.
    FieldNotForKind = "field_not_for_kind",
    /// A machine runs an external (Claude Code or Codex) profile as a state.
    ExternalInMachine = "external_in_machine",
    /// An `openai` brain's `base_url` is not `http://` or `https://`.
    InvalidBaseUrl = "invalid_base_url",
    /// An `api_key_env` that is not an environment variable name (a key pasted in, say).
    InvalidEnvVarName = "invalid_env_var_name",
    /// An HTTP brain setting (timeout, sampling, stop, retries) outside its bounds.
    SettingOutOfRange = "setting_out_of_range",
    /// An extra header that is not a valid or allowed HTTP header.
    InvalidHeader = "invalid_header",
    /// A money amount (a price, a budget's cost) that is not a decimal dollar string.
    InvalidMoney = "invalid_money",
    /// A budget or guard value outside its bounds.
    BudgetOutOfRange = "budget_out_of_range",
    /// A profile or summarizer names a brain that is not declared.
    UnknownBrain = "unknown_brain",
    /// A window of zero tokens.
    WindowZero = "window_zero",
    /// A window above `WINDOW_TOKENS_MAX`.
    WindowTooLarge = "window_too_large",
    /// A system-prompt template that cannot be parsed.
    PromptTemplateInvalid = "prompt_template_invalid",
    /// A roster names an id that is neither a profile nor a machine.
    UnknownRosterId = "unknown_roster_id",
    /// A roster names an id twice.
    DuplicateRosterId = "duplicate_roster_id",
    /// A roster names a machine-state profile directly, outside its machine.
    RosterNamesStateProfile = "roster_names_state_profile",
    /// A non-empty roster on a profile with neither `subagents` nor `exec`.
    RosterUnused = "roster_unused",
    /// `history: false`.
    HistoryDisabled = "history_disabled",
    /// A program library retention outside its limits.
    ProgramRetentionOutOfRange = "program_retention_out_of_range",
    /// A program id length outside its limits.
    ProgramIdLengthOutOfRange = "program_id_length_out_of_range",
    /// `child_processes.child_agent` names neither a profile nor a machine.
    UnknownChildAgent = "unknown_child_agent",
    /// `child_processes.tools` names a tool the process skill cannot offer.
    UnknownChildProcessTool = "unknown_child_process_tool",
    /// `exec` with an empty roster.
    ExecEmptyRoster = "exec_empty_roster",
    /// `exec` on a profile a machine runs as a state.
    ExecInMachineState = "exec_in_machine_state",
    /// `fork` without `subagents`.
    ForkWithoutSubagents = "fork_without_subagents",
    /// `subagents` with an empty roster and no `fork`.
    SubagentsEmptyRoster = "subagents_empty_roster",
    /// `transition_state` on a profile no machine runs as a state.
    TransitionStateOutsideMachine = "transition_state_outside_machine",
    /// A profile a machine runs as a state with moves out of it, without `transition_state`.
    TransitionStateMissing = "transition_state_missing",
    /// `transition_state` on a profile whose every state is final.
    TransitionStateWithoutTransitions = "transition_state_without_transitions",
    /// A `summarizer` with the `truncate` strategy.
    SummarizerWithoutSummarize = "summarizer_without_summarize",
    /// A compaction trigger outside 1 to 100 percent.
    CompactionTriggerOutOfRange = "compaction_trigger_out_of_range",
    /// A machine with no states.
    MachineEmpty = "machine_empty",
    /// A machine's entry is not one of its states.
    UnknownEntryState = "unknown_entry_state",
    /// A state names a profile that is not declared.
    UnknownStateProfile = "unknown_state_profile",
    /// A transition names a state that is not declared.
    UnknownTransitionState = "unknown_transition_state",
    /// A transition written twice.
    DuplicateTransition = "duplicate_transition",
    /// A state no sequence of transitions reaches from the entry.
    UnreachableState = "unreachable_state",
    /// A `telemetry.redact` literal too short to be a secret.
    RedactLiteralTooShort = "redact_literal_too_short",
}

impl fmt::Display for ProblemCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One value the launch check cannot honour as written, or one required value left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where, as a dotted path into the configuration: `profiles.planner.capabilities.exec`,
    /// `machines.review.transitions[2].to`. An entry whose id is missing, invalid or used twice
    /// is named by its index instead: `profiles[3].id`.
    pub path: String,
    /// The capability that comes up short, when the problem is one capability's.
    pub capability: Option<Capability>,
    /// What is wrong, as a stable code.
    pub code: ProblemCode,
    /// A sentence that says what is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `path: message (code; capability exec)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({}", self.path, self.message, self.code)?;
        if let Some(capability) = self.capability {
            write!(f, "; capability {capability}")?;
        }
        f.write_str(")")
    }
}

/// Every problem the launch check found, in the order of the configuration. Never empty: a
/// configuration without problems is a [`CheckedConfig`](super::CheckedConfig).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchReport {
    problems: Vec<Problem>,
}

impl LaunchReport {
    pub(super) fn new(problems: Vec<Problem>) -> Self {
        assert!(!problems.is_empty(), "a launch report names at least one problem");
        LaunchReport { problems }
    }

    /// The problems, in the order found (brains, profiles, machines; each in file order).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The problems' codes, in order.
    pub fn codes(&self) -> impl Iterator<Item = ProblemCode> + '_ {
        self.problems.iter().map(|p| p.code)
    }
}

impl fmt::Display for LaunchReport {
    /// One problem per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LaunchReport {}
