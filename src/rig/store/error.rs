//! Why a seat store refused a call.

use super::failing::SeatOperation;
use super::seat::SeatStatus;
use crate::rig::{MemberId, NativeId, RigId};

/// A seat's status change that the state model does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to move seat {member} of rig {rig} from {from} to {to}: {}", reason(*from, *to))]
pub struct TransitionError {
    /// The seat's rig.
    pub rig: RigId,
    /// The seat.
    pub member: MemberId,
    /// Its status.
    pub from: SeatStatus,
    /// The status asked for.
    pub to: SeatStatus,
}

fn reason(from: SeatStatus, to: SeatStatus) -> &'static str {
    if from.is_final() {
        "realized and failed are final (restoring a realized seat later never forks it again)"
    } else if to == SeatStatus::Declared {
        "nothing moves back to declared"
    } else {
        "a seat moves declared → resolved → realized, or to failed from declared or resolved"
    }
}

/// Why a seat store refused a call. Refusals (everything but [`StoreError::Backend`],
/// [`StoreError::FailStopped`], [`StoreError::Corrupt`] and [`StoreError::Injected`]) change
/// nothing and leave the store usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A rig with this id was created already.
    #[error("failed to create rig {rig}: a rig with this id exists; choose another id")]
    RigExists {
        /// The id asked for.
        rig: RigId,
    },
    /// No rig with this id was created.
    #[error("no rig {rig} in the seat store (known rigs: {known})")]
    UnknownRig {
        /// The id asked for.
        rig: RigId,
        /// The rigs the store holds, comma-separated (`none` if empty).
        known: String,
    },
    /// The rig has no seat with this member id.
    #[error("rig {rig} has no seat {member}; declare it first")]
    UnknownSeat {
        /// The rig.
        rig: RigId,
        /// The member asked for.
        member: MemberId,
    },
    /// The rig has a seat with this member id already.
    #[error(
        "failed to declare seat {member} of rig {rig}: the rig has a seat with this id; choose another id"
    )]
    DuplicateMember {
        /// The rig.
        rig: RigId,
        /// The member id that is taken.
        member: MemberId,
    },
    /// The status change is not one the state model allows.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// A realize gave the seat its own source's token: the parent's token is never written onto
    /// the new seat.
    #[error(
        "failed to realize seat {member} of rig {rig}: token {token} is its source session's; a \
         forked seat is realized with the new token its runtime reported, never the parent's"
    )]
    TokenIsSource {
        /// The rig.
        rig: RigId,
        /// The seat.
        member: MemberId,
        /// The token given.
        token: NativeId,
    },
    /// A realize gave the seat a token another seat holds.
    #[error(
        "failed to realize seat {member} of rig {rig}: token {token} belongs to seat {holder_member} \
         of rig {holder_rig}; each seat is realized with its own token"
    )]
    TokenTaken {
        /// The rig.
        rig: RigId,
        /// The seat.
        member: MemberId,
        /// The token given.
        token: NativeId,
        /// The rig of the seat that holds it.
        holder_rig: RigId,
        /// The seat that holds it.
        holder_member: MemberId,
    },
    /// Usage is recorded only on a realized seat (one that ran).
    #[error(
        "failed to record usage of seat {member} of rig {rig}: it is {status}, and only a realized seat ran"
    )]
    NotRealized {
        /// The rig.
        rig: RigId,
        /// The seat.
        member: MemberId,
        /// Its status.
        status: SeatStatus,
    },
    /// The backing store failed; its own error, as text.
    #[error("failed to reach the seat store: {message}")]
    Backend {
        /// What failed, and what the backing store said.
        message: String,
    },
    /// An earlier write failed, so this store refuses writes until it is reopened.
    #[error("the seat store refuses writes after an earlier failure ({message}); reopen it")]
    FailStopped {
        /// The earlier failure.
        message: String,
    },
    /// The file's schema version is not one this build reads.
    #[error(
        "failed to open the seat store {path}: its schema version {found} is not one this build \
         reads (0 to {supported}); open it with a newer agentvisor"
    )]
    UnsupportedSchema {
        /// The file.
        path: String,
        /// The version it holds.
        found: i64,
        /// The newest version this build reads.
        supported: i64,
    },
    /// A stored record breaks an invariant or does not decode.
    #[error("the seat store holds a damaged record: {message}")]
    Corrupt {
        /// Which record, and what is wrong with it.
        message: String,
    },
    /// A [`FailingSeatStore`](super::FailingSeatStore) failed this operation on purpose.
    #[error("failed to {operation}: injected failure")]
    Injected {
        /// The operation that failed.
        operation: SeatOperation,
    },
}

impl StoreError {
    /// A stable machine code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::RigExists { .. } => "rig_exists",
            StoreError::UnknownRig { .. } => "unknown_rig",
            StoreError::UnknownSeat { .. } => "unknown_seat",
            StoreError::DuplicateMember { .. } => "duplicate_member",
            StoreError::Transition(_) => "illegal_transition",
            StoreError::TokenIsSource { .. } => "token_is_source",
            StoreError::TokenTaken { .. } => "token_taken",
            StoreError::NotRealized { .. } => "not_realized",
            StoreError::Backend { .. } => "backend",
            StoreError::FailStopped { .. } => "fail_stopped",
            StoreError::UnsupportedSchema { .. } => "unsupported_schema",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::Injected { .. } => "injected",
        }
    }
}
