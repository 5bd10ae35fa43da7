//! `agentvisor inspect PID`: one process in full, from a read-only view: its row, result,
//! mailbox, capabilities, object memory and, for an agent process, its incarnations and cost
//! (per profile, and summed over its subtree).

use super::agent_cost::{agent_lines, agent_view};
use super::memory::memory_lines;
use super::output::{grants_json, mailbox_view, message_line, open_view, parse_pid, row_json};
use agentvisor::actors::store::ProcessQuery;
use serde_json::json;
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

pub(crate) async fn run(state: &Path, args: InspectArgs) -> anyhow::Result<ExitCode> {
    let pid = parse_pid(&args.pid)?;
    let rt = open_view(state)?;
    let Some(row) = rt.process(pid)? else {
        anyhow::bail!("unknown process {pid}");
    };
    let children =
        rt.processes(ProcessQuery { parent: Some(pid), include_terminal: true, ..ProcessQuery::default() })?;
    let result = match row.result_oid {
        Some(oid) => match (rt.object(oid), rt.payload(oid)?) {
            (Some(meta), _) if meta.released => {
                json!({ "oid": oid, "materialized": false, "note": "the object was released" })
            }
            (_, Some(v)) => json!({ "oid": oid, "materialized": true, "payload": v }),
            (_, None) => json!({ "oid": oid, "materialized": false }),
        },
        None => serde_json::Value::Null,
    };
    let mailbox = mailbox_view(&rt, pid)?;
    let memory = rt.memory(pid);
    let agent = agent_view(&rt, pid)?;
    let view = json!({
        "agent": agent,
        "process": row_json(&row),
        "capabilities": grants_json(&rt, pid)?,
        "children": children.iter().map(|c| json!({"pid": c.pid, "status": c.status})).collect::<Vec<_>>(),
        "result": result,
        "unread": mailbox.unread,
        "messages_total": mailbox.total,
        "recent_messages": mailbox.recent,
        "recent_unread_only": mailbox.unread_only,
        "memory": memory,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("pid               {}", row.pid);
    println!("parent            {}", row.parent.map_or("-".into(), |p| p.to_string()));
    println!("status            {}", row.status);
    println!("state_generation  {}", row.state_generation);
    println!("image             {}", row.image);
    println!("cwd               {}", row.cwd);
    println!("depth             {}", row.depth);
    println!("goal              {}", row.goal);
    println!("wait_state        {}", serde_json::to_string(&row.wait_state)?);
    println!("pause_reason      {}", serde_json::to_string(&row.pause_reason)?);
    println!("host_gate         {}", row.host_gate.as_deref().unwrap_or("-"));
    println!("outcome           {}", serde_json::to_string(&row.outcome)?);
    println!("result            {}", serde_json::to_string(&view["result"])?);
    println!("budget            {}", serde_json::to_string(&row.account.limit)?);
    println!("usage             {}", serde_json::to_string(&row.account.total_spent())?);
    println!("children          {}", children.len());
    println!("unread            {}", mailbox.unread);
    let newest = if mailbox.unread_only { "newest unread" } else { "newest" };
    println!("messages          {} in all; {newest} {}:", mailbox.total, mailbox.recent.len());
    for m in &mailbox.recent {
        println!("  {}", message_line(m));
    }
    println!("capabilities");
    for g in rt.grants_of(pid)? {
        println!(
            "  {} {} [{}]{}{}",
            g.id,
            g.resource,
            g.rights,
            if g.delegable { " delegable" } else { "" },
            if g.live { "" } else { " revoked" }
        );
    }
    if let Some(agent) = &agent {
        println!("agent");
        for line in agent_lines(agent) {
            println!("  {line}");
        }
    }
    match &memory {
        None => println!("memory            -"),
        Some(report) => {
            println!("memory");
            for line in memory_lines(report) {
                println!("  {line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
