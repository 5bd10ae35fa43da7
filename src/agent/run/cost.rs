//! Collecting a subagent: its result, and its subtree's cost rolled into this agent's.

use super::program::Agent;
use super::state::add_usage;
use crate::actors::runtime::calls::WaitResult;
use crate::agent::brain::Usage;
use serde_json::Value;
use std::collections::BTreeMap;

impl Agent {
    /// Reads a waited subagent's result (when the wait granted a handle on it), adds the cost
    /// its result reports for its subtree to this agent's, and marks it collected. Returns the
    /// result the subagent finished with (`null` if none could be read). Collecting twice adds
    /// nothing the second time.
    pub(crate) async fn collect_subagent(&mut self, waited: &WaitResult) -> Value {
        let payload = match (waited.result_oid, waited.result_handle) {
            (Some(oid), true) => self.ctx.read_object(oid).await.ok().and_then(|v| v.payload),
            _ => None,
        };
        let key = waited.child_pid.to_string();
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
