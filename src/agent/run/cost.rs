//! Collecting a subagent: its result, and its subtree's cost rolled into this agent's.
//!
//! A merge releases the result object the wait granted (the kernel's collection boundary), so
//! a result about to be merged is first kept under a name of the agent's own, durably, until
//! the checkpoint of the turn that collected it commits. A turn replayed after a crash between
//! the merge and that checkpoint then answers with the same result instead of none.

use super::error::AgentError;
use super::persist;
use super::program::Agent;
use super::state::{PendingDrop, add_usage};
use crate::actors::Pid;
use crate::actors::runtime::calls::WaitResult;
use crate::agent::brain::Usage;
use serde_json::Value;
use std::collections::BTreeMap;

/// The name a subagent's result is kept under from before its merge to the checkpoint of the
/// turn that collected it.
pub(crate) fn kept_result_name(child: Pid) -> String {
    format!("agent.subagent_result.{child}")
}

impl Agent {
    /// Reads a waited subagent's result (when the wait granted a handle on it, else the one
    /// kept before a merge of an earlier run of this turn), adds the cost its result reports
    /// for its subtree to this agent's, and marks it collected. With `keep` (a merge follows),
    /// the result is first kept durably under [`kept_result_name`]; it is dropped once this
    /// turn's checkpoint is in. Returns the result the subagent finished with (`null` if none
    /// could be read). Collecting twice adds nothing the second time. Fails only if a result
    /// to keep could not be written: the caller must not merge then.
    pub(crate) async fn collect_subagent(
        &mut self,
        waited: &WaitResult,
        keep: bool,
    ) -> Result<Value, AgentError> {
        let granted = match (waited.result_oid, waited.result_handle) {
            (Some(oid), true) => self.ctx.read_object(oid).await.ok().and_then(|v| v.payload),
            _ => None,
        };
        let name = kept_result_name(waited.child_pid);
        let payload = match granted {
            Some(payload) if keep => {
                persist::put(&self.ctx, &name, payload.clone()).await?;
                self.state.pending_drops.push(PendingDrop::Name(name));
                Some(payload)
            }
            Some(payload) => Some(payload),
            // Released by the merge of an earlier run of this turn: the kept copy, if any.
            None => match persist::get(&self.ctx, &name).await? {
                Some((_, payload)) => {
                    self.state.pending_drops.push(PendingDrop::Name(name));
                    Some(payload)
                }
                None => None,
            },
        };
        Ok(self.account_collected(waited.child_pid, payload))
    }

    /// Marks the subagent collected and rolls the subtree cost its result reports into this
    /// agent's, the first time; returns its result.
    fn account_collected(&mut self, child: Pid, payload: Option<Value>) -> Value {
        let key = child.to_string();
        let first = self.state.subagents.get(&key).is_some_and(|s| !s.collected);
        if let Some(s) = self.state.subagents.get_mut(&key) {
            s.collected = true;
        }
        let Some(payload) = payload else { return Value::Null };
        if first {
            let subtree: BTreeMap<String, Usage> = payload
                .get("cost")
                .and_then(|c| c.get("subtree_by_profile"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            for (profile, usage) in subtree {
                let entry = self.state.collected_costs.entry(profile).or_default();
                *entry = add_usage(entry, &usage);
            }
        }
        payload.get("result").cloned().unwrap_or(payload)
    }
}
