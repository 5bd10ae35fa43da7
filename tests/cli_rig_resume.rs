//! `agentvisor run --resume RIG_ID` after a SIGKILL mid-rig: the example rig is killed (its
//! store frozen at a commit, then SIGKILLed) once its first seat has ended and while its second
//! is still running; `run --resume` finishes the second seat from its last checkpointed turn,
//! leaves the finished seat exactly as it was, and launches no duplicate process. A rig id
//! nobody ran, and a rig with nothing left to resume, are refused with their codes.

mod cli_support;

use cli_support::{Killed, agentvisor, killed_after, rows, text};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn seats(state: &Path) -> Vec<Value> {
    let out = agentvisor(state, &["rig", "status", "swarm", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let view: Value = serde_json::from_slice(&out.stdout).expect("json");
    view["seats"].as_array().expect("seats").clone()
}

fn status_of<'a>(all: &'a [Value], pid: &Value) -> Option<&'a Value> {
    all.iter().find(|r| r["pid"] == *pid).map(|r| &r["status"])
}

fn terminal(status: Option<&Value>) -> bool {
    status.and_then(Value::as_str).is_some_and(|s| ["exited", "failed", "killed"].contains(&s))
}

/// Whether the kill landed mid-rig: `lead` realized and its process exited, `second-opinion`
/// realized and its process still live.
fn mid_rig(state: &Path) -> bool {
    if !state.join("rigs.sqlite").exists() {
        return false;
    }
    let seats = seats(state);
    let all = rows(state);
    let [lead, second] = &seats[..] else { return false };
    lead["status"] == "realized"
        && terminal(status_of(&all, &lead["pid"]))
        && second["status"] == "realized"
        && status_of(&all, &second["pid"]).is_some_and(|s| !terminal(Some(s)))
}

/// Each process's (parent, goal): a replayed launch would show one twice.
fn launches(all: &[Value]) -> Vec<(String, String)> {
    all.iter().map(|r| (r["parent"].to_string(), r["goal"].to_string())).collect()
}

#[test]
fn run_resume_finishes_a_rig_killed_mid_way_and_leaves_finished_seats_alone() {
    let work = tempfile::tempdir().expect("tempdir");
    // A commit count at which the kill lands mid-rig. Commits are counted per transaction and
    // concurrent change sets may share one, so the count is searched for rather than fixed:
    // doubling, then bisecting, to the first count at which `lead` has ended (more commits
    // never mean less progress), then forward to one at which `second-opinion` still runs.
    // Every try is its own state directory.
    let mut tries = 0u64;
    let mut kill_at = |commits: u64| {
        tries += 1;
        let state = work.path().join(format!("state-{commits}-{tries}"));
        let killed = killed_after(&state, commits, &["run", "examples/rigs/swarm.yaml"]);
        (killed, state)
    };
    let lead_ended = |state: &Path| {
        state.join("rigs.sqlite").exists() && {
            let seats = seats(state);
            seats.first().is_some_and(|lead| terminal(status_of(&rows(state), &lead["pid"])))
        }
    };
    let mut high = 1;
    loop {
        let (killed, state) = kill_at(high);
        if killed == Killed::Finished || lead_ended(&state) {
            break;
        }
        high *= 2;
    }
    let mut low = high / 2;
    while low + 1 < high {
        let middle = (low + high) / 2;
        let (killed, state) = kill_at(middle);
        if killed == Killed::Finished || lead_ended(&state) { high = middle } else { low = middle }
    }
    let mut found = None;
    for commits in high..high + 200 {
        match kill_at(commits) {
            (Killed::Finished, _) => break,
            (Killed::AtCommit, state) if mid_rig(&state) => {
                found = Some(state);
                break;
            }
            (Killed::AtCommit, _) => {}
        }
    }
    let state = found.expect("a kill lands after the first seat ended and before the second did");
    let before_seats = seats(&state);
    let before = rows(&state);
    let lead_pid = before_seats[0]["pid"].clone();
    let lead_rows: Vec<&Value> = before.iter().filter(|r| r["pid"] == lead_pid).collect();

    let out = agentvisor(&state, &["run", "--resume", "swarm"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    for member in ["lead", "second-opinion"] {
        let line =
            stdout.lines().find(|l| l.starts_with(member)).unwrap_or_else(|| panic!("{member}: {stdout}"));
        assert!(line.contains("realized") && line.contains("exited"), "{line}");
    }

    let after_seats = seats(&state);
    assert_eq!(after_seats.len(), 2);
    for (before, after) in before_seats.iter().zip(&after_seats) {
        for key in ["member", "status", "token", "pid", "source"] {
            assert_eq!(before[key], after[key], "seat {key} unchanged: {before} → {after}");
        }
    }
    let after = rows(&state);
    for row in lead_rows {
        let now = after.iter().find(|r| r["pid"] == row["pid"]).expect("still there");
        assert_eq!(now["state_generation"], row["state_generation"], "the finished seat is unchanged");
    }
    assert!(terminal(status_of(&after, &after_seats[1]["pid"])), "the second seat finished");
    let all = launches(&after);
    let unique: BTreeSet<&(String, String)> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "no launch was made twice: {all:?}");

    let again = agentvisor(&state, &["run", "--resume", "swarm"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stdout));
    assert!(text(&again.stderr).contains("nothing_to_resume"), "{}", text(&again.stderr));
}

#[test]
fn run_resume_of_an_unknown_rig_is_refused_and_creates_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let out = agentvisor(&state, &["run", "--resume", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("unknown_rig"), "{}", text(&out.stderr));
    assert!(!state.exists(), "a refusal creates nothing");
}
