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

/// Which process group a supervisor started, durably recorded so that a later runtime can
/// end it: the leader's pid (the group's id) and its start time in clock ticks since boot
/// (`/proc/<pid>/stat`, field 22), which tells the group from a later process that reused the
/// pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupMark {
    /// The group's id: its leader's pid.
    pub pgid: i32,
    /// The leader's start time, in clock ticks since boot.
    pub started: u64,
}

impl ProcessGroup {
    /// The mark of this group, while its leader runs (`None` once it was killed or reaped, or
    /// where `/proc` cannot be read).
    pub fn mark(&self) -> Option<GroupMark> {
        let pgid = self.0?.as_raw_nonzero().get();
        Some(GroupMark { pgid, started: start_time(pgid)? })
    }
}

impl GroupMark {
    /// Kills what is left of the group a crashed supervisor started (SIGKILL), unless its pid
    /// now names another process. Returns whether a kill was sent.
    ///
    /// A pid that is still some group's id is never handed to a new process, so while any
    /// member of the old group lives, the id is still that group's: when the leader's `/proc`
    /// entry is gone, whatever holds the id is the old group. When a process with this pid
    /// runs, it is the old leader only if it started when the mark says.
    pub fn kill_if_left(&self) -> bool {
        if start_time(self.pgid).is_some_and(|started| started != self.started) {
            return false;
        }
        let Some(group) = rustix::process::Pid::from_raw(self.pgid) else { return false };
        rustix::process::kill_process_group(group, rustix::process::Signal::KILL).is_ok()
    }
}

/// The start time of process `pid` in clock ticks since boot, if it exists.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after it follow the
    // last ')'. Field 3 (the state) is the first of them, so field 22 is the 20th.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}
