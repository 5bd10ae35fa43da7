//! Responses-as-code in the turn loop: `run_code` and `run_program` run a program
//! ([`crate::agent::code`]) whose tool calls are calls of the turn.
//!
//! Each call the program makes goes through [`Agent::execute`], the path a tool call of the
//! turn takes: the registry lookup, the profile's offer, the typed parse, the same refusals,
//! the same idempotency key scheme (the `n`-th call of the program at index `i` is at place
//! `i.n`), and the turn's one [`Declarations`] and batch rule. So turn finality holds inside a
//! program exactly as across a turn's calls: a fork made in the program cannot be waited on in
//! it, the first exec or `transition_state` stands, an ending beats both, forks are additive,
//! and everything is applied after the program ends, when the turn does.
//!
//! A program's failure (a syntax error, an uncaught exception, a limit) is the call's result,
//! naming the line; it never fails the agent.

use super::calls::{Dispatch, Executed};
use super::error::AgentError;
use super::program::{Agent, call_record};
use super::turn::Declarations;
use crate::actors::runtime::calls::{BatchRule, ToolError};
use crate::agent::brain::ToolCall;
use crate::agent::code::{self, EngineEvent, ProgramError, ProgramOutcome};
use crate::agent::config::Capability;
use crate::agent::limits::CODE_SOURCE_BYTES_MAX;
use crate::agent::modules::ModuleError;
use crate::agent::telemetry::CallRecord;
use crate::tools::{AgentTool, INVALID_ARGUMENTS, NOT_OFFERED};
use serde_json::{Map, Value, json};

/// The stable code of a call whose program failed.
pub const PROGRAM_FAILED: &str = "program_failed";

/// A program to run: its source, and the library id it was saved under if it was.
pub(crate) struct Source {
    pub(crate) code: String,
    pub(crate) program: Option<String>,
}

/// What a call that ran a program came to.
pub(crate) struct ProgramRan {
    /// The answer for the turn's event: the report, or `program_failed` with the sentence.
    pub(crate) answer: Result<Value, ToolError>,
    /// The report the window records: the value or the error with its line, the output, and
    /// each call the program made with its outcome.
    pub(crate) report: Value,
    /// The calls the program made, as the event records them.
    pub(crate) calls: Vec<CallRecord>,
}

impl Agent {
    /// The source of the saved program `id`.
    pub(crate) fn saved_program(&self, id: &str) -> Result<Source, Dispatch> {
        let Some(library) = self.state.modules.library.as_ref() else {
            let tool = AgentTool::RunProgram.name();
            return Err(ModuleError::NotHeld { tool, capability: Capability::ProgramLibrary }.into());
        };
        let program = library.fetch(id).ok_or_else(|| ModuleError::UnknownProgram { id: id.to_string() })?;
        Ok(Source { code: program.source.clone(), program: Some(program.id.clone()) })
    }

    /// Runs `source` with `args` as the call at `place` of `turn`, answering each of its tool
    /// calls through [`Agent::execute`] with the turn's declarations and batch rule.
    pub(crate) async fn run_program(
        &mut self,
        source: Source,
        args: Value,
        declared: &mut Declarations,
        batch: &mut BatchRule,
        turn: u64,
        place: &str,
    ) -> Result<Value, Dispatch> {
        if self.in_program {
            return Err(ToolError::new(
                "nested_program",
                "a program cannot run another program; fetch its source with fetch_program instead",
            )
            .into());
        }
        if source.code.len() > CODE_SOURCE_BYTES_MAX {
            return Err(ToolError::new(
                INVALID_ARGUMENTS,
                format!(
                    "the program is {} bytes; a program may have at most {CODE_SOURCE_BYTES_MAX}, so split it, \
                     or keep its data in an object and read it from there",
                    source.code.len()
                ),
            )
            .into());
        }
        let profile = self.profile()?;
        let Some(limits) = profile.capabilities().code().copied() else {
            return Err(ToolError::new(NOT_OFFERED, "your profile does not enable code").into());
        };
        let tools = self.program_tools()?;
        let mut running = match code::start(source.code, args, tools, limits) {
            Ok(running) => running,
            Err(error) => {
                let outcome = ProgramOutcome { result: Err(error), output: String::new(), fuel: 0, calls: 0 };
                return Err(Dispatch::Program(report(source.program, outcome, Vec::new(), Vec::new())));
            }
        };
        self.in_program = true;
        let mut calls = Vec::new();
        let mut notices = Vec::new();
        let outcome = loop {
            match running.next().await {
                EngineEvent::Done(outcome) => break outcome,
                EngineEvent::Call(request) => {
                    let at = format!("{place}.{}", calls.len());
                    let call = ToolCall {
                        id: at.clone(),
                        name: request.name.clone(),
                        arguments: request.arguments.clone(),
                    };
                    let executed: Executed = Box::pin(self.execute(&call, declared, batch, turn, &at)).await;
                    notices.extend([executed.before, executed.after].into_iter().filter(|n| !n.is_empty()));
                    request.answer(executed.answer.clone());
                    calls.push(call_record(&call, executed.answer, executed.calls));
                }
            }
        };
        self.in_program = false;
        Err(Dispatch::Program(report(source.program, outcome, calls, notices)))
    }

    /// The functions a program is given: the tools offered now. `run_code` and `run_program`
    /// are among them so that a program calling one is refused with `nested_program`, which
    /// says what to do instead, rather than failing on an undefined name.
    fn program_tools(&mut self) -> Result<Vec<String>, AgentError> {
        Ok(self.request_parts()?.tools.iter().map(|t| t.name.clone()).collect())
    }
}

/// The report of a program's run, and the answer the turn's event records.
fn report(
    program: Option<String>,
    outcome: ProgramOutcome,
    calls: Vec<CallRecord>,
    notices: Vec<String>,
) -> ProgramRan {
    let mut report = Map::new();
    if let Some(id) = program {
        report.insert("program".into(), Value::String(id));
    }
    let answer = match outcome.result {
        Ok(value) => {
            report.insert("result".into(), value);
            Ok(())
        }
        Err(error) => {
            report.insert("error".into(), error_report(&error));
            Err(ToolError::new(PROGRAM_FAILED, error.sentence()))
        }
    };
    if !outcome.output.is_empty() {
        report.insert("output".into(), Value::String(outcome.output));
    }
    let made: Vec<Value> = calls.iter().map(call_summary).collect();
    report.insert("calls".into(), Value::Array(made));
    if !notices.is_empty() {
        report.insert("notices".into(), json!(notices));
    }
    let report = Value::Object(report);
    let answer = answer.map(|()| report.clone());
    ProgramRan { answer, report, calls }
}

fn error_report(error: &ProgramError) -> Value {
    let mut value = json!({"code": PROGRAM_FAILED, "kind": error.kind.as_str(), "message": error.message});
    if let Some(line) = error.line {
        value["line"] = json!(line);
    }
    if let Some(code) = &error.tool_code {
        value["tool_code"] = json!(code);
    }
    value
}

/// One call of a program as its report lists it: the tool, and its refusal if it was refused
/// (the program already has every value).
fn call_summary(record: &CallRecord) -> Value {
    match &record.error {
        None => json!({"tool": record.tool, "ok": true}),
        Some(error) => json!({"tool": record.tool, "error": {"code": error.code, "message": error.message}}),
    }
}
