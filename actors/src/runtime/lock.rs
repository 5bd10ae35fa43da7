//! One runtime owns a state directory at a time: an OS file lock held for its whole life.
//!
//! The owner holds an exclusive `flock` on `<dir>/lock`. A read-only view asks whether a live
//! runtime owns the directory with [`probe`], which takes a *shared* lock for an instant and
//! creates nothing. An opener that finds the exclusive lock refused tells the two apart: if a
//! shared lock can be had, no exclusive holder exists (only probes hold it), so it tries again;
//! if not, a live runtime owns the directory.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The name of the lock file inside a state directory.
pub const LOCK_FILE: &str = "lock";

/// How many times an opener retries the exclusive lock while only probes hold the file.
/// A probe holds its shared lock between two system calls, so a handful of retries outlasts
/// any number of views; past this bound the opener gives up and reports the directory owned,
/// which is the safe answer (a read-only view, never a second owner).
const PROBE_RETRIES_MAX: u32 = 1000;

/// An exclusive lock on a state directory; released when dropped (or when the process dies,
/// which is what lets the next opener run recovery after a crash).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Outcome of trying to take the lock.
#[derive(Debug)]
pub enum LockAttempt {
    /// This opener owns the directory.
    Owned(DirLock),
    /// A live runtime owns it.
    HeldElsewhere,
}

/// Whether a live runtime owns a state directory, as a read-only view sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A live runtime holds the lock.
    Alive,
    /// Nobody holds it: the last owner (if any) has ended, cleanly or not.
    None,
}

/// Tries to take the directory's lock without blocking. Creates the lock file if it is missing
/// (a held lock's file exists, so a refused opener creates nothing).
pub fn try_lock(dir: &Path) -> std::io::Result<LockAttempt> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK_FILE))?;
    for _ in 0..PROBE_RETRIES_MAX {
        match file.try_lock() {
            Ok(()) => return Ok(LockAttempt::Owned(DirLock { _file: file })),
            Err(TryLockError::Error(e)) => return Err(e),
            Err(TryLockError::WouldBlock) => {}
        }
        // Refused: an owner, or only probes? A shared lock is refused only by an owner.
        match file.try_lock_shared() {
            Ok(()) => {
                file.unlock()?;
                std::thread::yield_now();
            }
            Err(TryLockError::WouldBlock) => return Ok(LockAttempt::HeldElsewhere),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
    Ok(LockAttempt::HeldElsewhere)
}

/// Whether a live runtime owns `dir`, without creating or writing anything: the lock file is
/// opened read-only (a missing one means no runtime ever owned the directory) and a shared lock
/// is taken and released at once.
pub fn probe(dir: &Path) -> std::io::Result<Owner> {
    let file = match File::open(dir.join(LOCK_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Owner::None),
        Err(e) => return Err(e),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            file.unlock()?;
            Ok(Owner::None)
        }
        Err(TryLockError::WouldBlock) => Ok(Owner::Alive),
        Err(TryLockError::Error(e)) => Err(e),
    }
}
