//! `agentvisor demo [DIR]`: a real process tree counting the words of the files under DIR,
//! one process per folder and per file, with a live progress line and the final tree.

use super::output::{cell, status_mark};
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::telemetry::KernelEvent;
use agentvisor::actors::store::ProcessQuery;
use agentvisor::actors::store::{PostgresStore, Store, shard_url};
use agentvisor::actors::{Pid, Status};
use agentvisor::control::database::{self, Changes};
use agentvisor::control::protocol::Request;
use agentvisor::control::{ControlError, ControlServer, RootRequest};
use agentvisor::demo;
use agentvisor::images::builtin_images;
use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `agentvisor demo`.
#[derive(clap::Args, Debug)]
pub(crate) struct DemoArgs {
    /// The directory whose files are counted (default: the current directory).
    dir: Option<PathBuf>,
    /// Deepest level of the final tree to print (the whole tree always runs).
    #[arg(long, default_value_t = 3)]
    depth: u32,
    /// Where the tree runs on a PostgreSQL store whose shards several nodes serve:
    /// `least-loaded` launches it on the served shard with the fewest live processes (then
    /// the fewest processes, then the first by name), in place of `--shard`. Without it, the
    /// tree runs on the command's shard: on the node serving it, or here when none does.
    #[arg(long, value_enum)]
    place: Option<Placement>,
}

/// How `demo --place` chooses a shard.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// The served shard with the fewest live processes.
    LeastLoaded,
}

/// The shard `--place least-loaded` chooses among those a live node serves: its URL, its
/// node and how it is named in messages; `None` when no node serves any.
fn least_loaded() -> anyhow::Result<Option<(String, String, String)>> {
    let Some(base) = super::stores::base_url() else {
        bail!("--place chooses among the shards of a PostgreSQL store: pass --store postgres://… too");
    };
    let served = PostgresStore::shards_served(base)?;
    let Some(chosen) =
        served.iter().min_by(|a, b| (a.live, a.processes, &a.name).cmp(&(b.live, b.processes, &b.name)))
    else {
        return Ok(None);
    };
    let node = chosen.owner.as_ref().map(|o| o.node.clone()).unwrap_or_default();
    eprintln!(
        "placed on node {node}: shard {} has {} live processes, the fewest of the {} served shards",
        chosen.name,
        chosen.live,
        served.len()
    );
    Ok(Some((shard_url(base, &chosen.name)?, node, super::stores::describe_shard(base, &chosen.name))))
}

#[derive(Default)]
struct Progress {
    launched: u64,
    exited: u64,
    failed: u64,
    killed: u64,
    waiting: u64,
    depth_max: u32,
}

impl Progress {
    fn line(&self) -> String {
        let ended = self.exited + self.failed + self.killed;
        format!(
            "{} launched · {} live · {} waiting · {} exited · {} failed · {} killed · depth {}",
            self.launched,
            self.launched.saturating_sub(ended),
            self.waiting,
            self.exited,
            self.failed,
            self.killed,
            self.depth_max
        )
    }

    fn observe(&mut self, event: &KernelEvent) {
        match event {
            KernelEvent::ProcessLaunched { depth, .. } => {
                self.launched += 1;
                self.depth_max = self.depth_max.max(*depth);
            }
            KernelEvent::ProcessTransition { from, to, .. } => {
                if *to == Status::WaitingEvent {
                    self.waiting += 1;
                }
                if *from == Status::WaitingEvent && *to != Status::WaitingEvent {
                    self.waiting = self.waiting.saturating_sub(1);
                }
                match to {
                    Status::Exited => self.exited += 1,
                    Status::Failed => self.failed += 1,
                    Status::Killed => self.killed += 1,
                    _ => {}
                }
            }
            KernelEvent::LaunchDenied { .. }
            | KernelEvent::MessageSent { .. }
            | KernelEvent::ProcessRestarted { .. }
            | KernelEvent::RestartRefused { .. }
            | KernelEvent::ChildSupervised { .. } => {}
        }
    }
}

pub(crate) async fn run(state: &Path, args: DemoArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let dir =
        dir.canonicalize().with_context(|| format!("failed to open the directory {}", dir.display()))?;
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if args.place == Some(Placement::LeastLoaded) {
        match least_loaded()? {
            Some((url, node, place)) => return on_node(state, &url, &node, &place, &dir, args.depth).await,
            None => eprintln!("no node serves a shard of the store: the tree runs here"),
        }
    }
    let lock = super::owner::take(state)?;
    let rt = match super::owner::open(state, lock, builtin_images()).await {
        Ok(rt) => rt,
        Err(e) => match (super::stores::url(), super::node::owned_elsewhere(&e)) {
            // A node serves the store: the tree runs there.
            (Some(url), Some((node, _))) => {
                return on_node(state, url, &node, &super::stores::describe(state), &dir, args.depth).await;
            }
            _ => return Err(e),
        },
    };
    let rt = Arc::new(rt);
    let control = ControlServer::start(Arc::clone(&rt))?;
    let started = Instant::now();
    let mut events = rt.subscribe();
    let root = rt.spawn_root(demo::root_spec(&dir)).await?;
    let tty = std::io::stderr().is_terminal();
    let mut progress = Progress { launched: 1, ..Progress::default() };
    let mut last_draw = Instant::now();
    eprintln!(
        "counting words under {} with one process per folder and per file (root {root})",
        dir.display()
    );
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            row = rt.wait_terminal(root) => { row?; break; }
        };
        match event {
            Ok(event) => {
                let root_ended = matches!(&event, KernelEvent::ProcessTransition { pid, to, .. } if *pid == root && to.is_terminal());
                progress.observe(&event);
                if tty && last_draw.elapsed() > Duration::from_millis(80) {
                    eprint!("\r\x1b[2K{}", progress.line());
                    let _ = std::io::stderr().flush();
                    last_draw = Instant::now();
                }
                if root_ended {
                    break;
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
    let elapsed = started.elapsed();
    if tty {
        eprint!("\r\x1b[2K");
    }
    eprintln!("{}", progress.line());

    let root_row = rt.wait_terminal(root).await?;
    print_result(&rt, &root_row, elapsed, args.depth, &state.display().to_string())?;
    control.stop().await;
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await?;
    }
    Ok(if root_row.status == Status::Exited { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// Launches the tree on `node`, the runtime that owns the PostgreSQL store (or shard) `url`,
/// named `place` in messages, through the database, and follows it there to its end,
/// whichever node runs it by then.
async fn on_node(
    state: &Path,
    url: &str,
    node: &str,
    place: &str,
    dir: &Path,
    depth: u32,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let spec = demo::root_spec(dir);
    let root = RootRequest {
        goal: spec.goal,
        image: spec.image,
        cwd: spec.cwd,
        capabilities: spec.capabilities,
        budget: spec.budget,
        // Sent again, the request launches nothing twice: a node that took over answers the
        // first launch.
        launch_key: Some(format!("demo-{}", uuid::Uuid::now_v7())),
    };
    eprintln!("node {node} owns {place}: launching the tree there");
    let mut tries = 0;
    let answer = loop {
        match database::request(url, &Request::SpawnRoot { root: root.clone() }).await {
            Ok(answer) => break answer,
            Err(ControlError::NoAnswer { waited_ms }) if tries < LAUNCH_TRIES => {
                tries += 1;
                eprintln!("no node answered within {waited_ms} ms; asking again");
            }
            // The node that took the launch died before answering; the launch key makes asking
            // again safe.
            Err(ControlError::Refused(e))
                if e.code == database::TAKEN_BY_A_DEAD_OWNER && tries < LAUNCH_TRIES =>
            {
                tries += 1;
                eprintln!("the node that took the launch stopped before answering; asking the next one");
            }
            Err(e) => return Err(e).context("failed to launch the tree on the node"),
        }
    };
    let root: Pid = serde_json::from_value(answer["pid"].clone())
        .with_context(|| format!("the node answered {answer} without a pid"))?;
    eprintln!("counting words under {} on the nodes serving the store (root {root})", dir.display());
    let view = PostgresStore::open_read_only(url)?;
    let mut commits = Changes::listen(url).await.context("failed to listen for the store's commits")?;
    let mut owner_gone = false;
    let root_row = loop {
        match view.process(root)? {
            Some(row) if row.status.is_terminal() => break row,
            Some(_) => {}
            None => bail!("the launched root {root} has no row in the store"),
        }
        // Read again at the next commit. When nothing commits for a while, see whether a node
        // still owns the store (a lease runs out without a commit): a tree nobody serves ends
        // nowhere, so say so once, and keep waiting for a node.
        tokio::select! {
            commit = commits.next() => if commit.is_none() {
                bail!("the connection listening for the store's commits ended");
            },
            () = tokio::time::sleep(OWNER_CHECK_EVERY) => {
                let live = PostgresStore::owner_is_live(url)?;
                if !live && !owner_gone {
                    eprintln!("no node owns the store now; waiting for one (start `agentvisor node`)");
                }
                owner_gone = !live;
            }
        }
    };
    let rt = Runtime::open_read_only(state, super::stores::runtime_options_at(url, builtin_images()))?;
    print_result(&rt, &root_row, started.elapsed(), depth, place)?;
    Ok(if root_row.status == Status::Exited { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// How often a tree followed on a node is read back when nothing commits.
const OWNER_CHECK_EVERY: Duration = Duration::from_secs(1);

/// How many times a launch on a node is asked again when no node answered.
const LAUNCH_TRIES: u32 = 3;

/// Prints the final tree to `depth` and the totals of the root's result.
fn print_result(
    rt: &Runtime,
    root_row: &ProcessRow,
    elapsed: Duration,
    depth: u32,
    state: &str,
) -> anyhow::Result<()> {
    let root = root_row.pid;
    let subtree = collect_subtree(rt, root)?;
    outln!();
    print_node(rt, root_row, &subtree, "", true, true, depth)?;
    let totals = result_of(rt, root_row)?;
    let count = |k: &str| totals.as_ref().and_then(|t| t.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let levels = 1 + subtree.values().flatten().map(|r| r.depth).max().unwrap_or(0);
    let processes = 1 + subtree.values().map(Vec::len).sum::<usize>();
    outln!();
    outln!(
        "{} {}: {} words, {} lines, {} bytes in {} files and {} folders — {} processes over {} levels in {:.2?} (state: {})",
        status_mark(root_row.status),
        root_row.status,
        count("words"),
        count("lines"),
        count("bytes"),
        count("files"),
        count("folders"),
        processes,
        levels,
        elapsed,
        state
    );
    Ok(())
}

fn collect_subtree(rt: &Runtime, root: Pid) -> anyhow::Result<HashMap<Pid, Vec<ProcessRow>>> {
    let mut out = HashMap::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let kids = rt.processes(ProcessQuery::children_of(pid))?;
        queue.extend(kids.iter().map(|k| k.pid));
        out.insert(pid, kids);
    }
    Ok(out)
}

fn result_of(rt: &Runtime, row: &ProcessRow) -> anyhow::Result<Option<Value>> {
    let Some(oid) = row.result_oid else { return Ok(None) };
    Ok(rt.payload(oid)?)
}

fn print_node(
    rt: &Runtime,
    row: &ProcessRow,
    tree: &HashMap<Pid, Vec<ProcessRow>>,
    prefix: &str,
    last: bool,
    root: bool,
    depth_max: u32,
) -> anyhow::Result<()> {
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    let name = Path::new(&row.goal).file_name().map_or(row.goal.clone(), |n| n.to_string_lossy().to_string());
    let words = result_of(rt, row)?.and_then(|v| v.get("words").and_then(Value::as_u64));
    let words = words.map_or(String::new(), |w| format!(" — {w} words"));
    outln!("{prefix}{branch}{} {}{words}  [{}]", status_mark(row.status), cell(&name, 40), row.status);
    let kids = tree.get(&row.pid).map(Vec::as_slice).unwrap_or(&[]);
    if row.depth + 1 > depth_max {
        if !kids.is_empty() {
            let next =
                if root { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
            outln!("{next}└─ … {} more processes below", count_below(row.pid, tree));
        }
        return Ok(());
    }
    let next = if root { String::new() } else { format!("{prefix}{}", if last { "   " } else { "│  " }) };
    for (i, kid) in kids.iter().enumerate() {
        print_node(rt, kid, tree, &next, i + 1 == kids.len(), false, depth_max)?;
    }
    Ok(())
}

fn count_below(pid: Pid, tree: &HashMap<Pid, Vec<ProcessRow>>) -> usize {
    tree.get(&pid).map_or(0, |kids| kids.iter().map(|k| 1 + count_below(k.pid, tree)).sum())
}
