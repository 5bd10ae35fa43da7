//! The crash-child fixture: re-run this test binary as a child process that builds some state,
//! prints a ready line, and blocks until it is SIGKILLed (the pattern of nextest and redb).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

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
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the crash child");
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
