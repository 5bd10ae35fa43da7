//! `agentvisor ps`: list processes from a read-only view. A live status under a dead owner is
//! shown stale.

use super::output::{cell, open_view, short_pid, wait_word};
use agentvisor::actors::Pid;
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::store::ProcessQuery;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor ps`.
#[derive(clap::Args, Debug)]
pub(crate) struct PsArgs {
    /// Include terminal processes.
    #[arg(long)]
    all: bool,
    /// Print JSON (one array of rows).
    #[arg(long)]
    json: bool,
}

/// Rows read per page: `ps --all` on a long history holds one page at a time.
const PAGE: usize = 1_000;

pub(crate) async fn run(state: &Path, args: PsArgs) -> anyhow::Result<ExitCode> {
    let view = open_view(state)?;
    let rt = &view.rt;
    // The live rows decide the stale notice and the status column's width (a terminal status
    // is never stale, and shorter); with `--all` the terminal ones are read page by page.
    let live = rt.processes(ProcessQuery::default())?;
    let statuses: Vec<String> = live.iter().map(|row| view.status(row)).collect();
    let width = statuses.iter().map(|s| s.chars().count()).max().unwrap_or(0).max("STATUS".len() + 7);
    let stale = live.iter().any(|row| view.is_stale(row));
    let mut pages = Pages { rt, all: args.all, live: Some(live), after: None };
    if args.json {
        // One JSON array, printed an element at a time as `to_string_pretty` prints arrays.
        let mut first = true;
        while let Some(rows) = pages.next()? {
            for row in &rows {
                let mut value = view.row_json(row);
                if let Some(map) = value.as_object_mut() {
                    map.insert("unread".into(), json!(rt.unread_count(row.pid)?));
                }
                let element = serde_json::to_string_pretty(&value)?.replace('\n', "\n  ");
                out!("{}\n  {element}", if first { "[" } else { "," });
                first = false;
            }
        }
        outln!("{}", if first { "[]" } else { "\n]" });
        return Ok(ExitCode::SUCCESS);
    }
    view.say_owner();
    if stale {
        // On stderr, so the table's first line stays its header.
        eprintln!(
            "agentvisor: no live runtime owns {} (last owner: epoch {}); `agentvisor recover` reopens it",
            state.display(),
            view.epoch
        );
    }
    outln!(
        "{:<36}  {:<8}  {:<width$}  {:>4}  {:>5}  {:<7}  {:>6}  {:<12}  GOAL",
        "PID",
        "ID",
        "STATUS",
        "GEN",
        "DEPTH",
        "WAIT",
        "UNREAD",
        "IMAGE"
    );
    let mut printed = 0usize;
    while let Some(rows) = pages.next()? {
        for row in &rows {
            // Unacknowledged messages, read through the host API (never acknowledging).
            let unread = rt.unread_count(row.pid)?;
            outln!(
                "{:<36}  {:<8}  {:<width$}  {:>4}  {:>5}  {:<7}  {:>6}  {:<12}  {}",
                row.pid,
                short_pid(row.pid),
                view.status(row),
                row.state_generation,
                row.depth,
                wait_word(row),
                unread,
                cell(row.image.as_str(), 12),
                cell(&row.goal, 60)
            );
        }
        printed += rows.len();
    }
    if printed == 0 {
        outln!("(no {}processes; --all includes terminal ones)", if args.all { "" } else { "live " });
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows `ps` lists, in pid order: the live rows already read, or with `--all` every row,
/// [`PAGE`] at a time.
struct Pages<'a> {
    rt: &'a agentvisor::actors::runtime::Runtime,
    all: bool,
    live: Option<Vec<ProcessRow>>,
    after: Option<Pid>,
}

impl Pages<'_> {
    fn next(&mut self) -> anyhow::Result<Option<Vec<ProcessRow>>> {
        if !self.all {
            return Ok(self.live.take());
        }
        let query = ProcessQuery {
            include_terminal: true,
            limit: Some(PAGE),
            after: self.after,
            ..ProcessQuery::default()
        };
        let rows = self.rt.processes(query)?;
        self.after = rows.last().map(|r| r.pid);
        Ok(if rows.is_empty() { None } else { Some(rows) })
    }
}
