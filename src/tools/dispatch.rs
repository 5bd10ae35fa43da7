//! Parsing tool calls into typed [`Call`]s and dispatching them, JSON in and JSON out.

use super::args::{ExitArgs, ListArgs, SignalArgs, SpawnArgs, WaitArgs, invalid};
use super::batch::BatchCall;
use super::fork_args::ForkArgs;
use super::message_args::{ReadArgs, ReceiveArgs, SendArgs};
use super::object_args::{
    CreateObjectArgs, DelegateObjectArgs, ListObjectsArgs, LoadSkillsArgs, MergeArgs, ObjectRefArgs,
    WriteObjectArgs,
};
use super::registry::{ParsedCall, Tool};
use super::{BATCH_TOO_LARGE, INTERNAL, INVALID_ARGUMENTS, NOT_OFFERED, ToolName};
use crate::actors::Pid;
use crate::actors::limits::BATCH_CALLS_MAX;
use crate::actors::runtime::calls::BatchRule;
use crate::actors::runtime::calls::CallReply;
use crate::actors::runtime::calls::{Call, CallOk, ToolError};
use crate::actors::runtime::{ProcessContext, Runtime};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// Parses one kernel tool call into a typed [`Call`], through the registry
/// ([`super::registry::parse`]).
///
/// Refuses an unknown tool with `unknown_tool` (the message lists the tools), an agent or
/// module call with `not_offered` (only an agent makes those), and malformed arguments with
/// `invalid_arguments` whose message names the field (`child_pid: invalid pid id "x":
/// expected a UUID`, `resource_budget.tokens: invalid type: …`). Empty or unknown rights keep
/// the kernel's codes (`empty_rights`, `unknown_right`). An object tool given both or neither
/// of `oid` and `name` is `invalid_arguments` too. `null` arguments are read as `{}`.
pub fn parse_call(name: &str, args: Value) -> Result<Call, ToolError> {
    if let Some(tool @ (Tool::Agent(_) | Tool::Module(_))) = Tool::parse(name) {
        return Err(ToolError::new(
            NOT_OFFERED,
            format!(
                "{tool} is an agent's call, offered only to agent processes; the process tools are {}",
                kernel_names()
            ),
        ));
    }
    match super::registry::parse(name, args)? {
        ParsedCall::Kernel(call) => Ok(*call),
        ParsedCall::Agent(_) | ParsedCall::Module(_) => {
            Err(ToolError::new(INTERNAL, format!("{name} parsed as an agent's call")))
        }
    }
}

/// The kernel tools' names, for messages.
pub(crate) fn kernel_names() -> String {
    ToolName::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}

/// The typed kernel [`Call`] of a kernel tool's arguments object.
pub(crate) fn kernel_call(tool: ToolName, args: Value) -> Result<Call, ToolError> {
    match tool {
        ToolName::Spawn => from_args::<SpawnArgs>(args)?.into_call(),
        ToolName::Fork => from_args::<ForkArgs>(args)?.into_call(),
        ToolName::List => from_args::<ListArgs>(args)?.into_call(),
        ToolName::Wait => from_args::<WaitArgs>(args)?.into_call(),
        ToolName::Signal => from_args::<SignalArgs>(args)?.into_call(),
        ToolName::Merge => from_args::<MergeArgs>(args)?.into_call(),
        ToolName::Exit => from_args::<ExitArgs>(args)?.into_call(),
        ToolName::CreateObject => from_args::<CreateObjectArgs>(args)?.into_call(),
        ToolName::ReadObject => from_args::<ObjectRefArgs>(args)?.into_read_call(),
        ToolName::WriteObject => from_args::<WriteObjectArgs>(args)?.into_call(),
        ToolName::ListObjects => from_args::<ListObjectsArgs>(args)?.into_call(),
        ToolName::CheckpointObject => from_args::<ObjectRefArgs>(args)?.into_checkpoint_call(),
        ToolName::DelegateObject => from_args::<DelegateObjectArgs>(args)?.into_call(),
        ToolName::LoadSkills => from_args::<LoadSkillsArgs>(args)?.into_call(),
        ToolName::Send => from_args::<SendArgs>(args)?.into_call(),
        ToolName::Read => from_args::<ReadArgs>(args)?.into_call(),
        ToolName::Receive => from_args::<ReceiveArgs>(args)?.into_call(),
    }
}

/// A tool's arguments as an object: `null` reads as `{}`; anything else that is not an object
/// is refused, naming the tool.
pub(crate) fn args_object(tool: &str, args: Value) -> Result<Value, ToolError> {
    match args {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(map) => Ok(Value::Object(map)),
        other => Err(invalid(
            "arguments",
            format!("expected a JSON object of {tool}'s parameters, found {}", json_kind(&other)),
        )),
    }
}

/// Reads an arguments object into its typed struct: the one place tool arguments are
/// deserialized. The refusal is `invalid_arguments` and names the field at fault.
pub(crate) fn from_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize::<_, T>(args).map_err(|e| {
        let path = e.path().to_string();
        // The deserializer's message may quote the value it could not read, whole.
        let detail = crate::actors::text::excerpt(
            &e.into_inner().to_string(),
            crate::actors::limits::ERROR_DETAIL_BYTES_MAX,
        );
        if path == "." {
            // Missing and unknown fields at the top level name themselves.
            ToolError::new(INVALID_ARGUMENTS, detail)
        } else {
            invalid(&path, detail)
        }
    })
}

/// The JSON kind of a value, for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `{"error": {"code": ..., "message": ...}}`.
pub fn error_json(e: &ToolError) -> Value {
    json!({ "error": { "code": e.code, "message": e.message } })
}

/// A call's answer as JSON: the kernel's result object, or [`error_json`].
pub fn result_json(result: &Result<CallOk, ToolError>) -> Value {
    match result {
        Ok(ok) => serde_json::to_value(ok).unwrap_or_else(|e| {
            error_json(&ToolError::new(INTERNAL, format!("failed to render the result as JSON: {e}")))
        }),
        Err(e) => error_json(e),
    }
}

/// An answer as JSON with the notices delivered with it: `{"notices": [...]}` is added to the
/// result (or error) object when any arrived. Notices carry ids only.
pub fn reply_json(reply: &CallReply) -> Value {
    let mut value = result_json(&reply.result);
    if !reply.notices.is_empty()
        && let Value::Object(map) = &mut value
    {
        map.insert("notices".into(), serde_json::to_value(&reply.notices).unwrap_or(Value::Null));
    }
    value
}

/// Makes one tool call as process `caller`, exactly as its program would, through
/// [`Runtime::call_as_with_notices`]. Never panics: every failure is an `{"error": …}` object.
///
/// A blocking `wait_child_process` on a live child does not return until the child is
/// terminal (or the caller ends). Cancel safety: dropping the future does not withdraw a call
/// already sent; the kernel still applies it and only the answer is lost.
pub async fn dispatch_as(rt: &Runtime, caller: Pid, name: &str, args: Value) -> Value {
    let reply = match parse_call(name, args) {
        Ok(call) => rt.call_as_with_notices(caller, call).await,
        Err(e) => CallReply { result: Err(e), notices: Vec::new() },
    };
    reply_json(&reply)
}

/// Makes one tool call from a program, through its [`ProcessContext`]. Same answers and
/// cancel safety as [`dispatch_as`].
pub async fn dispatch_ctx(ctx: &ProcessContext, name: &str, args: Value) -> Value {
    let reply = match parse_call(name, args) {
        Ok(call) => ctx.call_with_notices(call).await,
        Err(e) => CallReply { result: Err(e), notices: Vec::new() },
    };
    reply_json(&reply)
}

fn too_large(calls: &[BatchCall]) -> Option<Vec<Value>> {
    (calls.len() > BATCH_CALLS_MAX).then(|| {
        let e = ToolError::new(
            BATCH_TOO_LARGE,
            format!("the batch has {} calls; the limit is {BATCH_CALLS_MAX}: split it", calls.len()),
        );
        calls.iter().map(|_| error_json(&e)).collect()
    })
}

/// Runs a batch through `call`, one answer per call, applying the batch rule.
async fn run_batch<F, Fut>(calls: Vec<BatchCall>, mut call: F) -> Vec<Value>
where
    F: FnMut(Call) -> Fut,
    Fut: std::future::Future<Output = CallReply>,
{
    if let Some(refused) = too_large(&calls) {
        return refused;
    }
    let mut rule = BatchRule::new();
    let mut out = Vec::with_capacity(calls.len());
    for c in calls {
        let reply = match rule.admit(&c.tool).and_then(|()| parse_call(&c.tool, c.args)) {
            Ok(parsed) => call(parsed).await,
            Err(e) => CallReply { result: Err(e), notices: Vec::new() },
        };
        rule.observe(&reply.result);
        out.push(reply_json(&reply));
    }
    out
}

/// Makes a batch of calls as `caller`, in order, one answer per call. A wait or receive that
/// suspended the caller ends the batch: the calls after it do not run and answer
/// `batch_ended`. A refused call (including malformed arguments) does not end the batch. A
/// batch longer than [`BATCH_CALLS_MAX`] runs nothing and every call answers
/// `batch_too_large`.
///
/// The suspending call itself is answered when it completes, so this returns only then.
pub async fn dispatch_batch_as(rt: &Runtime, caller: Pid, calls: Vec<BatchCall>) -> Vec<Value> {
    run_batch(calls, |call| rt.call_as_with_notices(caller, call)).await
}

/// [`dispatch_batch_as`] for a program, through its [`ProcessContext`].
pub async fn dispatch_batch_ctx(ctx: &ProcessContext, calls: Vec<BatchCall>) -> Vec<Value> {
    run_batch(calls, |call| ctx.call_with_notices(call)).await
}
