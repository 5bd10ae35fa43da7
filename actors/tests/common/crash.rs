//! The crash-child fixture: re-run this test binary as a child process that builds some state,
//! prints a ready line, and blocks until it is SIGKILLed (the pattern of nextest and redb).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::RwLock;

/// Held for writing while a crash child is spawned. Between its fork and its exec a child
/// holds a copy of every descriptor of this process, the state directory lock of a runtime
/// another test just shut down included: a test that reopens a directory in the same binary
/// holds this for reading around the open, or the open may find the lock still held.
pub(crate) static SPAWNING: RwLock<()> = RwLock::new(());

/// Runs the ignored test `child_test` of this binary in a child process with `envs` set (and
/// `unset` removed), reads its stdout until a line containing `ready`, SIGKILLs it, checks it
/// died by the signal, and returns the words after `ready` on that line.
pub(crate) fn run_until_ready_then_kill(
    child_test: &str,
    envs: &[(&str, String)],
    unset: &[&str],
    ready: &str,
) -> Vec<String> {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args([child_test, "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    for (key, value) in envs {
        command.env(key, value);
    }
    for key in unset {
        command.env_remove(key);
    }
    let spawning = SPAWNING.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    // `spawn` returns once the child has exec'd, its copies of this process's descriptors
    // closed.
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the crash child");
    drop(spawning);
    let stdout = child.stdout.take().expect("piped stdout");
    let mut words = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read the child's stdout");
        if let Some(at) = line.find(ready) {
            words = Some(line[at + ready.len()..].split_whitespace().map(String::from).collect());
            break;
        }
    }
    let Some(words) = words else {
        let status = child.wait().expect("wait for the child");
        panic!("the crash child ended ({status}) without reporting ready; its stderr is above");
    };
    child.kill().expect("SIGKILL the child");
    let status = child.wait().expect("reap the child");
    assert!(!status.success());
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
    }
    words
}
