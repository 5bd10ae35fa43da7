//! `agentvisor node --take-over`: besides its own shard, a node claims every shard of the
//! database that has live processes and no live owner (its node died, hangs, lost the server,
//! or stopped and left its processes paused for the next owner), so that a tree goes on while
//! any node lives, not only while a node stands by for its shard.
//!
//! Each shard taken over is served by a node process of its own, started by this one with the
//! same name and lease, in `STATE/shards/NAME` (a shard's runtime needs its own owner lock,
//! event log and control socket), its output relayed here prefixed with the shard. The child
//! asks the kernel to kill it when this process dies (Linux), so a node SIGKILLed takes its
//! shards' sessions with it and they can be claimed again; stopping this node stops them
//! cleanly first. Nodes taking over race for a shard as any claimers do: one wins, the others'
//! children stand by for it.

use agentvisor::actors::store::{NodeLease, shards};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The shards this node serves in processes of its own.
pub(crate) struct TakeOver {
    base: String,
    own: String,
    lease: NodeLease,
    state: PathBuf,
    children: HashMap<String, Child>,
}

impl TakeOver {
    /// A node named by `lease` serving `own` of the database `base`, its state in `state`.
    pub(crate) fn new(base: &str, own: &str, lease: NodeLease, state: &Path) -> TakeOver {
        TakeOver {
            base: base.to_string(),
            own: own.to_string(),
            lease,
            state: state.to_path_buf(),
            children: HashMap::new(),
        }
    }

    /// Looks at the database once: forgets the children that ended, and starts a node for
    /// every other shard with live processes and no live owner that has none yet. Fails only
    /// when stdout is gone.
    pub(crate) fn look(&mut self) -> anyhow::Result<()> {
        self.children.retain(|shard, child| match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                eprintln!("the node serving shard {shard} ended ({status})");
                false
            }
            Err(e) => {
                eprintln!("the node serving shard {shard} cannot be waited for: {e}");
                false
            }
        });
        let found = match shards(&self.base) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("agentvisor: the shards could not be listed: {e}");
                return Ok(());
            }
        };
        for shard in found {
            let orphaned = shard.live > 0 && !shard.is_served();
            if shard.name == self.own || !orphaned || self.children.contains_key(&shard.name) {
                continue;
            }
            outln!(
                "node {} takes over shard {} ({} live processes, no live owner)",
                self.lease.node(),
                shard.name,
                shard.live
            );
            match self.start(&shard.name) {
                Ok(child) => {
                    self.children.insert(shard.name, child);
                }
                Err(e) => eprintln!("agentvisor: a node for shard {} could not start: {e}", shard.name),
            }
        }
        Ok(())
    }

    /// Starts `agentvisor node` for `shard`, its output relayed with the shard's name.
    fn start(&self, shard: &str) -> std::io::Result<Child> {
        let state = self.state.join("shards").join(shard);
        std::fs::create_dir_all(&state)?;
        let mut child = Command::new(std::env::current_exe()?)
            .arg("--state")
            .arg(&state)
            .args(["--store", &self.base, "--shard", shard, "--node", self.lease.node()])
            .args(["--lease-ms", &self.lease.lease().as_millis().to_string()])
            .args(["node", "--child-of", &std::process::id().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let outputs: [Option<Box<dyn Read + Send>>; 2] = [
            child.stdout.take().map(|out| Box::new(out) as Box<dyn Read + Send>),
            child.stderr.take().map(|err| Box::new(err) as Box<dyn Read + Send>),
        ];
        for output in outputs.into_iter().flatten() {
            let prefix = format!("[shard {shard}] ");
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    eprintln!("{prefix}{line}");
                }
            });
        }
        Ok(child)
    }

    /// Stops every node this one started (SIGTERM: their live processes are paused for the
    /// next owner and their leases end at once) and waits for them.
    pub(crate) fn stop(mut self) {
        for (shard, child) in &mut self.children {
            let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid
                && let Err(e) = rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            {
                eprintln!("agentvisor: the node serving shard {shard} could not be stopped: {e}");
            }
        }
        for (shard, mut child) in self.children.drain() {
            match child.wait() {
                Ok(status) => eprintln!("the node serving shard {shard} stopped ({status})"),
                Err(e) => {
                    eprintln!("agentvisor: the node serving shard {shard} could not be waited for: {e}")
                }
            }
        }
    }
}

/// In a node started by another (`--child-of PARENT`): dies with the parent. Refuses to go
/// on when the parent is gone already.
pub(crate) fn die_with(parent: u32) -> anyhow::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
        let now = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get());
        if now.and_then(|pid| u32::try_from(pid).ok()) != Some(parent) {
            anyhow::bail!("the node that started this one (pid {parent}) is gone");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}
