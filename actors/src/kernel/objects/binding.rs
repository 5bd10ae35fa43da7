//! Bindings a process makes and lets go of: a profile-bound instance (one object per key,
//! shared by every process that binds the key), the removal of a name, and the drop of an
//! object it no longer uses (released if it owns it, its own handle revoked otherwise).
//!
//! A profile-bound instance is the one live object owned by `Profile(key)`. The binding is
//! durable because ownership is: the key → object mapping is the object's owner, committed
//! with the object. Finding or creating it is one plan under the space's lock, so two
//! processes binding one key at once get the same object, and [`ObjectSpace::check`] asserts
//! that a key never owns two live objects.

use super::access::check_name;
use super::change::ObjectChange;
use super::error::ObjectError;
use super::model::{Handle, ObjectKind, ObjectMeta, ObjectRights, Owner};
use super::space::ObjectSpace;
use crate::kernel::ids::{IdSource, Oid, Pid};
use crate::limits;

/// A request to bind a profile-bound instance in a process's namespace.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ProfileBindRequest {
    /// The binding process; it gets a read/write handle.
    pub holder: Pid,
    /// The image the holder runs: a key is bound only within that image's namespace.
    pub image: String,
    /// The instance's key: `<image>/<rest>`, chosen by the image's program.
    pub key: String,
    /// The name to bind it to in the holder's namespace.
    pub name: String,
}

/// An approved profile binding.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ProfileBindPlan {
    /// The instance.
    pub oid: Oid,
    /// Whether this plan creates it (the first binder of the key).
    pub created: bool,
    /// What to commit (empty when the holder already binds it under the name).
    pub changes: Vec<ObjectChange>,
}

/// An approved drop.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DropPlan {
    /// Whether the object is released (the dropper owned it); otherwise only the dropper's
    /// handle and names go, and the object lives on for its other holders.
    pub released: bool,
    /// What to commit.
    pub changes: Vec<ObjectChange>,
}

impl ObjectSpace {
    /// The live instance bound to a profile key, if one was made.
    pub fn profile_instance(&self, key: &str) -> Option<Oid> {
        self.owned_by(&Owner::Profile(key.to_string()))
            .find(|oid| self.objects.get(oid).is_some_and(|o| !o.released))
    }

    /// Plans binding the instance of `key` under `name`: the existing one, or a new object
    /// owned by `Profile(key)` carrying the holder's context (the first binder's). The holder
    /// gets READ and WRITE (added to any handle it had) and the name. Refused if the key is
    /// outside the holder's image, the holder is not cleared for the instance's labels, or
    /// the name is bound to another object.
    pub fn plan_bind_profile(
        &self,
        request: &ProfileBindRequest,
        ids: &mut dyn IdSource,
    ) -> Result<ProfileBindPlan, ObjectError> {
        let holder = request.holder;
        let memory = self.live_memory(holder)?;
        check_name(&request.name)?;
        check_name(&request.key)?;
        let in_image = request
            .key
            .strip_prefix(request.image.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| !rest.is_empty());
        if !in_image {
            return Err(ObjectError::ProfileKeyOutsideImage {
                key: request.key.clone(),
                image: request.image.clone(),
            });
        }
        let existing = self.profile_instance(&request.key);
        if let Some(oid) = existing {
            self.check_flow(holder, oid)?;
            if self.handle(holder, oid).is_some_and(|h| h.ephemeral) {
                return Err(ObjectError::EphemeralHandle { holder, oid });
            }
        }
        match memory.namespace.get(&request.name) {
            Some(bound) if Some(*bound) != existing => {
                return Err(ObjectError::NameTaken { pid: holder, name: request.name.clone() });
            }
            None if memory.namespace.len() >= limits::NAMES_PER_PROCESS_MAX => {
                return Err(ObjectError::TooManyEntries {
                    field: "namespace".into(),
                    max: limits::NAMES_PER_PROCESS_MAX,
                });
            }
            _ => {}
        }
        let mut changes = Vec::new();
        let oid = match existing {
            Some(oid) => oid,
            None => {
                let oid = ids.oid();
                changes.push(ObjectChange::PutObject(ObjectMeta {
                    oid,
                    owner: Owner::Profile(request.key.clone()),
                    kind: ObjectKind::Data,
                    labels: memory.context.clone(),
                    ephemeral: false,
                    released: false,
                }));
                oid
            }
        };
        let held = self.rights(holder, oid);
        let rights = held | ObjectRights::READ | ObjectRights::WRITE;
        if rights != held {
            changes.push(ObjectChange::PutHandle(Handle { holder, oid, rights, ephemeral: false }));
        }
        if memory.namespace.get(&request.name) != Some(&oid) {
            changes.push(ObjectChange::PutName { pid: holder, name: request.name.clone(), oid });
        }
        Ok(ProfileBindPlan { oid, created: existing.is_none(), changes })
    }

    /// Plans removing `name` from the holder's namespace. The object and the holder's handle
    /// stay: a later drop by OID lets go of them.
    pub fn plan_unbind(&self, holder: Pid, name: &str) -> Result<(Oid, Vec<ObjectChange>), ObjectError> {
        let memory = self.live_memory(holder)?;
        let oid = *memory
            .namespace
            .get(name)
            .ok_or_else(|| ObjectError::UnknownName { pid: holder, name: name.to_string() })?;
        Ok((oid, vec![ObjectChange::RemoveName { pid: holder, name: name.to_string() }]))
    }

    /// Plans dropping `oid`: an object the holder owns is released, with every handle on it
    /// revoked, whoever holds it; any other object keeps living and only the holder's handle
    /// goes. Either way the holder's names for it are removed (other holders' names stay and
    /// answer `object_released` once it is gone). Refused for the holder's goal, for an
    /// unknown or already released object, and for an object the holder neither owns nor
    /// holds.
    pub fn plan_drop(&self, holder: Pid, oid: Oid) -> Result<DropPlan, ObjectError> {
        let memory = self.live_memory(holder)?;
        let object = self.live_object(oid)?;
        if memory.goal == Some(oid) {
            return Err(ObjectError::GoalNotDroppable { pid: holder, oid });
        }
        let owned = object.owner == Owner::Process(holder);
        let held = self.rights(holder, oid);
        if !owned && held.is_empty() {
            return Err(ObjectError::MissingRight { holder, oid, right: ObjectRights::READ, held });
        }
        let mut changes: Vec<ObjectChange> = self
            .names_of(holder, oid)
            .map(|name| ObjectChange::RemoveName { pid: holder, name: name.clone() })
            .collect();
        if owned {
            changes.extend(self.holders_of(oid).map(|h| ObjectChange::RevokeHandle { holder: h, oid }));
            changes.push(ObjectChange::ReleaseObject { oid });
        } else {
            changes.push(ObjectChange::RevokeHandle { holder, oid });
        }
        Ok(DropPlan { released: owned, changes })
    }
}
