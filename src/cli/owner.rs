//! Opening a state directory as its owner, for the commands that run processes (`demo`,
//! `agent`, `run`, `recover`): the lock is taken first, before any file is created, so a
//! command refused because a live runtime owns the directory leaves nothing behind.
//!
//! The hidden `--fault` option arms a store fault after a number of commits (`fail-after:N`
//! fail-stops the store as a full disk would; `freeze-after:N` stops its writer so a test can
//! SIGKILL the command at a known commit). It prints `agentvisor: fault injected: …` on stderr
//! when the fault plays.

use agentvisor::actors::runtime::lock::{self, DirLock, LockAttempt, Owner};
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::store::InjectedFault;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A fault to arm on the store of the command's runtime (hidden `--fault`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    fault: InjectedFault,
    after: u64,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(text: &str) -> Result<Fault, String> {
        let (kind, after) = text.split_once(':').ok_or("expected fail-after:N or freeze-after:N")?;
        let fault = match kind {
            "fail-after" => InjectedFault::Fail,
            "freeze-after" => InjectedFault::Freeze,
            other => return Err(format!("unknown fault {other:?}: expected fail-after or freeze-after")),
        };
        let after = after.parse().map_err(|e| format!("{after:?} is not a count of commits: {e}"))?;
        Ok(Fault { fault, after })
    }
}

/// The fault `--fault` asked for, set once by `cli::main`.
pub(crate) static FAULT: OnceLock<Fault> = OnceLock::new();

/// The refusal when a live runtime owns the directory.
#[derive(Debug, thiserror::Error)]
#[error(
    "a live agentvisor runtime owns {}; nothing was changed there (stop it, or pass another --state DIR)",
    .0.display()
)]
pub(crate) struct OwnedElsewhere(pub(crate) PathBuf);

fn owned_elsewhere(state: &Path) -> anyhow::Error {
    OwnedElsewhere(state.to_path_buf()).into()
}

/// Takes the directory's owner lock, creating the directory if needed; refuses, creating
/// nothing, if a live runtime owns it.
pub(crate) fn take(state: &Path) -> anyhow::Result<DirLock> {
    if state.exists()
        && lock::probe(state).context("failed to read the state directory's lock")? == Owner::Alive
    {
        return Err(owned_elsewhere(state));
    }
    std::fs::create_dir_all(state).with_context(|| format!("failed to create {}", state.display()))?;
    match lock::try_lock(state).with_context(|| format!("failed to lock {}", state.display()))? {
        LockAttempt::Owned(lock) => Ok(lock),
        LockAttempt::HeldElsewhere => Err(owned_elsewhere(state)),
    }
}

/// Opens `state` as its owner with `lock` (from [`take`]), recovering what an earlier runtime
/// left, and arms `--fault` if it was given.
pub(crate) async fn open(state: &Path, lock: DirLock, options: RuntimeOptions) -> anyhow::Result<Runtime> {
    let rt = Runtime::open_owned(state, lock, super::stores::runtime_options(options))
        .await
        .with_context(|| format!("failed to open the state {}", super::stores::describe(state)))?;
    if rt.is_read_only() {
        bail!("the state directory {} opened read-only", state.display());
    }
    if let Some(fault) = FAULT.get().copied()
        && let Some(fired) = rt.store().inject_fault_after(fault.after, fault.fault)
    {
        tokio::spawn(async move {
            if fired.await.is_ok() {
                eprintln!("agentvisor: fault injected: {:?} after {} commits", fault.fault, fault.after);
            }
        });
    }
    Ok(rt)
}
