//! A turn's consecutive `spawn_subagent` calls, or consecutive `send_message` calls, made
//! together so that they share one commit
//! ([`ProcessCtx::spawn_children`](crate::actors::runtime::ProcessCtx::spawn_children),
//! [`ProcessCtx::send_messages`](crate::actors::runtime::ProcessCtx::send_messages)), with
//! every answer, refusal and notice as when the calls run one by one.

use super::calls::{Dispatch, Executed, is_message_call};
use super::program::Agent;
use crate::actors::runtime::calls::{BatchRule, GroupedSend, ToolError};
use crate::agent::brain::ToolCall;
use crate::tools::agent::{SendMessageArgs, SpawnSubagentArgs};
use crate::tools::{AgentCall, AgentTool, ParsedCall, Tool};
use serde_json::Value;

/// The calls a group may hold: all of one tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grouped {
    Spawns,
    Sends,
}

impl Grouped {
    /// The group `call` may join, if any.
    fn of(call: &ToolCall) -> Option<Grouped> {
        match Tool::parse(&call.name)? {
            Tool::Agent(AgentTool::SpawnSubagent) => Some(Grouped::Spawns),
            Tool::Agent(AgentTool::SendMessage) => Some(Grouped::Sends),
            _ => None,
        }
    }
}

/// One call of the group that passed its own checks, waiting for the kernel's answer.
enum Asked {
    Spawn(SpawnSubagentArgs),
    Send(SendMessageArgs),
}

/// Where one call of the group stands before the kernel call: answered already, or waiting
/// (what it asked, and its place among the requests).
enum Prepared {
    Answered(Result<Value, Dispatch>),
    Asking(Asked, usize),
}

impl Agent {
    /// How many of `calls`, from the first, run as one group: consecutive calls of the same
    /// groupable tool (`spawn_subagent` or `send_message`), none the same as the call before
    /// it (so the repetition guard reads the same in any order), while the batch has not
    /// ended. Under two, none.
    pub(crate) fn group_run(&self, calls: &[ToolCall], batch: &BatchRule) -> usize {
        let Some(kind) = calls.first().and_then(Grouped::of) else { return 0 };
        if batch.is_ended() {
            return 0;
        }
        let same = calls.iter().take_while(|call| Grouped::of(call) == Some(kind)).count();
        let run = self.unrepeated(&calls[..same]);
        if run >= 2 { run } else { 0 }
    }

    /// Runs `calls`, a group of turn `turn` (each with its place in the turn), as
    /// [`Agent::execute`] runs each: in order, the interrupts shown before each call (none
    /// before a send, a message call), its effect key, the batch rule and its checks; then
    /// every request that passed them in one kernel call; then, in order, each call's answer
    /// and the notices shown after it. The calls do not depend on one another's answers, and
    /// the kernel answers each as it would have alone.
    pub(crate) async fn execute_group(
        &mut self,
        calls: &[(&ToolCall, String)],
        batch: &mut BatchRule,
        turn: u64,
    ) -> Vec<Executed> {
        let mut befores = Vec::with_capacity(calls.len());
        let mut prepared = Vec::with_capacity(calls.len());
        let mut launches = Vec::new();
        let mut sends = Vec::new();
        for (call, place) in calls {
            let before =
                if is_message_call(&call.name) { String::new() } else { self.show_interrupts().await };
            befores.push(before);
            let key = self.effect_key(turn, place, call);
            let ready = batch.admit(&call.name).map_err(Dispatch::Refused).and_then(|()| {
                match self.parse_call(call)? {
                    ParsedCall::Agent(AgentCall::SpawnSubagent(args)) => {
                        launches.push(self.spawn_request(&args, &key)?);
                        Ok(Prepared::Asking(Asked::Spawn(args), launches.len() - 1))
                    }
                    ParsedCall::Agent(AgentCall::SendMessage(args)) => {
                        let request = self.send_request(&args)?;
                        sends.push(GroupedSend { request, message_key: Some(key) });
                        Ok(Prepared::Asking(Asked::Send(args), sends.len() - 1))
                    }
                    other => {
                        let message = format!("{} parsed as another call: {other:?}", call.name);
                        Err(Dispatch::Refused(ToolError::new("internal", message)))
                    }
                }
            });
            prepared.push(ready.unwrap_or_else(|refused| Prepared::Answered(Err(refused))));
        }
        let mut launched = match launches.len() {
            0 => Vec::new(),
            asked => answers_of(self.ctx.spawn_children(launches).await, asked),
        };
        let mut sent = match sends.len() {
            0 => Vec::new(),
            asked => answers_of(self.ctx.send_messages(sends).await, asked),
        };
        let mut executed = Vec::with_capacity(calls.len());
        for (((call, _), before), prepared) in calls.iter().zip(befores).zip(prepared) {
            let outcome = match prepared {
                Prepared::Answered(outcome) => outcome,
                Prepared::Asking(Asked::Spawn(args), index) => answered(&mut launched, index)
                    .map(|launched| self.spawned_subagent(&args, turn, &launched)),
                Prepared::Asking(Asked::Send(args), index) => {
                    answered(&mut sent, index).map(|sent| self.sent_message(args, &sent))
                }
            };
            executed.push(self.executed(call, before, outcome, turn).await);
        }
        executed
    }
}

/// The kernel's answers to a group of `asked` requests, one each: a refusal of the whole
/// group answers every request with it.
fn answers_of<T: Clone>(
    group: Result<Vec<Result<T, ToolError>>, ToolError>,
    asked: usize,
) -> Vec<Option<Result<T, ToolError>>> {
    match group {
        Ok(answers) => answers.into_iter().map(Some).collect(),
        Err(refused) => vec![Some(Err(refused)); asked],
    }
}

/// The kernel's answer at `index`, taken.
fn answered<T>(answers: &mut [Option<Result<T, ToolError>>], index: usize) -> Result<T, Dispatch> {
    match answers.get_mut(index).and_then(Option::take) {
        Some(answer) => answer.map_err(Dispatch::Refused),
        None => Err(Dispatch::Refused(ToolError::new("internal", "the kernel gave no answer"))),
    }
}
