//! `agentvisor transcript PID [--json]`: one agent process's conversation, turn by turn across
//! its incarnations, from the state directory's agent event file — opening messages, each
//! turn's text and calls with their arguments and answers, messages, compactions, exec and
//! fork boundaries, machine states, and how it ended. Read-only: the event file is read, the
//! store opened read-only to resolve the pid and read the process's final row.

use super::output::{open_view, resolve_pid, short_pid};
use agentvisor::actors::Pid;
use agentvisor::agent::brain::{Message, Usage};
use agentvisor::agent::telemetry::{
    AgentEvent, CallError, CallRecord, EVENTS_FILE, EventRecord, TransitionKind, read_jsonl,
};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor transcript`.
#[derive(clap::Args, Debug)]
pub(crate) struct TranscriptArgs {
    /// The agent process: a whole pid, a unique prefix, or the short id the views print.
    pid: String,
    /// Print the entries as JSON, one object per line.
    #[arg(long)]
    json: bool,
}

/// One entry of a transcript, in the order it is shown. `--json` prints these as they are.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    /// An incarnation began.
    Incarnation {
        agent_id: String,
        profile: String,
        via: &'static str,
        depth: u32,
        parent_agent_id: Option<String>,
        machine: Option<String>,
        state: Option<String>,
        inherited_messages: u64,
    },
    /// A fork's first incarnation: where it was forked from.
    ForkedFrom {
        pid: Option<String>,
        agent_id: Option<String>,
        turn: Option<u64>,
    },
    /// A context message an incarnation opened with.
    Opening {
        message: Message,
    },
    /// A message from another process reached the context.
    MessageReceived {
        from_pid: String,
        message_kind: String,
        text: String,
    },
    /// The window was compacted before a turn.
    Compacted {
        turn: u64,
        tokens_before: u64,
        tokens_after: u64,
        cut: u64,
    },
    Archived {
        turn: u64,
        from_turn: u64,
        to_turn: u64,
        messages: u64,
        summary: String,
    },
    /// A model call was retried.
    Retried {
        turn: u64,
        attempt: u32,
        code: String,
        message: String,
    },
    /// A turn: what the model said and what it cost.
    Turn {
        turn: u64,
        text: Option<String>,
        usage: Usage,
        compacted: bool,
    },
    /// One call of the turn before it.
    Call {
        turn: u64,
        tool: String,
        arguments: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<CallError>,
        /// The calls a program made, in order (`run_code`, `run_program`).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        calls: Vec<CallRecord>,
    },
    /// A message the agent sent, in the turn before it.
    MessageSent {
        to_pid: String,
        text: String,
    },
    /// The agent forked a copy of itself.
    ForkedChild {
        turn: u64,
        pid: Option<String>,
        agent_id: String,
    },
    /// The agent became another profile.
    Exec {
        turn: u64,
        to_profile: String,
        to_agent_id: String,
    },
    /// A machine transition handed over to the next state's profile.
    Transition {
        turn: u64,
        to_profile: String,
        to_agent_id: String,
    },
    /// A machine entered a state.
    FsmState {
        machine: String,
        state: String,
        from: Option<String>,
    },
    /// An incarnation ended the session.
    Finished {
        outcome: String,
        result: Option<Value>,
        usage: Usage,
    },
    /// The process's final row in the store.
    Process {
        status: String,
        outcome: Value,
    },
}

pub(crate) async fn run(state: &Path, args: TranscriptArgs) -> anyhow::Result<ExitCode> {
    let view = open_view(state)?;
    let pid = resolve_pid(&view.rt, &args.pid)?;
    let path = state.join(EVENTS_FILE);
    if !path.exists() {
        outln!("no agent events recorded in {}", state.display());
        return Ok(ExitCode::SUCCESS);
    }
    let records = read_jsonl(&path)?;
    let mut entries = entries(&records, pid);
    if entries.is_empty() {
        outln!("no agent events recorded for process {pid}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(row) = view.rt.process(pid)? {
        entries.push(Entry::Process {
            status: view.status(&row),
            outcome: serde_json::to_value(&row.outcome).unwrap_or(Value::Null),
        });
    }
    if args.json {
        for entry in &entries {
            outln!("{}", serde_json::to_string(entry)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    outln!("transcript of process {pid}");
    for entry in &entries {
        for line in lines(entry) {
            outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The entries of process `pid`'s records, in file order, except that a message the agent
/// sent is shown after the turn whose call sent it (the turn's record is written once all its
/// calls are answered). Fork links are looked up in the other processes' records.
fn entries(records: &[EventRecord], pid: Pid) -> Vec<Entry> {
    let pid = pid.to_string();
    let mut out = Vec::new();
    let mut sent = Vec::new();
    for record in records.iter().filter(|r| r.pid == pid) {
        match &record.event {
            AgentEvent::AgentSpawned {
                profile,
                parent_agent_id,
                via,
                depth,
                machine,
                state,
                inherited_messages,
                opening,
                ..
            } => {
                out.push(Entry::Incarnation {
                    agent_id: record.agent_id.clone(),
                    profile: profile.clone(),
                    via: via.as_str(),
                    depth: *depth,
                    parent_agent_id: parent_agent_id.clone(),
                    machine: machine.clone(),
                    state: state.clone(),
                    inherited_messages: *inherited_messages,
                });
                if via.as_str() == "fork" {
                    out.push(forked_from(records, &record.agent_id));
                }
                out.extend(opening.iter().cloned().map(|message| Entry::Opening { message }));
            }
            AgentEvent::TurnCompleted { turn, usage, text, calls, compacted, .. } => {
                out.push(Entry::Turn {
                    turn: *turn,
                    text: text.clone(),
                    usage: *usage,
                    compacted: *compacted,
                });
                out.extend(calls.iter().cloned().map(|c| call_entry(*turn, c)));
                out.append(&mut sent);
            }
            AgentEvent::MessageSent { to_pid, text } => {
                sent.push(Entry::MessageSent { to_pid: to_pid.clone(), text: text.clone() });
            }
            AgentEvent::MessageReceived { from_pid, text, kind } => out.push(Entry::MessageReceived {
                from_pid: from_pid.clone(),
                message_kind: kind.clone(),
                text: text.clone(),
            }),
            AgentEvent::Compacted { turn, tokens_before, tokens_after, cut } => out.push(Entry::Compacted {
                turn: *turn,
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                cut: *cut,
            }),
            AgentEvent::ThreadArchived { turn, from_turn, to_turn, messages, summary } => {
                out.push(Entry::Archived {
                    turn: *turn,
                    from_turn: *from_turn,
                    to_turn: *to_turn,
                    messages: *messages,
                    summary: summary.clone(),
                })
            }
            AgentEvent::ModelRetried { turn, attempt, code, message, .. } => out.push(Entry::Retried {
                turn: *turn,
                attempt: *attempt,
                code: code.clone(),
                message: message.clone(),
            }),
            AgentEvent::AgentTransition { kind, to_agent_id, to_profile, turn, .. } => {
                let (turn, to_agent_id, to_profile) = (*turn, to_agent_id.clone(), to_profile.clone());
                out.push(match kind {
                    TransitionKind::Fork => {
                        let pid = spawned_pid(records, &to_agent_id);
                        Entry::ForkedChild { turn, pid, agent_id: to_agent_id }
                    }
                    TransitionKind::Exec => Entry::Exec { turn, to_profile, to_agent_id },
                    TransitionKind::Fsm => Entry::Transition { turn, to_profile, to_agent_id },
                });
            }
            AgentEvent::FsmState { machine, state, from } => out.push(Entry::FsmState {
                machine: machine.clone(),
                state: state.clone(),
                from: from.clone(),
            }),
            // The refusal is the call's error, shown with the call; a transcript counts the
            // inherited messages rather than printing them again.
            AgentEvent::ToolRefused { .. } | AgentEvent::ContextChunk { .. } => {}
            AgentEvent::AgentFinished { outcome, result, usage } => {
                out.push(Entry::Finished { outcome: outcome.clone(), result: result.clone(), usage: *usage })
            }
        }
    }
    // Sent in a turn whose record never came (the process failed in it).
    out.append(&mut sent);
    out
}

fn call_entry(turn: u64, call: CallRecord) -> Entry {
    Entry::Call {
        turn,
        tool: call.tool,
        arguments: call.arguments,
        result: call.result,
        error: call.error,
        calls: call.calls,
    }
}

/// Where the fork whose incarnation is `agent_id` came from: the forker's `agent_transition`.
fn forked_from(records: &[EventRecord], agent_id: &str) -> Entry {
    let source = records.iter().find_map(|r| match &r.event {
        AgentEvent::AgentTransition { kind: TransitionKind::Fork, to_agent_id, turn, .. }
            if to_agent_id == agent_id =>
        {
            Some((r.pid.clone(), r.agent_id.clone(), *turn))
        }
        _ => None,
    });
    match source {
        Some((pid, agent_id, turn)) => {
            Entry::ForkedFrom { pid: Some(pid), agent_id: Some(agent_id), turn: Some(turn) }
        }
        None => Entry::ForkedFrom { pid: None, agent_id: None, turn: None },
    }
}

/// The process whose incarnation `agent_id` began, from its `agent_spawned`.
fn spawned_pid(records: &[EventRecord], agent_id: &str) -> Option<String> {
    records
        .iter()
        .find(|r| r.agent_id == agent_id && matches!(r.event, AgentEvent::AgentSpawned { .. }))
        .map(|r| r.pid.clone())
}

/// A pid as the views print it (its short id), or `?` when unknown.
fn short(pid: Option<&str>) -> String {
    match pid.and_then(|p| p.parse::<Pid>().ok()) {
        Some(pid) => short_pid(pid),
        None => pid.unwrap_or("?").to_string(),
    }
}

/// `text` indented by `prefix` on its first line and by as many spaces on the others.
fn block(prefix: &str, text: &str) -> Vec<String> {
    let pad = " ".repeat(prefix.chars().count());
    text.lines()
        .enumerate()
        .map(|(i, line)| if i == 0 { format!("{prefix}{line}") } else { format!("{pad}{line}") })
        .map(|line| line.trim_end().to_string())
        .collect()
}

fn usage_text(usage: &Usage) -> String {
    let mut out = format!("in={} out={}", usage.input_tokens, usage.output_tokens);
    if usage.cached_tokens > 0 {
        out.push_str(&format!(" cached={}", usage.cached_tokens));
    }
    if let Some(cost) = usage.cost_micros {
        out.push_str(&format!(" cost=${}", agentvisor::agent::money::format_usd_micros(cost)));
    }
    out
}

/// The lines a person reads for one entry.
fn lines(entry: &Entry) -> Vec<String> {
    match entry {
        Entry::Incarnation { agent_id, profile, via, depth, machine, state, inherited_messages, .. } => {
            let mut head = format!("── {profile} (agent {agent_id}) via {via}, depth {depth}");
            if let (Some(machine), Some(state)) = (machine, state) {
                head.push_str(&format!(", machine {machine} state {state}"));
            }
            if *inherited_messages > 0 {
                head.push_str(&format!(", {inherited_messages} messages inherited"));
            }
            vec![head]
        }
        Entry::ForkedFrom { pid, turn, .. } => vec![format!(
            "   forked from {} at turn {}",
            short(pid.as_deref()),
            turn.map_or("?".to_string(), |t| t.to_string())
        )],
        Entry::Opening { message } => {
            block(&format!("  {}: ", message.role().as_str()), message.text().unwrap_or(""))
        }
        Entry::MessageReceived { from_pid, message_kind, text } => {
            block(&format!("  ✉ {message_kind} message from {}: ", short(Some(from_pid))), text)
        }
        Entry::Compacted { turn, tokens_before, tokens_after, cut } => vec![format!(
            "  ⋯ compacted before turn {turn}: {tokens_before} → {tokens_after} tokens, {cut} messages cut"
        )],
        Entry::Retried { turn, attempt, code, message } => {
            vec![format!("  ↻ turn {turn} attempt {attempt} failed ({code}): {message}")]
        }
        Entry::Archived { turn, from_turn, to_turn, messages, summary } => block(
            &format!("  ⋯ turn {turn} archived turns {from_turn}–{to_turn} ({messages} messages): "),
            summary,
        ),
        Entry::Turn { turn, text, usage, compacted } => {
            let mut out = vec![format!(
                "turn {turn}  {}{}",
                usage_text(usage),
                if *compacted { "  (compacted)" } else { "" }
            )];
            if let Some(text) = text {
                out.extend(block("  assistant: ", text));
            }
            out
        }
        Entry::Call { tool, arguments, result, error, calls, .. } => {
            call_lines("  ", tool, arguments, result, error, calls)
        }
        Entry::MessageSent { to_pid, text } => block(&format!("  ✉ sent to {}: ", short(Some(to_pid))), text),
        Entry::ForkedChild { turn, pid, agent_id } => {
            vec![format!("  ⑂ forked child {} (agent {agent_id}) at turn {turn}", short(pid.as_deref()))]
        }
        Entry::Exec { turn, to_profile, .. } => {
            vec![format!("── exec → profile {to_profile} at turn {turn}")]
        }
        Entry::Transition { turn, to_profile, .. } => {
            vec![format!("── transition → profile {to_profile} at turn {turn}")]
        }
        Entry::FsmState { machine, state, from } => vec![match from {
            Some(from) => format!("   state {machine}: {from} → {state}"),
            None => format!("   state {machine}: enters {state}"),
        }],
        Entry::Finished { outcome, result, usage } => vec![format!(
            "finished: {outcome}{}  ({})",
            result.as_ref().map(|r| format!(", result {r}")).unwrap_or_default(),
            usage_text(usage)
        )],
        Entry::Process { status, outcome } => vec![format!("process: {status}  outcome {outcome}")],
    }
}

/// A call's lines at `indent`: the call, its answer, and the calls its program made, each one
/// level deeper.
fn call_lines(
    indent: &str,
    tool: &str,
    arguments: &Value,
    result: &Option<Value>,
    error: &Option<CallError>,
    calls: &[CallRecord],
) -> Vec<String> {
    let mut out = block(&format!("{indent}→ {tool} "), &arguments.to_string());
    let deeper = format!("{indent}    ");
    for call in calls {
        out.extend(call_lines(&deeper, &call.tool, &call.arguments, &call.result, &call.error, &call.calls));
    }
    match (result, error) {
        (_, Some(error)) => {
            out.extend(block(&format!("{indent}  ✗ "), &format!("{}: {}", error.code, error.message)))
        }
        (Some(result), None) => out.extend(block(&format!("{indent}  ← "), &result.to_string())),
        (None, None) => {}
    }
    out
}
