//! Collecting a subagent: its result, and its subtree's cost rolled into this agent's.
//!
//! A merge releases the result object the wait granted (the kernel's collection boundary), so
//! the results about to be merged are first kept under names of the agent's own, durably (one
//! commit for all of a call's), until the checkpoint of the turn that collected them commits. A turn replayed after a crash between
//! the merge and that checkpoint then answers with the same result instead of none.

use super::error::AgentError;
use super::persist;
use super::program::Agent;
use super::state::{PendingDrop, add_usage};
use crate::actors::Pid;
use crate::actors::runtime::calls::{NamedWrite, WaitResult};
use crate::agent::brain::Usage;
use crate::tools::ToolName;
use serde_json::Value;
use std::collections::BTreeMap;

/// A subagent's result as read: through the wait's handle, or the copy kept before a merge.
pub(crate) enum Read {
    /// Read through the handle the wait granted.
    Granted(Value),
    /// The copy kept before an earlier run of this turn merged the subagent.
    Kept(Value),
}

impl Read {
    fn into_payload(self) -> Value {
        match self {
            Read::Granted(payload) | Read::Kept(payload) => payload,
        }
    }
}

/// The name a subagent's result is kept under from before its merge to the checkpoint of the
/// turn that collected it.
pub(crate) fn kept_result_name(child: Pid) -> String {
    format!("agent.subagent_result.{child}")
}

impl Agent {
    /// Reads a waited subagent's result and collects it: adds the cost its result reports for
    /// its subtree to this agent's and marks it collected. Returns the result the subagent
    /// finished with (`null` if none could be read). Collecting twice adds nothing the second
    /// time.
    pub(crate) async fn collect_subagent(&mut self, waited: &WaitResult) -> Result<Value, AgentError> {
        let read = self.read_result(waited).await?;
        Ok(self.collect_read(waited.child_pid, read))
    }

    /// A waited subagent's result: through the handle the wait granted, else, when it made one
    /// the wait could not grant, the copy kept before a merge of an earlier run of this turn
    /// released it (dropped again after this turn's checkpoint).
    pub(crate) async fn read_result(&mut self, waited: &WaitResult) -> Result<Option<Read>, AgentError> {
        if let (Some(oid), true) = (waited.result_oid, waited.result_handle)
            && let Some(payload) = self.ctx.read_object(oid).await.ok().and_then(|v| v.payload)
        {
            return Ok(Some(Read::Granted(payload)));
        }
        if waited.result_oid.is_none() {
            return Ok(None);
        }
        let name = kept_result_name(waited.child_pid);
        Ok(match persist::get(&self.ctx, &name).await? {
            Some((_, payload)) => {
                self.state.pending_drops.push(PendingDrop::Name(name));
                Some(Read::Kept(payload))
            }
            None => None,
        })
    }

    /// Keeps the results read through a wait's handle, before the merges that release them: all
    /// in one commit, each under [`kept_result_name`], dropped once this turn's checkpoint is in.
    pub(crate) async fn keep_results(&mut self, results: &[(Pid, &Read)]) -> Result<(), AgentError> {
        let writes: Vec<NamedWrite> = results
            .iter()
            .filter_map(|(pid, read)| match read {
                Read::Granted(payload) => {
                    Some(NamedWrite { name: kept_result_name(*pid), payload: payload.clone() })
                }
                Read::Kept(_) => None,
            })
            .collect();
        if writes.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = writes.iter().map(|w| w.name.clone()).collect();
        self.ctx.write_named(writes).await.map_err(AgentError::kernel(ToolName::WriteObject.as_str()))?;
        self.state.pending_drops.extend(names.into_iter().map(PendingDrop::Name));
        Ok(())
    }

    /// Collects a subagent whose result was read: marks it collected and, the first time,
    /// rolls the subtree cost its result reports into this agent's; returns its result.
    pub(crate) fn collect_read(&mut self, child: Pid, read: Option<Read>) -> Value {
        let payload = read.map(Read::into_payload);
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
