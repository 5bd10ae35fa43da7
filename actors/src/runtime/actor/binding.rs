//! A program's own bindings: binding a profile-bound instance, unbinding a name, dropping an
//! object it no longer uses. Bookkeeping calls, not tools: the agent layer makes them for the
//! modules it keeps as objects.

use super::objects::{check_payload_size, resolve};
use super::{ProcessActor, ProcessState};
use crate::kernel::objects::ProfileBindRequest;
use crate::limits;
use crate::runtime::calls::{
    BindProfileObject, CallOk, NameUnbound, ObjectDropped, ObjectTarget, ProfileBound, ToolError,
};
use crate::runtime::ids::UuidV7Ids;

impl ProcessActor {
    /// Binds the instance of a profile key (within the caller's image) under a name. The
    /// first bind makes it and commits its initial payload durably in the same change set, so
    /// the key → object mapping and the contents survive a crash together; a second binder,
    /// planning under the same lock, finds it.
    pub(crate) async fn bind_profile_object(
        &self,
        state: &ProcessState,
        req: BindProfileObject,
    ) -> Result<CallOk, ToolError> {
        check_payload_size("the initial payload", &req.initial, limits::OBJECT_BYTES_MAX)?;
        let request = ProfileBindRequest {
            holder: state.pid(),
            image: state.row.image.as_str().to_string(),
            key: req.key,
            name: req.name,
        };
        let bound = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let plan = stage.space().plan_bind_profile(&request, &mut UuidV7Ids)?;
                stage.apply(plan.changes);
                if plan.created {
                    stage.put_payload(plan.oid, req.initial, true);
                }
                Ok::<_, ToolError>(ProfileBound { oid: plan.oid, created: plan.created })
            })
            .await?;
        Ok(CallOk::Bound(bound))
    }

    /// Removes a name from the caller's namespace.
    pub(crate) async fn unbind_name(&self, state: &ProcessState, name: String) -> Result<CallOk, ToolError> {
        let me = state.pid();
        let oid = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let (oid, changes) = stage.space().plan_unbind(me, &name)?;
                stage.apply(changes);
                Ok::<_, ToolError>(oid)
            })
            .await?;
        Ok(CallOk::Unbound(NameUnbound { oid }))
    }

    /// Drops an object: released (with its durable payload) when the caller owns it, else
    /// only the caller's handle and names go.
    pub(crate) async fn drop_object(
        &self,
        state: &ProcessState,
        target: ObjectTarget,
    ) -> Result<CallOk, ToolError> {
        let me = state.pid();
        super::objects::ensure_target(&self.shared, &target)?;
        let dropped = self
            .shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let oid = resolve(stage.space(), me, &target)?;
                let plan = stage.space().plan_drop(me, oid)?;
                stage.apply(plan.changes);
                Ok::<_, ToolError>(ObjectDropped { oid, released: plan.released })
            })
            .await?;
        Ok(CallOk::Dropped(dropped))
    }
}
