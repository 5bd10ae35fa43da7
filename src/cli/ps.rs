//! `agentvisor ps`: list processes from a read-only view. A live status under a dead owner is
//! shown stale.

use super::output::{cell, open_view, short_pid, wait_word};
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

pub(crate) async fn run(state: &Path, args: PsArgs) -> anyhow::Result<ExitCode> {
    let view = open_view(state)?;
    let rt = &view.rt;
    let rows = rt.processes(ProcessQuery { include_terminal: args.all, ..ProcessQuery::default() })?;
    // Unacknowledged messages per process, read through the host API (never acknowledging).
    let unread = rows.iter().map(|row| rt.unread_count(row.pid)).collect::<Result<Vec<u64>, _>>()?;
    if args.json {
        let out: Vec<_> = rows
            .iter()
            .zip(&unread)
            .map(|(row, unread)| {
                let mut value = view.row_json(row);
                if let Some(map) = value.as_object_mut() {
                    map.insert("unread".into(), json!(unread));
                }
                value
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    view.say_owner();
    if !view.owner_alive && rows.iter().any(|r| view.is_stale(r)) {
        // On stderr, so the table's first line stays its header.
        eprintln!(
            "agentvisor: no live runtime owns {} (last owner: epoch {}); `agentvisor recover` reopens it",
            state.display(),
            view.epoch
        );
    }
    // The status column is as wide as its widest entry, so a stale mark keeps the columns
    // after it aligned.
    let statuses: Vec<String> = rows.iter().map(|row| view.status(row)).collect();
    let width = statuses.iter().map(|s| s.chars().count()).max().unwrap_or(0).max("STATUS".len() + 7);
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
    for ((row, unread), status) in rows.iter().zip(&unread).zip(&statuses) {
        outln!(
            "{:<36}  {:<8}  {:<width$}  {:>4}  {:>5}  {:<7}  {:>6}  {:<12}  {}",
            row.pid,
            short_pid(row.pid),
            status,
            row.state_generation,
            row.depth,
            wait_word(row),
            unread,
            cell(row.image.as_str(), 12),
            cell(&row.goal, 60)
        );
    }
    if rows.is_empty() {
        outln!("(no {}processes; --all includes terminal ones)", if args.all { "" } else { "live " });
    }
    Ok(ExitCode::SUCCESS)
}
