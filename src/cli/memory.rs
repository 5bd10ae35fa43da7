//! A process's object memory as `inspect` prints it for a person: one line per fact, per
//! handle and per owned object.

use agentvisor::actors::runtime::calls::{HandleView, MemoryReport, OwnedObject};

/// The lines of `inspect`'s memory section (without the section's heading).
pub(crate) fn memory_lines(report: &MemoryReport) -> Vec<String> {
    let mut lines = vec![
        format!("goal        {}", report.goal_oid.map_or("-".into(), |oid| oid.to_string())),
        format!("roots       {}", words(report.roots.iter().map(ToString::to_string))),
        format!("clearance   {}", clearance(report.clearance.as_deref())),
        format!("context     {}", words(report.context.iter().cloned())),
        format!(
            "skills      {}",
            words(report.skills.iter().map(|s| {
                let tools: Vec<&str> = s.allowed_tools.iter().map(String::as_str).collect();
                format!("{}[{}]", s.name, tools.join(","))
            }))
        ),
        format!("collected   {}", report.collected.as_deref().unwrap_or("-")),
        format!("handles     {}", report.handles.len()),
    ];
    lines.extend(report.handles.iter().map(|h| format!("  {}", handle_line(h))));
    lines.push(format!("owned       {}", report.owned.len()));
    lines.extend(report.owned.iter().map(|o| format!("  {}", owned_line(o))));
    lines
}

/// Space-separated words, or `-` for none.
fn words(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() { "-".into() } else { items.join(" ") }
}

fn clearance(labels: Option<&[String]>) -> String {
    match labels {
        None => "all labels".into(),
        Some([]) => "no label".into(),
        Some(labels) => labels.join(" "),
    }
}

/// `<oid> <kind> rights=<r,w,d>[ root][ ephemeral][ names=…][ labels=…] (owner: <owner>)`.
fn handle_line(h: &HandleView) -> String {
    let mut line = format!("{} {} rights={}", h.oid, h.kind, h.rights.join(","));
    if h.root {
        line.push_str(" root");
    }
    if h.ephemeral {
        line.push_str(" ephemeral");
    }
    if !h.names.is_empty() {
        line.push_str(&format!(" names={}", h.names.join(",")));
    }
    if !h.labels.is_empty() {
        line.push_str(&format!(" labels={}", h.labels.join(",")));
    }
    line.push_str(&format!(" (owner: {})", h.owner));
    line
}

/// `<oid> <kind>[ ephemeral][ labels=…][ released]`.
fn owned_line(o: &OwnedObject) -> String {
    let mut line = format!("{} {}", o.oid, o.kind);
    if o.ephemeral {
        line.push_str(" ephemeral");
    }
    if !o.labels.is_empty() {
        line.push_str(&format!(" labels={}", o.labels.join(",")));
    }
    if o.released {
        line.push_str(" released");
    }
    line
}
