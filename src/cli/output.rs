//! Shared rendering helpers for command output.

use agentvisor::actors::kernel::mailbox::{MailboxQuery, Message};
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::runtime::calls::{ChildRow, GrantView};
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::store::ProcessQuery;
use agentvisor::actors::{Pid, Status};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

/// Opens a read-only view of a state directory; never recovers anything.
pub(crate) fn open_view(state: &Path) -> anyhow::Result<Runtime> {
    let db = state.join(agentvisor::actors::runtime::DB_FILE);
    if !db.exists() {
        bail!(
            "no agentvisor state at {} (run a command that starts processes first, or pass --state DIR)",
            state.display()
        );
    }
    Runtime::open_read_only(state, RuntimeOptions::new())
        .with_context(|| format!("failed to open {}", state.display()))
}

/// Parses a pid argument.
pub(crate) fn parse_pid(text: &str) -> anyhow::Result<Pid> {
    text.parse::<Pid>().map_err(|e| anyhow::anyhow!("{e}"))
}

/// A row as JSON, with the kernel's field names.
pub(crate) fn row_json(row: &ProcessRow) -> Value {
    let mut value = serde_json::to_value(ChildRow::from(row)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("parent".into(), json!(row.parent));
        map.insert("epoch".into(), json!(row.epoch));
        map.insert("resume_claim".into(), json!(row.resume_claim));
    }
    value
}

/// Grants as JSON.
pub(crate) fn grants_json(rt: &Runtime, pid: Pid) -> anyhow::Result<Value> {
    let grants = rt.grants_of(pid)?;
    Ok(json!(grants.iter().map(GrantView::from).collect::<Vec<_>>()))
}

/// A compact one-word wait description.
pub(crate) fn wait_word(row: &ProcessRow) -> String {
    match &row.wait_state {
        None => "-".into(),
        Some(w) => w.kind().to_string(),
    }
}

/// Clips text for a table cell.
pub(crate) fn cell(text: &str, width: usize) -> String {
    let text = text.replace('\n', " ");
    if text.chars().count() <= width {
        return text;
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Rows by parent, in creation order.
pub(crate) type ChildrenOf = HashMap<Pid, Vec<ProcessRow>>;

/// All rows: the roots, and children by parent, in creation order.
pub(crate) fn forest(rt: &Runtime, include_terminal: bool) -> anyhow::Result<(Vec<ProcessRow>, ChildrenOf)> {
    let rows = rt.processes(ProcessQuery { include_terminal, ..ProcessQuery::default() })?;
    let mut children: HashMap<Pid, Vec<ProcessRow>> = HashMap::new();
    let mut roots = Vec::new();
    for row in rows {
        match row.parent {
            Some(p) => children.entry(p).or_default().push(row),
            None => roots.push(row),
        }
    }
    Ok((roots, children))
}

/// A status with a marker a person can scan.
pub(crate) fn status_mark(status: Status) -> &'static str {
    match status {
        Status::Exited => "✓",
        Status::Failed => "✗",
        Status::Killed => "☠",
        Status::Paused => "‖",
        Status::WaitingEvent => "…",
        Status::Running => "▶",
        Status::Runnable => "·",
    }
}

/// Messages `inspect` lists: the newest few.
pub(crate) const RECENT_MESSAGES: usize = 5;

/// Mailboxes up to this size are scanned whole for their newest messages; a larger one shows
/// its newest unread messages instead (at most `MAILBOX_UNACKED_MAX` of them exist). The store
/// reads oldest first and has no "newest first" query, so this bounds what `inspect` reads.
const MAILBOX_SCAN_MAX: u64 = 10_000;

/// A process's mailbox as `inspect` shows it, read without acknowledging anything.
pub(crate) struct MailboxView {
    /// Unacknowledged messages.
    pub(crate) unread: u64,
    /// All messages, acknowledged ones included.
    pub(crate) total: u64,
    /// The newest few, oldest first.
    pub(crate) recent: Vec<Message>,
    /// Whether `recent` holds only unread messages (the mailbox was too large to scan).
    pub(crate) unread_only: bool,
}

/// Reads `pid`'s mailbox for `inspect` through the host API, which never acknowledges.
pub(crate) fn mailbox_view(rt: &Runtime, pid: Pid) -> anyhow::Result<MailboxView> {
    let unread = rt.unread_count(pid)?;
    let count = MailboxQuery { filter: Default::default(), include_acked: true, limit: 0 };
    let total = rt.read_mailbox(pid, &count)?.matched;
    let unread_only = total > MAILBOX_SCAN_MAX;
    let scanned = if unread_only { unread } else { total };
    let query = MailboxQuery {
        filter: Default::default(),
        include_acked: !unread_only,
        limit: usize::try_from(scanned).unwrap_or(usize::MAX),
    };
    let mut recent = rt.read_mailbox(pid, &query)?.messages;
    let newest = recent.len().saturating_sub(RECENT_MESSAGES);
    recent.drain(..newest);
    Ok(MailboxView { unread, total, recent, unread_only })
}

/// One message as a line of `inspect` output.
pub(crate) fn message_line(m: &Message) -> String {
    format!(
        "#{} {} from {} {}{}{} {}: {}",
        m.seq,
        m.message_id,
        m.sender,
        m.kind.as_str(),
        m.channel.as_deref().map(|c| format!(" channel={c}")).unwrap_or_default(),
        m.reply_to.map(|r| format!(" reply_to={r}")).unwrap_or_default(),
        if m.acked { "read" } else { "unread" },
        cell(&m.body, 60)
    )
}
