//! [`AdapterError`]: every way a seat adapter can fail to realize a seat, each naming the step
//! of the session-source state model that failed, with a stable code.
//!
//! Wording is honest: a seat is "forked from source session" or "started from prior
//! conversation source"; no message says the original seat or agent was continued, brought
//! back or copied whole. The runtime's own words are kept in fields ([`AdapterError::stderr`],
//! [`AdapterError::reported`]), never mixed into our sentences.

use std::fmt;
use std::time::Duration;

use crate::rig::{NativeId, SeatRuntime};

use super::command::CommandError;

/// What an adapter was asked to do when it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Start a new seat from a prior conversation (`session_source` mode `fork`).
    Fork {
        /// The prior conversation's native id.
        source_id: NativeId,
    },
    /// Start a new seat with a fresh conversation.
    Start,
    /// Continue a realized seat's own conversation (`rig restore`).
    Restore {
        /// The seat's own native token.
        token: NativeId,
    },
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attempt::Fork { source_id } => {
                write!(f, "fork a new seat from source session {source_id}")
            }
            Attempt::Start => f.write_str("start a new seat with a fresh conversation"),
            Attempt::Restore { token } => write!(f, "restore the seat's own session {token}"),
        }
    }
}

/// The step of the session-source state model (declared → resolved → realized | failed) at
/// which a launch failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The runtime could not resolve the source id.
    Resolve,
    /// The fork command could not be run, or ran and failed.
    ForkCommand,
    /// The start command (no session source) could not be run, or ran and failed.
    StartCommand,
    /// The restore command (a realized seat's own session continued) could not be run, or
    /// ran and failed.
    RestoreCommand,
    /// The command hung past its timeout and was killed.
    Timeout,
    /// The command's output could not be read.
    MalformedOutput,
    /// The adapter refuses this kind of source (defensive: validation rejects it first).
    UnsupportedSource,
}

impl Step {
    /// The step's stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Resolve => "resolve",
            Step::ForkCommand => "fork_command",
            Step::StartCommand => "start_command",
            Step::RestoreCommand => "restore_command",
            Step::Timeout => "timeout",
            Step::MalformedOutput => "malformed_output",
            Step::UnsupportedSource => "unsupported_source",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a seat adapter realized no seat. In every case no seat was launched, no fresh seat was
/// launched in its place, and no token (least of all the source's) is to be recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The runtime does not know the source id.
    #[error(
        "failed to resolve source session {source_id} on {runtime}: the runtime does not know \
         this id, so no seat was forked from it and no fresh seat was launched in its place"
    )]
    Resolve {
        /// The runtime asked.
        runtime: SeatRuntime,
        /// The id it could not resolve.
        source_id: NativeId,
        /// The runtime's standard error.
        stderr: String,
        /// The runtime's own account of the failure, if it gave one on standard output.
        reported: Option<String>,
    },
    /// The command ran and reported failure (a non-zero exit, or a result marked as an error).
    #[error(
        "failed to {attempt} on {runtime}: the runtime reported a failure (exit status \
         {status}); no seat was launched"
    )]
    Command {
        /// The runtime.
        runtime: SeatRuntime,
        /// What was asked.
        attempt: Attempt,
        /// The exit status.
        status: i32,
        /// The runtime's standard error.
        stderr: String,
        /// The runtime's own account of the failure (a result text, an error event), if any.
        reported: Option<String>,
    },
    /// A fork reported the source's own token as the new one: whatever the runtime did, it
    /// did not give the new seat a conversation of its own.
    #[error(
        "failed to fork a new seat from source session {source_id} on {runtime}: the runtime \
         reported the source's own id rather than a new one, so no new seat was recorded"
    )]
    SourceTokenReturned {
        /// The runtime.
        runtime: SeatRuntime,
        /// The source id, which the runtime reported back.
        source_id: NativeId,
    },
    /// A restore reported another session than the seat's own: the seat's token is final, so
    /// nothing is recorded for the other one.
    #[error(
        "failed to restore the seat's own session {token} on {runtime}: the runtime reported \
         session {reported} instead; the seat keeps its own token"
    )]
    TokenChanged {
        /// The runtime.
        runtime: SeatRuntime,
        /// The seat's own token.
        token: NativeId,
        /// What the runtime reported.
        reported: NativeId,
    },
    /// The command hung past its timeout; it was killed.
    #[error(
        "failed to {attempt} on {runtime}: the command did not finish within {} ms and was \
         killed; no seat was launched",
        timeout.as_millis()
    )]
    Timeout {
        /// The runtime.
        runtime: SeatRuntime,
        /// What was asked.
        attempt: Attempt,
        /// The timeout that passed.
        timeout: Duration,
        /// What the command wrote to standard error before it was killed.
        stderr: String,
    },
    /// The command's output could not be read as the runtime's result.
    #[error("failed to {attempt} on {runtime}: {reason}; no seat was launched")]
    MalformedOutput {
        /// The runtime.
        runtime: SeatRuntime,
        /// What was asked.
        attempt: Attempt,
        /// What was wrong with the output, in our words.
        reason: String,
        /// The start of the output, cut at
        /// [`OUTPUT_EXCERPT_BYTES_MAX`](super::limits::OUTPUT_EXCERPT_BYTES_MAX).
        excerpt: String,
        /// The runtime's standard error.
        stderr: String,
    },
    /// The adapter does not support this source on this runtime. Validation rejects such a
    /// member before launch, so this is defensive.
    #[error(
        "refused to fork a new seat from source {source_id} on {runtime}: {reason}; no seat \
         was launched"
    )]
    UnsupportedSource {
        /// The runtime.
        runtime: SeatRuntime,
        /// The source that was given.
        source_id: NativeId,
        /// Why this runtime cannot start from it.
        reason: String,
    },
    /// The runtime's program is not installed (or not on `PATH`).
    #[error(
        "failed to {attempt} on {runtime}: the program `{program}` was not found; no seat was \
         launched"
    )]
    RuntimeNotFound {
        /// The runtime.
        runtime: SeatRuntime,
        /// What was asked.
        attempt: Attempt,
        /// The program as given.
        program: String,
    },
    /// The command could not be run for another reason (working directory missing, an
    /// argument too long, a spawn or pipe failure).
    #[error("failed to {attempt} on {runtime}: {error}; no seat was launched")]
    CommandNotRun {
        /// The runtime.
        runtime: SeatRuntime,
        /// What was asked.
        attempt: Attempt,
        /// Why it could not run.
        #[source]
        error: CommandError,
    },
}

impl AdapterError {
    /// The error for a command the wrapper could not run to its end.
    pub(super) fn from_command(runtime: SeatRuntime, attempt: Attempt, error: CommandError) -> AdapterError {
        match error {
            CommandError::NotFound { program } => AdapterError::RuntimeNotFound { runtime, attempt, program },
            CommandError::TimedOut { timeout, stderr_so_far, .. } => {
                AdapterError::Timeout { runtime, attempt, timeout, stderr: stderr_so_far }
            }
            error => AdapterError::CommandNotRun { runtime, attempt, error },
        }
    }

    /// A command that ran and failed: its exit status, its standard error, and what the runtime
    /// reported about it.
    pub(super) fn command_failed(
        runtime: SeatRuntime,
        output: &super::command::CommandOutput,
        attempt: Attempt,
        reported: Option<String>,
    ) -> AdapterError {
        AdapterError::Command {
            runtime,
            attempt,
            status: output.status,
            stderr: output.stderr.clone(),
            reported,
        }
    }

    /// A command whose output could not be read: why, an excerpt of it, and its standard error.
    pub(super) fn malformed(
        runtime: SeatRuntime,
        output: &super::command::CommandOutput,
        attempt: Attempt,
        reason: &str,
    ) -> AdapterError {
        AdapterError::MalformedOutput {
            runtime,
            attempt,
            reason: reason.to_owned(),
            excerpt: excerpt(&output.stdout, super::limits::OUTPUT_EXCERPT_BYTES_MAX),
            stderr: output.stderr.clone(),
        }
    }

    /// The state-model step that failed.
    pub fn step(&self) -> Step {
        let command_step = |attempt: &Attempt| match attempt {
            Attempt::Fork { .. } => Step::ForkCommand,
            Attempt::Start => Step::StartCommand,
            Attempt::Restore { .. } => Step::RestoreCommand,
        };
        match self {
            AdapterError::Resolve { .. } => Step::Resolve,
            AdapterError::Command { attempt, .. }
            | AdapterError::RuntimeNotFound { attempt, .. }
            | AdapterError::CommandNotRun { attempt, .. } => command_step(attempt),
            AdapterError::SourceTokenReturned { .. } => Step::ForkCommand,
            AdapterError::TokenChanged { .. } => Step::RestoreCommand,
            AdapterError::Timeout { .. } => Step::Timeout,
            AdapterError::MalformedOutput { .. } => Step::MalformedOutput,
            AdapterError::UnsupportedSource { .. } => Step::UnsupportedSource,
        }
    }

    /// A stable machine code for the failure.
    pub fn code(&self) -> &'static str {
        match self {
            AdapterError::Resolve { .. } => "source_not_found",
            AdapterError::Command { .. } => "command_failed",
            AdapterError::SourceTokenReturned { .. } => "source_token_returned",
            AdapterError::TokenChanged { .. } => "token_changed",
            AdapterError::Timeout { .. } => "timed_out",
            AdapterError::MalformedOutput { .. } => "malformed_output",
            AdapterError::UnsupportedSource { .. } => "unsupported_source",
            AdapterError::RuntimeNotFound { .. } => "runtime_not_found",
            AdapterError::CommandNotRun { .. } => "command_not_run",
        }
    }

    /// The runtime whose adapter failed.
    pub fn runtime(&self) -> SeatRuntime {
        match self {
            AdapterError::Resolve { runtime, .. }
            | AdapterError::Command { runtime, .. }
            | AdapterError::SourceTokenReturned { runtime, .. }
            | AdapterError::TokenChanged { runtime, .. }
            | AdapterError::Timeout { runtime, .. }
            | AdapterError::MalformedOutput { runtime, .. }
            | AdapterError::UnsupportedSource { runtime, .. }
            | AdapterError::RuntimeNotFound { runtime, .. }
            | AdapterError::CommandNotRun { runtime, .. } => *runtime,
        }
    }

    /// The runtime's standard error, where the command ran (for a timeout: what it wrote
    /// before it was killed).
    pub fn stderr(&self) -> Option<&str> {
        match self {
            AdapterError::Resolve { stderr, .. }
            | AdapterError::Command { stderr, .. }
            | AdapterError::Timeout { stderr, .. }
            | AdapterError::MalformedOutput { stderr, .. } => Some(stderr),
            AdapterError::SourceTokenReturned { .. }
            | AdapterError::TokenChanged { .. }
            | AdapterError::UnsupportedSource { .. }
            | AdapterError::RuntimeNotFound { .. }
            | AdapterError::CommandNotRun { .. } => None,
        }
    }

    /// The runtime's own account of the failure on its standard output (a result text, an
    /// error event), where it gave one.
    pub fn reported(&self) -> Option<&str> {
        match self {
            AdapterError::Resolve { reported, .. } | AdapterError::Command { reported, .. } => {
                reported.as_deref()
            }
            _ => None,
        }
    }
}

pub(super) use crate::actors::text::excerpt;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{AdapterError, Attempt, CommandError, excerpt};
    use crate::rig::{NativeId, SeatRuntime};

    /// Words that would claim the original seat continued or was copied whole.
    const DISHONEST_WORDS: [&str; 5] = ["resum", "restor", "snapshot", "continued", "reopen"];

    fn id(text: &str) -> NativeId {
        NativeId(text.to_owned())
    }

    /// One error of every variant, for both a fork and a start where the variant has an
    /// attempt.
    fn every_variant() -> Vec<AdapterError> {
        let runtime = SeatRuntime::ClaudeCode;
        let attempts = [Attempt::Fork { source_id: id("0b0165d7") }, Attempt::Start];
        let mut errors = vec![
            AdapterError::Resolve { runtime, source_id: id("0b0165d7"), stderr: "x".into(), reported: None },
            AdapterError::SourceTokenReturned { runtime, source_id: id("0b0165d7") },
            AdapterError::UnsupportedSource {
                runtime: SeatRuntime::Terminal,
                source_id: id("0b0165d7"),
                reason: "a terminal seat has no conversation".into(),
            },
        ];
        for attempt in attempts {
            errors.extend([
                AdapterError::Command {
                    runtime,
                    attempt: attempt.clone(),
                    status: 1,
                    stderr: "x".into(),
                    reported: None,
                },
                AdapterError::Timeout {
                    runtime,
                    attempt: attempt.clone(),
                    timeout: Duration::from_millis(300),
                    stderr: "x".into(),
                },
                AdapterError::MalformedOutput {
                    runtime,
                    attempt: attempt.clone(),
                    reason: "stdout is not a JSON result".into(),
                    excerpt: "x".into(),
                    stderr: "x".into(),
                },
                AdapterError::RuntimeNotFound { runtime, attempt: attempt.clone(), program: "claude".into() },
                AdapterError::CommandNotRun {
                    runtime,
                    attempt: attempt.clone(),
                    error: CommandError::CwdMissing { program: "claude".into(), cwd: "/nowhere".into() },
                },
            ]);
        }
        errors
    }

    /// Forces this test to be revisited when a variant is added: the match has no wildcard.
    fn covered(error: &AdapterError) -> usize {
        match error {
            AdapterError::Resolve { .. } => 0,
            AdapterError::Command { .. } => 1,
            AdapterError::SourceTokenReturned { .. } => 2,
            AdapterError::Timeout { .. } => 3,
            AdapterError::MalformedOutput { .. } => 4,
            AdapterError::UnsupportedSource { .. } => 5,
            AdapterError::RuntimeNotFound { .. } => 6,
            AdapterError::CommandNotRun { .. } => 7,
            AdapterError::TokenChanged { .. } => 8,
        }
    }

    #[test]
    fn a_restore_names_the_seats_own_session_and_keeps_its_token() {
        let token = id("0b0165d7-own");
        let runtime = SeatRuntime::Codex;
        let failed = AdapterError::Command {
            runtime,
            attempt: Attempt::Restore { token: token.clone() },
            status: 1,
            stderr: String::new(),
            reported: None,
        };
        assert_eq!(failed.step().as_str(), "restore_command");
        assert!(failed.to_string().contains("restore the seat's own session 0b0165d7-own"), "{failed}");
        let changed = AdapterError::TokenChanged { runtime, token, reported: id("other") };
        assert_eq!((changed.step().as_str(), changed.code()), ("restore_command", "token_changed"));
        assert!(changed.to_string().contains("the seat keeps its own token"), "{changed}");
    }

    #[test]
    fn every_message_is_worded_honestly() {
        let errors = every_variant();
        // A restore continues the seat's own session by design, so its words are tested on
        // their own (`a_restore_names_the_seats_own_session_and_keeps_its_token`).
        let mut seen = [false; 9];
        seen[8] = true;
        for error in &errors {
            seen[covered(error)] = true;
            let message = error.to_string().to_lowercase();
            for word in DISHONEST_WORDS {
                assert!(!message.contains(word), "{word:?} in {message:?}");
            }
            assert!(
                ["no seat was", "no new seat was", "no fresh seat"].iter().any(|says| message.contains(says)),
                "{message:?} does not say no seat was launched"
            );
        }
        assert!(seen.iter().all(|seen| *seen), "a variant is not in the list");
    }

    #[test]
    fn a_resolve_error_names_runtime_and_id_and_launches_nothing_fresh() {
        let message = every_variant()[0].to_string();
        assert!(message.contains("claude-code"), "{message}");
        assert!(message.contains("0b0165d7"), "{message}");
        assert!(message.contains("no fresh seat was launched"), "{message}");
    }

    #[test]
    fn steps_and_codes_are_stable() {
        let named: Vec<(&str, &str)> =
            every_variant().iter().map(|error| (error.step().as_str(), error.code())).collect();
        assert_eq!(
            named,
            [
                ("resolve", "source_not_found"),
                ("fork_command", "source_token_returned"),
                ("unsupported_source", "unsupported_source"),
                ("fork_command", "command_failed"),
                ("timeout", "timed_out"),
                ("malformed_output", "malformed_output"),
                ("fork_command", "runtime_not_found"),
                ("fork_command", "command_not_run"),
                ("start_command", "command_failed"),
                ("timeout", "timed_out"),
                ("malformed_output", "malformed_output"),
                ("start_command", "runtime_not_found"),
                ("start_command", "command_not_run"),
            ]
        );
    }

    #[test]
    fn excerpts_cut_at_a_character_boundary() {
        assert_eq!(excerpt("abc", 8), "abc");
        assert_eq!(excerpt("aé", 2), "a…");
    }
}
