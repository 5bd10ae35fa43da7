//! The rig spec report: every problem found in one pass, each with its place in the file.

use std::fmt;

macro_rules! rig_problem_codes {
    ($($(#[$doc:meta])* $variant:ident = $code:literal,)*) => {
        /// What is wrong, as a stable machine code ([`RigProblemCode::as_str`], snake_case).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum RigProblemCode {
            $($(#[$doc])* $variant,)*
        }

        impl RigProblemCode {
            /// Every code, in the order `docs/rigs.md` lists them.
            pub const ALL: &'static [RigProblemCode] = &[$(RigProblemCode::$variant,)*];

            /// The stable snake_case code.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RigProblemCode::$variant => $code,)*
                }
            }
        }
    };
}

rig_problem_codes! {
    /// The text is not YAML of the rig spec's shape (malformed, or a value of the wrong type).
    /// The parser stops at the first such fault, so it is the only problem reported.
    InvalidYaml = "invalid_yaml",
    /// A field the format does not have (a typo, or a field of another format).
    UnknownField = "unknown_field",
    /// A mapping names the same key twice.
    DuplicateKey = "duplicate_key",
    /// A text, list or file is longer than its named limit.
    LimitExceeded = "limit_exceeded",
    /// The report left problems out past `REPORT_PROBLEMS_MAX`.
    TooManyProblems = "too_many_problems",
    /// A required value is left out (or written empty).
    MissingField = "missing_field",
    /// An optional text written empty.
    EmptyField = "empty_field",
    /// A path or text holding a control character.
    InvalidText = "invalid_text",
    /// A rig or member id (or a profile id) that does not follow the id syntax.
    InvalidId = "invalid_id",
    /// A member id used twice in the rig, or already used by the rig an expansion adds to.
    DuplicateId = "duplicate_id",
    /// A rig (or an expansion) with no member.
    NoMembers = "no_members",
    /// A runtime other than `native`, `claude-code`, `codex` and `terminal`.
    UnknownRuntime = "unknown_runtime",
    /// A `session_source` on a `terminal` member.
    TerminalSessionSource = "terminal_session_source",
    /// A `session_source` mode other than `fork`.
    UnsupportedMode = "unsupported_mode",
    /// `ref.kind: artifact_path`: deferred, not accepted in v1.
    DeferredRefKind = "deferred_ref_kind",
    /// `ref.kind: name` or `last`: a weaker reference than a native id.
    WeakerRefKind = "weaker_ref_kind",
    /// `ref.kind: artifact_set`: describes an artifact-backed rebuild, not a native fork.
    WrongModeRefKind = "wrong_mode_ref_kind",
    /// A `ref.kind` that names no kind at all.
    UnknownRefKind = "unknown_ref_kind",
    /// `ref.kind: native_id` without a `value`, or with an empty one.
    MissingRefValue = "missing_ref_value",
    /// A native id that no runtime issues (whitespace, a control character, a leading `-`).
    InvalidRefValue = "invalid_ref_value",
    /// A document with `pods` that also has the flat shape's `id` or `members`, or a flat one
    /// with the OpenRig shape's `name`, `version` or `summary`.
    MixedShapes = "mixed_shapes",
    /// An `agent_ref` whose prefix does not fit its path (`local:` with an absolute path,
    /// `path:` with a relative one), or an OpenRig member's `agent_ref` without a prefix.
    InvalidAgentRef = "invalid_agent_ref",
    /// Part of the terminal sentinel (`runtime: terminal`, `agent_ref: builtin:terminal`,
    /// `profile: none`) without the rest.
    IncompleteTerminalSentinel = "incomplete_terminal_sentinel",
    /// A `restore_policy` other than `resume_if_possible`, `relaunch_fresh`, `checkpoint_only`.
    UnknownRestorePolicy = "unknown_restore_policy",
    /// An edge `kind` that is not one of the five.
    UnknownEdgeKind = "unknown_edge_kind",
    /// An edge endpoint that names no member of the rig (a top-level one must be qualified).
    UnknownEdgeMember = "unknown_edge_member",
    /// An edge from a member to itself.
    SelfEdge = "self_edge",
    /// The agent configuration an `agent_ref` names cannot be read, or fails its own check.
    AgentConfigInvalid = "agent_config_invalid",
    /// A `profile` that names no profile or machine of the member's agent configuration.
    UnknownProfile = "unknown_profile",
    /// A `profile` of the wrong runtime: a `claude-code` or `codex` member on a profile that is
    /// not an external profile of its runtime, or a `native` member on an external profile.
    ProfileRuntimeMismatch = "profile_runtime_mismatch",
}

impl fmt::Display for RigProblemCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One value a rig spec cannot be run with as written, or one required value left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RigProblem {
    /// The id of the member the problem is in, when the member has a well-formed one (in an
    /// OpenRig spec, qualified: `review.alice`).
    pub member: Option<String>,
    /// Where, as a path into the spec: `members[1].session_source.ref.kind`, `id`,
    /// `pods[1].members[0].prompt`, `pods[0].edges[2].to`. Members and pods are named by index,
    /// since an id may be missing or used twice. Empty for the whole text.
    pub path: String,
    /// The 1-based line of the offending value (or of the entry a missing field belongs in),
    /// when the text has one.
    pub line: Option<usize>,
    /// The 1-based column, with the line.
    pub column: Option<usize>,
    /// What is wrong, as a stable code.
    pub code: RigProblemCode,
    /// A sentence that says what is wrong and what to do. Never holds a line break.
    pub message: String,
}

impl RigProblem {
    /// The problem's stable code.
    pub fn code(&self) -> RigProblemCode {
        self.code
    }
}

impl RigProblem {
    /// The path split after its member entry (`members[1]`, `pods[1].members[0]`) and the
    /// rest below it, when the path starts with one.
    fn member_entry(&self) -> Option<(&str, &str)> {
        let after_pod = match self.path.strip_prefix("pods[") {
            Some(rest) => rest.split_once("].")?.1,
            None => &self.path,
        };
        let index = after_pod.strip_prefix("members[")?;
        let close = index.find(']')?;
        let entry_len = self.path.len() - index.len() + close + 1;
        let (entry, rest) = self.path.split_at(entry_len);
        Some((entry, rest.strip_prefix('.').unwrap_or(rest)))
    }
}

impl fmt::Display for RigProblem {
    /// `line 12: members[1] (reviewer-2) session_source.ref.kind: message (code)`, or for a
    /// member of a pod `line 30: pods[1].members[0] (review.alice) prompt: message (code)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        match (&self.member, self.member_entry()) {
            (Some(member), Some((entry, rest))) => {
                write!(f, "{entry} ({member})")?;
                if !rest.is_empty() {
                    write!(f, " {rest}")?;
                }
                f.write_str(": ")?;
            }
            _ if !self.path.is_empty() => write!(f, "{}: ", self.path)?,
            _ => {}
        }
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Every problem found in a rig spec, in the order of the file. Never empty: a spec without
/// problems is a [`RigSpec`](crate::rig::RigSpec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RigSpecReport {
    /// The problems, in the order found.
    pub problems: Vec<RigProblem>,
}

impl RigSpecReport {
    /// The problems' codes, in order.
    pub fn codes(&self) -> impl Iterator<Item = RigProblemCode> + '_ {
        self.problems.iter().map(RigProblem::code)
    }
}

impl fmt::Display for RigSpecReport {
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

impl std::error::Error for RigSpecReport {}
