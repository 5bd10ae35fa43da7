//! [`ProcessGroup`]: a subprocess started as the leader of a process group of its own, and
//! everything it starts, killed together. The one place a supervised command-line tool's
//! group is killed: external agent sessions and rig seat commands both hold one.

use tokio::process::{Child, Command};

/// Sets `command` to start its program as the leader of a new process group, so that
/// [`ProcessGroup::kill`] reaches it and every process it starts.
pub fn own_group(command: &mut Command) -> &mut Command {
    command.process_group(0)
}

/// The process group of a child started through [`own_group`]. Dropping it kills the group
/// (SIGKILL): nothing the child started outlives its holder.
#[derive(Debug)]
pub struct ProcessGroup(Option<rustix::process::Pid>);

impl ProcessGroup {
    /// The group `child` leads; empty if the child has already been reaped.
    pub fn of(child: &Child) -> ProcessGroup {
        ProcessGroup(
            child.id().and_then(|id| i32::try_from(id).ok()).and_then(rustix::process::Pid::from_raw),
        )
    }

    /// Kills the whole group now (SIGKILL). Killing it twice, or a group whose processes
    /// have all ended, does nothing.
    pub fn kill(&mut self) {
        if let Some(group) = self.0.take() {
            // ESRCH (every process of the group has ended) is the expected case, not an error.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
