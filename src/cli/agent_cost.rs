//! The agent section of `agentvisor inspect`: who the process is now (agent id, profile,
//! machine state) and what it cost, per incarnation, per profile, and summed over its subtree.

use agentvisor::actors::Pid;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::ProcessQuery;
use agentvisor::agent::brain::Usage;
use agentvisor::agent::run::add_usage;
use agentvisor::agent::run::persist::{COST_OBJECT, IDENTITY_OBJECT};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A named agent object's payload, if `pid` binds one.
fn agent_object(rt: &Runtime, pid: Pid, name: &str) -> Option<Value> {
    let oid = rt.named(pid, name)?;
    rt.payload(oid).ok().flatten()
}

/// Usage per profile over `pid`'s subtree: what its cost record holds for itself and the
/// subagents it collected, plus, for each child it has not collected (still running, or ended
/// and not waited for), that child's subtree read the same way while its record remains.
fn subtree(rt: &Runtime, pid: Pid) -> anyhow::Result<BTreeMap<String, Usage>> {
    let mut total: BTreeMap<String, Usage> = BTreeMap::new();
    let mut pending = vec![pid];
    while let Some(next) = pending.pop() {
        // An ended child's memory may be gone; its result reports the same cost record.
        let cost =
            agent_object(rt, next, COST_OBJECT).or_else(|| ended_cost(rt, next)).unwrap_or(Value::Null);
        let own: BTreeMap<String, Usage> =
            serde_json::from_value(cost["subtree_by_profile"].clone()).unwrap_or_default();
        for (profile, usage) in own {
            let entry = total.entry(profile).or_default();
            *entry = add_usage(entry, &usage);
        }
        let collected: Vec<String> = serde_json::from_value(cost["collected"].clone()).unwrap_or_default();
        let query = ProcessQuery::children_of(next);
        let children = rt.processes(query)?.into_iter().map(|c| c.pid);
        pending.extend(children.filter(|c| !collected.contains(&c.to_string())));
    }
    Ok(total)
}

/// The cost record an ended agent's result carries (`cost` of its exit payload), if any.
fn ended_cost(rt: &Runtime, pid: Pid) -> Option<Value> {
    let oid = rt.process(pid).ok().flatten()?.result_oid?;
    rt.payload(oid).ok().flatten()?.get("cost").cloned()
}

/// The agent view of `pid`, or `None` if it is not an agent process.
pub(crate) fn agent_view(rt: &Runtime, pid: Pid) -> anyhow::Result<Option<Value>> {
    let Some(identity) = agent_object(rt, pid, IDENTITY_OBJECT) else { return Ok(None) };
    let cost = agent_object(rt, pid, COST_OBJECT).unwrap_or(Value::Null);
    Ok(Some(json!({
        "identity": identity,
        "incarnations": cost["incarnations"],
        "by_profile": cost["by_profile"],
        "subtree_by_profile": subtree(rt, pid)?,
    })))
}

fn usage_line(usage: &Value) -> String {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    let cost = usage["cost_micros"].as_u64().map_or("-".to_string(), |c| format!("{c} µ"));
    format!("in {} out {} cached {} cost {cost}", n("input_tokens"), n("output_tokens"), n("cached_tokens"))
}

/// The lines `inspect` prints for an agent view.
pub(crate) fn agent_lines(view: &Value) -> Vec<String> {
    let identity = &view["identity"];
    let mut lines = vec![format!(
        "agent {} profile {}{}",
        identity["agent_id"].as_str().unwrap_or("-"),
        identity["profile"].as_str().unwrap_or("-"),
        match identity["machine"].as_object() {
            Some(m) => format!(
                " in machine {} state {}",
                m.get("machine").and_then(Value::as_str).unwrap_or("-"),
                m.get("state").and_then(Value::as_str).unwrap_or("-")
            ),
            None => String::new(),
        }
    )];
    lines.push("incarnations".to_string());
    for inc in view["incarnations"].as_array().into_iter().flatten() {
        lines.push(format!(
            "  {} {} turns {} {}",
            inc["agent_id"].as_str().unwrap_or("-"),
            inc["profile"].as_str().unwrap_or("-"),
            inc["turns"].as_u64().unwrap_or(0),
            usage_line(&inc["usage"])
        ));
    }
    for (title, key) in [("cost by profile", "by_profile"), ("subtree cost by profile", "subtree_by_profile")]
    {
        lines.push(title.to_string());
        for (profile, usage) in view[key].as_object().into_iter().flatten() {
            lines.push(format!("  {profile} {}", usage_line(usage)));
        }
    }
    lines
}
