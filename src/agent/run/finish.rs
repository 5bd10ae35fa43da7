//! Ending a session: the forks declared in the finishing turn run to completion first (an
//! ending is not a retraction), then the process exits with the result.

use super::error::AgentError;
use super::program::Agent;
use crate::actors::Pid;
use crate::agent::telemetry::AgentEvent;
use crate::tools::ToolName;
use serde_json::{Value, json};

impl Agent {
    /// Ends the session with `result`.
    pub(crate) async fn finish(mut self, result: Option<Value>, forks: &[Pid]) -> Result<(), AgentError> {
        for &fork in forks {
            // A fork that already ended, or that another call collected, answers at once.
            if let Ok(waited) = self.ctx.wait_child(fork, true).await {
                self.collect_subagent(&waited).await?;
            }
        }
        let usage = self
            .state
            .costs
            .iter()
            .fold(Default::default(), |sum, c| super::state::add_usage(&sum, &c.usage));
        self.emit(AgentEvent::AgentFinished { outcome: "exited".into(), result: result.clone(), usage });
        // The cost object is current: the forks just collected are in its subtree.
        self.checkpoint().await?;
        let payload = json!({
            "result": result,
            "agent_id": self.state.agent_id,
            "profile": self.state.profile,
            "cost": self.cost_record(),
        });
        self.ctx.exit(Some(payload)).await.map_err(AgentError::kernel(ToolName::Exit.as_str()))?;
        Ok(())
    }
}
