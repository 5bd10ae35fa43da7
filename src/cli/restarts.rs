//! The restart section of `inspect`: a process's policy and incarnation as a child, and its
//! supervision and restart history as a parent.

use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::runtime::Runtime;
use serde_json::{Value, json};

/// The restart section of `row`: `null` for a temporary child that never supervised a
/// restart. A terminal incarnation that was restarted names its successor (`restarted_as`,
/// from its parent's history).
pub(crate) fn restart_view(rt: &Runtime, row: &ProcessRow) -> anyhow::Result<Value> {
    let state = &row.restart;
    if state.is_default() {
        return Ok(Value::Null);
    }
    let restarted_as = match (row.parent, &state.spec) {
        (Some(parent), Some(_)) if row.status.is_terminal() => rt
            .process(parent)?
            .and_then(|p| p.restart.history.iter().find(|r| r.old_pid == row.pid).and_then(|r| r.new_pid)),
        _ => None,
    };
    Ok(json!({
        "policy": state.policy,
        "child_id": state.spec.as_ref().map(|s| s.child_id),
        "incarnation": state.spec.as_ref().map(|s| s.incarnation),
        "restart_of": state.spec.as_ref().and_then(|s| s.restart_of),
        "restarted_as": restarted_as,
        "supervision": state.supervision(),
        "history": state.history,
    }))
}

/// The section as lines for the text view.
pub(crate) fn restart_lines(view: &Value) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let sup = &view["supervision"];
    let mut lines = vec![
        format!(
            "policy {}  child {}  incarnation {}  restart of {}  restarted as {}",
            text(&view["policy"]),
            text(&view["child_id"]),
            text(&view["incarnation"]),
            text(&view["restart_of"]),
            text(&view["restarted_as"])
        ),
        format!(
            "supervision {} intensity {} per {} ms",
            text(&sup["strategy"]),
            text(&sup["intensity"]),
            text(&sup["period_ms"])
        ),
    ];
    for r in view["history"].as_array().into_iter().flatten() {
        let what = match r["refused"].as_str() {
            Some(why) => format!("refused ({why})"),
            None => format!("-> {} generation {}", text(&r["new_pid"]), text(&r["state_generation"])),
        };
        lines.push(format!(
            "restart at {} ms: child {} incarnation {} {} {}; because {}",
            text(&r["at_ms"]),
            text(&r["child_id"]),
            text(&r["incarnation"]),
            text(&r["old_pid"]),
            what,
            text(&r["reason"])
        ));
    }
    lines
}
