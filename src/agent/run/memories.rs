//! Module calls, and the memories object: an agent's own, its forker's linked by handle, or
//! its profile's one instance.
//!
//! | scope | a fork's memories |
//! |---|---|
//! | isolated | an independent copy (its own object); the two diverge |
//! | shared | the profile's one instance, read/write, bound by the copy itself |
//! | inherited | the forker's object, read/write; a write notifies the other holder |
//! | read-only | the forker's object; the copy may not write it |

use super::calls::Dispatch;
use super::error::AgentError;
use super::persist::{self, MEMORIES_OBJECT};
use super::program::Agent;
use super::state::MemoryLink;
use crate::actors::Oid;
use crate::actors::kernel::mailbox::MessageKind;
use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::calls::{BindProfileObject, SendRequest};
use crate::agent::config::MemoryScope;
use crate::agent::modules::{Memories, ModuleCall, ModuleKind, ModuleTool};
use serde_json::Value;

/// The mailbox channel memory-change notices travel on.
pub const MEMORIES_CHANNEL: &str = "agent.memories";

impl Agent {
    /// The memories scope of the current profile, if it holds memories.
    pub(crate) fn memory_scope(&self) -> Option<MemoryScope> {
        self.profile().ok()?.capabilities().memories().map(|m| m.scope())
    }

    /// Makes sure an agent that holds memories has its object: a `shared` scope binds its
    /// profile's one instance (made by the first agent of the profile to bind it); a fork with
    /// a linked scope (inherited, read-only) finds its forker's under the inherited name;
    /// anyone else creates its own. A link kept across an exec is re-resolved against the
    /// current profile's scope (never wider than its handle).
    pub(crate) async fn link_memories(&mut self) -> Result<(), AgentError> {
        let Some(scope) = self.memory_scope() else {
            self.state.memory_link = None;
            return Ok(());
        };
        if let Some(link) = self.state.memory_link.as_mut() {
            // A linked object's handle never widens: read-only stays read-only.
            link.writable = link.owned || (link.writable && scope != MemoryScope::ReadOnly);
            link.notify = scope == MemoryScope::Inherited;
            return Ok(());
        }
        if scope == MemoryScope::Shared {
            return self.bind_profile_memories().await;
        }
        let linked_fork = self.launch.fork.is_some() && scope != MemoryScope::Isolated;
        if linked_fork && let Some((oid, payload)) = persist::get(&self.ctx, MEMORIES_OBJECT).await? {
            self.state.modules.memories = Some(persist::from_payload("memories", payload)?);
            self.state.memory_link = Some(MemoryLink {
                oid: oid.to_string(),
                owned: false,
                writable: scope != MemoryScope::ReadOnly,
                notify: scope == MemoryScope::Inherited,
                profile_bound: false,
            });
            return Ok(());
        }
        let contents = self.state.modules.memories.get_or_insert_with(Memories::default).clone();
        let oid = persist::put(&self.ctx, MEMORIES_OBJECT, persist::to_payload(&contents)?).await?;
        self.state.memory_link = Some(MemoryLink {
            oid: oid.to_string(),
            owned: true,
            writable: true,
            notify: scope == MemoryScope::Inherited,
            profile_bound: false,
        });
        Ok(())
    }

    /// Binds the current profile's one memories instance (empty when this bind makes it) and
    /// reads its contents.
    async fn bind_profile_memories(&mut self) -> Result<(), AgentError> {
        let key = persist::profile_key(self.host.image_id().as_str(), &self.state.profile, MEMORIES_OBJECT);
        let request = BindProfileObject {
            key,
            name: MEMORIES_OBJECT.to_string(),
            initial: persist::to_payload(&Memories::default())?,
        };
        let bound =
            self.ctx.bind_profile_object(request).await.map_err(AgentError::kernel("bind_profile_object"))?;
        let payload = persist::get_oid(&self.ctx, bound.oid).await?;
        self.state.modules.memories = Some(persist::from_payload("memories", payload)?);
        self.state.memory_link = Some(MemoryLink {
            oid: bound.oid.to_string(),
            owned: false,
            writable: true,
            notify: false,
            profile_bound: true,
        });
        Ok(())
    }

    fn memories_oid(&self) -> Option<Oid> {
        self.state.memory_link.as_ref().and_then(|l| l.oid.parse().ok())
    }

    /// Runs a module call. Memories are read from their object first and written back at once
    /// (another holder may share them); the other modules are written at the turn boundary.
    pub(crate) async fn module_call(&mut self, call: ModuleCall) -> Result<Value, Dispatch> {
        let tool = ModuleTool::of(&call);
        let memories = tool.capability() == crate::agent::config::Capability::Memories;
        let oid = if memories { self.memories_oid() } else { None };
        if let Some(oid) = oid {
            let payload = persist::get_oid(&self.ctx, oid).await?;
            self.state.modules.memories = Some(persist::from_payload("memories", payload)?);
        }
        if !memories {
            // Written at the turn boundary; a refused call changed nothing.
            return Ok(call.run(&mut self.state.modules)?.result);
        }
        // On a copy: a write to memories linked read-only is refused and must change nothing.
        let mut modules = self.state.modules.clone();
        let output = call.run(&mut modules)?;
        if output.changed == Some(ModuleKind::Memories) {
            let link = self.state.memory_link.clone();
            if link.as_ref().is_some_and(|l| !l.writable) {
                return Err(ToolError::new(
                    "read_only_memories",
                    format!(
                        "{} would change your memories, which your profile links read-only to your forker's",
                        tool.name()
                    ),
                )
                .into());
            }
            if let (Some(oid), Some(contents)) = (oid, modules.memories.as_ref()) {
                persist::put_oid(&self.ctx, oid, persist::to_payload(contents)?).await?;
            }
            if link.is_some_and(|l| l.notify) {
                self.notify_memory_holders(tool.name()).await;
            }
        }
        self.state.modules = modules;
        Ok(output.result)
    }

    /// Tells the other holders of inherited memories that they changed. A holder that can no
    /// longer be reached (ended) is passed over.
    async fn notify_memory_holders(&self, call: &str) {
        let mut holders: Vec<String> = Vec::new();
        let forked_from_linked =
            self.launch.fork.is_some() && self.state.memory_link.as_ref().is_some_and(|l| !l.owned);
        if forked_from_linked && let Some(parent) = &self.launch.parent_pid {
            holders.push(parent.clone());
        }
        holders.extend(
            self.state
                .subagents
                .iter()
                .filter(|(_, s)| s.linked_memories && !s.collected)
                .map(|(id, _)| id.clone()),
        );
        for holder in holders {
            let Ok(to) = holder.parse() else { continue };
            let request = SendRequest {
                to,
                body: format!("agent {} changed your shared memories ({call})", self.state.agent_id),
                payload: None,
                channel: Some(MEMORIES_CHANNEL.to_string()),
                correlation_id: None,
                reply_to: None,
                kind: MessageKind::Normal,
            };
            let _ = self.ctx.send_message(request).await;
        }
    }
}
