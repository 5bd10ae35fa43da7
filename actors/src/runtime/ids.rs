//! Fresh ids for the runtime: UUID v7 (time-ordered, random tail).

use crate::kernel::ids::{GrantId, IdSource, Oid, Pid};
use uuid::Uuid;

/// Ids from UUID v7. Reads the clock, which is why it lives in the runtime, not the kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct UuidV7Ids;

impl IdSource for UuidV7Ids {
    fn pid(&mut self) -> Pid {
        Pid(Uuid::now_v7())
    }
    fn grant(&mut self) -> GrantId {
        GrantId(Uuid::now_v7())
    }
    fn oid(&mut self) -> Oid {
        Oid(Uuid::now_v7())
    }
}
