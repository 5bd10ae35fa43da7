//! The agentvisor side of the peer comparison (`benches/peers/run`): the same three workloads
//! as `langgraph_side.py`, on scripted brains, on a durable SQLite state in a fresh temporary
//! directory (WAL, `synchronous=FULL`: every turn's commit is on disk before the next turn).
//! Prints one JSON line per run: `{"side", "workload", "size", "seconds"}`. The agents'
//! events are kept in memory by the telemetry's writer thread; with `PEERS_FLUSH=1` the timed
//! part also waits for it to have kept every event (`Telemetry::flush`).
//!
//! ```text
//! cargo run --release --example peers -- turns 200 11    # 200 root agents × 11 turns
//! cargo run --release --example peers -- fanout 1000     # one turn spawning 1,000 children
//! cargo run --release --example peers -- fork 100000     # fork of a 100,000-message session
//! ```

use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Outcome, Pid};
use agentvisor::agent::brain::{Brain, Script, ScriptedBrain, ScriptedTurn};
use agentvisor::agent::config::load_yaml;
use agentvisor::agent::run::{AgentError, AgentHost, AgentIdentity, RootBudget};
use agentvisor::agent::telemetry::{AgentEvent, Telemetry};
use agentvisor::agent::window::SqliteChunkStore;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every profile of the three workloads. Windows are large enough that no workload compacts.
const CONFIG: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: worker
    description: Adds tasks, one per turn.
    brain: s
    window_tokens: 1000000
    capabilities: {tasks: true}
  - id: lead
    description: Delegates to children and collects them.
    brain: s
    window_tokens: 1000000
    roster: [child]
    capabilities: {subagents: true}
  - id: child
    description: Reports one finding.
    brain: s
    window_tokens: 100000
  - id: talker
    description: Holds a long conversation, then forks it.
    brain: s
    window_tokens: 16000000
    capabilities: {notebook: true, subagents: true, fork: true}
"#;

/// Tool calls per turn while the fork workload builds its conversation.
const CALLS_PER_BUILD_TURN: usize = 99;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| -> anyhow::Result<usize> {
        args.get(i).map_or(Ok(default), |text| text.parse().map_err(|e| anyhow::anyhow!("{text:?}: {e}")))
    };
    let (workload, size, seconds) = match args.first().map(String::as_str) {
        Some("turns") => {
            let (agents, turns) = (number(1, 200)?, number(2, 11)?);
            (format!("turns_{turns}"), agents, turns_workload(agents, turns).await?)
        }
        Some("fanout") => {
            let children = number(1, 1000)?;
            ("fanout".to_string(), children, fanout_workload(children).await?)
        }
        Some("fork") => {
            let messages = number(1, 10_000)?;
            ("fork".to_string(), messages, fork_workload(messages).await?)
        }
        _ => anyhow::bail!("usage: peers turns [AGENTS [TURNS]] | fanout [CHILDREN] | fork [MESSAGES]"),
    };
    println!(
        "{}",
        json!({"side": "agentvisor", "workload": workload, "size": size, "seconds": seconds.as_secs_f64()})
    );
    Ok(())
}

/// A durable runtime in a fresh directory, every profile playing what `script` gives it.
struct Rig {
    _dir: tempfile::TempDir,
    runtime: Runtime,
    host: Arc<AgentHost>,
    telemetry: Telemetry,
}

async fn rig(script: impl Fn(&AgentIdentity) -> Script + Send + Sync + 'static) -> anyhow::Result<Rig> {
    let dir = tempfile::tempdir()?;
    let config = load_yaml(CONFIG)?;
    let provider = move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        Ok(Arc::new(ScriptedBrain::new(script(identity).skip(identity.turns_taken))))
    };
    let chunks = Arc::new(SqliteChunkStore::open(dir.path().join("windows.sqlite"))?);
    let telemetry = Telemetry::new();
    let host = AgentHost::new(config, Arc::new(provider), chunks, telemetry.clone());
    host.set_root_budget(RootBudget { unlimited: true, ..RootBudget::default() });
    let runtime = Runtime::open(dir.path(), RuntimeOptions::new().image(host.image())).await?;
    host.attach_store(runtime.store());
    Ok(Rig { _dir: dir, runtime, host, telemetry })
}

impl Rig {
    /// With `PEERS_FLUSH=1`, waits for the telemetry's writer to have kept every event.
    fn settle(&self) {
        if std::env::var_os("PEERS_FLUSH").is_some_and(|v| v == "1") {
            self.telemetry.flush();
        }
    }

    async fn launch(&self, profile: &str, prompt: &str) -> anyhow::Result<Pid> {
        Ok(self.runtime.spawn_root(self.host.root_spec(profile, prompt)?).await?)
    }

    /// Waits for `pid` to exit and checks that it exited with a result.
    async fn exited(&self, pid: Pid) -> anyhow::Result<()> {
        let row = self.runtime.wait_terminal(pid).await?;
        match row.outcome {
            Some(Outcome::Exited { result_oid: Some(_) }) => Ok(()),
            other => anyhow::bail!("{pid} ended {} ({other:?})", row.status),
        }
    }
}

/// `agents` root agents, each playing `turns - 1` turns of one `add_task` call and a `finish`.
async fn turns_workload(agents: usize, turns: usize) -> anyhow::Result<Duration> {
    let rig = rig(move |_| {
        let mut played: Vec<ScriptedTurn> = (1..turns)
            .map(|i| ScriptedTurn::call("add_task", json!({"title": format!("step {i}")})))
            .collect();
        played.push(ScriptedTurn::call("finish", json!({"result": "done"})));
        Script::new(played)
    })
    .await?;
    let start = Instant::now();
    let mut roots = Vec::with_capacity(agents);
    for i in 0..agents {
        roots.push(rig.launch("worker", &format!("Work through task list {i}.")).await?);
    }
    for pid in roots {
        rig.exited(pid).await?;
    }
    rig.settle();
    let took = start.elapsed();
    rig.runtime.shutdown().await?;
    Ok(took)
}

/// One `lead` whose first turn spawns `children` children (one `spawn_subagent` call each),
/// whose second collects them all, and whose third finishes; each child finishes in one turn.
async fn fanout_workload(children: usize) -> anyhow::Result<Duration> {
    let rig = rig(move |identity| match identity.profile.as_str() {
        "lead" => {
            let mut spawns = ScriptedTurn::text("Delegating.");
            for i in 0..children {
                spawns = spawns.with_call(
                    "spawn_subagent",
                    json!({"agent": "child", "prompt": format!("Report finding {i}.")}),
                );
            }
            Script::new(vec![
                spawns,
                ScriptedTurn::call("wait_for_subagents", json!({})),
                ScriptedTurn::call("finish", json!({"result": "all findings collected"})),
            ])
        }
        _ => Script::new(vec![ScriptedTurn::call("finish", json!({"result": "one finding"}))]),
    })
    .await?;
    let start = Instant::now();
    let lead = rig.launch("lead", "Collect the findings.").await?;
    rig.exited(lead).await?;
    rig.settle();
    let took = start.elapsed();
    rig.runtime.shutdown().await?;
    Ok(took)
}

/// One `talker` that builds a conversation of about `messages` messages (turns of
/// [`CALLS_PER_BUILD_TURN`] `write_note` calls: 100 messages a turn), then forks it, collects
/// its fork and finishes; the fork finishes in one turn. Timed from the end of the last
/// building turn to the talker's end: the fork, the copy's turn, the collection.
async fn fork_workload(messages: usize) -> anyhow::Result<Duration> {
    let build_turns = (messages / (CALLS_PER_BUILD_TURN + 1)).max(1);
    let rig = rig(move |identity| {
        if identity.launch.fork.is_some() {
            return Script::new(vec![ScriptedTurn::call("finish", json!({"result": "checked"}))]);
        }
        let mut turns: Vec<ScriptedTurn> = (0..build_turns)
            .map(|t| {
                let mut turn = ScriptedTurn::text(format!("Turn {t}."));
                for i in 0..CALLS_PER_BUILD_TURN {
                    let page =
                        if t + 1 == build_turns && i + 1 == CALLS_PER_BUILD_TURN { "built" } else { "log" };
                    turn =
                        turn.with_call("write_note", json!({"page": page, "text": format!("entry {t}.{i}")}));
                }
                turn
            })
            .collect();
        turns.push(ScriptedTurn::call("fork", json!({"prompt": "Check the conversation."})));
        turns.push(ScriptedTurn::call("wait_for_subagents", json!({})));
        turns.push(ScriptedTurn::call("finish", json!({"result": "forked"})));
        Script::new(turns)
    })
    .await?;
    let mut events = rig.telemetry.subscribe();
    let built = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(record) => {
                    if let AgentEvent::TurnCompleted { calls, .. } = &record.event
                        && calls.last().is_some_and(|call| call.arguments["page"] == "built")
                    {
                        return Some(Instant::now());
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let talker = rig.launch("talker", "Talk for a long time, then fork.").await?;
    rig.exited(talker).await?;
    rig.settle();
    let end = Instant::now();
    let start = built.await?.ok_or_else(|| anyhow::anyhow!("the end of the building turns was not seen"))?;
    rig.runtime.shutdown().await?;
    Ok(end - start)
}
