//! Compaction from the turn loop: before a turn whose request would pass the profile's
//! trigger, the window is cut with the profile's strategy. After an exec this runs against
//! the successor's window limit before its first turn.

use super::error::AgentError;
use super::program::Agent;
use crate::agent::brain::tokens;
use crate::agent::compaction::{Strategy, compact, needs_compaction, trigger_tokens};
use crate::agent::config::CompactionStrategy;
use crate::agent::telemetry::AgentEvent;

impl Agent {
    /// Compacts the window if the next request would pass the trigger. Returns whether it did.
    /// `fixed` is the estimated tokens of the request besides the window (system slot, tools).
    pub(crate) async fn compact_if_needed(&mut self, fixed: u64) -> Result<bool, AgentError> {
        let profile = self.profile()?;
        let limit = profile.window_tokens();
        let trigger = profile.compaction().trigger_percent();
        let summarizer = match profile.compaction().strategy() {
            CompactionStrategy::Summarize { summarizer } => Some(summarizer.as_str().to_string()),
            CompactionStrategy::Truncate => None,
        };
        let request = fixed + tokens::window_tokens(&self.window);
        if !needs_compaction(request, limit, trigger) {
            return Ok(false);
        }
        let target = trigger_tokens(limit, trigger);
        // The summarizer has answered nothing yet, however many turns the agent took.
        let summarizer = summarizer.map(|id| self.make_brain_after(&id, 0)).transpose()?;
        let strategy = match &summarizer {
            Some(brain) => Strategy::Summarize(brain.as_ref()),
            None => Strategy::Truncate,
        };
        let Some(done) = compact(&mut self.window, strategy, fixed, target).await? else { return Ok(false) };
        if let Some(usage) = done.summary_usage {
            self.charge(&usage).await?;
        }
        self.emit(AgentEvent::Compacted {
            turn: self.window.turn(),
            tokens_before: done.tokens_before,
            tokens_after: done.tokens_after,
            cut: done.cut as u64,
        });
        Ok(true)
    }
}
