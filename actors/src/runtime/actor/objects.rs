//! Object-memory calls: create, read, write, list, checkpoint, load skills, merge; and the
//! object side of waits and ends (result handles, result objects, releases).

use super::{ProcessActor, ProcessState};
use crate::kernel::ids::{Oid, Pid};
use crate::kernel::objects::{CreateRequest, ObjectError, ObjectRights, ObjectSpace, Skill};
use crate::limits;
use crate::runtime::calls::{
    CallOk, CreateObject, MemoryReport, MergeResult, NamedWrite, ObjectCreated, ObjectDelegated,
    ObjectTarget, ObjectView, ObjectWritten, SkillsLoaded, ToolError, WaitResult,
};
use crate::runtime::ids::UuidV7Ids;
use crate::runtime::memory::{Lookup, Memory, Stage};
use crate::store::{Change, ProcessQuery, Store};
use std::collections::BTreeSet;

impl ProcessActor {
    /// `create_object`.
    pub(crate) async fn create_object(
        &self,
        state: &ProcessState,
        req: CreateObject,
    ) -> Result<CallOk, ToolError> {
        check_payload_size("the payload", &req.payload, limits::OBJECT_BYTES_MAX)?;
        let me = state.pid();
        let request = CreateRequest {
            holder: me,
            name: req.name.clone(),
            labels: req.labels,
            ephemeral: req.ephemeral,
            root: req.root,
        };
        let (oid, labels) = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let oid = stage_create(stage, &request, req.payload, req.durable)?;
                Ok::<_, ToolError>((oid, labels_of(stage.space(), oid)))
            })
            .await?;
        Ok(CallOk::Created(ObjectCreated {
            oid,
            name: req.name,
            labels,
            root: req.root,
            ephemeral: req.ephemeral,
            durable: req.durable,
        }))
    }

    /// `read_object`: needs `read`; raises the caller's context by the object's labels. A
    /// payload that did not survive a reopen reads as `materialized: false` and raises nothing.
    pub(crate) async fn read_object(
        &self,
        state: &ProcessState,
        target: ObjectTarget,
    ) -> Result<CallOk, ToolError> {
        let me = state.pid();
        let memory = &self.shared.memory;
        ensure_target(&self.shared, &target)?;
        let (oid, kind) = memory.read(|space| {
            let oid = resolve(space, me, &target)?;
            space.plan_read(me, oid)?;
            Ok::<_, ToolError>((
                oid,
                space.object(oid).map(|o| o.kind.as_str().to_string()).unwrap_or_default(),
            ))
        })?;
        let payload = match memory.payload(self.shared.store.as_ref(), oid)? {
            Lookup::Found(payload) => payload,
            Lookup::NotMaterializable => {
                let labels = memory.read(|space| labels_of(space, oid));
                return Ok(CallOk::Object(ObjectView {
                    oid,
                    kind,
                    labels,
                    payload: None,
                    materialized: false,
                    durable: false,
                }));
            }
        };
        let labels = memory
            .commit(self.shared.store.as_ref(), |stage| {
                // Planned again under the stage: the handle may have gone since the check above.
                let plan = stage.space().plan_read(me, oid)?;
                stage.apply(plan.changes);
                Ok::<_, ToolError>(plan.labels)
            })
            .await?;
        Ok(CallOk::Object(ObjectView {
            oid,
            kind,
            labels: labels.into_iter().collect(),
            payload: Some(payload.value),
            materialized: true,
            durable: payload.durable,
        }))
    }

    /// `write_object`: needs `write` on a handle that is not a speculative view. The object
    /// takes the writer's context labels; a durable object's payload is committed with it.
    pub(crate) async fn write_object(
        &self,
        state: &ProcessState,
        target: ObjectTarget,
        payload: serde_json::Value,
    ) -> Result<CallOk, ToolError> {
        check_payload_size("the payload", &payload, limits::OBJECT_BYTES_MAX)?;
        let me = state.pid();
        let memory = &self.shared.memory;
        ensure_target(&self.shared, &target)?;
        let (oid, labels, durable) = memory
            .commit(self.shared.store.as_ref(), |stage| {
                let oid = resolve(stage.space(), me, &target)?;
                let durable = stage_write(memory, stage, me, oid, payload)?;
                Ok::<_, ToolError>((oid, labels_of(stage.space(), oid), durable))
            })
            .await?;
        Ok(CallOk::Written(ObjectWritten { oid, labels, durable }))
    }

    /// The writes of a [`Call::Checkpoint`](crate::runtime::calls::Call::Checkpoint) or a
    /// [`Call::WriteNamed`](crate::runtime::calls::Call::WriteNamed), each as
    /// `write_object` by name would make it, or `create_object` of a durable object under the
    /// name when the name is unbound; then `then` (a checkpoint's own changes); all staged
    /// together and committed once. A refused write stops there: what was staged before it
    /// commits, `then` does not, and the refusal is the answer.
    pub(crate) async fn write_named(
        &self,
        state: &ProcessState,
        writes: Vec<NamedWrite>,
        then: Vec<Change>,
    ) -> Result<(), ToolError> {
        let me = state.pid();
        let memory = &self.shared.memory;
        let refused = memory
            .commit(self.shared.store.as_ref(), |stage| {
                for write in writes {
                    if let Err(refusal) = stage_named_write(memory, stage, me, write) {
                        return Ok::<_, ToolError>(Some(refusal));
                    }
                }
                stage.extend(then);
                Ok(None)
            })
            .await?;
        refused.map_or(Ok(()), Err)
    }

    /// `checkpoint_object`: makes a payload durable, now and for every later write. Needs
    /// `write` (durability costs the owner's storage); refused for a payload that is already
    /// gone. Everything is checked and read under the stage, so a write or a release racing
    /// it is either wholly before it or wholly after it.
    pub(crate) async fn checkpoint_object(
        &self,
        state: &ProcessState,
        target: ObjectTarget,
    ) -> Result<CallOk, ToolError> {
        let me = state.pid();
        let memory = &self.shared.memory;
        ensure_target(&self.shared, &target)?;
        let (oid, labels) = memory
            .commit(self.shared.store.as_ref(), |stage| {
                let space = stage.space();
                let oid = resolve(space, me, &target)?;
                let object = match space.object(oid) {
                    None => return Err(ObjectError::UnknownObject { oid }.into()),
                    Some(o) if o.released => return Err(ObjectError::ObjectReleased { oid }.into()),
                    Some(o) => o,
                };
                let held = space.handle(me, oid).map_or(ObjectRights::empty(), |h| h.rights);
                if let Some(right) = held.first_missing(ObjectRights::WRITE) {
                    return Err(ToolError::from(ObjectError::MissingRight { holder: me, oid, right, held }));
                }
                let labels = object.labels.iter().cloned().collect();
                if memory.is_durable(oid) {
                    return Ok((oid, labels)); // every write already commits its payload
                }
                let payload = memory.local_payload(oid).ok_or_else(|| not_materializable(oid))?;
                stage.put_payload(oid, payload.value, true);
                Ok::<_, ToolError>((oid, labels))
            })
            .await?;
        Ok(CallOk::Written(ObjectWritten { oid, labels, durable: true }))
    }

    /// `delegate_object`: to a direct, live child only (the same reach as a message down the
    /// tree); the kernel checks `delegate`, the rights given, speculative views and data flow.
    pub(crate) async fn delegate_object(
        &self,
        state: &ProcessState,
        target: ObjectTarget,
        to: Pid,
        rights: ObjectRights,
    ) -> Result<CallOk, ToolError> {
        let child = self.direct_child(state, to)?;
        if child.status.is_terminal() {
            return Err(ToolError::terminal(to, child.status));
        }
        let me = state.pid();
        ensure_target(&self.shared, &target)?;
        let (oid, rights) = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let oid = resolve(stage.space(), me, &target)?;
                let changes = stage.space().plan_delegate(me, to, oid, rights)?;
                stage.apply(changes);
                let now = stage.space().rights(to, oid);
                Ok::<_, ToolError>((oid, now.names().into_iter().map(String::from).collect()))
            })
            .await?;
        Ok(CallOk::Delegated(ObjectDelegated { oid, to, rights }))
    }

    /// `list_objects`: the caller's own memory.
    pub(crate) fn list_objects(&self, state: &ProcessState) -> Result<CallOk, ToolError> {
        let me = state.pid();
        self.shared
            .memory
            .read(|space| MemoryReport::of(space, me))
            .map(|report| CallOk::Memory(Box::new(report)))
            .ok_or_else(|| ToolError::from(ObjectError::UnknownProcess { pid: me }))
    }

    /// `load_skills`: replaces the caller's loaded skill snapshot.
    pub(crate) async fn load_skills(
        &self,
        state: &ProcessState,
        skills: Vec<Skill>,
    ) -> Result<CallOk, ToolError> {
        let me = state.pid();
        // A skill names tools some image offers: a cross-image fork keeps it where the child's
        // image offers them all. A tool no image offers could never be used.
        let images = &self.shared.images;
        let unoffered: Vec<String> = skills
            .iter()
            .flat_map(|skill| {
                skill.allowed_tools.iter().filter(|t| !images.offered_anywhere(t)).map(move |tool| {
                    format!(
                        "{:?} (skill {:?})",
                        crate::limits::excerpt(tool),
                        crate::limits::excerpt(&skill.name)
                    )
                })
            })
            .collect();
        if !unoffered.is_empty() {
            let named = unoffered.len().min(crate::limits::UNOFFERED_TOOLS_NAMED_MAX);
            let more = match unoffered.len() - named {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            return Err(ToolError::new(
                "tool_not_offered",
                format!(
                    "no image of this runtime offers {}{more}; a skill may allow only tools an image offers",
                    unoffered[..named].join(", ")
                ),
            ));
        }
        self.shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let changes = stage.space().plan_load_skills(me, skills.clone())?;
                stage.apply(changes);
                Ok::<_, ToolError>(())
            })
            .await?;
        Ok(CallOk::SkillsLoaded(SkillsLoaded { skills }))
    }

    /// `merge_child_memory`: a direct, terminal child; one transaction.
    pub(crate) async fn merge_child(
        &self,
        state: &ProcessState,
        child_pid: Pid,
        include_child_created: bool,
    ) -> Result<CallOk, ToolError> {
        let child = self.direct_child(state, child_pid)?;
        if !child.status.is_terminal() {
            return Err(ToolError::new(
                "child_not_terminal",
                format!(
                    "{child_pid} is {}; merge_child_memory needs a terminal child (wait for it first)",
                    child.status
                ),
            ));
        }
        let me = state.pid();
        // A child merged before a reopen has its memory in the store only.
        self.shared.memory.ensure(self.shared.store.as_ref(), &[child_pid], &[])?;
        let plan = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let mut plan = stage.space().plan_merge(me, child_pid, include_child_created)?;
                stage.apply(std::mem::take(&mut plan.changes));
                Ok::<_, ToolError>(plan)
            })
            .await?;
        Ok(CallOk::Merged(MergeResult {
            child_pid,
            merged_oids: plan.merged_oids,
            skipped_oids: plan.skipped_oids,
        }))
    }
}

/// Grants `parent` a read handle on `child`'s result, if it has one, into `result`: granted,
/// or denied with the reason (data flow; released by a merge). Stages the grant.
pub(crate) fn grant_result(stage: &mut Stage<'_>, parent: Pid, result: &mut WaitResult) {
    match stage.space().grant_result_handle(parent, result.child_pid) {
        Ok(Some(plan)) => {
            stage.apply(plan.changes);
            result.result_handle = true;
        }
        Ok(None) => {}
        Err(e) => result.result_denied = Some(e.into()),
    }
}

/// Every child of `parent`, live or terminal, by pid: read before a stage is opened, so the
/// memory lock is never held across a store read.
pub(crate) fn children_of(store: &dyn Store, parent: Pid) -> Vec<Pid> {
    let query = ProcessQuery::children_of(parent);
    match store.processes(query) {
        Ok(rows) => rows.into_iter().map(|r| r.pid).collect(),
        Err(e) => {
            tracing::error!(%parent, error = %e, "failed to list children to release their memory");
            Vec::new()
        }
    }
}

/// Stages the release of the memory of `parent`'s unmerged `children` (at `parent`'s end).
pub(crate) fn release_children(stage: &mut Stage<'_>, parent: Pid, children: &[Pid]) {
    // A process without memory (written by an older build) has nothing to release.
    if let Ok(plan) = stage.space().release_unmerged_children(parent, children) {
        stage.apply(plan.changes);
    }
}

/// Brings into memory the object a target names by OID, which may be history a reopen left in
/// the store (see `Memory::ensure`); a name is the caller's own, and so already in memory.
pub(super) fn ensure_target(
    shared: &crate::runtime::shared::Shared,
    target: &ObjectTarget,
) -> Result<(), ToolError> {
    match target {
        ObjectTarget::Oid(oid) => shared.memory.ensure(shared.store.as_ref(), &[], &[*oid]),
        ObjectTarget::Name(_) => Ok(()),
    }
}

pub(super) fn resolve(space: &ObjectSpace, me: Pid, target: &ObjectTarget) -> Result<Oid, ToolError> {
    match target {
        ObjectTarget::Oid(oid) => Ok(*oid),
        ObjectTarget::Name(name) => space
            .process(me)
            .and_then(|m| m.namespace.get(name).copied())
            .ok_or_else(|| ObjectError::UnknownName { pid: me, name: name.clone() }.into()),
    }
}

fn labels_of(space: &ObjectSpace, oid: Oid) -> Vec<String> {
    space.object(oid).map(|o| o.labels.iter().cloned().collect()).unwrap_or_default()
}

/// Stages one write of a checkpoint: the named object written, or created durable if the name
/// is unbound. Nothing is staged when it is refused.
fn stage_named_write(
    memory: &Memory,
    stage: &mut Stage<'_>,
    me: Pid,
    write: NamedWrite,
) -> Result<(), ToolError> {
    let NamedWrite { name, payload } = write;
    let bound = stage.space().process(me).and_then(|m| m.namespace.get(&name)).copied();
    match bound {
        Some(oid) => stage_write(memory, stage, me, oid, payload).map(drop),
        None => {
            let request = CreateRequest {
                holder: me,
                name: Some(name),
                labels: BTreeSet::new(),
                ephemeral: false,
                root: false,
            };
            stage_create(stage, &request, payload, true).map(drop)
        }
    }
}

/// Stages `write_object` of `oid` by `me`; answers whether the payload is durable.
fn stage_write(
    memory: &Memory,
    stage: &mut Stage<'_>,
    me: Pid,
    oid: Oid,
    payload: serde_json::Value,
) -> Result<bool, ToolError> {
    let changes = stage.space().plan_write(me, oid)?;
    stage.apply(changes);
    let durable = memory.is_durable(oid);
    stage.put_payload(oid, payload, durable);
    Ok(durable)
}

/// Stages `create_object`; answers the new object's OID.
fn stage_create(
    stage: &mut Stage<'_>,
    request: &CreateRequest,
    payload: serde_json::Value,
    durable: bool,
) -> Result<Oid, ToolError> {
    let plan = stage.space().plan_create(request, &mut UuidV7Ids)?;
    stage.apply(plan.changes);
    stage.put_payload(plan.oid, payload, durable);
    Ok(plan.oid)
}

/// Refuses the writes of a checkpoint before anything is staged: a name written twice, or a
/// payload over [`limits::OBJECT_BYTES_MAX`].
pub(super) fn check_named_writes(writes: &[NamedWrite]) -> Result<(), ToolError> {
    let mut names = BTreeSet::new();
    for write in writes {
        if !names.insert(write.name.as_str()) {
            return Err(ToolError::new(
                crate::kernel::codes::INVALID_ARGUMENTS,
                format!("the name {:?} is written twice in one call", write.name),
            ));
        }
        check_payload_size(
            &format!("the payload of {:?}", write.name),
            &write.payload,
            limits::OBJECT_BYTES_MAX,
        )?;
    }
    Ok(())
}

/// Refuses a payload (`what`: "the payload", "the exit payload") whose JSON exceeds `max` bytes.
pub(crate) fn check_payload_size(
    what: &str,
    payload: &serde_json::Value,
    max: usize,
) -> Result<(), ToolError> {
    let size = payload.to_string().len();
    if size > max {
        return Err(ToolError::new(
            "payload_too_large",
            format!("{what} is {size} bytes; the limit is {max}"),
        ));
    }
    Ok(())
}

/// The payload of `oid` did not survive a reopen.
pub(crate) fn not_materializable(oid: Oid) -> ToolError {
    ToolError::new(
        "not_materializable",
        format!(
            "the payload of {oid} was runtime-local and did not survive a reopen; its metadata and handles did (only checkpointed payloads are restored)"
        ),
    )
}
