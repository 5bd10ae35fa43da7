//! Seat store writes that must not be lost: retried within a bound when the store refuses
//! them for a reason that may pass (another process holds the file's lock, a write failed),
//! so a created session is recorded if the store comes back, and reported by its token if it
//! does not (seed 004, failure mode 5).

use crate::agent::brain::Usage;
use crate::rig::limits::{STORE_WRITE_ATTEMPTS, STORE_WRITE_BACKOFF};
use crate::rig::store::{SeatStore, StoreError};
use crate::rig::{MemberId, RigId};

/// Whether a refused write may succeed if tried again. Refusals of the state model (a status
/// change it does not allow, a token that is the source's or another seat's) never will; a
/// store that fail-stopped refuses until it is reopened.
fn may_pass(error: &StoreError) -> bool {
    matches!(error, StoreError::Backend { .. } | StoreError::Injected { .. })
}

/// Runs `write` until it succeeds, is refused for good, or has been tried
/// [`STORE_WRITE_ATTEMPTS`] times, waiting [`STORE_WRITE_BACKOFF`] (doubled each time) in
/// between. The last error, and how many tries were made, when it never succeeded.
pub(super) async fn persist<T>(
    mut write: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, (StoreError, u32)> {
    let mut wait = STORE_WRITE_BACKOFF;
    let mut tries = 0u32;
    loop {
        tries += 1;
        match write() {
            Ok(value) => return Ok(value),
            Err(error) if may_pass(&error) && tries < STORE_WRITE_ATTEMPTS => {
                tracing::warn!(%error, tries, "the seat store refused a write; trying again");
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
            }
            Err(error) => return Err((error, tries)),
        }
    }
}

/// Records what a realized seat has used in all, within the bound; a refusal past it is logged
/// and the seat stays realized (usage is an account, not the seat's state).
pub(super) async fn record_usage(store: &dyn SeatStore, rig: &RigId, member: &MemberId, usage: &Usage) {
    if let Err((error, tries)) = persist(|| store.record_usage(rig, member, usage)).await {
        tracing::warn!(%rig, %member, %error, tries, "a seat's usage was not recorded");
    }
}
