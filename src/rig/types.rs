//! The checked rig types. They are built only by the rig spec parser's validation, so holding
//! one proves it passed: ids are well formed, a `session_source` is a `fork` from a `native_id`
//! with a value, and no `terminal` seat has one.

use std::fmt;

/// A rig's id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct RigId(pub(crate) String);

/// A member's id, unique within its rig.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct MemberId(pub(crate) String);

/// A runtime's native conversation token: a Claude Code session id, a Codex thread id, or an
/// agentvisor session id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct NativeId(pub(crate) String);

macro_rules! text_id {
    ($t:ident) => {
        impl $t {
            /// The id as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

text_id!(RigId);
text_id!(MemberId);
text_id!(NativeId);

impl NativeId {
    /// A native id from a token a runtime reported (never empty).
    pub fn from_token(token: impl Into<String>) -> Option<NativeId> {
        let token = token.into();
        (!token.trim().is_empty()).then_some(NativeId(token))
    }
}

/// Which runtime a seat runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeatRuntime {
    /// An agentvisor agent on this runtime.
    Native,
    /// Claude Code (`claude`).
    ClaudeCode,
    /// Codex (`codex`).
    Codex,
    /// A plain terminal: no conversation, so no session source.
    Terminal,
}

impl SeatRuntime {
    /// The name as written in a rig spec.
    pub fn as_str(self) -> &'static str {
        match self {
            SeatRuntime::Native => "native",
            SeatRuntime::ClaudeCode => "claude-code",
            SeatRuntime::Codex => "codex",
            SeatRuntime::Terminal => "terminal",
        }
    }
}

impl fmt::Display for SeatRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a new seat's conversation starts from. v1 has one mode and one reference kind: fork
/// from a native id.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum SessionSource {
    /// Start a new seat from a prior native conversation, without claiming the original seat
    /// continued.
    Fork {
        /// The source conversation's native id.
        native_id: NativeId,
    },
}

/// One member (seat) of a rig.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// Its id, unique in the rig.
    pub id: MemberId,
    /// The runtime it runs on.
    pub runtime: SeatRuntime,
    /// The agent configuration it runs (a path, relative to the rig spec's directory), for
    /// `native` seats; other runtimes may name their own agent file.
    pub agent_ref: Option<String>,
    /// The profile (or machine) it starts as.
    pub profile: Option<String>,
    /// Its working directory (relative to the rig spec's directory).
    pub cwd: String,
    /// Its opening prompt.
    pub prompt: Option<String>,
    /// Where its conversation starts from, if not fresh.
    pub session_source: Option<SessionSource>,
}

/// A checked rig spec.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RigSpec {
    /// The rig's id.
    pub id: RigId,
    /// Its members, in launch order.
    pub members: Vec<Member>,
}

impl RigSpec {
    /// A rig of `members` alone: what a rig's recorded seats say when its spec is not at hand
    /// (an expansion checks new members against it).
    pub fn of_members(id: RigId, members: Vec<Member>) -> RigSpec {
        RigSpec { id, members }
    }
}
