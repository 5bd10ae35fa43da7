//! Seat adapters: how a seat is started on its runtime, fresh or from a prior conversation
//! source, behind one trait ([`SeatAdapter`]). See `docs/rigs.md`, "Runtime adapters".
//!
//! An adapter realizes a seat or fails; it records nothing. The caller persists the NEW
//! token of a [`Realized`] seat before counting the seat as launched, and never writes the
//! source's token onto it.
//!
//! - `command.rs`: [`SeatCommand`] and [`run`], the one place a seat command is built and run.
//! - `capture.rs`: a command's bounded output.
//! - `error.rs`: [`AdapterError`], the failed [`Step`] and the [`Attempt`].
//! - `claude.rs`: [`ClaudeCodeAdapter`]. `codex.rs`: [`CodexAdapter`].
//!   `terminal.rs`: [`TerminalAdapter`].
//! - `usage.rs`: what a runtime's output says the command used.
//! - `limits.rs`: the bounds, each with why.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use crate::agent::brain::Usage;
use crate::rig::{Member, NativeId, RigId, SeatRuntime};

mod capture;
mod claude;
mod codex;
mod command;
mod error;
pub mod limits;
mod terminal;
mod usage;

pub use claude::ClaudeCodeAdapter;
pub use codex::CodexAdapter;
pub use command::{CommandError, CommandOutput, SeatCommand, run};
pub use error::{AdapterError, Attempt, Step};
pub use terminal::TerminalAdapter;

/// A boxed `Send` future borrowing for `'a`, so adapters live as `Arc<dyn SeatAdapter>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Starts seats on one runtime.
///
/// # Cancel safety
///
/// Dropping a returned future kills the runtime command it was running (see [`run`]). A fork
/// whose command was killed may still have created a conversation in the runtime; nothing is
/// recorded for it, so the seat counts as not launched.
pub trait SeatAdapter: Send + Sync {
    /// The runtime this adapter starts seats on.
    fn runtime(&self) -> SeatRuntime;

    /// Starts a new seat from a prior conversation: the runtime forks `source` into a new
    /// conversation and the result carries that conversation's NEW native token, never
    /// `source`.
    fn fork<'a>(
        &'a self,
        seat: &'a SeatLaunch,
        source: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>>;

    /// Starts a new seat with a fresh conversation.
    fn start<'a>(&'a self, seat: &'a SeatLaunch) -> BoxFuture<'a, Result<Realized, AdapterError>>;

    /// Continues a realized seat's OWN conversation, `token` (never its source's): Claude Code
    /// `--resume <token>`, Codex `exec resume <token>`. The result carries `token` again; a
    /// runtime that reports another id is refused, since the seat's token is final.
    fn restore<'a>(
        &'a self,
        seat: &'a SeatLaunch,
        token: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>>;
}

/// One seat to start: the member, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatLaunch {
    /// The rig it belongs to.
    pub rig: RigId,
    /// The member it is a seat of.
    pub member: Member,
    /// Its working directory, resolved (the member's `cwd` against the rig spec's directory).
    pub cwd: PathBuf,
    /// Its opening prompt.
    pub prompt: String,
    /// How long the runtime's command may take.
    pub timeout: Duration,
    /// Variables set on top of the inherited environment for the runtime's command.
    pub env: Vec<(String, String)>,
    /// The program to run instead of the adapter's own (a profile's `cli.program`), if any.
    pub program: Option<String>,
    /// The flags the member's profile adds (`CliSettings::flags`: model, permission mode or
    /// sandbox, tools, max turns, extra arguments), placed before the adapter's own session
    /// arguments and the prompt.
    pub flags: Vec<String>,
}

/// A seat the runtime realized.
#[derive(Clone, Debug, PartialEq)]
pub struct Realized {
    /// The seat's NEW native token (for a fork: never the source's).
    pub token: NativeId,
    /// What the runtime reported (the parsed result or events, by adapter), with a `summary`
    /// sentence in honest wording.
    pub detail: serde_json::Value,
    /// What the runtime reported the command used (tokens, and cost when it reports one);
    /// `None` when it reported nothing.
    pub usage: Option<Usage>,
}

impl SeatLaunch {
    /// The command running `program` (or the profile's own) with `args` in this seat's
    /// directory, environment and time bound.
    fn command(&self, program: &str, args: Vec<String>) -> SeatCommand {
        SeatCommand {
            program: self.program.clone().unwrap_or_else(|| program.to_owned()),
            args,
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            timeout: self.timeout,
        }
    }
}

/// Whether a runtime's `text` says the source id is unknown: it contains one of `phrases`
/// (matched ignoring case), or names the id together with "not found".
fn says_source_unknown(text: &str, source: &NativeId, phrases: &[&str]) -> bool {
    let lower = text.to_lowercase();
    phrases.iter().any(|phrase| lower.contains(phrase))
        || (text.contains(source.as_str()) && lower.contains("not found"))
}
