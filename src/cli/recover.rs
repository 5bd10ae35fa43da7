//! `agentvisor recover [--resume]`: opens a state directory whose owner died as its owner,
//! with the images its processes need (the built-in ones and every recorded agent
//! configuration or rig spec, see [`super::sources`]), and prints what recovery did with the
//! evidence a person needs before resuming anything. Without `--resume` the runtime is opened
//! held (nothing starts, no wait is re-armed) and the command ends, leaving the tree as it
//! found it; with it, every process paused as a stale execution (or by an earlier command's
//! shutdown, or for a missing image) is resumed, and the tree is hosted to its end with
//! progress. A process paused by a signal or held by a host gate is never resumed here.

use super::agent_cost::agent_view;
use super::output::short_pid;
use super::owner;
use super::sources::{Source, Sources, file_hash, short_hash};
use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::kernel::status::SignalKind;
use agentvisor::actors::kernel::status::{PauseReason, WaitState};
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::RuntimeOptions;
use agentvisor::actors::runtime::telemetry::KernelEvent;
use agentvisor::actors::store::{ProcessQuery, StoreError};
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::run::{AgentHost, config_brains};
use agentvisor::agent::telemetry::{EVENTS_FILE, Telemetry};
use agentvisor::images::builtin_images;
use agentvisor::rig::run::RigHosts;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `agentvisor recover`.
#[derive(clap::Args, Debug)]
pub(crate) struct RecoverArgs {
    /// Resume every stale-paused process and host the tree to its end.
    #[arg(long)]
    resume: bool,
}

pub(crate) async fn run(state: &Path, args: RecoverArgs) -> anyhow::Result<ExitCode> {
    // Held while the report is read and the resumes are sent; `--resume` then releases it.
    let (rt, warnings) = open_recovered(state, true).await?;
    for line in warnings {
        eprintln!("{line}");
    }
    report(&rt, &super::stores::describe(state), args.resume).await?;
    if !args.resume {
        return settle(rt, false).await;
    }
    rt.release_hold();
    settle(rt, true).await
}

/// Prints what recovery did, with the evidence for each process, and with `resume` resumes
/// every process paused as a stale execution (or by an earlier command's shutdown, or for a
/// missing image). The runtime stays held; the caller releases it.
pub(crate) async fn report(rt: &Runtime, state: &str, resume: bool) -> anyhow::Result<()> {
    let report = rt.recovery_report().clone();
    outln!("recovered {state} as epoch {}", rt.epoch().0);
    let live = rt.processes(ProcessQuery::default())?;
    let rearmed: Vec<&ProcessRow> = live.iter().filter(|r| r.status == Status::WaitingEvent).collect();
    let waits_word = if resume { "re-armed" } else { "kept (re-armed on resume)" };
    outln!(
        "stale_paused {} · failed_closed {} · orphans_killed {} · waits {waits_word} {} · live {}",
        report.stale_paused.len(),
        report.failed_closed.len(),
        report.orphans_killed.len(),
        rearmed.len(),
        report.live
    );
    for pid in &report.stale_paused {
        outln!("stale_paused   {}", evidence(rt, *pid)?);
    }
    for pid in &report.failed_closed {
        outln!(
            "failed_closed  {}  (its resumed execution may have completed an effect; it is not replayed)",
            evidence(rt, *pid)?
        );
    }
    for pid in &report.orphans_killed {
        outln!("orphan_killed  {}", evidence(rt, *pid)?);
    }
    for row in &rearmed {
        let what = match &row.wait_state {
            Some(WaitState::Child { child_pid }) => format!("waits for child {}", short_pid(*child_pid)),
            Some(other) => format!("waits for a {}", other.kind()),
            None => "waits".to_string(),
        };
        outln!("wait           {} {what}", short_pid(row.pid));
    }
    for row in live.iter().filter(|r| matches!(r.pause_reason, Some(PauseReason::ImageUnavailable { .. }))) {
        outln!(
            "image_unavailable {} needs image {} (no recorded source registers it)",
            short_pid(row.pid),
            row.image
        );
    }
    if !report.unmaterialized_oids.is_empty() {
        outln!(
            "{} objects lost their payload (never checkpointed); their OIDs and handles remain",
            report.unmaterialized_oids.len()
        );
    }
    if !resume {
        if !report.stale_paused.is_empty() {
            outln!(
                "left paused; resume one with `agentvisor signal ID resume`, or all with `agentvisor recover --resume`"
            );
        }
        return Ok(());
    }
    // Stale executions, and what an earlier command's shutdown or a missing image paused;
    // never what a signal paused or a host gate holds.
    let to_resume: Vec<Pid> = live
        .iter()
        .filter(|r| r.host_gate.is_none())
        .filter(|r| r.pause_reason.as_ref().is_some_and(PauseReason::left_by_the_runtime))
        .map(|r| r.pid)
        .collect();
    for pid in &to_resume {
        match rt.signal(*pid, SignalKind::Resume, Some("resumed by agentvisor recover --resume".into())).await
        {
            Ok(result) => outln!("resumed        {} → {}", short_pid(*pid), result.status),
            Err(e) => outln!("not resumed    {} ({}): {}", short_pid(*pid), e.code, e.message),
        }
    }
    Ok(())
}

/// One process as recovery reports it: short id, pid, image, goal, and what it may have done
/// since its last durable record (checkpoint, children, messages).
fn evidence(rt: &Runtime, pid: Pid) -> anyhow::Result<String> {
    let Some(row) = rt.process(pid)? else { return Ok(format!("{pid} (no row)")) };
    let store = rt.store();
    let checkpoint = match store.checkpoint(pid)? {
        Some(envelope) => format!("last checkpoint {} bytes", envelope.body.len()),
        None => "no checkpoint".to_string(),
    };
    let turns = agent_view(rt, pid)?.map(|view| {
        let turns: u64 =
            view["incarnations"].as_array().into_iter().flatten().filter_map(|i| i["turns"].as_u64()).sum();
        format!(
            ", agent {} last checkpointed turn {turns}",
            view["identity"]["agent_id"].as_str().unwrap_or("-")
        )
    });
    let children = rt.processes(ProcessQuery::children_of(pid))?;
    let live = children.iter().filter(|c| !c.status.is_terminal()).count();
    let goal = agentvisor::actors::text::prefix_chars(&row.goal, 60).0;
    Ok(format!(
        "{} {} [{}] {goal:?}: {checkpoint}{}; {} children launched ({live} live), {} unread messages; effects since the checkpoint may have happened",
        short_pid(pid),
        pid,
        row.image,
        turns.unwrap_or_default(),
        children.len(),
        rt.unread_count(pid)?
    ))
}

/// Opens `state` as its owner with the built-in images and every recorded source's images,
/// and returns the runtime with warnings about sources that changed or could not be loaded.
/// Refused, creating nothing, while a live runtime owns the directory.
///
/// With `hold`, nothing starts or re-arms until the host signals a process
/// (`RuntimeOptions::hold`): for commands that only report or make one change.
pub(crate) async fn open_recovered(state: &Path, hold: bool) -> anyhow::Result<(Runtime, Vec<String>)> {
    if !super::stores::has_state(state) {
        anyhow::bail!("no agentvisor state at {} (pass --state DIR)", state.display());
    }
    let lock = owner::take(state)?;
    let sources = Sources::read(state)?;
    let mut options = builtin_images().hold(hold);
    let mut warnings = Vec::new();
    let mut hosts: Vec<Arc<AgentHost>> = Vec::new();
    let distinct = sources.distinct();
    let agents = if distinct.is_empty() {
        None
    } else {
        let chunks = super::stores::chunks(state)?;
        Some((chunks, Telemetry::with_jsonl(state.join(EVENTS_FILE))?))
    };
    for source in distinct {
        let Some((chunks, telemetry)) = &agents else { break };
        match &source {
            Source::AgentConfig { config, config_blake3, scripts } => {
                changed(&mut warnings, config, config_blake3);
                let loaded = agentvisor::agent::config::load_path(config).map_err(|e| e.to_string());
                let scripts = match scripts {
                    Some(path) => agentvisor::agent::run::read_scripts(path),
                    None => Ok(Default::default()),
                };
                match (loaded, scripts) {
                    (Ok(loaded), Ok(scripts)) => match config_brains(&loaded, scripts) {
                        Ok(brains) => {
                            let host = AgentHost::new(loaded, brains, chunks.clone(), telemetry.clone());
                            host.set_mcp_link(super::agent::mcp_link(state)?);
                            options = host.images().into_iter().fold(options, RuntimeOptions::image);
                            hosts.push(host);
                        }
                        Err(e) => {
                            warnings.push(format!("agentvisor: cannot set up the brains of {source}: {e}"))
                        }
                    },
                    (Err(e), _) | (_, Err(e)) => {
                        warnings.push(format!("agentvisor: cannot load {source}: {e}"))
                    }
                }
            }
            Source::RigSpec { spec, spec_blake3 } => {
                changed(&mut warnings, spec, spec_blake3);
                let base = spec.parent().map(Path::to_path_buf).unwrap_or_default();
                let loaded = agentvisor::rig::load_rig(spec).map_err(|e| e.to_string()).and_then(|spec| {
                    RigHosts::load(&spec, &base, chunks.clone(), telemetry).map_err(|e| e.to_string())
                });
                match loaded {
                    Ok(rig_hosts) => {
                        options = rig_hosts.register(options);
                        hosts.extend(rig_hosts.all().cloned());
                    }
                    Err(e) => warnings.push(format!("agentvisor: cannot load {source}: {e}")),
                }
            }
        }
    }
    let rt = owner::open(state, lock, options).await?;
    for host in &hosts {
        host.attach_store(rt.store());
    }
    Ok((rt, warnings))
}

fn changed(warnings: &mut Vec<String>, path: &Path, recorded: &str) {
    match file_hash(path) {
        Ok(now) if now == recorded => {}
        Ok(now) => warnings.push(format!(
            "agentvisor: warning: {} changed since it was recorded (blake3 {} then, {} now); using it as it is",
            path.display(),
            short_hash(recorded),
            short_hash(&now)
        )),
        Err(e) => warnings.push(format!("agentvisor: warning: {e:#}")),
    }
}

/// Ends a command that owns the runtime: with `host`, first hosts the tree until nothing
/// more can happen (no process running or about to run), printing each end on stderr; then
/// shuts the runtime down cleanly. Exits non-zero if the store failed or a process hosted
/// here ended other than `exited`.
pub(crate) async fn settle(rt: Runtime, host: bool) -> anyhow::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    if host {
        let mut events = rt.subscribe();
        let mut failures = rt.store().failures();
        let mut ended = (0u64, 0u64);
        while can_progress(&rt)? {
            let event = match failures.as_mut() {
                Some(watch) => tokio::select! {
                    event = events.recv() => event,
                    _ = watch.changed() => {
                        let cause = watch.borrow().clone().unwrap_or_default();
                        return Err(StoreError::FailStopped { cause }.into());
                    }
                },
                None => events.recv().await,
            };
            if let Ok(KernelEvent::ProcessTransition { pid, from, to, outcome, .. }) = event
                && to.is_terminal()
            {
                if to == Status::Exited {
                    ended.0 += 1;
                } else {
                    ended.1 += 1;
                    code = ExitCode::from(2);
                }
                let why = match (to, outcome) {
                    (Status::Exited, _) | (_, None) => String::new(),
                    (_, Some(outcome)) => format!(" {}", serde_json::to_string(&outcome).unwrap_or_default()),
                };
                eprintln!("  {} {from} → {to}{why} ({} exited, {} not)", short_pid(pid), ended.0, ended.1);
            }
        }
        let left = rt.processes(ProcessQuery::default())?;
        outln!(
            "hosted to the end: {} exited, {} ended otherwise, {} left live{}",
            ended.0,
            ended.1,
            left.len(),
            if left.is_empty() { String::new() } else { " (paused or waiting on a paused process)".into() }
        );
    }
    rt.shutdown().await?;
    Ok(code)
}

/// Whether anything can still change without the host: a process running or about to start,
/// or one whose awaited child has already ended (its wait is about to complete).
fn can_progress(rt: &Runtime) -> anyhow::Result<bool> {
    for row in rt.processes(ProcessQuery::default())? {
        let moving = match (row.status, &row.wait_state) {
            (Status::Running | Status::Runnable, _) => true,
            (Status::WaitingEvent, Some(WaitState::Child { child_pid })) => {
                rt.process(*child_pid)?.is_none_or(|c| c.status.is_terminal())
            }
            _ => false,
        };
        if moving {
            return Ok(true);
        }
    }
    Ok(false)
}
