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
//!
//! A shard whose node cannot start, or ends failing before it has served a lease, is started
//! again after a wait that doubles with each such failure in a row (one look, two, four … up
//! to [`BACKOFF_LOOKS_MAX`]), so a shard this machine cannot serve is not retried, and its
//! error repeated, at every look.

use agentvisor::actors::store::{NodeLease, shards};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest wait before a shard whose node keeps failing is tried again, in looks (a look
/// is a third of the lease).
const BACKOFF_LOOKS_MAX: u32 = 64;

/// The shards this node serves in processes of its own.
pub(crate) struct TakeOver {
    base: String,
    own: String,
    lease: NodeLease,
    state: PathBuf,
    children: HashMap<String, Started>,
    backoff: HashMap<String, Backoff>,
}

/// A node process serving a shard, and when it started.
struct Started {
    child: Child,
    at: Instant,
}

/// A shard whose node failed `failures` times in a row, and when it may be tried again.
struct Backoff {
    failures: u32,
    not_before: Instant,
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
            backoff: HashMap::new(),
        }
    }

    /// Counts a failure of `shard`'s node (a new run of failures if `served` says the last
    /// node served a whole lease first) and says when it is tried again.
    fn failed(&mut self, shard: &str, served: bool) -> String {
        let every = self.lease.renew_every();
        let backoff = self
            .backoff
            .entry(shard.to_string())
            .or_insert(Backoff { failures: 0, not_before: Instant::now() });
        backoff.failures = if served { 1 } else { backoff.failures.saturating_add(1) };
        let looks = 1u32.checked_shl(backoff.failures - 1).unwrap_or(u32::MAX).min(BACKOFF_LOOKS_MAX);
        let wait: Duration = every * looks;
        backoff.not_before = Instant::now() + wait;
        format!("trying again in {} ms", wait.as_millis())
    }

    /// Looks at the database once: forgets the children that ended, and starts a node for
    /// every other shard with live processes and no live owner that has none yet. Fails only
    /// when stdout is gone.
    pub(crate) fn look(&mut self) -> anyhow::Result<()> {
        let mut ended = Vec::new();
        self.children.retain(|shard, started| match started.child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                ended.push((shard.clone(), format!("ended ({status})"), status.success(), started.at));
                false
            }
            Err(e) => {
                ended.push((shard.clone(), format!("cannot be waited for: {e}"), false, started.at));
                false
            }
        });
        for (shard, how, success, at) in ended {
            if success {
                self.backoff.remove(&shard);
                eprintln!("the node serving shard {shard} {how}");
            } else {
                let again = self.failed(&shard, at.elapsed() >= self.lease.lease());
                eprintln!("the node serving shard {shard} {how}; {again}");
            }
        }
        let found = match shards(&self.base) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("agentvisor: the shards could not be listed: {e}");
                return Ok(());
            }
        };
        for shard in found {
            let orphaned = shard.live > 0 && !shard.is_served();
            let waiting = self.backoff.get(&shard.name).is_some_and(|b| Instant::now() < b.not_before);
            if shard.name == self.own || !orphaned || waiting || self.children.contains_key(&shard.name) {
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
                    self.children.insert(shard.name, Started { child, at: Instant::now() });
                }
                Err(e) => {
                    let again = self.failed(&shard.name, false);
                    eprintln!("agentvisor: a node for shard {} could not start: {e}; {again}", shard.name);
                }
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
        for (shard, Started { child, .. }) in &mut self.children {
            let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid
                && let Err(e) = rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            {
                eprintln!("agentvisor: the node serving shard {shard} could not be stopped: {e}");
            }
        }
        for (shard, Started { mut child, .. }) in self.children.drain() {
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
