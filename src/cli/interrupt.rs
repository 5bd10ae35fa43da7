//! SIGINT and SIGTERM during `run`, `run --resume` and `rig restore`: the first stops every
//! seat (the runner kills each seat command's process group and records what did not finish),
//! and the command then exits with [`INTERRUPTED_EXIT`]; a second exits at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// The exit status of an interrupted command: 128 + SIGINT, as a shell reports it.
pub(crate) const INTERRUPTED_EXIT: u8 = 130;

/// Watches for SIGINT and SIGTERM until dropped: the first cancels `interruption`, a second
/// exits the process at once. Dropping the guard stops the watch.
pub(crate) fn on_signals(interruption: CancellationToken) -> Guard {
    // Installed before this returns, so a seat started after it is never left to the
    // default action of a signal.
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        tracing::warn!(
            "the signal handlers could not be installed; an interrupt ends the command unrecorded"
        );
        return Guard(None);
    };
    let task = tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!(
            "agentvisor: interrupted: stopping every seat and recording what did not finish \
             (interrupt again to exit at once)"
        );
        interruption.cancel();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("agentvisor: interrupted again: exiting now");
        std::process::exit(i32::from(INTERRUPTED_EXIT));
    });
    Guard(Some(task))
}

/// Stops the watch when dropped.
pub(crate) struct Guard(Option<tokio::task::JoinHandle<()>>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}
