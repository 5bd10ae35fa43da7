//! Shared rendering helpers for command output, and the one writer every command prints
//! through.
//!
//! Every line a command prints goes through [`outln!`]/[`out!`], which return an I/O error
//! instead of panicking as `println!` does; a closed stdout (`agentvisor ps | head -1`) is a
//! broken pipe, which `cli::main` turns into a quiet, successful end ([`is_broken_pipe`]).

use agentvisor::actors::kernel::mailbox::{MailboxQuery, Message};
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::runtime::calls::{ChildRow, GrantView};
use agentvisor::actors::runtime::lock::{self, Owner};
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::store::{OwnerInfo, PostgresStore, ProcessQuery};
use agentvisor::actors::{Pid, Status};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Prints one line to stdout through [`write_out`]; `?`s its I/O error.
macro_rules! outln {
    () => {
        $crate::cli::output::write_out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::output::write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// Prints to stdout through [`write_out`], without a newline; `?`s its I/O error.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::write_out(format_args!($($arg)*))?
    };
}

/// Writes to stdout, returning the error (a broken pipe included) instead of panicking.
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    std::io::stdout().lock().write_fmt(args)
}

/// Whether an error is, at its root, a write to a closed pipe: the reader went away, which
/// ends a command quietly and successfully.
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A read-only view of a state directory, and whether a live runtime owns it.
pub(crate) struct View {
    /// The read-only runtime.
    pub(crate) rt: Runtime,
    /// Whether a live runtime holds the directory's lock.
    pub(crate) owner_alive: bool,
    /// The store's epoch: the number of the last runtime that owned the directory.
    pub(crate) epoch: u64,
    /// For a PostgreSQL store: the node that owns it (or owned it last).
    pub(crate) node: Option<OwnerInfo>,
}

impl View {
    /// A row's status as a person should read it: activity under a dead owner is stale.
    pub(crate) fn status(&self, row: &ProcessRow) -> String {
        if self.is_stale(row) {
            format!("{} (stale: no runtime owns it since epoch {})", row.status, self.epoch)
        } else {
            row.status.to_string()
        }
    }

    /// Whether the row claims activity (`runnable`, `running`, `waiting_event`) that no
    /// runtime is carrying out. A paused row is paused whoever owns it, and a terminal row is
    /// final, so neither is stale.
    pub(crate) fn is_stale(&self, row: &ProcessRow) -> bool {
        !self.owner_alive && !row.status.is_terminal() && row.status != Status::Paused
    }

    /// A row as JSON with the view's ownership: `owner_alive`, and `stale` for a live status
    /// no runtime acts on.
    pub(crate) fn row_json(&self, row: &ProcessRow) -> Value {
        let mut value = row_json(row);
        if let Some(map) = value.as_object_mut() {
            map.insert("owner_alive".into(), json!(self.owner_alive));
            map.insert("stale".into(), json!(self.is_stale(row)));
            if let Some(owner) = &self.node {
                // The owning node runs every process that is not over.
                let runs = self.owner_alive && !row.status.is_terminal();
                map.insert("node".into(), json!(runs.then_some(&owner.node)));
            }
        }
        value
    }

    /// Says which node owns a PostgreSQL store (on stderr, so a table's first line stays
    /// its header); nothing for a state directory.
    pub(crate) fn say_owner(&self) {
        super::stores::say_other_shards();
        let Some(owner) = &self.node else { return };
        if self.owner_alive {
            eprintln!(
                "node {} owns {} (fence {}, {} ms of its lease left)",
                owner.node,
                super::stores::owned_part(),
                owner.fence,
                owner.lease_left.as_millis()
            );
        } else {
            eprintln!(
                "no live node owns {} (node {} held it last, fence {}); `{}` takes it over",
                super::stores::owned_part(),
                owner.node,
                owner.fence,
                super::stores::node_command()
            );
        }
    }
}

/// Opens a read-only view of a state directory; never recovers, creates or writes anything
/// (the owner lock is only probed, with a shared lock, and the store opened read-only).
pub(crate) fn open_view(state: &Path) -> anyhow::Result<View> {
    super::stores::require_state(state)?;
    let rt = Runtime::open_read_only(state, super::stores::runtime_options(RuntimeOptions::new()))
        .with_context(|| {
            format!("failed to open {}{}", super::stores::describe(state), super::stores::other_shards_hint())
        })?;
    let epoch = rt.epoch().0;
    // A PostgreSQL store's owner is a node anywhere, known by its lease; a directory's by
    // its lock.
    if let Some(url) = super::stores::url() {
        let node = PostgresStore::owner_of(url)?;
        let owner_alive = node.as_ref().is_some_and(OwnerInfo::is_live);
        return Ok(View { rt, owner_alive, epoch, node });
    }
    let owner = if state.exists() {
        lock::probe(state).with_context(|| format!("failed to read the lock of {}", state.display()))?
    } else {
        Owner::None
    };
    Ok(View { rt, owner_alive: owner == Owner::Alive, epoch, node: None })
}

/// The short form of a pid every view prints: the last 8 hex digits, taken from the random
/// tail of the UUID v7 (its head is a timestamp, so pids made in the same millisecond share
/// it). [`resolve_pid`] accepts it.
pub(crate) fn short_pid(pid: Pid) -> String {
    let text = pid.to_string();
    text[text.len() - 8..].to_string()
}

/// Resolves a pid argument: a whole pid, or a unique prefix or suffix of one (the short form
/// the views print is a suffix). An ambiguous or unknown one is refused, naming the matches.
pub(crate) fn resolve_pid(rt: &Runtime, text: &str) -> anyhow::Result<Pid> {
    if let Ok(pid) = text.parse::<Pid>() {
        return Ok(pid);
    }
    let wanted = text.to_ascii_lowercase();
    if wanted.len() < 4 || !wanted.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        bail!(
            "{text:?} is not a pid: give a whole pid, or at least 4 of its hex digits (a prefix, or the short id the views print)"
        );
    }
    let rows = rt.processes(ProcessQuery { include_terminal: true, ..ProcessQuery::default() })?;
    let matches: Vec<Pid> = rows
        .iter()
        .map(|r| r.pid)
        .filter(|pid| {
            let full = pid.to_string();
            full.starts_with(&wanted) || full.ends_with(&wanted)
        })
        .collect();
    match matches.as_slice() {
        [pid] => Ok(*pid),
        [] => bail!("no process matches {text:?}"),
        many => bail!(
            "{text:?} matches {} processes ({}); give more digits",
            many.len(),
            many.iter().take(5).map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
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
    agentvisor::actors::text::excerpt_chars(&text.replace('\n', " "), width)
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
