//! The turn loop: the kernel program every agent process runs.
//!
//! Each turn: pick up messages that arrived, compact if the next request would pass the
//! profile's trigger, render the system prompt into its slot, run the brain in its own task,
//! record the assistant message, execute each call recording its result, then apply what the
//! turn declared (forks, a succession, an ending) and checkpoint.
//!
//! Spans: the process runs in an `agent_process` span (`pid`, and the first incarnation's
//! `agent_id` and `profile`), each turn in an `agent_turn` span (`pid`, `agent_id`, `profile`,
//! `turn`), each call in a `tool_call` span (`tool`, `turn`) inside it, and the model call in
//! a `model_request` span inside the turn (see `watch.rs`).

use super::error::AgentError;
use super::host::{AgentHost, AgentIdentity};
use super::launch::AgentLaunch;
use super::state::{AgentState, DeclaredEnding, MachineAt};
use super::tools::offered_tools;
use super::turn::Declarations;
use crate::actors::Pid;
use crate::actors::kernel::mailbox::Notice;
use crate::actors::runtime::ProcessContext;
use crate::actors::runtime::calls::BatchRule;
use crate::actors::runtime::calls::ToolError;
use crate::actors::runtime::program::{BoxFuture, Program, ProgramResult, ProgramStart};
use crate::agent::brain::{Brain, Message, ToolCall, ToolSpec, tokens};
use crate::agent::config::Profile;
use crate::agent::limits::AGENT_TURNS_MAX;
use crate::agent::telemetry::{AgentEvent, CallError, CallRecord};
use crate::agent::window::Window;
use std::sync::Arc;
use tracing::Instrument;

/// What an incarnation's requests carry besides the window; cheap to clone.
#[derive(Clone)]
pub(crate) struct RequestParts {
    /// The system prompt slot.
    pub(crate) system: Arc<str>,
    /// The offered tools.
    pub(crate) tools: Arc<[ToolSpec]>,
    /// The estimated tokens of the system slot and the tool specs.
    fixed_tokens: u64,
}

/// [`RequestParts`] as rendered once for a profile standing in a machine state (or not).
pub(crate) struct Rendered {
    profile: String,
    machine: Option<MachineAt>,
    parts: RequestParts,
}

/// The program an agent process runs.
pub struct AgentProgram {
    host: Arc<AgentHost>,
}

impl AgentProgram {
    /// A program for one execution of an agent process.
    pub fn new(host: Arc<AgentHost>, _start: &ProgramStart) -> AgentProgram {
        AgentProgram { host }
    }
}

impl Program for AgentProgram {
    fn run(self: Box<Self>, ctx: ProcessContext) -> BoxFuture<ProgramResult> {
        let span = tracing::info_span!(
            "agent_process",
            pid = %ctx.pid(),
            agent_id = tracing::field::Empty,
            profile = tracing::field::Empty,
        );
        Box::pin(
            async move {
                let launch = AgentLaunch::from_goal(ctx.goal())?;
                if let Some(profile) = self.host.config.external(&launch.agent).cloned() {
                    let span = tracing::Span::current();
                    span.record("profile", launch.agent.as_str());
                    crate::agent::external::run_session(self.host, ctx, launch, profile).await?;
                    return Ok(());
                }
                let agent = Agent::start(self.host, ctx).await?;
                let span = tracing::Span::current();
                span.record("agent_id", agent.state.agent_id.as_str());
                span.record("profile", agent.state.profile.as_str());
                agent.run().await?;
                Ok(())
            }
            .instrument(span),
        )
    }
}

/// How a turn ended the session: its result, and the forks it declared (which run first).
struct Ending {
    result: Option<serde_json::Value>,
    forks: Vec<super::turn::DeclaredFork>,
}

/// A call as the event records it: the arguments the model sent, the JSON the tool
/// returned or the error the model was answered with, and the calls it made if it ran a
/// program.
pub(crate) fn call_record(
    call: &ToolCall,
    answer: Result<serde_json::Value, ToolError>,
    calls: Vec<CallRecord>,
) -> CallRecord {
    let (result, error) = match answer {
        Ok(value) => (Some(value), None),
        Err(e) => (None, Some(CallError { code: e.code, message: e.message })),
    };
    CallRecord { tool: call.name.clone(), arguments: call.arguments.clone(), result, error, calls }
}

/// One agent process's live state.
pub(crate) struct Agent {
    pub(crate) host: Arc<AgentHost>,
    pub(crate) ctx: ProcessContext,
    pub(crate) launch: AgentLaunch,
    pub(crate) state: AgentState,
    pub(crate) window: Window<Message>,
    pub(crate) brain: Arc<dyn Brain>,
    /// Interrupt notices delivered with earlier answers, shown before the next call's result.
    pub(crate) interrupts: Vec<Notice>,
    /// Normal notices delivered with the loop's own calls, shown after the next call's result.
    pub(crate) normals: Vec<Notice>,
    /// Whether the mailbox may hold unread messages no notice announced (at an execution's
    /// start, or when a page of the inbox left some behind).
    pub(crate) inbox_unread: bool,
    /// The system prompt and tools rendered for the current incarnation: rendered once per
    /// incarnation, not once per turn, and shared with each turn's brain task.
    pub(crate) rendered: Option<Rendered>,
    /// Turns the current incarnation has taken.
    pub(crate) incarnation_turns: u64,
    /// The malformed-call and repetition guards' counts.
    pub(crate) guards: super::watch::GuardState,
    /// The module objects as this execution last wrote them (unchanged ones are not rewritten).
    pub(crate) written: std::collections::HashMap<&'static str, serde_json::Value>,
    /// Whether a program is running (its calls may not run another program).
    pub(crate) in_program: bool,
}

impl Agent {
    /// The profile the current incarnation runs.
    pub(crate) fn profile(&self) -> Result<&Profile, AgentError> {
        self.host.config.profile(&self.state.profile).ok_or_else(|| AgentError::BadLaunch {
            message: format!("the profile {:?} is not in the configuration", self.state.profile),
        })
    }

    /// Emits `event` on the current incarnation's stream.
    pub(crate) fn emit(&self, event: AgentEvent) {
        self.host.telemetry.emit(&self.ctx.pid().to_string(), &self.state.agent_id, event);
    }

    /// The brain `brain` for the current incarnation, which has taken its turns so far.
    pub(crate) fn make_brain(&self, brain: &str) -> Result<Arc<dyn Brain>, AgentError> {
        self.make_brain_after(brain, self.incarnation_turns)
    }

    /// The brain `brain` for the current incarnation, told it has already taken `turns_taken`
    /// turns: the incarnation's own count for its brain, 0 for a summarizer (each compaction
    /// asks a summarizer made for it, which has answered nothing yet).
    pub(crate) fn make_brain_after(
        &self,
        brain: &str,
        turns_taken: u64,
    ) -> Result<Arc<dyn Brain>, AgentError> {
        self.host.brains.brain(&AgentIdentity {
            pid: self.ctx.pid(),
            agent_id: self.state.agent_id.clone(),
            profile: self.state.profile.clone(),
            brain: brain.to_string(),
            incarnation: u32::try_from(self.state.costs.len()).unwrap_or(u32::MAX),
            launch: self.launch.clone(),
            turns_taken,
        })
    }

    /// The tools offered now, the system prompt rendered for them, and their estimated tokens.
    pub(crate) fn request_parts(&mut self) -> Result<RequestParts, AgentError> {
        if let Some(r) = &self.rendered
            && r.profile == self.state.profile
            && r.machine == self.state.machine
        {
            return Ok(r.parts.clone());
        }
        let profile = self.profile()?;
        let tools = offered_tools(profile, self.state.machine.is_some());
        let system = super::prompt::render(&self.host.config, profile, self.state.machine.as_ref(), &tools);
        let fixed_tokens =
            tokens::system_tokens(&system) + tools.iter().map(tokens::tool_spec_tokens).sum::<u64>();
        let parts = RequestParts { system: Arc::from(system), tools: Arc::from(tools), fixed_tokens };
        self.rendered = Some(Rendered {
            profile: self.state.profile.clone(),
            machine: self.state.machine.clone(),
            parts: parts.clone(),
        });
        Ok(parts)
    }

    async fn run(mut self) -> Result<(), AgentError> {
        // Restarted from the checkpoint of the turn that declared the end: end it so.
        if let Some(ending) = self.state.ending.clone() {
            return self.finish(ending.result, &ending.forks).await;
        }
        loop {
            if self.window.turn() >= AGENT_TURNS_MAX {
                return Err(AgentError::TooManyTurns { turns: self.window.turn(), max: AGENT_TURNS_MAX });
            }
            let span = tracing::info_span!(
                "agent_turn",
                pid = %self.ctx.pid(),
                agent_id = %self.state.agent_id,
                profile = %self.state.profile,
                turn = tracing::field::Empty,
            );
            if let Some(ending) = self.take_turn(&span).instrument(span.clone()).await? {
                let forks: Vec<Pid> = ending.forks.iter().map(|f| f.pid).collect();
                return self.finish(ending.result, &forks).await;
            }
        }
    }

    /// One turn: inbox, compaction, the model call, the calls, what the turn declared, the
    /// checkpoint. `Some` when the turn ended the session. `span` is the turn's, which gets
    /// the turn's number once it is known.
    async fn take_turn(&mut self, span: &tracing::Span) -> Result<Option<Ending>, AgentError> {
        self.take_inbox().await?;
        let parts = self.request_parts()?;
        let compacted = self.compact_if_needed(parts.fixed_tokens).await?;
        self.check_own_budget(0)?;
        let turn_no = self.window.next_turn();
        span.record("turn", turn_no);
        let offered = Arc::clone(&parts.tools);
        let (mut turn, streamed) = self.think_watched(parts, turn_no).await?;
        self.incarnation_turns += 1;
        self.charge_after_stream(&turn.usage, streamed).await?;
        if let Some(cost) = self.state.costs.last_mut() {
            cost.turns += 1;
        }
        let bounded = super::oversize::bound_turn(&mut turn.message);
        let calls = turn.message.tool_calls.clone();
        let text = turn.message.text.clone();
        self.window.push(Message::Assistant(turn.message))?;
        let mut declared = Declarations::default();
        let mut batch = BatchRule::new();
        let mut malformed = false;
        let mut records = Vec::with_capacity(calls.len());
        let mut next = 0;
        while next < calls.len() {
            let first = next;
            // Consecutive launches, or consecutive sends, run as one group sharing a commit;
            // every other call alone.
            let group = self.group_run(&calls[first..], &batch);
            let answered = if group >= 2 {
                let tool = calls[first].name.as_str();
                let span = tracing::info_span!("tool_calls", tool, calls = group, turn = turn_no);
                async {
                    let mut screened = Vec::with_capacity(group);
                    for call in &calls[first..first + group] {
                        screened.push(self.screen(&bounded, call, &offered, &mut malformed)?);
                    }
                    let to_run: Vec<(&ToolCall, String)> = (first..first + group)
                        .zip(&screened)
                        .filter(|(_, refused)| refused.is_none())
                        .map(|(index, _)| (&calls[index], index.to_string()))
                        .collect();
                    let mut ran = self.execute_group(&to_run, &mut batch, turn_no).await.into_iter();
                    let mut answered = Vec::with_capacity(group);
                    for refused in screened {
                        let missing = || ToolError::new("internal", "a call of the group went unanswered");
                        answered.push(
                            match refused.map(Err).unwrap_or_else(|| ran.next().ok_or_else(missing)) {
                                Err(refused) => screened_out(refused),
                                Ok(executed) => (executed.text(), executed.answer, executed.calls),
                            },
                        );
                    }
                    Ok::<_, AgentError>(answered)
                }
                .instrument(span)
                .await?
            } else {
                let call = &calls[first];
                let span = tracing::info_span!("tool_call", tool = %call.name, turn = turn_no);
                let answered = async {
                    Ok::<_, AgentError>(match self.screen(&bounded, call, &offered, &mut malformed)? {
                        Some(refused) => screened_out(refused),
                        None => {
                            let place = first.to_string();
                            let executed =
                                self.execute(call, &mut declared, &mut batch, turn_no, &place).await;
                            (executed.text(), executed.answer, executed.calls)
                        }
                    })
                }
                .instrument(span)
                .await?;
                vec![answered]
            };
            next += answered.len();
            for (call, (result, answer, calls)) in calls[first..].iter().zip(answered) {
                self.record_answer(call, turn_no, result, &mut records, answer, calls)?;
            }
        }
        self.after_calls(malformed)?;
        if calls.is_empty() {
            // A turn with no call ends the session with its text as the result.
            let _ = declared.declare_ending(text.clone().map(serde_json::Value::String));
        }
        self.emit(AgentEvent::TurnCompleted {
            turn: turn_no,
            usage: turn.usage,
            text,
            tool_calls: calls.iter().map(|c| c.name.clone()).collect(),
            calls: records,
            compacted,
        });
        let resolved = declared.resolve();
        if let Some(archive) = &resolved.archive {
            self.apply_archive(archive, turn_no).await?;
        }
        self.prepare_forks(&resolved.forks, turn_no)?;
        if let Some(succession) = &resolved.succession {
            self.succeed(succession, turn_no).await?;
        }
        if let Some(result) = &resolved.ending {
            let forks = resolved.forks.iter().map(|f| f.pid).collect();
            self.state.ending = Some(DeclaredEnding { result: result.clone(), forks });
        }
        self.checkpoint().await?;
        self.deliver_handoffs().await?;
        Ok(resolved.ending.map(|result| Ending { result, forks: resolved.forks }))
    }

    /// Why `call` is refused before it runs, if it is: too large to record, or stopped by the
    /// call guards.
    fn screen(
        &mut self,
        bounded: &super::oversize::Bounded,
        call: &ToolCall,
        offered: &[ToolSpec],
        malformed: &mut bool,
    ) -> Result<Option<ToolError>, AgentError> {
        match bounded.refusal(call) {
            Some(refused) => Ok(Some(refused)),
            None => self.screen_call(call, offered, malformed),
        }
    }

    /// Records one call's answer: the turn's record of the call, its `answered` telemetry, and
    /// its tool result in the window, with the repetition guard's warning if it is due.
    fn record_answer(
        &mut self,
        call: &ToolCall,
        turn: u64,
        result: String,
        records: &mut Vec<CallRecord>,
        answer: Result<serde_json::Value, ToolError>,
        calls: Vec<CallRecord>,
    ) -> Result<(), AgentError> {
        records.push(call_record(call, answer, calls));
        let result = result + &self.repetition_warning().unwrap_or_default();
        self.host.telemetry.answered(
            self.ctx.pid(),
            &self.state.agent_id,
            turn,
            (&call.id, &call.name),
            &result,
        );
        self.window.push(Message::tool_result(call.id.clone(), result))?;
        Ok(())
    }

    /// Charges a turn's (or a summary's) usage to the kernel budget and to the incarnation.
    pub(crate) async fn charge(&mut self, usage: &crate::agent::brain::Usage) -> Result<(), AgentError> {
        self.charge_after_stream(usage, 0).await
    }

    /// [`Self::charge`] for a turn whose `streamed` output tokens were charged to the kernel
    /// while they arrived: only the rest is charged now.
    pub(crate) async fn charge_after_stream(
        &mut self,
        usage: &crate::agent::brain::Usage,
        streamed: u64,
    ) -> Result<(), AgentError> {
        self.state.charge(usage);
        self.check_own_budget(0)?;
        let kernel = crate::actors::kernel::budget::Usage {
            tokens: usage.total_tokens().saturating_sub(streamed),
            cost_micros: usage.cost_micros.unwrap_or(0),
            ..Default::default()
        };
        self.ctx.charge(kernel).await.map_err(AgentError::kernel("charge"))
    }

    /// Where the current incarnation stands in a machine, if it does.
    pub(crate) fn machine(&self) -> Option<&MachineAt> {
        self.state.machine.as_ref()
    }
}

/// What a call refused before it ran comes to: its error as the result, no program calls.
fn screened_out(refused: ToolError) -> (String, Result<serde_json::Value, ToolError>, Vec<CallRecord>) {
    (crate::tools::error_json(&refused).to_string(), Err(refused), Vec::new())
}
