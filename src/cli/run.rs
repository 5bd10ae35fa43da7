//! `agentvisor run RIG.yaml`: runs a rig's seats to their end on the state directory, with a
//! live view of each seat (its state, its turns, its process tree) and a final summary of
//! outcomes and cost. Seats added meanwhile by `agentvisor rig expand` are picked up.

use super::agent::absolute;
use super::sources::{Source, Sources, file_hash};
use agentvisor::actors::Pid;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::ProcessQuery;
use agentvisor::agent::run::RootBudget;
use agentvisor::agent::telemetry::{AgentEvent, EVENTS_FILE, Telemetry};
use agentvisor::control::ControlServer;
use agentvisor::images::builtin_images;
use agentvisor::rig::RigSpec;
use agentvisor::rig::run::{Adapters, RigHosts, RigRunner, SeatOutcome, SeatProgress};
use agentvisor::rig::store::{SeatStatus, SeatStore};
use agentvisor::rig::{LoadRigError, load_rig};
use anyhow::Context;
use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `agentvisor run`.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// The rig spec (YAML).
    #[arg(required_unless_present = "resume")]
    rig: Option<PathBuf>,
    /// Continue the rig RIG_ID whose run ended early (a crash, a kill): finished seats stay
    /// as they are, live native seats continue from their last checkpointed turn, seats the
    /// run never reached are launched.
    #[arg(long, value_name = "RIG_ID", conflicts_with = "rig")]
    resume: Option<String>,
    /// Print the final outcomes as JSON.
    #[arg(long)]
    json: bool,
    /// Budget flags for every native seat's root agent.
    #[command(flatten)]
    budget: super::agent::BudgetArgs,
}

/// Everything a rig run needs opened on a state directory.
pub(crate) struct Opened {
    pub(crate) runner: RigRunner,
    pub(crate) rt: Arc<Runtime>,
    pub(crate) store: Arc<dyn SeatStore>,
    pub(crate) telemetry: Telemetry,
    /// The runtime's control socket, where `agentvisor mcp` and other commands attach.
    pub(crate) control: ControlServer,
}

/// Loads a spec, or prints why it cannot be and returns the exit code.
pub(crate) fn load_spec(path: &Path) -> Result<RigSpec, ExitCode> {
    match load_rig(path) {
        Ok(spec) => Ok(spec),
        Err(e @ LoadRigError::Invalid { .. }) => {
            eprintln!("{e}");
            Err(ExitCode::from(2))
        }
        Err(e) => {
            eprintln!("{e}");
            Err(ExitCode::from(1))
        }
    }
}

/// Opens the runtime, the seat store and the agent hosts for `spec` on `state`; `None` (after
/// printing why) when the runtime is owned by another process.
pub(crate) async fn open(
    state: &Path,
    spec: &RigSpec,
    base: &Path,
    spec_path: Option<&Path>,
    budget: RootBudget,
) -> anyhow::Result<Opened> {
    // The lock first: refused, this command creates no file in a directory another runtime owns.
    let lock = super::owner::take(state)?;
    let chunks = super::stores::chunks(state)?;
    let telemetry = Telemetry::with_jsonl(state.join(EVENTS_FILE))?;
    let hosts = RigHosts::load(spec, base, chunks, &telemetry)?;
    for host in hosts.all() {
        host.set_root_budget(budget);
    }
    let options = hosts.register(builtin_images());
    if let Some(spec_path) = spec_path {
        let images: Vec<String> =
            hosts.all().flat_map(|h| h.images()).map(|image| image.id.to_string()).collect();
        let source = Source::RigSpec { spec: absolute(spec_path), spec_blake3: file_hash(spec_path)? };
        Sources::record(state, &images, &source)?;
    }
    let rt = super::owner::open(state, lock, options).await?;
    let store = super::stores::seats(state)?;
    let rt = Arc::new(rt);
    let control = ControlServer::start(Arc::clone(&rt))?;
    let runner =
        RigRunner::new(Arc::clone(&rt), hosts, Arc::clone(&store), Adapters::default(), base.to_path_buf());
    Ok(Opened { runner, rt, store, telemetry, control })
}

pub(crate) async fn run(state: &Path, args: RunArgs) -> anyhow::Result<ExitCode> {
    let budget = match args.budget.root_budget() {
        Ok(budget) => budget,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(rig) = &args.resume {
        return super::run_resume::run(state, rig, budget, args.json).await;
    }
    let Some(rig_path) = args.rig.as_deref() else {
        anyhow::bail!("a rig spec or --resume RIG_ID is required");
    };
    let spec = match load_spec(rig_path) {
        Ok(spec) => spec,
        Err(code) => return Ok(code),
    };
    let base = rig_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let opened = open(state, &spec, &base, Some(rig_path), budget).await?;
    let view =
        tokio::spawn(live_view(Arc::clone(&opened.rt), opened.runner.watch(), opened.telemetry.clone()));
    let _signals = super::interrupt::on_signals(opened.runner.interruption());
    // The spec's absolute path, so `rig expand` finds member paths from any directory.
    let spec_path = rig_path.canonicalize().unwrap_or_else(|_| rig_path.to_path_buf());
    // Members' restore policies decide whether a rig already run is restored or run anew.
    let restored = opened.runner.instance_to_restore(&spec).context("the seat store could not be read")?;
    let (rig, outcomes) = match restored {
        Some(rig) => {
            eprintln!(
                "agentvisor: rig {rig} has realized seats; restoring them by their members' restore_policy"
            );
            let outcomes = opened
                .runner
                .rerun(&rig, agentvisor::rig::run::RESTORE_PROMPT)
                .await
                .context("the rig could not be restored")?;
            say_restored(&outcomes);
            (rig, outcomes)
        }
        None => opened
            .runner
            .run(&spec, &spec_path.display().to_string())
            .await
            .context("the rig could not start")?,
    };
    finish(opened, view, &rig, outcomes, args.json).await
}

/// Says on standard error which seats were restored: "restored seat <member> (its own
/// session <token>)".
pub(crate) fn say_restored(outcomes: &[SeatOutcome]) {
    for outcome in outcomes.iter().filter(|o| o.restored && o.failed_step.is_none()) {
        eprintln!("agentvisor: {}", outcome.origin());
    }
}

/// A rig reopened as owner on the spec it was created from, with the live view drawing and
/// interrupts watched: what `run --resume` and `rig restore` run their seats on.
pub(crate) struct Reopened {
    pub(crate) opened: Opened,
    view: tokio::task::JoinHandle<()>,
    _signals: super::interrupt::Guard,
}

impl Reopened {
    /// Opens `state` as owner for the rig `record`; the exit code (after saying why) when its
    /// spec no longer loads.
    pub(crate) async fn open(
        state: &Path,
        record: &agentvisor::rig::store::RigRecord,
        budget: RootBudget,
    ) -> anyhow::Result<Result<Reopened, ExitCode>> {
        let spec_path = PathBuf::from(&record.spec_path);
        let spec = match load_spec(&spec_path) {
            Ok(spec) => spec,
            Err(code) => {
                eprintln!(
                    "agentvisor: rig {} was created from {}, which does not load",
                    record.id,
                    spec_path.display()
                );
                return Ok(Err(code));
            }
        };
        let base = spec_path.parent().map(Path::to_path_buf).unwrap_or_default();
        let opened = open(state, &spec, &base, None, budget).await?;
        let view =
            tokio::spawn(live_view(Arc::clone(&opened.rt), opened.runner.watch(), opened.telemetry.clone()));
        let _signals = super::interrupt::on_signals(opened.runner.interruption());
        Ok(Ok(Reopened { opened, view, _signals }))
    }

    /// Shuts down cleanly without running anything (a refusal found once open).
    pub(crate) async fn abandon(self) -> anyhow::Result<()> {
        self.view.abort();
        let Opened { runner, rt, control, .. } = self.opened;
        drop(runner);
        control.stop().await;
        if let Ok(rt) = Arc::try_unwrap(rt) {
            rt.shutdown().await?;
        }
        Ok(())
    }

    /// The summary, a clean shutdown and the exit code, as [`finish`].
    pub(crate) async fn finish(
        self,
        rig: &agentvisor::rig::RigId,
        outcomes: Vec<SeatOutcome>,
        json: bool,
    ) -> anyhow::Result<ExitCode> {
        finish(self.opened, self.view, rig, outcomes, json).await
    }
}

/// After a run's seats: the seats `rig expand` declared meanwhile, the summary, the store's
/// health, a clean shutdown, and the exit code (1 if any seat failed or its process did not
/// exit).
pub(crate) async fn finish(
    opened: Opened,
    view: tokio::task::JoinHandle<()>,
    rig: &agentvisor::rig::RigId,
    mut outcomes: Vec<SeatOutcome>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let interrupted = opened.runner.interrupted();
    // Seats `rig expand` declared while the run went on (an interrupted run records them
    // interrupted without starting them).
    loop {
        let pending: Vec<_> = opened
            .store
            .seats(rig)?
            .into_iter()
            .filter(|s| s.status == SeatStatus::Declared)
            .filter(|s| !outcomes.iter().any(|o: &SeatOutcome| o.member == s.member.as_str()))
            .collect();
        if pending.is_empty() {
            break;
        }
        let members =
            pending.iter().filter_map(|s| serde_json::from_str(&s.member_json).ok()).collect::<Vec<_>>();
        outcomes.extend(opened.runner.launch_all(rig, &members).await);
    }
    view.abort();
    let _ = view.await;
    print_summary(&rig.to_string(), &outcomes, json)?;
    // A store that fail-stopped ended the seats' waits; say so where a person looks.
    let failed_store = opened.rt.store().failures().and_then(|watch| watch.borrow().clone());
    if let Some(cause) = failed_store {
        eprintln!(
            "agentvisor: the store stopped accepting writes ({cause}); `agentvisor recover` reopens it"
        );
        return Ok(ExitCode::from(1));
    }
    let Opened { runner, rt, control, telemetry, .. } = opened;
    drop(runner);
    control.stop().await;
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown().await?;
    }
    // The event file is complete when the command returns.
    telemetry.flush();
    let failed = outcomes.iter().any(|o| {
        o.status != SeatStatus::Realized
            || o.failed_step.is_some()
            || o.process_status.as_deref().is_some_and(|s| s != "exited")
    });
    Ok(if interrupted {
        ExitCode::from(super::interrupt::INTERRUPTED_EXIT)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints seat changes as they happen: on a terminal, a redrawn block with a line and a
/// turn bar per seat and its process tree; otherwise one line per change.
pub(crate) async fn live_view(
    rt: Arc<Runtime>,
    mut seats: tokio::sync::watch::Receiver<BTreeMap<String, SeatProgress>>,
    telemetry: Telemetry,
) {
    let tty = std::io::stderr().is_terminal();
    let mut events = telemetry.subscribe();
    let mut progress = telemetry.subscribe_progress();
    let mut waiting: BTreeMap<String, (agentvisor::agent::telemetry::ModelProgress, tokio::time::Instant)> =
        BTreeMap::new();
    let mut turns: HashMap<String, u64> = HashMap::new();
    let mut last: BTreeMap<String, SeatProgress> = BTreeMap::new();
    let mut drawn = 0usize;
    let mut tick = tokio::time::interval(Duration::from_millis(150));
    loop {
        tokio::select! {
            changed = seats.changed() => if changed.is_err() { return },
            event = events.recv() => {
                if let Ok(record) = event && let AgentEvent::TurnCompleted { .. } = record.event {
                    *turns.entry(record.pid.clone()).or_default() += 1;
                }
                continue;
            }
            update = progress.recv() => {
                if let Ok(p) = update {
                    if p.done {
                        waiting.remove(&p.pid);
                    } else {
                        let since = waiting.get(&p.pid).map_or_else(tokio::time::Instant::now, |(_, s)| *s);
                        waiting.insert(p.pid.clone(), (p, since));
                    }
                }
                continue;
            }
            _ = tick.tick() => if !tty { continue },
        }
        let now = seats.borrow().clone();
        if tty {
            let mut lines = draw(&rt, &now, &turns);
            lines.extend(waiting.values().map(|(p, since)| super::live::progress_line(p, *since)));
            let mut err = std::io::stderr().lock();
            if drawn > 0 {
                let _ = write!(err, "\x1b[{drawn}A\x1b[J");
            }
            for line in &lines {
                let _ = writeln!(err, "{line}");
            }
            drawn = lines.len();
        } else {
            for (member, seat) in &now {
                if last.get(member) != Some(seat) {
                    eprintln!("{member:<16} {:<9} {}", seat.status.as_str(), seat.note);
                }
            }
        }
        last = now;
    }
}

fn draw(rt: &Runtime, seats: &BTreeMap<String, SeatProgress>, turns: &HashMap<String, u64>) -> Vec<String> {
    let mut lines = Vec::new();
    for (member, seat) in seats {
        let mut tree = Vec::new();
        if let Some(pid) = seat.pid {
            subtree_lines(rt, pid, 1, &mut tree);
        }
        let done: u64 = seat.pid.map(|p| subtree_turns(rt, p, turns)).unwrap_or(0);
        let filled = usize::try_from(done.min(20)).unwrap_or(20);
        lines.push(format!(
            "{member:<16} {:<9} [{}{}] {done:>4} turns  {}",
            seat.status.as_str(),
            "#".repeat(filled),
            ".".repeat(20 - filled),
            seat.note
        ));
        lines.extend(tree);
    }
    lines
}

fn children(rt: &Runtime, pid: Pid) -> Vec<agentvisor::actors::kernel::process::ProcessRow> {
    rt.processes(ProcessQuery::children_of(pid)).unwrap_or_default()
}

fn subtree_lines(rt: &Runtime, pid: Pid, depth: usize, out: &mut Vec<String>) {
    if let Ok(Some(row)) = rt.process(pid) {
        let agent = serde_json::from_str::<serde_json::Value>(&row.goal)
            .ok()
            .and_then(|g| g.get("agent").and_then(|a| a.as_str()).map(str::to_string))
            .unwrap_or_default();
        out.push(format!("{}└ {} {} {}", "  ".repeat(depth), &pid.to_string()[..8], row.status, agent));
    }
    for child in children(rt, pid) {
        subtree_lines(rt, child.pid, depth + 1, out);
    }
}

fn subtree_turns(rt: &Runtime, pid: Pid, turns: &HashMap<String, u64>) -> u64 {
    turns.get(&pid.to_string()).copied().unwrap_or(0)
        + children(rt, pid).iter().map(|c| subtree_turns(rt, c.pid, turns)).sum::<u64>()
}

pub(crate) fn print_summary(rig: &str, outcomes: &[SeatOutcome], json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(&serde_json::json!({"rig": rig, "seats": outcomes}))?);
        return Ok(());
    }
    outln!();
    outln!("rig {rig}: {} seats", outcomes.len());
    outln!(
        "{:<16} {:<11} {:<9} {:<8} {:>9} {:>8} {:>12}  origin / result",
        "MEMBER",
        "RUNTIME",
        "SEAT",
        "PROCESS",
        "TOKENS IN",
        "OUT",
        "COST USD"
    );
    for o in outcomes {
        let (input, output, cost) = super::rig_status::usage_cells(o.usage.as_ref());
        let detail = match (&o.failed_step, &o.error) {
            (Some(step), Some(error)) => format!("failed at {step}: {error}"),
            (None, Some(note)) => format!("{}; {note}", o.origin()),
            _ => format!("{}; result {}", o.origin(), o.result.clone().unwrap_or_default()),
        };
        outln!(
            "{:<16} {:<11} {:<9} {:<8} {input:>9} {output:>8} {cost:>12}  {detail}",
            o.member,
            o.runtime,
            o.status.as_str(),
            o.process_status.as_deref().unwrap_or("-"),
        );
        if let Some(token) = &o.token {
            outln!("{:<16} token {token}", "");
        }
        if let Some(stderr) = &o.stderr {
            outln!("{:<16} {} stderr:", "", o.runtime);
            for line in stderr.trim_end().lines() {
                outln!("{:<16} | {line}", "");
            }
        }
        if let Some(token) = &o.unrecorded_token {
            eprintln!(
                "agentvisor: seat {} of rig {rig}: its new {} session {token} exists but is NOT recorded in \
                 the seat store; keep this token to continue it",
                o.member, o.runtime
            );
        }
    }
    let total = outcomes
        .iter()
        .filter_map(|o| o.usage)
        .fold(agentvisor::agent::brain::Usage::default(), |a, b| agentvisor::agent::run::add_usage(&a, &b));
    let cost = total.cost_micros.map_or("not reported".to_string(), |c| {
        format!("${}", agentvisor::agent::money::format_usd_micros(c))
    });
    outln!("total: {} input tokens, {} output tokens, cost {cost}", total.input_tokens, total.output_tokens);
    Ok(())
}
