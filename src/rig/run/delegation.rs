//! `delegates_to` edges between native seats: once both seats of an edge are realized, the
//! `from` seat's agent process is granted WRITE on the `to` seat's mailbox
//! (`mailbox:<pid>`, a host grant the kernel honours beside parent and children), and told so
//! in a message naming the `to` seat's process, so that it can `send_process_message` to it.
//! The data-flow check applies to every such message as to any other.
//!
//! Grants are durable (a reopened runtime keeps them) and revocable with `agentvisor revoke`.
//! Seats realize concurrently: the pids are kept under one lock, so whichever seat of an edge
//! realizes second makes the grant.

use crate::actors::Pid;
use crate::actors::kernel::capability::{CapabilityRequest, Rights};
use crate::actors::kernel::mailbox::{MessageKind, mailbox_resource};
use crate::actors::runtime::Runtime;
use crate::actors::runtime::calls::SendRequest;
use crate::rig::store::SeatStore;
use crate::rig::{EdgeKind, MemberId, RigId, RigSpec};
use std::collections::HashMap;

/// The channel of the message telling a seat whom it may message.
pub const DELEGATION_CHANNEL: &str = "rig.delegates_to";

/// The native seats realized so far, by rig and member.
#[derive(Default)]
pub(super) struct Delegations {
    pids: parking_lot::Mutex<HashMap<(RigId, MemberId), Pid>>,
}

impl Delegations {
    /// Records that `member` of `rig` runs as `pid`, and grants every `delegates_to` edge of
    /// the rig whose other seat is realized too. A grant that fails is logged; the seat runs.
    pub(super) async fn seat_realized(
        &self,
        rt: &Runtime,
        store: &dyn SeatStore,
        rig: &RigId,
        member: &MemberId,
        pid: Pid,
    ) {
        let edges = match store.rig(rig) {
            Ok(Some(record)) => {
                serde_json::from_str::<RigSpec>(&record.spec_json).map(|s| s.edges).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let mine: Vec<_> = edges
            .into_iter()
            .filter(|e| e.kind == EdgeKind::DelegatesTo && (e.from == *member || e.to == *member))
            .collect();
        if mine.is_empty() {
            return;
        }
        let pairs: Vec<(Pid, Pid, MemberId)> = {
            let mut pids = self.pids.lock();
            pids.insert((rig.clone(), member.clone()), pid);
            let pid_of = |m: &MemberId| pids.get(&(rig.clone(), m.clone())).copied();
            mine.iter().filter_map(|e| Some((pid_of(&e.from)?, pid_of(&e.to)?, e.to.clone()))).collect()
        };
        for (from, to, to_member) in pairs {
            if let Err(error) = grant(rt, rig, from, to, &to_member).await {
                tracing::warn!(%rig, %from, %to, %error, "a delegates_to edge could not be granted");
            }
        }
    }
}

/// Grants `from` WRITE on `to`'s mailbox and tells it.
async fn grant(rt: &Runtime, rig: &RigId, from: Pid, to: Pid, to_member: &MemberId) -> Result<(), String> {
    let request = CapabilityRequest {
        resource: mailbox_resource(to),
        rights: Rights::WRITE,
        constraints: Default::default(),
        delegable: false,
    };
    rt.grant(from, &request).await.map_err(|e| e.to_string())?;
    let note = SendRequest {
        to: from,
        body: format!(
            "Rig {rig}: your seat delegates to seat {to_member}, which runs as process {to}; you may \
             send_process_message to it."
        ),
        payload: Some(serde_json::json!({"seat": to_member.as_str(), "pid": to.to_string()})),
        channel: Some(DELEGATION_CHANNEL.to_string()),
        correlation_id: None,
        reply_to: None,
        kind: MessageKind::Normal,
    };
    rt.send_message(note).await.map(|_| ()).map_err(|e| e.to_string())
}
