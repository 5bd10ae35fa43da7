//! `agentvisor tree`: the process tree from a read-only view. A live status under a dead
//! owner is shown stale.

use super::output::{View, cell, forest, open_view, short_pid, status_mark};
use agentvisor::actors::Pid;
use agentvisor::actors::kernel::process::ProcessRow;
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor tree`.
#[derive(clap::Args, Debug)]
pub(crate) struct TreeArgs {
    /// Only live processes (default: all, terminal included).
    #[arg(long)]
    live: bool,
}

pub(crate) async fn run(state: &Path, args: TreeArgs) -> anyhow::Result<ExitCode> {
    let view = open_view(state)?;
    view.say_owner();
    let (roots, children) = forest(&view.rt, !args.live)?;
    for root in &roots {
        print_tree(&view, root, &children, "", true, true)?;
    }
    if roots.is_empty() {
        outln!("(no processes)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `row` and its subtree with box-drawing branches.
fn print_tree(
    view: &View,
    row: &ProcessRow,
    children: &HashMap<Pid, Vec<ProcessRow>>,
    prefix: &str,
    last: bool,
    root: bool,
) -> std::io::Result<()> {
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    outln!(
        "{prefix}{branch}{} {} {} [{}] {}",
        status_mark(row.status),
        view.status(row),
        short_pid(row.pid),
        row.image,
        cell(&row.goal, 50)
    );
    let kids = children.get(&row.pid).map(Vec::as_slice).unwrap_or(&[]);
    let next = if root { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
    for (i, kid) in kids.iter().enumerate() {
        print_tree(view, kid, children, &next, i + 1 == kids.len(), false)?;
    }
    Ok(())
}
