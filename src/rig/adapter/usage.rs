//! What a seat command used, read from the runtime's own output with the same decoding the
//! external agent sessions use (`agent::external::stream`), so a token is counted the same
//! way whether Claude Code or Codex runs as a seat or as a process.

use crate::agent::brain::Usage;
use crate::agent::config::ExternalRuntime;
use crate::agent::external::stream::{claude_usage, reported_cost};
use crate::agent::external::{Decoder, StreamEvent};
use serde_json::Value;

/// A Claude Code JSON result's `usage` (the whole command's) and `total_cost_usd`; `None` when
/// it reports neither.
pub(super) fn claude(result: &Value) -> Option<Usage> {
    let cost = reported_cost(result);
    let usage = result.get("usage").map(claude_usage).unwrap_or_default();
    (usage != Usage::default() || cost.is_some()).then_some(Usage { cost_micros: cost, ..usage })
}

/// The sum of a Codex event stream's `turn.completed` usage; `None` when no turn reported any.
/// Codex reports no cost.
pub(super) fn codex(stdout: &str) -> Option<Usage> {
    let mut decoder = Decoder::new(ExternalRuntime::Codex);
    let mut total: Option<Usage> = None;
    for line in stdout.lines() {
        for event in decoder.line(line).unwrap_or_default() {
            if let StreamEvent::Usage(usage) = event {
                total = Some(total.unwrap_or_default().plus(&usage));
            }
        }
    }
    total
}
