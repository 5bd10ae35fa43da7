//! What the turn loop watches around a model call and its tool calls: the call's retries and
//! progress (a live line, tokens charged as they stream), the agent's own limits (turns, and
//! a profile's tokens and cost for any process of it), malformed calls answered as errors the
//! model can correct, and a model that repeats the same call. The model call runs in a
//! `model_request` span with the OpenTelemetry GenAI attributes (`docs/telemetry.md`, "Spans").

use super::error::AgentError;
use super::program::{Agent, RequestParts};
use crate::actors::runtime::calls::ToolError;
use crate::agent::brain::{Progress, RetryNotice, ToolCall, Turn, TurnObserver, TurnRequest};
use crate::agent::config::AgentBudget;
use crate::agent::telemetry::{AgentEvent, ModelProgress};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

/// The guards' counts between calls.
#[derive(Debug, Default)]
pub(crate) struct GuardState {
    /// Consecutive turns with a malformed call.
    malformed_turns: u32,
    /// The last call's name and arguments, and how many times in a row it was made.
    last_call: Option<(String, String)>,
    repeats: u32,
}

/// The observer the brain's task reports to: the latest progress, and each retry.
struct LoopObserver {
    progress: watch::Sender<Option<Progress>>,
    retries: mpsc::UnboundedSender<RetryNotice>,
}

impl TurnObserver for LoopObserver {
    fn retrying(&self, notice: &RetryNotice) {
        let _ = self.retries.send(notice.clone());
    }

    fn progress(&self, progress: &Progress) {
        self.progress.send_replace(Some(*progress));
    }
}

/// What the process has spent, over every incarnation.
struct Spent {
    tokens: u64,
    cost_micros: u64,
    turns: u64,
}

impl Agent {
    /// The limits this process keeps itself: a root's launch limits (flags, profile, default
    /// cap), and for every process its current profile's budget.
    fn own_limits(&self) -> AgentBudget {
        let profile = self.profile().map(|p| *p.budget()).unwrap_or(AgentBudget::NONE);
        let is_root = self.launch.parent_pid.is_none() && self.launch.fork.is_none();
        if is_root { self.host.root_limits(&self.launch.agent).or(&profile) } else { profile }
    }

    fn spent(&self) -> Spent {
        let mut spent = Spent { tokens: 0, cost_micros: 0, turns: 0 };
        for cost in &self.state.costs {
            spent.tokens = spent.tokens.saturating_add(cost.usage.total_tokens());
            spent.cost_micros = spent.cost_micros.saturating_add(cost.usage.cost_micros.unwrap_or(0));
            spent.turns = spent.turns.saturating_add(cost.turns);
        }
        spent
    }

    /// Refuses the next turn if a limit the agent keeps itself is reached.
    pub(crate) fn check_own_budget(&self, streaming_tokens: u64) -> Result<(), AgentError> {
        let limits = self.own_limits();
        let spent = self.spent();
        let tokens = spent.tokens.saturating_add(streaming_tokens);
        for (dimension, limit, used) in [
            ("turns", limits.turns, spent.turns),
            ("tokens", limits.kernel.tokens, tokens),
            ("cost_micros", limits.kernel.cost_micros, spent.cost_micros),
        ] {
            if let Some(limit) = limit {
                let over = if dimension == "turns" { used >= limit } else { used > limit };
                if over {
                    return Err(AgentError::BudgetExhausted { dimension, limit, used });
                }
            }
        }
        Ok(())
    }

    /// Runs the brain in its own task on an O(1) copy of the window, watching it: each retry
    /// becomes a `model_retried` event, progress goes to telemetry's live line, and output
    /// tokens are charged to the kernel budget as they stream (so a budget runs out in the
    /// middle of a stream, not after it). Returns the turn and the tokens of it already charged.
    pub(crate) async fn think_watched(
        &self,
        parts: RequestParts,
        turn_no: u64,
    ) -> Result<(Turn, u64), AgentError> {
        let (progress_tx, mut progress_rx) = watch::channel(None);
        let (retry_tx, mut retry_rx) = mpsc::unbounded_channel();
        let observer = Arc::new(LoopObserver { progress: progress_tx, retries: retry_tx });
        let brain = Arc::clone(&self.brain);
        let window = self.window.fork();
        let watcher = Arc::clone(&observer);
        let span = self.request_span(turn_no)?;
        let mut task = tokio::spawn(
            async move {
                let request = TurnRequest::new(&parts.system, &window, &parts.tools).with_observer(&*watcher);
                brain.turn(request).await
            }
            .instrument(span.clone()),
        );
        drop(observer);
        let pid = self.ctx.pid().to_string();
        let mut charged = 0u64;
        let mut last = (0u32, 0u64);
        let mut live = ModelProgress {
            pid: pid.clone(),
            agent_id: self.state.agent_id.clone(),
            turn: turn_no,
            attempt: 1,
            elapsed_ms: 0,
            output_tokens: 0,
            done: false,
        };
        let result = loop {
            tokio::select! {
                joined = &mut task => break joined,
                Some(notice) = retry_rx.recv() => self.emit_retry(turn_no, notice),
                Ok(()) = progress_rx.changed() => {
                    let Some(p) = *progress_rx.borrow_and_update() else { continue };
                    // Tokens charged so far in this attempt; a retry starts from none.
                    let base = if p.attempt == last.0 { last.1 } else { 0 };
                    let delta = p.output_tokens.saturating_sub(base);
                    last = (p.attempt, p.output_tokens.max(base));
                    if delta > 0 {
                        charged = charged.saturating_add(delta);
                        let usage = crate::actors::kernel::budget::Usage { tokens: delta, ..Default::default() };
                        if let Err(e) = self.ctx.charge(usage).await {
                            task.abort();
                            return Err(AgentError::kernel("charge")(e));
                        }
                        if let Err(e) = self.check_own_budget(charged) {
                            task.abort();
                            return Err(e);
                        }
                    }
                    live.attempt = p.attempt;
                    live.elapsed_ms = u64::try_from(p.elapsed.as_millis()).unwrap_or(u64::MAX);
                    live.output_tokens = p.output_tokens;
                    self.host.telemetry.progress(live.clone());
                }
            }
        };
        // Retries reported just before the task ended are still counted.
        while let Ok(notice) = retry_rx.try_recv() {
            self.emit_retry(turn_no, notice);
        }
        live.done = true;
        self.host.telemetry.progress(live);
        match result {
            // Only the answering attempt's streamed tokens are part of its usage; a failed
            // attempt's stay charged.
            Ok(Ok(turn)) => {
                // As i64: OpenTelemetry has no unsigned integers, and `tracing-opentelemetry`
                // writes a u64 as a string.
                let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                span.record("gen_ai.usage.input_tokens", int(turn.usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", int(turn.usage.output_tokens));
                span.record("gen_ai.response.finish_reasons", turn.finish.as_str());
                Ok((turn, last.1))
            }
            Ok(Err(source)) => Err(AgentError::Brain { turn: turn_no, source }),
            Err(join) => Err(AgentError::BrainTask { turn: turn_no, message: join.to_string() }),
        }
    }

    /// The span of this turn's model request, named and attributed as the OpenTelemetry GenAI
    /// semantic conventions say (`chat {model}` is its OpenTelemetry name); the usage and the
    /// finish reason are recorded on it once the answer is in.
    fn request_span(&self, turn_no: u64) -> Result<tracing::Span, AgentError> {
        let brain_id = self.profile()?.brain().as_str();
        let (provider, model) = match self.host.config.brain(brain_id) {
            Some(spec) => (spec.kind().as_str(), spec.model()),
            None => ("unknown", brain_id),
        };
        Ok(tracing::info_span!(
            "model_request",
            otel.name = %format!("chat {model}"),
            otel.kind = "client",
            pid = %self.ctx.pid(),
            agent_id = %self.state.agent_id,
            profile = %self.state.profile,
            turn = turn_no,
            model = %model,
            gen_ai.operation.name = "chat",
            gen_ai.system = provider,
            gen_ai.provider.name = provider,
            gen_ai.request.model = %model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
        ))
    }

    fn emit_retry(&self, turn: u64, notice: RetryNotice) {
        self.emit(AgentEvent::ModelRetried {
            turn,
            attempt: notice.attempt,
            delay_ms: u64::try_from(notice.delay.as_millis()).unwrap_or(u64::MAX),
            retry_after: notice.retry_after,
            code: notice.code.to_string(),
            message: notice.message,
        });
    }

    /// Screens one call before it runs: `Some(error)` for a call that must not run
    /// (arguments that are not JSON), answered as an error the model can correct. Counts the
    /// call towards the malformed and repetition guards; `Err` when a guard is passed.
    pub(crate) fn screen_call(
        &mut self,
        call: &ToolCall,
        offered: &[crate::agent::brain::ToolSpec],
        malformed: &mut bool,
    ) -> Result<Option<ToolError>, AgentError> {
        let guards = *self.profile()?.guards();
        let signature = (call.name.clone(), call.arguments.to_string());
        if self.guards.last_call.as_ref() == Some(&signature) {
            self.guards.repeats += 1;
        } else {
            self.guards.last_call = Some(signature);
            self.guards.repeats = 1;
        }
        if self.guards.repeats > guards.repeated_calls {
            return Err(AgentError::RepeatedToolCall { tool: call.name.clone(), times: self.guards.repeats });
        }
        if !offered.iter().any(|t| t.name == call.name) {
            *malformed = true;
        }
        if let Value::String(raw) = &call.arguments {
            *malformed = true;
            let why = match serde_json::from_str::<Value>(raw) {
                Err(e) => format!("the arguments are not valid JSON ({e})"),
                Ok(_) => "the arguments are a JSON string, not an object".to_string(),
            };
            return Ok(Some(ToolError::new(
                "invalid_tool_arguments",
                format!(
                    "{why}; the call to {} did not run. Send the arguments as one JSON object matching the tool's parameters",
                    crate::tools::quote(&call.name)
                ),
            )));
        }
        Ok(None)
    }

    /// The warning appended to a call's result when it is the last identical call allowed.
    /// How many of `calls`, from the first, each differ from the call before them (the first
    /// from the last call screened): calls whose screening leaves the repetition count at one,
    /// so that it neither warns differently nor stops the agent whatever the order they are
    /// screened and answered in.
    pub(crate) fn unrepeated(&self, calls: &[ToolCall]) -> usize {
        let mut last = self.guards.last_call.clone();
        calls
            .iter()
            .take_while(|call| {
                let signature = (call.name.clone(), call.arguments.to_string());
                let differs = last.as_ref() != Some(&signature);
                last = Some(signature);
                differs
            })
            .count()
    }

    pub(crate) fn repetition_warning(&self) -> Option<String> {
        let guards = self.profile().ok()?.guards();
        (self.guards.repeats == guards.repeated_calls).then(|| {
            format!(
                "\n[runtime note] this is the {} identical call in a row (same tool, same arguments); \
                 the same call once more stops the agent. Change the arguments, do something else, or \
                 finish",
                ordinal(guards.repeated_calls)
            )
        })
    }

    /// After a turn's calls: counts a turn with a malformed call; `Err` once there are too
    /// many in a row.
    pub(crate) fn after_calls(&mut self, malformed: bool) -> Result<(), AgentError> {
        if !malformed {
            self.guards.malformed_turns = 0;
            return Ok(());
        }
        self.guards.malformed_turns += 1;
        let max = self.profile()?.guards().malformed_turns;
        if self.guards.malformed_turns >= max {
            return Err(AgentError::MalformedTurns { turns: self.guards.malformed_turns });
        }
        Ok(())
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
