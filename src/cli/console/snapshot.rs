//! The console's picture of a state directory at one moment: every process with its status,
//! budget, mailbox and (for an agent) its incarnations and how each came to be; the declared
//! machines; the rigs and their seats. Built from a read-only view, like `ps` and `inspect`.

use super::history::Histories;
use crate::cli::agent_cost::agent_view;
use crate::cli::output::{View, forest, mailbox_view, open_view, short_pid, wait_word};
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::rig::store::SeatStore;
use serde_json::{Value, json};
use std::path::Path;

/// The snapshot as JSON (`GET /api/snapshot`, and each `snapshot` event of the stream).
/// A directory that holds no store yet is `{"ready": false, …}`, not an error: the console
/// may be started before the run it watches.
pub(crate) fn snapshot(state: &Path, histories: &Histories, machines: &Value) -> anyhow::Result<Value> {
    if !crate::cli::stores::has_state(state) {
        return Ok(json!({
            "state": state.display().to_string(),
            "ready": false,
            "owner_alive": false,
            "processes": [],
            "machines": {},
            "rigs": [],
            "messages": [],
        }));
    }
    let view = open_view(state)?;
    let (roots, children) = forest(&view.rt, true)?;
    let mut processes = Vec::new();
    let mut messages = Vec::new();
    let mut pending: Vec<&ProcessRow> = roots.iter().rev().collect();
    // Depth first, parents before children, siblings in creation order.
    while let Some(row) = pending.pop() {
        let mailbox = mailbox_view(&view.rt, row.pid)?;
        for m in &mailbox.recent {
            messages.push(serde_json::to_value(m)?);
        }
        processes.push(process_json(&view, row, mailbox.unread, mailbox.total, histories)?);
        if let Some(kids) = children.get(&row.pid) {
            pending.extend(kids.iter().rev());
        }
    }
    messages.sort_by_key(|m| m["seq"].as_u64().unwrap_or(0));
    Ok(json!({
        "state": state.display().to_string(),
        "ready": true,
        "owner_alive": view.owner_alive,
        "epoch": view.epoch,
        "processes": processes,
        "machines": machines,
        "rigs": rigs_json(state)?,
        "messages": messages,
    }))
}

/// One process as the tree draws it.
fn process_json(
    view: &View,
    row: &ProcessRow,
    unread: u64,
    messages_total: u64,
    histories: &Histories,
) -> anyhow::Result<Value> {
    let mut value = view.row_json(row);
    let agent = agent_view(&view.rt, row.pid)?;
    let history = histories.get(&row.pid.to_string());
    if let Some(map) = value.as_object_mut() {
        map.insert("short".into(), json!(short_pid(row.pid)));
        map.insert("wait".into(), json!(wait_word(row)));
        map.insert("unread".into(), json!(unread));
        map.insert("messages_total".into(), json!(messages_total));
        map.insert(
            "budget".into(),
            json!({ "limit": row.account.limit, "spent": row.account.total_spent() }),
        );
        map.insert("pause_reason".into(), json!(row.pause_reason));
        map.insert("host_gate".into(), json!(row.host_gate));
        map.insert("agent".into(), agent.unwrap_or(Value::Null));
        map.insert("history".into(), history.map_or(Value::Null, |h| h.to_json()));
    }
    Ok(value)
}

/// Every rig with its seats, from the seat store opened read-only; none when there is no
/// seat store.
fn rigs_json(state: &Path) -> anyhow::Result<Value> {
    let Some(store) = crate::cli::stores::seats_read_only(state)? else {
        return Ok(json!([]));
    };
    let mut rigs = Vec::new();
    for rig in store.rigs()? {
        let seats = store.seats(&rig.id)?;
        rigs.push(json!({ "rig": rig, "seats": seats }));
    }
    Ok(json!(rigs))
}
