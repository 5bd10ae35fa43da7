//! Running the `agentvisor` binary as a person would, and killing it at a known commit.

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

pub(crate) mod fake_cli;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `agentvisor --state STATE ARGS…` to its end.
pub(crate) fn agentvisor(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Runs `agentvisor --state STATE ARGS…` with its stdout a pipe whose reader is already gone.
pub(crate) fn into_closed_pipe(state: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs")
}

/// Text of captured output.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// `folders` folders of `files` files each under `root`, every file "one two three".
pub(crate) fn make_tree(root: &Path, folders: usize, files: usize) {
    for a in 0..folders {
        let dir = root.join(format!("d{a}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..files {
            std::fs::write(dir.join(format!("f{f}.txt")), "one two three\n").expect("write");
        }
    }
}

/// How a demo run that was to be killed ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Killed {
    /// The store froze after the commits asked for and the command was SIGKILLed there.
    AtCommit,
    /// The demo ended before that many commits (nothing to kill).
    Finished,
}

/// Runs `agentvisor demo DATA` with its store frozen after `commits` commits, waits for the
/// fault line on stderr (the store's writer has stopped: nothing more can commit), and
/// SIGKILLs it there, as a crash at that commit. Returns whether it was killed.
pub(crate) fn demo_killed_after(state: &Path, data: &Path, commits: u64) -> Killed {
    killed_after(state, commits, &["demo", data.to_str().expect("utf-8")])
}

/// Runs `agentvisor ARGS…` with its store frozen after `commits` commits and SIGKILLs it
/// there; see [`demo_killed_after`].
pub(crate) fn killed_after(state: &Path, commits: u64, args: &[&str]) -> Killed {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .arg("--fault")
        .arg(format!("freeze-after:{commits}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the demo");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut frozen = false;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("read the demo's stderr");
        if line.contains("fault injected") {
            frozen = true;
            break;
        }
    }
    if !frozen {
        let status = child.wait().expect("reap the demo");
        assert!(status.success(), "{args:?} ended without freezing and without success: {status}");
        return Killed::Finished;
    }
    child.kill().expect("SIGKILL the demo");
    let status = child.wait().expect("reap the demo");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
    Killed::AtCommit
}

/// The bytes of every file in `dir` (not recursing), by name.
pub(crate) fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list the state directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The rows of `ps --all --json`.
pub(crate) fn rows(state: &Path) -> Vec<serde_json::Value> {
    let out = agentvisor(state, &["ps", "--all", "--json"]);
    assert!(out.status.success(), "ps failed: {}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    rows.as_array().expect("an array").clone()
}

/// Copies every regular file of `from` (not recursing; not the owner's control socket) into
/// the new directory `to`.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("entry");
        if !entry.file_type().expect("file type").is_file() {
            continue;
        }
        let path = entry.path();
        std::fs::copy(&path, to.join(path.file_name().expect("a name"))).expect("copy");
    }
}

/// The names in `dir`, sorted.
pub(crate) fn names(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> =
        std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").file_name()).collect();
    names.sort();
    names
}

/// Checks the rows of `ps --all --json` after a tree of `processes` processes was run to its
/// end across a crash: each process launched once (distinct goals), all there, all exited.
pub(crate) fn assert_each_launched_once_and_exited(
    rows: &[serde_json::Value],
    processes: usize,
    context: &str,
) {
    let goals: Vec<&str> = rows.iter().map(|r| r["goal"].as_str().expect("goal")).collect();
    let distinct: std::collections::BTreeSet<&str> = goals.iter().copied().collect();
    assert_eq!(goals.len(), distinct.len(), "no process was launched twice: {goals:?}; {context}");
    assert_eq!(rows.len(), processes, "{goals:?}; {context}");
    assert!(rows.iter().all(|r| r["status"] == "exited"), "{rows:?}; {context}");
}
