//! The checked rig types. They are built only by the rig spec parser's validation, so holding
//! one proves it passed: ids are well formed, a `session_source` is a `fork` from a `native_id`
//! with a value, and no `terminal` seat has one.
//!
//! Both spec shapes check into the same [`RigSpec`]. A flat spec (`id`, `members`) leaves
//! `name`, `version`, `summary` and `pods` empty; an OpenRig spec (`name`, `version`, `pods`)
//! takes its id from `name` and gives each member the qualified id `<pod>.<member>`, so that
//! seats are unique across pods and `seat:<pod>.<member>` names one. Every [`Edge`], written in
//! a pod or at the top level, is held here with qualified endpoints.

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
    /// Every runtime, in the order the docs list them.
    pub const ALL: [SeatRuntime; 4] =
        [SeatRuntime::Native, SeatRuntime::ClaudeCode, SeatRuntime::Codex, SeatRuntime::Terminal];

    /// The name as written in a rig spec.
    pub fn as_str(self) -> &'static str {
        match self {
            SeatRuntime::Native => "native",
            SeatRuntime::ClaudeCode => "claude-code",
            SeatRuntime::Codex => "codex",
            SeatRuntime::Terminal => "terminal",
        }
    }

    /// The runtime written as `text`, if it is one.
    pub fn parse(text: &str) -> Option<SeatRuntime> {
        SeatRuntime::ALL.into_iter().find(|runtime| runtime.as_str() == text)
    }

    /// The external runtime (the agent configuration's `runtime`) a seat on this runtime runs
    /// its profile on: Claude Code or Codex; `None` for a native or terminal seat.
    pub fn external(self) -> Option<crate::agent::config::ExternalRuntime> {
        use crate::agent::config::ExternalRuntime;
        match self {
            SeatRuntime::ClaudeCode => Some(ExternalRuntime::ClaudeCode),
            SeatRuntime::Codex => Some(ExternalRuntime::Codex),
            SeatRuntime::Native | SeatRuntime::Terminal => None,
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

/// What is done with a member's realized seat later (`restore_policy`): `rig restore` and a
/// later `run` of the spec honour it (`rig::run::restore`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestorePolicy {
    /// `rig restore`, and `run` of a rig already run, continue the seat's own session.
    ResumeIfPossible,
    /// Never continued: running the spec again starts a fresh seat in a new rig instance.
    RelaunchFresh,
    /// Kept as recorded: its session is never continued, and a restore leaves it.
    CheckpointOnly,
}

impl RestorePolicy {
    /// Every policy, in the order `docs/rigs.md` lists them.
    pub const ALL: &'static [RestorePolicy] =
        &[RestorePolicy::ResumeIfPossible, RestorePolicy::RelaunchFresh, RestorePolicy::CheckpointOnly];

    /// The name as written in a rig spec.
    pub fn as_str(self) -> &'static str {
        match self {
            RestorePolicy::ResumeIfPossible => "resume_if_possible",
            RestorePolicy::RelaunchFresh => "relaunch_fresh",
            RestorePolicy::CheckpointOnly => "checkpoint_only",
        }
    }
}

impl fmt::Display for RestorePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an edge between two members says about them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// `from` hands work to `to`.
    DelegatesTo,
    /// `from` was started by `to`.
    SpawnedBy,
    /// `from` may watch what `to` does.
    CanObserve,
    /// `from` and `to` work on the same thing as peers.
    CollaboratesWith,
    /// `from` turns to `to` when it is stuck or needs a decision.
    EscalatesTo,
}

impl EdgeKind {
    /// Every kind, in the order `docs/rigs.md` lists them.
    pub const ALL: &'static [EdgeKind] = &[
        EdgeKind::DelegatesTo,
        EdgeKind::SpawnedBy,
        EdgeKind::CanObserve,
        EdgeKind::CollaboratesWith,
        EdgeKind::EscalatesTo,
    ];

    /// The name as written in a rig spec.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::DelegatesTo => "delegates_to",
            EdgeKind::SpawnedBy => "spawned_by",
            EdgeKind::CanObserve => "can_observe",
            EdgeKind::CollaboratesWith => "collaborates_with",
            EdgeKind::EscalatesTo => "escalates_to",
        }
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A relation between two members of a rig. Both endpoints are members of the rig (qualified
/// ids in an OpenRig spec), and they differ.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Edge {
    /// What the edge says.
    pub kind: EdgeKind,
    /// The member it starts from.
    pub from: MemberId,
    /// The member it points to.
    pub to: MemberId,
}

/// A pod of an OpenRig spec: a named group of members. Its members are the rig's members whose
/// id is `<pod id>.<member>`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pod {
    /// Its id: the id syntax without dots, unique in the rig.
    pub id: String,
    /// Its label, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// One member (seat) of a rig.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// Its id, unique in the rig: in an OpenRig spec, qualified as `<pod>.<member>`.
    pub id: MemberId,
    /// The runtime it runs on.
    pub runtime: SeatRuntime,
    /// The agent configuration it runs, for `native` seats (other runtimes may name one too):
    /// a path relative to the rig spec's directory, or an absolute one, with the spec's
    /// `local:`/`path:` prefix removed, so that joining it to the spec's directory finds the
    /// file. `None` for the terminal sentinel `builtin:terminal`.
    pub agent_ref: Option<String>,
    /// The profile (or machine) it starts as.
    pub profile: Option<String>,
    /// Its working directory (relative to the rig spec's directory).
    pub cwd: String,
    /// Its opening prompt.
    pub prompt: Option<String>,
    /// Where its conversation starts from, if not fresh.
    pub session_source: Option<SessionSource>,
    /// What a restore of the seat should do, if the spec says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_policy: Option<RestorePolicy>,
}

/// A checked rig spec, of either shape.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RigSpec {
    /// The rig's id: the flat spec's `id`, or the OpenRig spec's `name`.
    pub id: RigId,
    /// Its members, in launch order (in an OpenRig spec, pod by pod).
    pub members: Vec<Member>,
    /// The OpenRig spec's `name` as written (the same text as `id`); `None` for a flat spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The OpenRig spec's `version`, as text (`1` and `0.1` are read as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The OpenRig spec's `summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The OpenRig spec's pods, in file order; empty for a flat spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<Pod>,
    /// Every edge, pods' edges first (pod by pod) and then the top-level ones, in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<Edge>,
}

impl RigSpec {
    /// A rig of `members` alone, with no name, version, summary, pods or edges: what a rig's
    /// recorded seats say when its spec is not at hand (an expansion checks new members
    /// against it).
    pub fn of_members(id: RigId, members: Vec<Member>) -> RigSpec {
        RigSpec { id, members, name: None, version: None, summary: None, pods: Vec::new(), edges: Vec::new() }
    }

    /// The members of the pod `pod` (those whose id is `<pod>.<member>`); none in a flat spec.
    pub fn pod_members<'a>(&'a self, pod: &'a str) -> impl Iterator<Item = &'a Member> + 'a {
        let known = self.pods.iter().any(|p| p.id == pod);
        self.members.iter().filter(move |m| {
            known && m.id.as_str().strip_prefix(pod).is_some_and(|rest| rest.starts_with('.'))
        })
    }
}
