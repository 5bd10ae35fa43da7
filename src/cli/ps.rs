//! `agentvisor ps`: list processes from a read-only view.

use super::output::{cell, open_view, row_json, wait_word};
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
    let rt = open_view(state)?;
    let rows = rt.processes(ProcessQuery { include_terminal: args.all, ..ProcessQuery::default() })?;
    // Unacknowledged messages per process, read through the host API (never acknowledging).
    let unread = rows.iter().map(|row| rt.unread_count(row.pid)).collect::<Result<Vec<u64>, _>>()?;
    if args.json {
        let out: Vec<_> = rows
            .iter()
            .zip(&unread)
            .map(|(row, unread)| {
                let mut value = row_json(row);
                if let Some(map) = value.as_object_mut() {
                    map.insert("unread".into(), json!(unread));
                }
                value
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<36}  {:<13}  {:>4}  {:>5}  {:<7}  {:>6}  {:<12}  GOAL",
        "PID", "STATUS", "GEN", "DEPTH", "WAIT", "UNREAD", "IMAGE"
    );
    for (row, unread) in rows.iter().zip(&unread) {
        println!(
            "{:<36}  {:<13}  {:>4}  {:>5}  {:<7}  {:>6}  {:<12}  {}",
            row.pid,
            row.status.as_str(),
            row.state_generation,
            row.depth,
            wait_word(row),
            unread,
            cell(row.image.as_str(), 12),
            cell(&row.goal, 60)
        );
    }
    if rows.is_empty() {
        println!("(no {}processes; --all includes terminal ones)", if args.all { "" } else { "live " });
    }
    Ok(ExitCode::SUCCESS)
}
