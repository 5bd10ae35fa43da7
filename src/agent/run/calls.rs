//! Executing one tool call of a turn. Every call's result, refusals included, becomes the
//! call's tool result in the window; a refusal never ends the turn.

use super::error::{AgentError, Refusal};
use super::launch::AgentLaunch;
use super::program::Agent;
use super::state::Subagent;
use super::tools::{AgentArgs, AgentTool, FinishArgs, SendArgs, TransitionArgs, WaitArgs, parse_args};
use super::turn::{Declarations, Succession};
use crate::actors::Pid;
use crate::actors::kernel::launch::LaunchRequest;
use crate::actors::kernel::mailbox::MessageKind;
use crate::actors::runtime::calls::SendRequest;
use crate::agent::brain::ToolCall;
use crate::agent::modules::ModuleTool;
use crate::agent::telemetry::AgentEvent;
use serde_json::{Value, json};

impl Agent {
    /// Runs `call` and returns the text recorded as its result: interrupt notices that arrived
    /// before it first, then its result, then the normal notices delivered with its answer.
    pub(crate) async fn execute(
        &mut self,
        call: &ToolCall,
        declared: &mut Declarations,
        turn: u64,
    ) -> String {
        let is_message_call = call.name == AgentTool::SendMessage.name();
        let before = if is_message_call { String::new() } else { self.show_interrupts().await };
        let result = match self.dispatch(call, declared, turn).await {
            Ok(value) => value,
            Err(Dispatch::Refused(refusal)) => {
                self.emit(AgentEvent::ToolRefused {
                    turn,
                    tool: call.name.clone(),
                    code: refusal.code.clone(),
                    message: refusal.message.clone(),
                });
                json!({"error": {"code": refusal.code, "message": refusal.message}})
            }
            Err(Dispatch::Failed(error)) => {
                json!({"error": {"code": "agent_error", "message": error.to_string()}})
            }
        };
        let after = self.show_notices().await;
        format!("{before}{result}{after}")
    }

    async fn dispatch(
        &mut self,
        call: &ToolCall,
        declared: &mut Declarations,
        turn: u64,
    ) -> Result<Value, Dispatch> {
        if let Some(tool) = ModuleTool::parse(&call.name) {
            return self.module_call(tool, &call.arguments).await;
        }
        let Some(tool) = AgentTool::parse(&call.name) else {
            return Err(
                Refusal::new("unknown_tool", format!("there is no tool named {:?}", call.name)).into()
            );
        };
        let in_machine = self.machine().is_some();
        if !tool.offered(self.profile()?, in_machine) {
            let why = match tool {
                AgentTool::Exec if in_machine => {
                    "you stand in a machine state: the next move belongs to the machine; use transition_state"
                }
                AgentTool::TransitionState if !in_machine => "you do not stand in a machine state",
                _ => "your profile does not enable it",
            };
            return Err(Refusal::new(
                "not_offered",
                format!("{} is not among your tools: {why}", tool.name()),
            )
            .into());
        }
        match tool {
            AgentTool::Finish => {
                let args: FinishArgs = parse_args(tool, &call.arguments)?;
                declared.declare_ending(args.result)?;
                Ok(json!({"ending": "declared", "note": "your session ends when this turn ends"}))
            }
            AgentTool::Exec => {
                let args: AgentArgs = parse_args(tool, &call.arguments)?;
                self.check_roster(&args.agent)?;
                declared.declare_succession(Succession::Exec {
                    target: args.agent.clone(),
                    prompt: args.prompt,
                })?;
                Ok(json!({"exec": args.agent, "note": "takes effect when this turn ends"}))
            }
            AgentTool::TransitionState => {
                let args: TransitionArgs = parse_args(tool, &call.arguments)?;
                self.check_transition(&args.state)?;
                declared.declare_succession(Succession::Transition {
                    state: args.state.clone(),
                    prompt: args.prompt,
                })?;
                Ok(json!({"transition_state": args.state, "note": "takes effect when this turn ends"}))
            }
            AgentTool::Fork => self.fork_call(call, declared, turn).await,
            AgentTool::SpawnSubagent => {
                let args: AgentArgs = parse_args(tool, &call.arguments)?;
                self.spawn_subagent(args, turn).await
            }
            AgentTool::WaitForSubagents => {
                let args: WaitArgs = parse_args(tool, &call.arguments)?;
                self.wait_for_subagents(args, declared).await
            }
            AgentTool::SendMessage => {
                let args: SendArgs = parse_args(tool, &call.arguments)?;
                self.send(args).await
            }
        }
    }

    /// Refuses an `agent` not on the roster, listing the ids that are.
    pub(crate) fn check_roster(&self, agent: &str) -> Result<(), Refusal> {
        let profile = self.profile().map_err(|e| Refusal::new("agent_error", e.to_string()))?;
        if profile.roster_target(agent).is_some() {
            return Ok(());
        }
        let ids: Vec<&str> = profile.roster().iter().map(|t| t.as_str()).collect();
        Err(Refusal::new(
            "not_on_roster",
            format!("{agent:?} is not on your roster; the ids on it are: [{}]", ids.join(", ")),
        ))
    }

    fn check_transition(&self, to: &str) -> Result<(), Refusal> {
        let Some(at) = self.machine() else {
            return Err(Refusal::new("not_in_machine", "you do not stand in a machine state"));
        };
        let machine = self.host.config.machine(&at.machine).ok_or_else(|| {
            Refusal::new("agent_error", format!("the machine {:?} is not in the configuration", at.machine))
        })?;
        if machine.allows(&at.state, to) {
            return Ok(());
        }
        let next: Vec<&str> = machine.next_states(&at.state).map(|s| s.as_str()).collect();
        Err(Refusal::new(
            "transition_not_allowed",
            format!(
                "the machine {} does not move from {} to {to:?}; from {} it may move to: [{}]",
                at.machine,
                at.state,
                at.state,
                next.join(", ")
            ),
        ))
    }

    async fn spawn_subagent(&mut self, args: AgentArgs, turn: u64) -> Result<Value, Dispatch> {
        self.check_roster(&args.agent)?;
        let launch = AgentLaunch {
            agent: args.agent.clone(),
            prompt: args.prompt.unwrap_or_default(),
            depth: self.state.depth + 1,
            parent_agent_id: Some(self.state.agent_id.clone()),
            parent_pid: Some(self.ctx.pid().to_string()),
            source: None,
            held: false,
            fork: None,
        };
        let request = LaunchRequest {
            goal: launch.to_goal(),
            inherit_capabilities: self.host.launch_capabilities(&launch.agent),
            ..Default::default()
        };
        let launched = self.ctx.spawn_child(request).await.map_err(Refusal::from)?;
        self.state.subagents.insert(
            launched.pid.to_string(),
            Subagent {
                via: "spawn".into(),
                agent: args.agent.clone(),
                turn,
                linked_memories: false,
                collected: false,
            },
        );
        Ok(json!({"id": launched.pid.to_string(), "agent": args.agent}))
    }

    async fn wait_for_subagents(
        &mut self,
        args: WaitArgs,
        declared: &Declarations,
    ) -> Result<Value, Dispatch> {
        let ids: Vec<String> = match args.ids {
            Some(ids) => ids,
            None => {
                self.state.subagents.iter().filter(|(_, s)| !s.collected).map(|(id, _)| id.clone()).collect()
            }
        };
        let mut pids = Vec::with_capacity(ids.len());
        for id in &ids {
            let pid: Pid = id
                .parse()
                .map_err(|_| Refusal::new("bad_arguments", format!("{id:?} is not a subagent id")))?;
            if declared.forked_this_turn(pid) {
                return Err(Refusal::new(
                    "fork_not_yet_child",
                    format!(
                        "{id} was forked in this turn: its id is real, but it becomes your child when the turn ends. Collect it on a later turn"
                    ),
                )
                .into());
            }
            if !self.state.subagents.contains_key(id) {
                return Err(
                    Refusal::new("not_a_subagent", format!("{id} is not one of your subagents")).into()
                );
            }
            pids.push(pid);
        }
        let mut results = Vec::with_capacity(pids.len());
        for pid in pids {
            let waited = self.ctx.wait_child(pid, true).await.map_err(Refusal::from)?;
            let result = self.collect_subagent(&waited).await;
            let mut entry = json!({
                "id": pid.to_string(),
                "status": waited.status.as_str(),
                "outcome": waited.outcome,
                "result": result,
            });
            if args.merge {
                entry["merged"] = match self.ctx.merge_child(pid, true).await {
                    Ok(merged) => {
                        json!({"merged_oids": merged.merged_oids, "skipped": merged.skipped_oids.len()})
                    }
                    Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
                };
            }
            results.push(entry);
        }
        Ok(json!({"subagents": results}))
    }

    async fn send(&mut self, args: SendArgs) -> Result<Value, Dispatch> {
        let to: Pid = if args.to == "parent" {
            self.launch
                .parent_pid
                .as_deref()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| Refusal::new("no_parent", "you have no parent agent to message"))?
        } else {
            args.to.parse().map_err(|_| {
                Refusal::new(
                    "bad_arguments",
                    format!("{:?} is neither \"parent\" nor a subagent id", args.to),
                )
            })?
        };
        let kind = if args.interrupt { MessageKind::Interrupt } else { MessageKind::Normal };
        let request = SendRequest {
            to,
            body: args.text.clone(),
            payload: None,
            channel: None,
            correlation_id: None,
            reply_to: None,
            kind,
        };
        let sent = self.ctx.send_message(request).await.map_err(Refusal::from)?;
        self.emit(AgentEvent::MessageSent { to_pid: to.to_string(), text: args.text });
        Ok(json!({"message_id": sent.message_id.to_string(), "to": to.to_string()}))
    }
}

/// Why a call produced no result: refused (the model reads why), or the agent failed.
pub(crate) enum Dispatch {
    Refused(Refusal),
    Failed(AgentError),
}

impl From<Refusal> for Dispatch {
    fn from(r: Refusal) -> Dispatch {
        Dispatch::Refused(r)
    }
}

impl From<AgentError> for Dispatch {
    fn from(e: AgentError) -> Dispatch {
        Dispatch::Failed(e)
    }
}
