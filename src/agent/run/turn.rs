//! Turn finality: a call declares, the loop applies once every tool result of the turn has
//! been recorded.
//!
//! - A fork's id is real when the call returns; it becomes a child when the turn ends, so
//!   waiting on it in the same turn is refused.
//! - One succession per turn: the first `exec` or `transition_state` stands; a second is
//!   refused.
//! - An ending declared in the same turn beats any succession.
//! - Forks are additive: every fork declared in a turn runs, even if the turn also ended.
//! - One `archive_thread` per turn, applied before anything else the turn declared.

use crate::actors::Pid;
use crate::actors::runtime::calls::ToolError;
use serde_json::Value;

/// A declared change of what the agent is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Succession {
    /// `exec(agent, prompt?)`.
    Exec {
        /// The profile or machine on the roster.
        target: String,
        /// The successor's opening message.
        prompt: Option<String>,
    },
    /// `transition_state(state, prompt?)`.
    Transition {
        /// The state to move to.
        state: String,
        /// The next state's opening message.
        prompt: Option<String>,
    },
}

impl Succession {
    /// The call that declared it.
    pub fn call(&self) -> &'static str {
        match self {
            Succession::Exec { .. } => "exec",
            Succession::Transition { .. } => "transition_state",
        }
    }
}

/// A fork declared this turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredFork {
    /// The copy's pid (real from the call's return).
    pub pid: Pid,
    /// What the copy should do.
    pub prompt: String,
}

/// An `archive_thread` declared this turn: the turns to archive, and the summary if the model
/// wrote one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredArchive {
    /// The first turn archived.
    pub from_turn: u64,
    /// The last turn archived (included).
    pub to_turn: u64,
    /// The model's summary; `None` has the profile's summarizer write one.
    pub summary: Option<String>,
}

/// What a turn's calls declared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declarations {
    ending: Option<Option<Value>>,
    succession: Option<Succession>,
    forks: Vec<DeclaredFork>,
    archive: Option<DeclaredArchive>,
}

/// What the loop applies at the end of a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The session ends with this result (`Some(None)`: no result).
    pub ending: Option<Option<Value>>,
    /// The succession, unless an ending beat it.
    pub succession: Option<Succession>,
    /// A succession the ending beat.
    pub beaten: Option<Succession>,
    /// Every fork, in call order.
    pub forks: Vec<DeclaredFork>,
    /// The archive, applied first: before the forks are handed their copy and before the
    /// succession, so both start from the window the turn produced.
    pub archive: Option<DeclaredArchive>,
}

impl Declarations {
    /// `finish`: the first stands, a second is refused.
    pub fn declare_ending(&mut self, result: Option<Value>) -> Result<(), ToolError> {
        if self.ending.is_some() {
            return Err(ToolError::new(
                "ending_declared",
                "finish was already called in this turn; the first ending stands",
            ));
        }
        self.ending = Some(result);
        Ok(())
    }

    /// `exec` or `transition_state`: the first stands, a second is refused; after an ending it
    /// is refused because the ending beats it.
    pub fn declare_succession(&mut self, succession: Succession) -> Result<(), ToolError> {
        if let Some(first) = &self.succession {
            return Err(ToolError::new(
                "succession_declared",
                format!(
                    "{} was already called in this turn and stands; a turn makes one succession, so this {} is refused",
                    first.call(),
                    succession.call()
                ),
            ));
        }
        if self.ending.is_some() {
            return Err(ToolError::new(
                "ending_declared",
                format!(
                    "finish was already called in this turn; an ending beats any succession, so this {} is refused",
                    succession.call()
                ),
            ));
        }
        self.succession = Some(succession);
        Ok(())
    }

    /// `archive_thread`: one per turn; a second is refused.
    pub fn declare_archive(&mut self, archive: DeclaredArchive) -> Result<(), ToolError> {
        if let Some(first) = &self.archive {
            return Err(ToolError::new(
                "archive_declared",
                format!(
                    "archive_thread was already called in this turn (turns {} to {}); a turn archives \
                     once, so archive the rest on a later turn",
                    first.from_turn, first.to_turn
                ),
            ));
        }
        self.archive = Some(archive);
        Ok(())
    }

    /// `fork`: always additive.
    pub fn declare_fork(&mut self, fork: DeclaredFork) {
        self.forks.push(fork);
    }

    /// Whether `pid` was forked in this turn (so is not yet a child to wait on).
    pub fn forked_this_turn(&self, pid: Pid) -> bool {
        self.forks.iter().any(|f| f.pid == pid)
    }

    /// Whether an ending has been declared.
    pub fn ended(&self) -> bool {
        self.ending.is_some()
    }

    /// The turn's outcome: an ending beats a succession; forks all run.
    pub fn resolve(self) -> Resolved {
        let (succession, beaten) = match (&self.ending, self.succession) {
            (Some(_), Some(s)) => (None, Some(s)),
            (_, s) => (s, None),
        };
        Resolved { ending: self.ending, succession, beaten, forks: self.forks, archive: self.archive }
    }
}
