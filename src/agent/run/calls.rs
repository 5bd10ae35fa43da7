//! Executing one tool call of a turn. Every call goes through the registry
//! ([`crate::tools::registry`]): the name is looked up, the profile's offer checked, the
//! arguments parsed into a typed call, and the call run — a kernel call as this process, an
//! agent call or a module call here. Every call's result, refusals included, becomes the
//! call's tool result in the window; a refusal never ends the turn. The batch rule holds
//! across the turn's calls: once a blocking wait suspended the process, the later calls of
//! the turn answer `batch_ended`.

use super::code::{ProgramRan, Source};
use super::cost::Read;
use super::error::AgentError;
use super::launch::AgentLaunch;
use super::program::Agent;
use super::state::Subagent;
use super::tools::{offered, why_not_offered};
use super::turn::{Declarations, Succession};
use crate::actors::Pid;
use crate::actors::kernel::launch::LaunchRequest;
use crate::actors::kernel::mailbox::MessageKind;
use crate::actors::runtime::calls::{
    BatchRule, Call, Launched, SendRequest, SentMessage, ToolError, WaitResult,
};
use crate::agent::brain::ToolCall;
use crate::agent::telemetry::{AgentEvent, CallRecord};
use crate::tools::agent::{SendMessageArgs, SpawnSubagentArgs, WaitForSubagentsArgs};
use crate::tools::{
    AgentCall, AgentTool, INVALID_ARGUMENTS, NOT_OFFERED, ParsedCall, Tool, ToolName, UNKNOWN_TOOL, quote,
};
use serde_json::{Value, json};

/// What running one call of a turn came to.
pub(crate) struct Executed {
    /// Interrupt notices shown before the call's result.
    pub(crate) before: String,
    /// The answer: the JSON the tool returned, or the error the model reads.
    pub(crate) answer: Result<Value, ToolError>,
    /// The result as the window records it (the answer's JSON, or a program's report).
    pub(crate) result: Value,
    /// Normal notices shown after the call's result.
    pub(crate) after: String,
    /// The calls a program made, for the event's record of this call.
    pub(crate) calls: Vec<CallRecord>,
}

impl Executed {
    /// The text recorded as the call's result in the window.
    pub(crate) fn text(&self) -> String {
        format!("{}{}{}", self.before, self.result, self.after)
    }
}

impl Agent {
    /// Runs `call`, the call at `place` of turn `turn` (its index in the turn, or
    /// `index.n` for the `n`-th call of the program that call ran), and returns what it came
    /// to: the notices shown around it, its answer for the turn's event, and the result the
    /// window records. A call after a blocking wait that suspended this process in the same
    /// turn does not run and answers `batch_ended`.
    pub(crate) async fn execute(
        &mut self,
        call: &ToolCall,
        declared: &mut Declarations,
        batch: &mut BatchRule,
        turn: u64,
        place: &str,
    ) -> Executed {
        let before = if is_message_call(&call.name) { String::new() } else { self.show_interrupts().await };
        let key = self.effect_key(turn, place, call);
        let outcome = match batch.admit(&call.name) {
            Ok(()) => self.dispatch(call, declared, batch, turn, &key, place).await,
            Err(refusal) => Err(Dispatch::Refused(refusal)),
        };
        self.executed(call, before, outcome, turn).await
    }

    /// What a call came to, from what running it gave: a refusal is emitted as
    /// `tool_refused`, a program's report is what the window records, and the normal notices
    /// delivered with the answer are shown after it.
    pub(crate) async fn executed(
        &mut self,
        call: &ToolCall,
        before: String,
        outcome: Result<Value, Dispatch>,
        turn: u64,
    ) -> Executed {
        let mut calls = Vec::new();
        let (answer, report) = match outcome {
            Ok(value) => (Ok(value), None),
            Err(Dispatch::Refused(refusal)) => {
                self.emit(AgentEvent::ToolRefused {
                    turn,
                    tool: call.name.clone(),
                    code: refusal.code.clone(),
                    message: refusal.message.clone(),
                });
                (Err(refusal), None)
            }
            Err(Dispatch::Failed(error)) => (Err(ToolError::new("agent_error", error.to_string())), None),
            Err(Dispatch::Program(ran)) => {
                calls = ran.calls;
                (ran.answer, Some(ran.report))
            }
        };
        let result = match (&answer, report) {
            (_, Some(report)) => report,
            (Ok(value), None) => value.clone(),
            (Err(error), None) => crate::tools::error_json(error),
        };
        let after = self.show_notices().await;
        Executed { before, answer, result, after, calls }
    }

    /// The idempotency key of the call at `place` of `turn`: the same call (name and
    /// arguments) at the same place of the same turn of this incarnation is the same effect,
    /// whatever id the model gave it.
    /// A turn run again after a crash (from the last checkpointed turn) that makes a launch or
    /// a send it had already made gets the first one's answer, and no second child or message.
    pub(crate) fn effect_key(&self, turn: u64, place: &str, call: &ToolCall) -> String {
        let mut hasher = blake3::Hasher::new();
        for part in [self.state.agent_id.as_str(), &turn.to_string(), place, &call.name] {
            hasher.update(part.as_bytes());
            hasher.update(&[0]);
        }
        hasher.update(call.arguments.to_string().as_bytes());
        format!("agent-call:{}", &hasher.finalize().to_hex()[..32])
    }

    async fn dispatch(
        &mut self,
        call: &ToolCall,
        declared: &mut Declarations,
        batch: &mut BatchRule,
        turn: u64,
        key: &str,
        place: &str,
    ) -> Result<Value, Dispatch> {
        match self.parse_call(call)? {
            ParsedCall::Kernel(kernel) => self.kernel_call(*kernel, batch, key).await,
            ParsedCall::Module(module) => self.module_call(module).await,
            ParsedCall::Agent(call) => self.agent_call(call, declared, batch, turn, key, place).await,
        }
    }

    /// A call's tool, checked against what the profile offers, with its arguments parsed.
    pub(crate) fn parse_call(&self, call: &ToolCall) -> Result<ParsedCall, Dispatch> {
        let Some(tool) = Tool::parse(&call.name) else {
            return Err(ToolError::new(
                UNKNOWN_TOOL,
                format!(
                    "there is no tool named {}; your tools are listed in your system prompt",
                    quote(&call.name)
                ),
            )
            .into());
        };
        let in_machine = self.machine().is_some();
        if !offered(tool, self.profile()?, in_machine) {
            return Err(ToolError::new(
                NOT_OFFERED,
                format!("{tool} is not among your tools: {}", why_not_offered(tool, in_machine)),
            )
            .into());
        }
        Ok(tool.parse_args(call.arguments.clone())?)
    }

    async fn agent_call(
        &mut self,
        call: AgentCall,
        declared: &mut Declarations,
        batch: &mut BatchRule,
        turn: u64,
        key: &str,
        place: &str,
    ) -> Result<Value, Dispatch> {
        match call {
            AgentCall::Finish(args) => {
                declared.declare_ending(args.result)?;
                Ok(json!({"ending": "declared", "note": "your session ends when this turn ends"}))
            }
            AgentCall::Exec(args) => {
                self.check_roster(&args.agent)?;
                if let Some(external) = self.host.config.external(&args.agent) {
                    return Err(ToolError::new(
                        "exec_external",
                        format!(
                            "{} runs a {} session, which cannot take over this conversation; start it \
                             with spawn_subagent instead",
                            quote(&args.agent),
                            external.runtime().product()
                        ),
                    )
                    .into());
                }
                declared.declare_succession(Succession::Exec {
                    target: args.agent.clone(),
                    prompt: args.prompt,
                })?;
                Ok(json!({"exec": args.agent, "note": "takes effect when this turn ends"}))
            }
            AgentCall::TransitionState(args) => {
                self.check_transition(&args.state)?;
                declared.declare_succession(Succession::Transition {
                    state: args.state.clone(),
                    prompt: args.prompt,
                })?;
                Ok(json!({"transition_state": args.state, "note": "takes effect when this turn ends"}))
            }
            AgentCall::Fork(args) => self.fork_call(args, declared, turn, key).await,
            AgentCall::SpawnSubagent(args) => self.spawn_subagent(args, turn, key).await,
            AgentCall::WaitForSubagents(args) => self.wait_for_subagents(args, declared).await,
            AgentCall::SendMessage(args) => self.send(args, key).await,
            AgentCall::RunCode(args) => {
                let source = Source { code: args.code, program: None };
                self.run_program(source, Value::Null, declared, batch, turn, place).await
            }
            AgentCall::RunProgram(args) => {
                let source = self.saved_program(&args.id)?;
                self.run_program(source, args.args.unwrap_or(Value::Null), declared, batch, turn, place).await
            }
            AgentCall::ArchiveThread(args) => self.archive_call(args, declared, turn),
            AgentCall::ReadArchive(args) => self.read_archive(args.turn),
        }
    }

    /// A kernel tool of the process skill, made as this process. A launch runs the profile's
    /// child agent (or another roster id named as `image`), with the authority that agent
    /// needs; the batch rule observes the answer.
    /// A launch or send without its own key is made with the call's effect key.
    async fn kernel_call(&mut self, call: Call, batch: &mut BatchRule, key: &str) -> Result<Value, Dispatch> {
        let keyed = |launch: &mut LaunchRequest| {
            launch.launch_key.get_or_insert_with(|| key.to_string());
        };
        let call = match call {
            Call::Spawn(launch) => {
                let mut launch = self.child_launch(launch)?;
                keyed(&mut launch);
                Call::Spawn(launch)
            }
            Call::Fork(mut fork) => {
                fork.launch = self.child_launch(fork.launch)?;
                keyed(&mut fork.launch);
                Call::Fork(fork)
            }
            Call::Send(request) => {
                Call::SendKeyed { message_key: key.to_string(), request: Box::new(request) }
            }
            other => other,
        };
        let result = self.ctx.call(call).await;
        batch.observe(&result);
        Ok(crate::tools::result_json(&Ok(result?)))
    }

    /// A launch of the process skill as an agent launch: the child runs `image` if it names
    /// the profile's child agent or a roster id, the child agent if `image` is left out; its
    /// goal becomes the child agent's prompt.
    fn child_launch(&self, mut launch: LaunchRequest) -> Result<LaunchRequest, Dispatch> {
        let profile = self.profile()?;
        let Some(skill) = profile.capabilities().child_processes() else {
            return Err(ToolError::new(NOT_OFFERED, "your profile does not enable child_processes").into());
        };
        let agent = match launch.image.take() {
            None => skill.child_agent().to_string(),
            Some(image) if image.as_str() == skill.child_agent() => image.as_str().to_string(),
            Some(image) if profile.roster_target(image.as_str()).is_some() => image.as_str().to_string(),
            Some(image) => {
                let mut allowed = vec![skill.child_agent().to_string()];
                allowed.extend(profile.roster().iter().map(|t| t.as_str().to_string()));
                return Err(ToolError::new(
                    "image_not_offered",
                    format!(
                        "image {} is not one your children may run; the images are the agents [{}]",
                        quote(image.as_str()),
                        allowed.join(", ")
                    ),
                )
                .into());
            }
        };
        launch.goal = self.launch_below(agent.clone(), std::mem::take(&mut launch.goal)).to_goal();
        launch.image = Some(self.host.image_for(&agent));
        for needed in self.host.launch_capabilities(&agent) {
            if !launch.inherit_capabilities.iter().any(|c| c.resource == needed.resource) {
                launch.inherit_capabilities.push(needed);
            }
        }
        let (restart, supervision) = self.host.restart_of(&agent);
        if launch.restart == Default::default() {
            launch.restart = restart;
        }
        launch.supervision = launch.supervision.or(supervision);
        Ok(launch)
    }

    /// The launch of `agent` with `prompt` one level below this agent, as its child.
    pub(crate) fn launch_below(&self, agent: String, prompt: String) -> AgentLaunch {
        AgentLaunch {
            agent,
            prompt,
            depth: self.state.depth + 1,
            parent_agent_id: Some(self.state.agent_id.clone()),
            parent_pid: Some(self.ctx.pid().to_string()),
            source: None,
            held: false,
            fork: None,
        }
    }

    /// Refuses an `agent` not on the roster, listing the ids that are.
    pub(crate) fn check_roster(&self, agent: &str) -> Result<(), ToolError> {
        let profile = self.profile().map_err(|e| ToolError::new("agent_error", e.to_string()))?;
        if profile.roster_target(agent).is_some() {
            return Ok(());
        }
        let ids: Vec<&str> = profile.roster().iter().map(|t| t.as_str()).collect();
        Err(ToolError::new(
            "not_on_roster",
            format!("{} is not on your roster; the ids on it are: [{}]", quote(agent), ids.join(", ")),
        ))
    }

    fn check_transition(&self, to: &str) -> Result<(), ToolError> {
        let Some(at) = self.machine() else {
            return Err(ToolError::new("not_in_machine", "you do not stand in a machine state"));
        };
        let machine = self.host.config.machine(&at.machine).ok_or_else(|| {
            ToolError::new("agent_error", format!("the machine {:?} is not in the configuration", at.machine))
        })?;
        if machine.allows(&at.state, to) {
            return Ok(());
        }
        let next: Vec<&str> = machine.next_states(&at.state).map(|s| s.as_str()).collect();
        Err(ToolError::new(
            "transition_not_allowed",
            format!(
                "the machine {} does not move from {} to {}; from {} it may move to: [{}]",
                at.machine,
                at.state,
                quote(to),
                at.state,
                next.join(", ")
            ),
        ))
    }

    async fn spawn_subagent(
        &mut self,
        args: SpawnSubagentArgs,
        turn: u64,
        key: &str,
    ) -> Result<Value, Dispatch> {
        let request = self.spawn_request(&args, key)?;
        let launched = self.ctx.spawn_child(request).await?;
        Ok(self.spawned_subagent(&args, turn, &launched))
    }

    /// The launch a `spawn_subagent` call asks the kernel for, once its agent and prompt are
    /// checked.
    pub(crate) fn spawn_request(
        &self,
        args: &SpawnSubagentArgs,
        key: &str,
    ) -> Result<LaunchRequest, Dispatch> {
        self.check_roster(&args.agent)?;
        let launch = self.launch_below(args.agent.clone(), args.prompt.clone());
        let goal =
            launch.checked_goal().map_err(|m| ToolError::new(INVALID_ARGUMENTS, format!("prompt: {m}")))?;
        let (restart, supervision) = self.host.restart_of(&launch.agent);
        Ok(LaunchRequest {
            goal,
            image: Some(self.host.image_for(&launch.agent)),
            inherit_capabilities: self.host.launch_capabilities(&launch.agent),
            restart,
            supervision,
            launch_key: Some(key.to_string()),
            ..Default::default()
        })
    }

    /// Records a subagent the kernel launched; the call's answer.
    pub(crate) fn spawned_subagent(
        &mut self,
        args: &SpawnSubagentArgs,
        turn: u64,
        launched: &Launched,
    ) -> Value {
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
        json!({"id": launched.pid.to_string(), "agent": args.agent})
    }

    async fn wait_for_subagents(
        &mut self,
        args: WaitForSubagentsArgs,
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
            let pid: Pid = id.parse().map_err(|_| {
                ToolError::new(crate::tools::INVALID_ARGUMENTS, format!("{} is not a subagent id", quote(id)))
            })?;
            if declared.forked_this_turn(pid) {
                return Err(ToolError::new(
                    "fork_not_yet_child",
                    format!(
                        "{id} was forked in this turn: its id is real, but it becomes your child when the turn ends. Collect it on a later turn"
                    ),
                )
                .into());
            }
            if !self.state.subagents.contains_key(id) {
                return Err(
                    ToolError::new("not_a_subagent", format!("{id} is not one of your subagents")).into()
                );
            }
            pids.push(pid);
        }
        let waited = self.wait_all(&pids).await?;
        let mut reads = Vec::with_capacity(waited.len());
        for w in &waited {
            reads.push(self.read_result(w).await.map_err(Dispatch::Failed)?);
        }
        // A merge releases the result: the ones about to be merged are kept first, in one
        // commit, and none is merged if they cannot be.
        let kept = if args.merge {
            let granted: Vec<(Pid, &Read)> =
                waited.iter().zip(&reads).filter_map(|(w, r)| r.as_ref().map(|r| (w.child_pid, r))).collect();
            self.keep_results(&granted).await
        } else {
            Ok(())
        };
        let mut results = Vec::with_capacity(waited.len());
        for (waited, read) in waited.into_iter().zip(reads) {
            let pid = waited.child_pid;
            let result = self.collect_read(pid, read);
            let mut entry = json!({
                "id": pid.to_string(),
                "status": waited.status.as_str(),
                "outcome": waited.outcome,
                "result": result,
            });
            if args.merge {
                entry["merged"] = match &kept {
                    Err(e) => json!({"error": {
                        "code": "result_not_kept",
                        "message": format!("not merged: a merge releases the result, and it could not be kept first: {e}"),
                    }}),
                    Ok(()) => match self.ctx.merge_child(pid, true).await {
                        Ok(merged) => {
                            json!({"merged_oids": merged.merged_oids, "skipped": merged.skipped_oids.len()})
                        }
                        Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
                    },
                };
            }
            results.push(entry);
        }
        Ok(json!({"subagents": results}))
    }

    /// Waits for every child of `pids`, answered in their order: the children that have ended
    /// are collected together (one commit for all their result handles), then a blocking wait
    /// on the first still running, and so again until none is left. Each child's wait is
    /// charged once, as a blocking wait on each in turn would be.
    async fn wait_all(&self, pids: &[Pid]) -> Result<Vec<WaitResult>, ToolError> {
        let mut waited: Vec<Option<WaitResult>> = vec![None; pids.len()];
        loop {
            let pending: Vec<usize> = (0..pids.len()).filter(|i| waited[*i].is_none()).collect();
            let Some(&first) = pending.first() else { break };
            let answers = self.ctx.wait_children(pending.iter().map(|i| pids[*i]).collect()).await?;
            for (index, answer) in pending.iter().zip(answers) {
                let answer = answer?;
                if answer.ready {
                    waited[*index] = Some(answer);
                }
            }
            if waited[first].is_none() {
                waited[first] = Some(self.ctx.wait_child(pids[first], true).await?);
            }
        }
        Ok(waited.into_iter().flatten().collect())
    }

    async fn send(&mut self, args: SendMessageArgs, key: &str) -> Result<Value, Dispatch> {
        let request = self.send_request(&args)?;
        let sent = self.ctx.send_message_keyed(request, key).await?;
        Ok(self.sent_message(args, &sent))
    }

    /// The kernel's request for `send_message(args)`: `to` is `parent` or a subagent's id.
    pub(crate) fn send_request(&self, args: &SendMessageArgs) -> Result<SendRequest, ToolError> {
        let to: Pid = if args.to == "parent" {
            self.launch
                .parent_pid
                .as_deref()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| ToolError::new("no_parent", "you have no parent agent to message"))?
        } else {
            args.to.parse().map_err(|_| {
                ToolError::new(
                    crate::tools::INVALID_ARGUMENTS,
                    format!("{} is neither \"parent\" nor a subagent id", quote(&args.to)),
                )
            })?
        };
        let kind = if args.interrupt { MessageKind::Interrupt } else { MessageKind::Normal };
        Ok(SendRequest { kind, ..SendRequest::new(to, args.text.clone()) })
    }

    /// What a sent `send_message(args)` answers, after its event.
    pub(crate) fn sent_message(&mut self, args: SendMessageArgs, sent: &SentMessage) -> Value {
        self.emit(AgentEvent::MessageSent { to_pid: sent.to.to_string(), text: args.text });
        json!({"message_id": sent.message_id.to_string(), "to": sent.to.to_string()})
    }
}

/// Why a call produced no plain result: refused (the model reads why), the agent failed, or
/// the call ran a program, whose report is the result the window records.
pub(crate) enum Dispatch {
    Refused(ToolError),
    Failed(AgentError),
    Program(ProgramRan),
}

impl From<ToolError> for Dispatch {
    fn from(r: ToolError) -> Dispatch {
        Dispatch::Refused(r)
    }
}

impl From<crate::agent::modules::ModuleError> for Dispatch {
    fn from(e: crate::agent::modules::ModuleError) -> Dispatch {
        Dispatch::Refused(e.into())
    }
}

impl From<AgentError> for Dispatch {
    fn from(e: AgentError) -> Dispatch {
        Dispatch::Failed(e)
    }
}

/// Whether `name` is a message call, before which interrupts are not shown (they are noticed
/// before the next non-message call).
pub(crate) fn is_message_call(name: &str) -> bool {
    name == AgentTool::SendMessage.name()
        || [ToolName::Send, ToolName::Read, ToolName::Receive].iter().any(|t| t.as_str() == name)
}
