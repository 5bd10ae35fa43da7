//! Host-side shorthands for the object-memory calls, made as a process with `call_as`, and
//! the invariant check the object-memory tests run after every step.

use agentvisor_actors::kernel::ids::{Oid, Pid};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::objects::{ForkMode, RootSelection, Skill};
use agentvisor_actors::runtime::Runtime;
use agentvisor_actors::runtime::calls::{
    Call, CallOk, CreateObject, ForkRequest, HandleView, Launched, MemoryReport, MergeResult, ObjectCreated,
    ObjectTarget, ObjectView, ObjectWritten, SkillsLoaded, ToolError,
};
use std::collections::BTreeSet;

/// Labels from string slices.
pub(crate) fn labels(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A `create_object` request: a payload, optionally a name and labels; not a root, not
/// ephemeral, not durable (set the fields for more).
pub(crate) fn object(name: Option<&str>, payload: serde_json::Value, label_names: &[&str]) -> CreateObject {
    CreateObject {
        name: name.map(String::from),
        payload,
        labels: labels(label_names),
        ..CreateObject::default()
    }
}

/// `create_object` as `pid`.
pub(crate) async fn create(
    rt: &Runtime,
    pid: Pid,
    request: CreateObject,
) -> Result<ObjectCreated, ToolError> {
    match rt.call_as(pid, Call::CreateObject(request)).await? {
        CallOk::Created(c) => Ok(c),
        other => panic!("create_object answered {other:?}"),
    }
}

/// `create_object` as `pid`, which must succeed; returns the OID.
pub(crate) async fn create_ok(rt: &Runtime, pid: Pid, request: CreateObject) -> Oid {
    create(rt, pid, request).await.expect("create an object").oid
}

/// `read_object` by OID as `pid`.
pub(crate) async fn read(rt: &Runtime, pid: Pid, oid: Oid) -> Result<ObjectView, ToolError> {
    read_target(rt, pid, ObjectTarget::Oid(oid)).await
}

/// `read_object` as `pid`.
pub(crate) async fn read_target(
    rt: &Runtime,
    pid: Pid,
    target: ObjectTarget,
) -> Result<ObjectView, ToolError> {
    match rt.call_as(pid, Call::ReadObject { target }).await? {
        CallOk::Object(o) => Ok(o),
        other => panic!("read_object answered {other:?}"),
    }
}

/// `write_object` by OID as `pid`.
pub(crate) async fn write(
    rt: &Runtime,
    pid: Pid,
    oid: Oid,
    payload: serde_json::Value,
) -> Result<ObjectWritten, ToolError> {
    match rt.call_as(pid, Call::WriteObject { target: ObjectTarget::Oid(oid), payload }).await? {
        CallOk::Written(w) => Ok(w),
        other => panic!("write_object answered {other:?}"),
    }
}

/// `checkpoint_object` by OID as `pid`.
pub(crate) async fn checkpoint(rt: &Runtime, pid: Pid, oid: Oid) -> Result<ObjectWritten, ToolError> {
    match rt.call_as(pid, Call::CheckpointObject { target: ObjectTarget::Oid(oid) }).await? {
        CallOk::Written(w) => Ok(w),
        other => panic!("checkpoint_object answered {other:?}"),
    }
}

/// `list_objects` as `pid`.
pub(crate) async fn list_objects(rt: &Runtime, pid: Pid) -> MemoryReport {
    match rt.call_as(pid, Call::ListObjects).await {
        Ok(CallOk::Memory(m)) => *m,
        other => panic!("list_objects answered {other:?}"),
    }
}

/// `load_skills` as `pid`.
pub(crate) async fn load_skills(rt: &Runtime, pid: Pid, skills: Vec<Skill>) -> SkillsLoaded {
    match rt.call_as(pid, Call::LoadSkills(skills)).await {
        Ok(CallOk::SkillsLoaded(s)) => s,
        other => panic!("load_skills answered {other:?}"),
    }
}

/// `fork_child_process` as `parent`.
pub(crate) async fn fork(
    rt: &Runtime,
    parent: Pid,
    launch: LaunchRequest,
    mode: ForkMode,
    roots: RootSelection,
) -> Result<Launched, ToolError> {
    match rt.call_as(parent, Call::Fork(Box::new(ForkRequest { launch, mode, roots }))).await? {
        CallOk::Spawned(l) => Ok(l),
        other => panic!("fork answered {other:?}"),
    }
}

/// `merge_child_memory` as `parent`.
pub(crate) async fn merge(
    rt: &Runtime,
    parent: Pid,
    child_pid: Pid,
    include_child_created: bool,
) -> Result<MergeResult, ToolError> {
    match rt.call_as(parent, Call::Merge { child_pid, include_child_created }).await? {
        CallOk::Merged(m) => Ok(m),
        other => panic!("merge answered {other:?}"),
    }
}

/// The handle `report`'s process holds on `oid`, if any.
pub(crate) fn handle_on(report: &MemoryReport, oid: Oid) -> Option<&HandleView> {
    report.handles.iter().find(|h| h.oid == oid)
}

/// The rights `pid` holds on `oid`, as names (empty: no handle).
pub(crate) fn rights_of(rt: &Runtime, pid: Pid, oid: Oid) -> Vec<String> {
    rt.memory(pid).and_then(|m| handle_on(&m, oid).map(|h| h.rights.clone())).unwrap_or_default()
}

/// Asserts the runtime's object space keeps every invariant.
#[track_caller]
pub(crate) fn assert_space(rt: &Runtime) {
    if let Err(violation) = rt.object_space().check() {
        panic!("{violation}");
    }
}

/// Asserts a refusal's code, and that its message names each of `mentions`.
#[track_caller]
pub(crate) fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, ToolError>,
    code: &str,
    mentions: &[&str],
) {
    let error = result.expect_err(&format!("expected a {code} refusal"));
    assert_eq!(error.code, code, "{error}");
    for mention in mentions {
        assert!(error.message.contains(mention), "{error} should name {mention:?}");
    }
}
