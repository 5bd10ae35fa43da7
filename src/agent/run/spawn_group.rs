//! A turn's consecutive `spawn_subagent` calls, launched together so that they share one
//! commit ([`ProcessCtx::spawn_children`](crate::actors::runtime::ProcessCtx::spawn_children)),
//! with every answer, refusal and notice as when the calls run one by one.

use super::calls::{Dispatch, Executed};
use super::program::Agent;
use crate::actors::runtime::calls::{BatchRule, ToolError};
use crate::agent::brain::ToolCall;
use crate::tools::agent::SpawnSubagentArgs;
use crate::tools::{AgentCall, AgentTool, ParsedCall, Tool};
use serde_json::Value;

/// Where one call of the group stands before the launches: refused already, or waiting for
/// its launch (the args, and its place among the launches asked for).
enum Prepared {
    Answered(Result<Value, Dispatch>),
    Launching(SpawnSubagentArgs, usize),
}

/// Whether `call` may join a group of launches: a `spawn_subagent` call.
fn is_spawn(call: &ToolCall) -> bool {
    Tool::parse(&call.name) == Some(Tool::Agent(AgentTool::SpawnSubagent))
}

impl Agent {
    /// How many of `calls`, from the first, run as one group of launches: consecutive
    /// `spawn_subagent` calls, none the same as the call before it (so the repetition guard
    /// reads the same in any order), while the batch has not ended. Under two, none.
    pub(crate) fn spawn_run(&self, calls: &[ToolCall], batch: &BatchRule) -> usize {
        if batch.is_ended() {
            return 0;
        }
        let spawns = calls.iter().take_while(|call| is_spawn(call)).count();
        let run = self.unrepeated(&calls[..spawns]);
        if run >= 2 { run } else { 0 }
    }

    /// Runs `calls`, consecutive `spawn_subagent` calls of turn `turn` (each with its place
    /// in the turn), as [`Agent::execute`] runs each: in order, the interrupts shown before
    /// each call, its effect key, the batch rule and its checks; then every launch that passed
    /// them in one kernel call; then, in order, each call's answer and the notices shown after
    /// it. The calls do not depend on one another's answers, and the kernel answers each as
    /// it would have alone.
    pub(crate) async fn execute_spawns(
        &mut self,
        calls: &[(&ToolCall, String)],
        batch: &mut BatchRule,
        turn: u64,
    ) -> Vec<Executed> {
        let mut befores = Vec::with_capacity(calls.len());
        let mut prepared = Vec::with_capacity(calls.len());
        let mut requests = Vec::new();
        for (call, place) in calls {
            befores.push(self.show_interrupts().await);
            let key = self.effect_key(turn, place, call);
            let ready = batch.admit(&call.name).map_err(Dispatch::Refused).and_then(|()| {
                let args = match self.parse_call(call)? {
                    ParsedCall::Agent(AgentCall::SpawnSubagent(args)) => args,
                    other => {
                        let message = format!("{} parsed as another call: {other:?}", call.name);
                        return Err(Dispatch::Refused(ToolError::new("internal", message)));
                    }
                };
                Ok((self.spawn_request(&args, &key)?, args))
            });
            prepared.push(match ready {
                Ok((request, args)) => {
                    requests.push(request);
                    Prepared::Launching(args, requests.len() - 1)
                }
                Err(refused) => Prepared::Answered(Err(refused)),
            });
        }
        let launches = requests.len();
        let mut answers = match launches {
            0 => Vec::new(),
            _ => match self.ctx.spawn_children(requests).await {
                Ok(answers) => answers.into_iter().map(Some).collect(),
                Err(refused) => vec![Some(Err(refused)); launches],
            },
        };
        let mut executed = Vec::with_capacity(calls.len());
        for (((call, _), before), prepared) in calls.iter().zip(befores).zip(prepared) {
            let outcome = match prepared {
                Prepared::Answered(outcome) => outcome,
                Prepared::Launching(args, index) => match answers.get_mut(index).and_then(Option::take) {
                    Some(Ok(launched)) => Ok(self.spawned_subagent(&args, turn, &launched)),
                    Some(Err(refused)) => Err(Dispatch::Refused(refused)),
                    None => Err(Dispatch::Refused(ToolError::new("internal", "the kernel gave no answer"))),
                },
            };
            executed.push(self.executed(call, before, outcome, turn).await);
        }
        executed
    }
}
