//! Object memory: the pure kernel of objects, handles, namespaces, roots, skills and data flow.
//!
//! An object has an OID, an [`Owner`] (a process, a process's result, a profile-bound
//! instance, or the host), an [`ObjectKind`], data-flow labels, and an ephemeral (scratch) flag;
//! released objects stay as tombstones. Payloads are not here: they live outside the kernel
//! and are runtime-local unless checkpointed. A process holds [`Handle`]s (rights READ, WRITE,
//! DELEGATE; at most one per object), binds names in its own namespace, and has roots (its
//! memory view, which always includes its goal), a clearance, a context and a loaded
//! skill snapshot ([`ProcessMemory`]).
//!
//! Every operation is a method of [`ObjectSpace`] that reads the state and an input and
//! returns either a plan carrying the `Vec<`[`ObjectChange`]`>` a store commits in one
//! transaction, or a typed [`ObjectError`] with a stable `code()`. [`ObjectSpace::apply`]
//! applies those same changes, and [`ObjectSpace::check`] asserts the invariants before a
//! commit and after a read-back. No tokio, no I/O, no clock, no randomness: ids come from an
//! [`IdSource`](crate::kernel::ids::IdSource), and only once an operation is approved.
//!
//! - [`access`]: `create`, `read`, `write`, `delegate`.
//! - [`binding`]: profile-bound instances (one object per key), unbinding a name, dropping an
//!   object (released by its owner, let go of by any other holder).
//! - [`view`]: root, spawn and fork views (the fork modes, root selection, names).
//! - [`skills`]: skill snapshots and their projection into a child.
//! - [`result`]: the PROCESS_RESULT object and the handle a wait grants.
//! - [`merge`]: `merge_child_memory` and the release of unmerged children at a parent's end.
//! - [`flow`]: labels, clearances, contexts.
//!
//! The design note is `docs/object-memory.md`.

pub mod access;
pub mod binding;
pub mod change;
mod check;
pub mod error;
pub mod flow;
pub mod merge;
pub mod model;
mod resident;
pub mod result;
pub mod skills;
pub mod space;
pub mod view;

pub use access::{CreatePlan, CreateRequest, ReadPlan};
pub use binding::{DropPlan, ProfileBindPlan, ProfileBindRequest};
pub use change::ObjectChange;
pub use error::{InvariantViolation, ObjectError};
pub use merge::{MergePlan, ReleasePlan, SkipReason, Skipped};
pub use model::{Collection, ForkMode, Handle, ObjectKind, ObjectMeta, ObjectRights, Owner, Skill};
pub use result::ResultPlan;
pub use skills::{ChildImage, DropReason, DroppedSkill, SkillProjection};
pub use space::{ObjectSpace, ProcessMemory};
pub use view::{
    ForkViewRequest, GOAL_NAME, Inherited, RootSelection, RootViewRequest, SpawnViewRequest, ViewApproval,
    ViewPlan,
};
