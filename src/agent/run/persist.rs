//! Modules as kernel objects, and the turn-boundary checkpoint.
//!
//! Each module an agent holds is a durable object the process owns, bound in its namespace
//! under a fixed name (`agent.history`, `agent.tasks`, …), so `inspect`, forks (by handle) and
//! merges see them as they see any object. The history object holds the window's snapshot
//! record (head link and tail); the chunks and links themselves live in the host's chunk
//! store, shared by every window that holds them. At a turn boundary the loop writes the
//! modules that changed, then commits the program checkpoint: the checkpoint is the turn's
//! atomic record, and a restarted agent continues from it.

use super::error::AgentError;
use crate::actors::Oid;
use crate::actors::runtime::ProcessContext;
use crate::actors::runtime::calls::{Call, CallOk, CreateObject, ObjectTarget};
use crate::agent::modules::ModuleKind;
use crate::tools::ToolName;
use serde_json::Value;

/// The history object's name: the window's snapshot record.
pub const HISTORY_OBJECT: &str = "agent.history";
/// The task list's object.
pub const TASKS_OBJECT: &str = "agent.tasks";
/// The notebook's object.
pub const NOTEBOOK_OBJECT: &str = "agent.notebook";
/// The memories object: the agent's own, its forker's linked by handle (inherited and
/// read-only scopes), or its profile's one instance (shared scope).
pub const MEMORIES_OBJECT: &str = "agent.memories";
/// The program library's object.
pub const LIBRARY_OBJECT: &str = "agent.library";
/// Usage per incarnation and profile (what `agentvisor inspect` shows and rolls up).
pub const COST_OBJECT: &str = "agent.cost";
/// The agent's identity: current agent id, profile, machine state.
pub const IDENTITY_OBJECT: &str = "agent.identity";

/// The object a module is kept in, for the modules kept as objects of their own.
pub fn module_object(module: ModuleKind) -> &'static str {
    match module {
        ModuleKind::History => HISTORY_OBJECT,
        ModuleKind::Tasks => TASKS_OBJECT,
        ModuleKind::Notebook => NOTEBOOK_OBJECT,
        ModuleKind::Memories => MEMORIES_OBJECT,
        ModuleKind::ProgramLibrary => LIBRARY_OBJECT,
    }
}

/// The key of a profile's one instance of a module object: `<image>/<profile>/<object>`. The
/// image names the configuration (each configuration a runtime runs has an image of its
/// own), so two configurations' profiles of one id never share an instance, and the kernel
/// binds only keys within the binder's image. Profile ids hold no `/`, so keys never collide.
pub fn profile_key(image: &str, profile: &str, object: &str) -> String {
    format!("{image}/{profile}/{object}")
}

/// Writes `payload` to the object named `name`, creating it (durable, owned by the process)
/// the first time. Returns its oid.
pub async fn put(ctx: &ProcessContext, name: &str, payload: Value) -> Result<Oid, AgentError> {
    match ctx.write_object(ObjectTarget::Name(name.to_string()), payload.clone()).await {
        Ok(written) => Ok(written.oid),
        Err(e) if e.code == "unknown_name" => create(ctx, name, payload).await,
        Err(e) => Err(AgentError::Kernel { call: ToolName::WriteObject.as_str(), error: e }),
    }
}

/// Creates the durable object `name` with `payload`.
pub async fn create(ctx: &ProcessContext, name: &str, payload: Value) -> Result<Oid, AgentError> {
    let request = CreateObject { name: Some(name.to_string()), payload, durable: true, ..Default::default() };
    let created =
        ctx.create_object(request).await.map_err(AgentError::kernel(ToolName::CreateObject.as_str()))?;
    Ok(created.oid)
}

/// Reads the object named `name`: `None` if the process has no such name.
pub async fn get(ctx: &ProcessContext, name: &str) -> Result<Option<(Oid, Value)>, AgentError> {
    match ctx.call(Call::ReadObject { target: ObjectTarget::Name(name.to_string()) }).await {
        Ok(CallOk::Object(view)) => Ok(Some((view.oid, view.payload.unwrap_or(Value::Null)))),
        Ok(_) => {
            Err(AgentError::Corrupt { message: format!("read_object of {name} answered something else") })
        }
        Err(e) if e.code == "unknown_name" => Ok(None),
        Err(e) => Err(AgentError::Kernel { call: ToolName::ReadObject.as_str(), error: e }),
    }
}

/// Reads an object by oid.
pub async fn get_oid(ctx: &ProcessContext, oid: Oid) -> Result<Value, AgentError> {
    let view = ctx.read_object(oid).await.map_err(AgentError::kernel(ToolName::ReadObject.as_str()))?;
    Ok(view.payload.unwrap_or(Value::Null))
}

/// Writes an object by oid.
pub async fn put_oid(ctx: &ProcessContext, oid: Oid, payload: Value) -> Result<(), AgentError> {
    ctx.write_object(ObjectTarget::Oid(oid), payload)
        .await
        .map_err(AgentError::kernel(ToolName::WriteObject.as_str()))?;
    Ok(())
}

/// Encodes a value as an object payload.
pub fn to_payload<T: serde::Serialize>(value: &T) -> Result<Value, AgentError> {
    serde_json::to_value(value)
        .map_err(|e| AgentError::Corrupt { message: format!("cannot encode a module: {e}") })
}

/// Decodes an object payload.
pub fn from_payload<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, AgentError> {
    serde_json::from_value(value)
        .map_err(|e| AgentError::Corrupt { message: format!("unreadable {what}: {e}") })
}
