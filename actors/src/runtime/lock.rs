//! One runtime owns a state directory at a time: an OS file lock held for its whole life.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The name of the lock file inside a state directory.
pub const LOCK_FILE: &str = "lock";

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

/// Tries to take the directory's lock without blocking.
pub fn try_lock(dir: &Path) -> std::io::Result<LockAttempt> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK_FILE))?;
    match file.try_lock() {
        Ok(()) => Ok(LockAttempt::Owned(DirLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(LockAttempt::HeldElsewhere),
        Err(TryLockError::Error(e)) => Err(e),
    }
}
