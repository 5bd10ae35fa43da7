//! What an exec lets go of: the objects of the modules the successor's profile turns off, and
//! a memories object the successor does not keep.
//!
//! A dropped module's object is released in the kernel (its payload deleted, every handle on
//! it revoked) and its name unbound; reading its OID afterwards answers `object_released`.
//! Memories are let go of by what the agent holds: its own object is released like any
//! dropped module; a forker's object linked by a fork (inherited, read-only) loses only this
//! agent's handle; a profile's one instance (shared) is never released by one agent's exec,
//! since every agent running the profile uses it: only this agent's handle and name go.
//!
//! The drops happen after the checkpoint that names the successor commits, so a restart from
//! the checkpoint before the exec never finds its modules gone; a restart after it runs the
//! recorded drops again, and a drop already made answers as done.
//!
//! The same list holds the subagent results kept across a merge ([`super::cost`]): dropped
//! by name once the checkpoint of the turn that collected them commits.

use super::error::AgentError;
use super::persist::{self, MEMORIES_OBJECT};
use super::program::Agent;
use super::state::PendingDrop;
use crate::actors::runtime::calls::ObjectTarget;
use crate::agent::config::MemoryScope;
use crate::agent::modules::{Memories, ModuleAction, ModuleKind, ModuleMove};
use serde_json::Value;

/// Answers of a drop that mean it was already made (a restart runs its checkpoint's again).
const ALREADY_DROPPED: [&str; 4] = ["unknown_name", "unknown_object", "object_released", "missing_right"];

impl Agent {
    /// At an exec, once the module table is applied to the modules: records the dropped
    /// modules' objects for dropping, lets go of a memories object the successor does not
    /// keep (carrying its latest contents into a successor that holds memories of its own),
    /// and links the successor's memories.
    pub(crate) async fn let_go_at_exec(&mut self, moves: &[ModuleMove]) -> Result<(), AgentError> {
        for moved in moves.iter().filter(|m| m.action == ModuleAction::Dropped) {
            if matches!(moved.module, ModuleKind::History | ModuleKind::Memories) {
                continue;
            }
            let name = persist::module_object(moved.module);
            // The checkpoint writes nothing under it again: the object goes whole.
            self.written.insert(name, Value::Null);
            self.state.pending_drops.push(PendingDrop::Name(name.to_string()));
        }
        let scope = self.memory_scope();
        let keeps = match (&self.state.memory_link, scope) {
            (Some(link), Some(scope)) => !link.profile_bound && scope != MemoryScope::Shared,
            _ => false,
        };
        if !keeps && let Some(link) = self.state.memory_link.take() {
            let oid = link
                .oid
                .parse()
                .map_err(|_| AgentError::Corrupt { message: format!("a memories link to {:?}", link.oid) })?;
            if self.state.modules.memories.is_some() && scope != Some(MemoryScope::Shared) {
                let payload = persist::get_oid(&self.ctx, oid).await?;
                self.state.modules.memories = Some(persist::from_payload::<Memories>("memories", payload)?);
            }
            // The name goes now, so the successor may bind its own memories under it; the
            // object (and this agent's handle) goes after the checkpoint.
            match self.ctx.unbind_name(MEMORIES_OBJECT).await {
                Ok(_) => {}
                Err(e) if e.code == "unknown_name" => {}
                Err(e) => return Err(AgentError::kernel("unbind_name")(e)),
            }
            self.state.pending_drops.push(PendingDrop::Oid(link.oid));
        }
        self.link_memories().await
    }

    /// Drops what an exec let go of and the results kept across a merge; called once the
    /// checkpoint that records the drops has committed.
    pub(crate) async fn finish_drops(&mut self) -> Result<(), AgentError> {
        for pending in std::mem::take(&mut self.state.pending_drops) {
            let target = match pending {
                PendingDrop::Name(name) => ObjectTarget::Name(name),
                PendingDrop::Oid(oid) => ObjectTarget::Oid(
                    oid.parse()
                        .map_err(|_| AgentError::Corrupt { message: format!("a pending drop of {oid:?}") })?,
                ),
            };
            match self.ctx.drop_object(target).await {
                Ok(_) => {}
                Err(e) if ALREADY_DROPPED.contains(&e.code.as_str()) => {}
                Err(e) => return Err(AgentError::kernel("drop_object")(e)),
            }
        }
        Ok(())
    }
}

/// What the successor's opening note says of memories beyond the module table, when a
/// profile's shared instance is involved: which instance the successor's memories are.
pub(crate) fn shared_memories_note(
    held_shared: bool,
    successor_scope: Option<MemoryScope>,
    successor: &str,
    predecessor: &str,
) -> Option<String> {
    match (held_shared, successor_scope) {
        (_, Some(MemoryScope::Shared)) => Some(format!(
            " Your memories are the ones profile {successor} shares: every agent running {successor} \
             reads and writes them.{}",
            if held_shared {
                format!(" The memories profile {predecessor} shares stay with its agents.")
            } else {
                String::new()
            }
        )),
        (true, Some(_)) => Some(format!(
            " Your memories are a copy of the ones profile {predecessor} shares, which stay with its agents."
        )),
        (true, None) => Some(format!(
            " The memories profile {predecessor} shares are not deleted: they stay with its agents."
        )),
        (false, _) => None,
    }
}
