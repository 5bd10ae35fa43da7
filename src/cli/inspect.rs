//! `agentvisor inspect PID`: one process in full, from a read-only view: its row, result,
//! mailbox, capabilities, object memory and, for an agent process, its incarnations and cost
//! (per profile, and summed over its subtree).

use super::agent_cost::{agent_lines, agent_view};
use super::memory::memory_lines;
use super::output::{MailboxView, View, grants_json, mailbox_view, message_line, open_view, resolve_pid};
use super::restarts::{restart_lines, restart_view};
use super::sources::image_needed;
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::store::ProcessQuery;
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor inspect`.
#[derive(clap::Args, Debug)]
pub(crate) struct InspectArgs {
    /// The process id.
    pid: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl InspectArgs {
    /// The process argument, as given.
    pub(crate) fn pid(&self) -> &str {
        &self.pid
    }
}

pub(crate) async fn run(state: &Path, args: InspectArgs) -> anyhow::Result<ExitCode> {
    let view_of = open_view(state)?;
    let rt = &view_of.rt;
    let pid = resolve_pid(rt, &args.pid)?;
    let Some(row) = rt.process(pid)? else {
        anyhow::bail!("unknown process {pid}");
    };
    let children = rt.processes(ProcessQuery::children_of(pid))?;
    let mailbox = mailbox_view(rt, pid)?;
    let view = inspect_view(state, &view_of, &row, &children, &mailbox)?;
    let agent = &view["agent"];
    let memory = rt.memory(pid);
    let restart = &view["restart"];
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&view)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("pid               {}", row.pid);
    outln!("parent            {}", row.parent.map_or("-".into(), |p| p.to_string()));
    outln!("status            {}", view_of.status(&row));
    if let Some(node) = view["process"]["node"].as_str() {
        outln!("node              {node}");
    }
    if let Some(needed) = &view["image_needed"].as_str() {
        outln!("image needed      {needed}");
    }
    outln!("state_generation  {}", row.state_generation);
    outln!("image             {}", row.image);
    outln!("cwd               {}", row.cwd);
    outln!("depth             {}", row.depth);
    outln!("goal              {}", row.goal);
    outln!("wait_state        {}", serde_json::to_string(&row.wait_state)?);
    outln!("pause_reason      {}", serde_json::to_string(&row.pause_reason)?);
    outln!("host_gate         {}", row.host_gate.as_deref().unwrap_or("-"));
    outln!("outcome           {}", serde_json::to_string(&row.outcome)?);
    outln!("result            {}", serde_json::to_string(&view["result"])?);
    outln!("budget            {}", serde_json::to_string(&row.account.limit)?);
    outln!("usage             {}", serde_json::to_string(&row.account.total_spent())?);
    outln!("children          {}", children.len());
    outln!("unread            {}", mailbox.unread);
    let newest = if mailbox.unread_only { "newest unread" } else { "newest" };
    outln!("messages          {} in all; {newest} {}:", mailbox.total, mailbox.recent.len());
    for m in &mailbox.recent {
        outln!("  {}", message_line(m));
    }
    outln!("capabilities");
    for g in rt.grants_of(pid)? {
        outln!(
            "  {} {} [{}]{}{}",
            g.id,
            g.resource,
            g.rights,
            if g.delegable { " delegable" } else { "" },
            if g.live { "" } else { " revoked" }
        );
    }
    if !restart.is_null() {
        outln!("restart");
        for line in restart_lines(restart) {
            outln!("  {line}");
        }
    }
    if !agent.is_null() {
        outln!("agent");
        for line in agent_lines(agent) {
            outln!("  {line}");
        }
    }
    match &memory {
        None => outln!("memory            -"),
        Some(report) => {
            outln!("memory");
            for line in memory_lines(report) {
                outln!("  {line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Everything `inspect --json` prints about `row` (the console serves the same).
pub(crate) fn inspect_json(state: &Path, view_of: &View, row: &ProcessRow) -> anyhow::Result<Value> {
    let rt = &view_of.rt;
    let children = rt.processes(ProcessQuery::children_of(row.pid))?;
    let mailbox = mailbox_view(rt, row.pid)?;
    inspect_view(state, view_of, row, &children, &mailbox)
}

/// [`inspect_json`] from the children and mailbox already read.
fn inspect_view(
    state: &Path,
    view_of: &View,
    row: &ProcessRow,
    children: &[ProcessRow],
    mailbox: &MailboxView,
) -> anyhow::Result<Value> {
    let rt = &view_of.rt;
    let pid = row.pid;
    let result = match row.result_oid {
        Some(oid) => match (rt.object(oid), rt.payload(oid)?) {
            (Some(meta), _) if meta.released => {
                json!({ "oid": oid, "materialized": false, "note": "the object was released" })
            }
            (_, Some(v)) => json!({ "oid": oid, "materialized": true, "payload": v }),
            (_, None) => json!({ "oid": oid, "materialized": false }),
        },
        None => Value::Null,
    };
    Ok(json!({
        "agent": agent_view(rt, pid)?,
        "process": view_of.row_json(row),
        "owner_alive": view_of.owner_alive,
        "image_needed": image_needed(state, row),
        "capabilities": grants_json(rt, pid)?,
        "children": children.iter().map(|c| json!({"pid": c.pid, "status": c.status})).collect::<Vec<_>>(),
        "result": result,
        "unread": mailbox.unread,
        "messages_total": mailbox.total,
        "recent_messages": mailbox.recent,
        "recent_unread_only": mailbox.unread_only,
        "memory": rt.memory(pid),
        "restart": restart_view(rt, row)?,
    }))
}
