//! The kernel program of an external agent process: one Claude Code or Codex session.
//!
//! 1. The session record (`agent.session`: runtime, session id, agent id) is written durably
//!    before the command starts: for Claude Code with the id chosen here (`--session-id`), for
//!    Codex as soon as `thread.started` names its thread. A restarted execution that finds a
//!    record with an id continues that session (`--resume <id>`, `codex exec resume <id>`),
//!    never a fresh one and never another process's.
//! 2. Usage is charged to the kernel budget as each message reports it; a refused charge
//!    (budget exhausted) ends the execution, and dropping the session kills its process group.
//! 3. Each turn becomes a `turn_completed` event; the cost object and identity are kept as a
//!    native agent keeps them, so `inspect` and subtree costs read external agents alike.
//! 4. The session's final result is the process result; a reported error or a non-zero exit
//!    fails the process with the end of the runtime's standard error in the outcome.

use super::child::{ChildError, SessionChild};
use super::command::{SessionSpec, Start, session_command};
use super::stream::{Decoder, SessionEnd, StreamEvent};
use crate::actors::runtime::ProcessContext;
use crate::actors::runtime::calls::NamedWrite;
use crate::agent::brain::{Message, Usage};
use crate::agent::config::{ExternalProfile, ExternalRuntime};
use crate::agent::run::persist::{self, COST_OBJECT, IDENTITY_OBJECT};
use crate::agent::run::{AgentError, AgentHost, AgentLaunch, IncarnationCost, add_usage};
use crate::agent::telemetry::{AgentEvent, SpawnVia};
use crate::tools::ToolName;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The session record's object name.
pub const SESSION_OBJECT: &str = "agent.session";

/// What `agent.session` holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The runtime.
    pub runtime: ExternalRuntime,
    /// The runtime's id for the session, once known.
    pub session_id: Option<String>,
    /// The incarnation's agent id.
    pub agent_id: String,
    /// The process group of the last command started for the session, recorded before the
    /// command runs: a runtime reopened after a crash ends what is left of it before the
    /// session continues, so two commands never run one conversation.
    #[serde(default)]
    pub group: Option<crate::agent::external::GroupMark>,
}

/// Everything the program keeps while the session runs.
struct Session {
    host: Arc<AgentHost>,
    ctx: ProcessContext,
    launch: AgentLaunch,
    record: SessionRecord,
    cost: IncarnationCost,
    turns: u64,
    /// Usage not yet charged to the kernel: the process was not running when it arrived (its
    /// session was inside a blocking call it made through MCP, a wait or a receive).
    deferred: Usage,
    /// The cost object has changes not yet written, for the same reason.
    cost_dirty: bool,
    /// The subtree cost of the children collected at the end, by profile.
    collected: BTreeMap<String, Usage>,
    /// Their pids.
    collected_pids: Vec<String>,
}

/// The objects a session keeps of itself.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Saved {
    /// The session record (`SESSION_OBJECT`).
    Record,
    /// The identity (`IDENTITY_OBJECT`).
    Identity,
    /// The cost object (`COST_OBJECT`).
    Cost,
}

/// Whether a refusal says only that the process is inside a blocking call right now.
fn not_running(e: &AgentError) -> bool {
    matches!(e, AgentError::Kernel { error, .. } if error.code == "not_running")
}

/// Runs the external session `profile` for the process `ctx`.
pub(crate) async fn run_session(
    host: Arc<AgentHost>,
    ctx: ProcessContext,
    launch: AgentLaunch,
    profile: ExternalProfile,
) -> Result<(), AgentError> {
    let saved: Option<SessionRecord> = match persist::get(&ctx, SESSION_OBJECT).await? {
        Some((_, value)) => Some(persist::from_payload("session record", value)?),
        None => None,
    };
    if saved.is_none() && launch.held {
        crate::agent::run::start_receive_release(&ctx).await?;
    }
    let runtime = profile.runtime();
    let mut record = saved.clone().unwrap_or_else(|| SessionRecord {
        runtime,
        session_id: (runtime == ExternalRuntime::ClaudeCode).then(|| uuid::Uuid::new_v4().to_string()),
        agent_id: crate::agent::run::new_agent_id(),
        group: None,
    });
    // A command an earlier runtime started for this session may outlive it (the runtime was
    // killed): end it before this one continues the conversation.
    if let Some(mark) = record.group.take()
        && mark.kill_if_left()
    {
        tracing::warn!(pid = %ctx.pid(), pgid = mark.pgid, "ended the session command a crashed runtime left running");
    }
    let cost = match persist::get(&ctx, COST_OBJECT).await? {
        Some((_, value)) => {
            value["incarnations"].get(0).cloned().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_else(
                || IncarnationCost {
                    agent_id: record.agent_id.clone(),
                    profile: launch.agent.clone(),
                    ..Default::default()
                },
            )
        }
        None => IncarnationCost {
            agent_id: record.agent_id.clone(),
            profile: launch.agent.clone(),
            ..Default::default()
        },
    };
    let turns = cost.turns;
    let mut session = Session {
        host,
        ctx,
        launch,
        record,
        cost,
        turns,
        deferred: Usage::default(),
        cost_dirty: false,
        collected: BTreeMap::new(),
        collected_pids: Vec::new(),
    };
    let start = match (&saved, &session.record.session_id) {
        (Some(_), Some(id)) => Start::Resume { session_id: id.clone() },
        _ => Start::Fresh { session_id: session.record.session_id.clone() },
    };
    // Durable before the session starts: a crash after this line continues this session. A
    // new session's identity and cost object go in the same commit.
    if saved.is_none() {
        session.save(&[Saved::Record, Saved::Identity, Saved::Cost]).await?;
        let via = if session.launch.parent_agent_id.is_some() { SpawnVia::Spawn } else { SpawnVia::Root };
        session.emit(AgentEvent::AgentSpawned {
            profile: session.launch.agent.clone(),
            parent_agent_id: session.launch.parent_agent_id.clone(),
            via,
            depth: session.launch.depth,
            machine: None,
            state: None,
            inherited_messages: 0,
            inherited: Default::default(),
            opening: vec![Message::user(session.launch.prompt.clone())],
        });
    } else {
        session.save(&[Saved::Record]).await?;
    }
    let outcome = session.drive(&profile, &start).await;
    session.end(outcome).await
}

impl Session {
    fn emit(&self, event: AgentEvent) {
        self.host.telemetry.emit(&self.ctx.pid().to_string(), &self.record.agent_id, event);
    }

    async fn save_record(&mut self) -> Result<(), AgentError> {
        self.save(&[Saved::Record]).await
    }

    /// Writes `objects` in one commit.
    async fn save(&mut self, objects: &[Saved]) -> Result<(), AgentError> {
        let mut writes = Vec::with_capacity(objects.len());
        for object in objects {
            let (name, payload) = match object {
                Saved::Record => (SESSION_OBJECT, persist::to_payload(&self.record)?),
                Saved::Identity => (IDENTITY_OBJECT, self.identity()),
                Saved::Cost => (COST_OBJECT, self.cost_record()),
            };
            writes.push(NamedWrite { name: name.to_string(), payload });
        }
        let cost = objects.contains(&Saved::Cost);
        self.cost_dirty |= cost;
        self.ctx.write_named(writes).await.map_err(AgentError::kernel(ToolName::WriteObject.as_str()))?;
        if cost {
            self.cost_dirty = false;
        }
        Ok(())
    }

    fn identity(&self) -> Value {
        json!({
            "agent_id": self.record.agent_id,
            "parent_agent_id": self.launch.parent_agent_id,
            "profile": self.launch.agent,
            "machine": Value::Null,
            "depth": self.launch.depth,
            "runtime": self.record.runtime,
            "session_id": self.record.session_id,
        })
    }

    fn cost_record(&self) -> Value {
        let by_profile = json!({ self.cost.profile.clone(): self.cost.usage });
        let mut subtree = self.collected.clone();
        let own = subtree.entry(self.cost.profile.clone()).or_default();
        *own = add_usage(own, &self.cost.usage);
        json!({
            "incarnations": [self.cost],
            "by_profile": by_profile,
            "subtree_by_profile": subtree,
            "collected": self.collected_pids,
        })
    }

    /// Collects the children that ended, as a native agent collects its subagents: each
    /// one's result, read through the handle a wait grants, adds its subtree's cost to this
    /// agent's record before this process ends and the unmerged children's memory with it.
    /// A child still running is left to the kernel, which ends it with this process.
    async fn collect_children(&mut self) -> Result<(), AgentError> {
        let children =
            self.ctx.list_children(true).await.map_err(AgentError::kernel(ToolName::List.as_str()))?;
        for child in children.children.into_iter().filter(|c| c.status.is_terminal()) {
            let waited = self.ctx.wait_child(child.pid, false).await;
            let Ok(waited) = waited else { continue };
            let payload = match (waited.result_oid, waited.result_handle) {
                (Some(oid), true) => self.ctx.read_object(oid).await.ok().and_then(|v| v.payload),
                _ => None,
            };
            let subtree: BTreeMap<String, Usage> = payload
                .as_ref()
                .and_then(|p| p.get("cost"))
                .and_then(|c| c.get("subtree_by_profile"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            for (profile, usage) in subtree {
                let entry = self.collected.entry(profile).or_default();
                *entry = add_usage(entry, &usage);
            }
            self.collected_pids.push(child.pid.to_string());
        }
        Ok(())
    }

    async fn save_cost(&mut self) -> Result<(), AgentError> {
        self.save(&[Saved::Cost]).await
    }

    /// Charges `usage` to the incarnation and to the kernel budget. While the session is
    /// inside a blocking call it made through MCP the process is not running and the kernel
    /// takes no charge: the usage waits for the next event (or the end) and is charged then.
    async fn charge(&mut self, usage: &Usage) -> Result<(), AgentError> {
        self.cost.usage = self.cost.usage.plus(usage);
        self.deferred = self.deferred.plus(usage);
        self.flush(false).await
    }

    /// Charges what was deferred and writes a cost object left unwritten. With `must`, a
    /// process that is still not running is an error; without, it waits for a later call.
    async fn flush(&mut self, must: bool) -> Result<(), AgentError> {
        let pending = std::mem::take(&mut self.deferred);
        if pending != Usage::default() {
            let kernel = crate::actors::kernel::budget::Usage {
                tokens: pending.total_tokens(),
                cost_micros: pending.cost_micros.unwrap_or(0),
                ..Default::default()
            };
            match self.ctx.charge(kernel).await.map_err(AgentError::kernel("charge")) {
                Err(e) if !must && not_running(&e) => {
                    self.deferred = pending;
                    return Ok(());
                }
                other => other?,
            }
        }
        if self.cost_dirty {
            match self.save_cost().await {
                Err(e) if !must && not_running(&e) => return Ok(()),
                other => other?,
            }
        }
        Ok(())
    }

    /// Runs the command to its end: the session's end as reported, or why there is none.
    async fn drive(&mut self, profile: &ExternalProfile, start: &Start) -> Result<SessionEnd, AgentError> {
        let link = self.host.mcp_link();
        let note = link.as_ref().map(|_| self.host.external_note(profile, self.ctx.pid()));
        let spec = SessionSpec {
            settings: profile.cli(),
            start,
            pid: self.ctx.pid(),
            mcp: link.as_ref(),
            note: note.as_deref(),
            prompt: &self.launch.prompt,
            cwd: std::path::PathBuf::from(self.ctx.cwd()),
        };
        let command = session_command(&spec).map_err(|e| external(e.to_string()))?;
        let mut child = SessionChild::spawn(&command).map_err(|e| external(e.to_string()))?;
        // The group is durable before the tool starts (it is held until released).
        self.record.group = child.mark();
        self.save_record().await?;
        child.release().await.map_err(|e| external(e.to_string()))?;
        let timeout = profile.cli().timeout();
        let run = self.read(&mut child, profile.runtime());
        let end = match timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(end) => end,
                Err(_) => {
                    let stderr = child.kill_and_collect().await;
                    return Err(external(format!(
                        "the {} session did not finish within {} ms and was killed{}",
                        profile.runtime().product(),
                        limit.as_millis(),
                        stderr_tail(&stderr)
                    )));
                }
            },
            None => run.await,
        };
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                child.kill_group();
                return Err(e);
            }
        };
        let (code, stderr) = child.finish().await.map_err(|e| external(e.to_string()))?;
        let product = profile.runtime().product();
        match end {
            Some(end) if end.error.is_none() && code == 0 => Ok(end),
            Some(SessionEnd { error: Some(error), .. }) => Err(external(format!(
                "the {product} session reported an error: {error}{}",
                stderr_tail(&stderr)
            ))),
            _ if code != 0 => Err(external(format!(
                "`{}` exited with status {code}{}",
                command.program,
                stderr_tail(&stderr)
            ))),
            _ => Err(external(format!(
                "the {product} session's output ended without a result{}",
                stderr_tail(&stderr)
            ))),
        }
    }

    /// Reads the stream until it reports its end or its output ends.
    async fn read(
        &mut self,
        child: &mut SessionChild,
        runtime: ExternalRuntime,
    ) -> Result<Option<SessionEnd>, AgentError> {
        let mut decoder = Decoder::new(runtime);
        loop {
            let line = child.next_line().await.map_err(|e| match e {
                ChildError::Io { source, program } => {
                    external(format!("reading `{program}`'s output failed: {source}"))
                }
                e => external(e.to_string()),
            })?;
            let (events, last) = match line {
                Some(line) => (decoder.line(&line).map_err(external)?, false),
                None => (decoder.finish_without_end(), true),
            };
            for event in events {
                if let Some(end) = self.apply(event).await? {
                    return Ok(Some(end));
                }
            }
            if last {
                return Ok(None);
            }
        }
    }

    /// Acts on one event; `Some` at the session's end.
    async fn apply(&mut self, event: StreamEvent) -> Result<Option<SessionEnd>, AgentError> {
        self.flush(false).await?;
        match event {
            StreamEvent::Session(id) => {
                if self.record.session_id.as_deref() != Some(id.as_str()) {
                    self.record.session_id = Some(id);
                    self.save(&[Saved::Record, Saved::Identity]).await?;
                }
            }
            StreamEvent::Usage(usage) => self.charge(&usage).await?,
            StreamEvent::Turn { text, calls, usage } => {
                self.turns += 1;
                self.cost.turns = self.turns;
                self.emit(AgentEvent::TurnCompleted {
                    turn: self.turns,
                    usage,
                    text,
                    tool_calls: calls.iter().map(|c| c.tool.clone()).collect(),
                    calls,
                    compacted: false,
                });
                self.cost_dirty = true;
                self.flush(false).await?;
            }
            StreamEvent::End(end) => {
                if let Some(total) = end.cost_micros {
                    let charged = self.cost.usage.cost_micros.unwrap_or(0);
                    let rest =
                        Usage { cost_micros: Some(total.saturating_sub(charged)), ..Default::default() };
                    self.charge(&rest).await?;
                    self.cost.usage.cost_micros = Some(total.max(charged));
                }
                return Ok(Some(end));
            }
        }
        Ok(None)
    }

    /// Records how the session ended and ends the process with it.
    async fn end(mut self, outcome: Result<SessionEnd, AgentError>) -> Result<(), AgentError> {
        self.cost.turns = self.turns;
        let usage = self.cost.usage;
        match outcome {
            Ok(end) => {
                self.flush(true).await?;
                self.collect_children().await?;
                let result = end.result.map(Value::String);
                self.emit(AgentEvent::AgentFinished {
                    outcome: "exited".into(),
                    result: result.clone(),
                    usage,
                });
                self.save_cost().await?;
                let payload = json!({
                    "result": result,
                    "agent_id": self.record.agent_id,
                    "profile": self.launch.agent,
                    "runtime": self.record.runtime,
                    "session_id": self.record.session_id,
                    "cost": self.cost_record(),
                });
                self.ctx.exit(Some(payload)).await.map_err(AgentError::kernel(ToolName::Exit.as_str()))?;
                Ok(())
            }
            Err(e) => {
                let budget =
                    matches!(&e, AgentError::Kernel { error, .. } if error.code == "budget_exhausted");
                if !budget {
                    self.emit(AgentEvent::AgentFinished { outcome: "failed".into(), result: None, usage });
                    let _ = self.save_cost().await;
                }
                Err(e)
            }
        }
    }
}

fn external(message: impl Into<String>) -> AgentError {
    AgentError::External { message: message.into() }
}

/// `; its standard error ends: …`, or nothing for an empty one.
fn stderr_tail(stderr: &str) -> String {
    let text = stderr.trim();
    if text.is_empty() { String::new() } else { format!("; its standard error ends: {text}") }
}
