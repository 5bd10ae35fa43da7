//! The root supervisor: the parent of every root process's actor.

use super::recovery::{OrphanEnd, end_orphaned_subtree};
use super::shared::Shared;
use crate::kernel::ids::Pid;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::HashMap;
use std::sync::Arc;

/// Messages to the root supervisor.
pub(crate) enum SupervisorMsg {
    /// A root's actor started under this supervisor.
    RootStarted(ActorId, Pid),
}

pub(crate) struct RootSupervisor {
    pub(crate) shared: Arc<Shared>,
}

impl Actor for RootSupervisor {
    type Msg = SupervisorMsg;
    type State = HashMap<ActorId, Pid>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        _: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(HashMap::new())
    }

    async fn handle(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        roots: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::RootStarted(id, pid) => {
                roots.insert(id, pid);
            }
        }
        Ok(())
    }

    // Overridden: the default stops the supervisor when any root's actor stops.
    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        roots: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                if let Some(pid) = roots.remove(&cell.get_id()) {
                    let message = format!("process actor failed: {error}");
                    end_orphaned_subtree(&self.shared, pid, &OrphanEnd::Failed(message)).await;
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                roots.remove(&cell.get_id());
            }
            _ => {}
        }
        Ok(())
    }
}
