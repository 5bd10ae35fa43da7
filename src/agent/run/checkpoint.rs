//! The turn-boundary checkpoint: the module objects that a person, a fork or a merge reads,
//! then the program checkpoint the agent restarts from.

use super::error::AgentError;
use super::persist::{
    self, COST_OBJECT, HISTORY_OBJECT, IDENTITY_OBJECT, LIBRARY_OBJECT, NOTEBOOK_OBJECT, TASKS_OBJECT,
};
use super::program::Agent;
use crate::actors::runtime::calls::NamedWrite;
use serde_json::{Value, json};
use std::collections::HashMap;

impl Agent {
    /// Snapshots the window into the chunk store, then writes the module objects that changed
    /// and commits the checkpoint in one kernel call (one commit), then drops the objects an
    /// exec let go of. Chunks are written before any record that names them.
    pub(crate) async fn checkpoint(&mut self) -> Result<(), AgentError> {
        let snapshot = self.window.snapshot(&*self.host.chunks)?;
        self.state.window = snapshot;
        let ctx = self.ctx.clone();
        let mut writes = ModuleWrites::default();
        // What the conversation is, in a line: the link naming its list of sealed chunks (what
        // the program checkpoint restores it from), so writing it costs the same at turn 10 and
        // at turn 10 000.
        let history = json!({
            "chunks": self.state.window.chunk_count(),
            "head_link": self.state.window.head,
            "tail_messages": self.state.window.tail.len(),
            "messages": self.window.len(),
            "turn": self.window.turn(),
        });
        writes.put(&self.written, HISTORY_OBJECT, history);
        let modules = &self.state.modules;
        let module_payloads: [(&str, Option<Value>); 3] = [
            (TASKS_OBJECT, modules.tasks.as_ref().map(persist::to_payload).transpose()?),
            (NOTEBOOK_OBJECT, modules.notebook.as_ref().map(persist::to_payload).transpose()?),
            (LIBRARY_OBJECT, modules.library.as_ref().map(persist::to_payload).transpose()?),
        ];
        for (name, payload) in module_payloads {
            // A module the agent does not hold: an exec that dropped it marked it written as
            // empty and releases its object after this checkpoint; an object still bound
            // under the name with contents (a checkpoint written before drops were released)
            // is emptied.
            match payload {
                Some(payload) => writes.put(&self.written, name, payload),
                None => {
                    let had_contents = match self.written.get(name) {
                        Some(last) => !last.is_null(),
                        None => persist::get(&ctx, name).await?.is_some_and(|(_, v)| !v.is_null()),
                    };
                    if had_contents {
                        writes.put(&self.written, name, Value::Null);
                    } else {
                        // Checked once per execution: a module never held is never read again.
                        self.written.insert(name, Value::Null);
                    }
                }
            }
        }
        writes.put(&self.written, COST_OBJECT, self.cost_record());
        let identity = json!({
            "agent_id": self.state.agent_id,
            "parent_agent_id": self.state.parent_agent_id,
            "profile": self.state.profile,
            "machine": self.state.machine,
            "depth": self.state.depth,
        });
        writes.put(&self.written, IDENTITY_OBJECT, identity);
        let bytes = self.state.encode()?;
        let named = writes
            .0
            .iter()
            .map(|(name, payload)| NamedWrite { name: name.to_string(), payload: payload.clone() });
        self.ctx.checkpoint_with(bytes, named.collect()).await.map_err(AgentError::kernel("checkpoint"))?;
        self.written.extend(writes.0);
        self.host.leave_window(self.ctx.pid(), &self.window);
        // What an exec let go of goes only now that the checkpoint naming the successor is in.
        self.finish_drops().await
    }
}

/// The module objects a checkpoint writes: those whose payload differs from the last written.
#[derive(Default)]
struct ModuleWrites(Vec<(&'static str, Value)>);

impl ModuleWrites {
    fn put(&mut self, written: &HashMap<&'static str, Value>, name: &'static str, payload: Value) {
        if written.get(name) != Some(&payload) {
            self.0.push((name, payload));
        }
    }
}

impl Agent {
    /// The cost record: usage per incarnation, per profile, and per profile over the subtree
    /// of what this process collected (the subagents whose results it waited for). Subagents
    /// are collected by the pid whose subtree they belong to.
    pub(crate) fn cost_record(&self) -> Value {
        let collected: Vec<&String> =
            self.state.subagents.iter().filter(|(_, s)| s.collected).map(|(p, _)| p).collect();
        json!({
            "incarnations": self.state.costs,
            "by_profile": self.state.cost_by_profile(),
            "subtree_by_profile": self.state.subtree_by_profile(),
            "collected": collected,
        })
    }
}
