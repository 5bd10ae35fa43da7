//! [`TerminalAdapter`]: seats that are plain shells.
//!
//! A terminal seat is a shell in the seat's working directory with no native conversation:
//! there is nothing for a runtime to create, so `start` runs no command and launches nothing.
//! It records the seat under a token derived from where the seat sits, `terminal:<rig>.<member>`,
//! which names the seat rather than a conversation (the `terminal:` prefix keeps it from being
//! mistaken for a Claude Code session or a Codex thread), and whoever attaches to the seat
//! opens the shell there. The prompt, which only a conversation could read, is reported as
//! unused in the detail.
//!
//! `fork` always refuses with `unsupported_source`: a terminal has no prior conversation to
//! start from. Validation rejects a `session_source` on a terminal member before launch, so
//! the refusal is defensive.

use serde_json::json;

use crate::rig::{NativeId, SeatRuntime};

use super::error::AdapterError;
use super::{BoxFuture, Realized, SeatAdapter, SeatLaunch};

const RUNTIME: SeatRuntime = SeatRuntime::Terminal;

/// Records terminal seats; refuses every session source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TerminalAdapter;

impl TerminalAdapter {
    /// The seat's token, `terminal:<rig>.<member>` (never blank: it has the prefix).
    fn token(seat: &SeatLaunch) -> NativeId {
        NativeId(format!("terminal:{}.{}", seat.rig, seat.member.id))
    }
}

impl SeatAdapter for TerminalAdapter {
    fn runtime(&self) -> SeatRuntime {
        RUNTIME
    }

    fn fork<'a>(
        &'a self,
        _seat: &'a SeatLaunch,
        source: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(async move {
            Err(AdapterError::UnsupportedSource {
                runtime: RUNTIME,
                source_id: source.clone(),
                reason: "a terminal seat has no conversation to start from a prior one".to_owned(),
            })
        })
    }

    fn start<'a>(&'a self, seat: &'a SeatLaunch) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(async move {
            let token = TerminalAdapter::token(seat);
            let detail = json!({
                "summary": format!("recorded terminal seat {token} with no conversation"),
                "cwd": seat.cwd.display().to_string(),
                "conversation": null,
                "prompt_unused": !seat.prompt.is_empty(),
            });
            Ok(Realized { token, detail, usage: None })
        })
    }

    fn restore<'a>(
        &'a self,
        seat: &'a SeatLaunch,
        token: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(async move {
            let detail = json!({
                "summary": format!("terminal seat {token} has no conversation; whoever attaches opens the shell again"),
                "cwd": seat.cwd.display().to_string(),
                "conversation": null,
            });
            Ok(Realized { token: token.clone(), detail, usage: None })
        })
    }
}
