//! External agents: processes whose program runs one Claude Code or Codex session headlessly,
//! supervised like any agent ([docs/external-agents.md](../../../docs/external-agents.md)).
//!
//! - `command.rs`: the exact command lines ([`session_command`]), the MCP link
//!   ([`McpLink`]) that gives a session agentvisor's tools as its own process.
//! - `child.rs`: the subprocess in its own process group, killed whole when dropped.
//! - `group.rs`: [`ProcessGroup`], the one place a tool's process group is killed (rig seat
//!   commands hold one too).
//! - `stream.rs`: the runtimes' JSON event streams decoded ([`Decoder`], [`StreamEvent`]).
//! - `session.rs`: the kernel program ([`run_session`]): the session id recorded before the
//!   session starts, usage charged as it arrives, turns as agent telemetry, the result as
//!   the process's, a crash continued with `--resume <its own id>`.

mod child;
mod command;
mod group;
mod session;
pub(crate) mod stream;

pub use child::{ChildError, SessionChild, SessionCommand};
pub use command::{CONTINUE_PROMPT, MCP_SERVER_NAME, McpLink, SessionSpec, Start, session_command};
pub use group::{GroupMark, ProcessGroup, own_group};
pub(crate) use session::run_session;
pub use session::{SESSION_OBJECT, SessionRecord};
pub use stream::{Decoder, SessionEnd, StreamEvent};
