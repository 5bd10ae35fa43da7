//! Operating a tree after a crash from the command line: a real `agentvisor demo` child is
//! SIGKILLed at a known commit, `agentvisor recover` reports what recovery did and changes
//! nothing, `agentvisor signal ID resume` (or `recover --resume`) hosts the tree to its end,
//! and no child is ever created twice. A directory reopened by a command without an image
//! keeps its rows; a failing store makes a command exit non-zero with the error on stderr.

mod cli_support;

use cli_support::{Killed, agentvisor, demo_killed_after, killed_after, make_tree, rows, text};
use std::collections::BTreeSet;
use std::path::Path;

const FOLDERS: usize = 3;
const FILES: usize = 2;
/// The root, one process per folder, one per file.
const PROCESSES: usize = 1 + FOLDERS + FOLDERS * FILES;

/// Every row exited, exactly one per folder and file, and the root counted every word.
fn assert_finished_once(state: &Path) {
    let all = rows(state);
    let goals: Vec<&str> = all.iter().map(|r| r["goal"].as_str().expect("goal")).collect();
    let distinct: BTreeSet<&str> = goals.iter().copied().collect();
    assert_eq!(goals.len(), distinct.len(), "no child was launched twice: {goals:?}");
    assert_eq!(all.len(), PROCESSES, "{goals:?}");
    for row in &all {
        assert_eq!(row["status"], "exited", "{row}");
    }
    let root = all.iter().find(|r| r["depth"] == 0).expect("a root");
    let inspect = agentvisor(state, &["inspect", root["pid"].as_str().expect("pid"), "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    assert_eq!(view["result"]["payload"]["words"], 3 * FOLDERS * FILES, "{view}");
    assert_eq!(view["result"]["payload"]["files"], FOLDERS * FILES);
}

fn paused(state: &Path) -> Vec<String> {
    rows(state)
        .iter()
        .filter(|r| r["status"] == "paused")
        .map(|r| r["pid"].as_str().expect("pid").to_string())
        .collect()
}

#[test]
fn recover_reports_and_changes_nothing_then_signal_resume_finishes_the_demo() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, FOLDERS, FILES);
    let state = work.path().join("state");
    assert_eq!(demo_killed_after(&state, &data, 6), Killed::AtCommit);

    let out = agentvisor(&state, &["recover"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("recovered") && stdout.contains("as epoch 2"), "{stdout}");
    let stale: Vec<&str> = stdout.lines().filter(|l| l.starts_with("stale_paused   ")).collect();
    assert!(!stale.is_empty(), "a running row was paused: {stdout}");
    for line in &stale {
        assert!(line.contains("children launched") && line.contains("checkpoint"), "evidence: {line}");
    }
    let after_recover = rows(&state);
    assert!(
        after_recover.iter().all(|r| r["status"] != "failed" && r["status"] != "killed"),
        "{after_recover:?}"
    );
    // Held: nothing ran, so nothing but the stale rows' pause changed.
    let again = agentvisor(&state, &["recover"]);
    assert!(again.status.success());
    let unchanged: Vec<_> =
        rows(&state).iter().map(|r| (r["pid"].clone(), r["state_generation"].clone())).collect();
    let before: Vec<_> =
        after_recover.iter().map(|r| (r["pid"].clone(), r["state_generation"].clone())).collect();
    assert_eq!(unchanged, before, "a second recover finds nothing to do and runs nothing");

    // Resume each paused process by its short id; each command hosts what it can.
    let mut resumed = 0;
    while let Some(pid) = paused(&state).first().cloned() {
        let short = &pid[pid.len() - 8..];
        let out = agentvisor(&state, &["signal", short, "resume"]);
        assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("resume {short}")), "{}", text(&out.stdout));
        resumed += 1;
        assert!(resumed <= PROCESSES, "resuming converges");
    }
    assert_finished_once(&state);

    let refused = agentvisor(&state, &["signal", &pid_of_root(&state), "pause"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("process_terminal") || text(&refused.stderr).contains("refused"));
}

fn pid_of_root(state: &Path) -> String {
    rows(state).iter().find(|r| r["depth"] == 0).expect("root")["pid"].as_str().expect("pid").to_string()
}

/// A small linear congruential generator: the kill points come from a fixed, printed seed.
fn kill_points(seed: u64, count: usize, max: u64) -> Vec<u64> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            1 + (x >> 33) % max
        })
        .collect()
}

#[test]
fn a_demo_killed_at_several_commits_recovers_with_no_duplicate_child() {
    let seed: u64 =
        std::env::var("AGENTVISOR_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026);
    let points = kill_points(seed, 4, 40);
    eprintln!("seed {seed:#x}: killing the demo after commits {points:?} (AGENTVISOR_TEST_SEED replays)");
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, FOLDERS, FILES);
    for (i, commits) in points.iter().enumerate() {
        let state = work.path().join(format!("state-{i}"));
        let killed = demo_killed_after(&state, &data, *commits);
        if killed == Killed::Finished {
            assert_finished_once(&state);
            continue;
        }
        if i % 2 == 1 {
            // Killed again while recovering. A process restarted with its generation claimed
            // fails closed (`resume_interrupted`) rather than run a third time; still nothing
            // is created twice and the tree ends.
            let second = killed_after(&state, 3, &["recover", "--resume"]);
            let out = agentvisor(&state, &["recover", "--resume"]);
            let context =
                format!("seed {seed:#x}, kill after {commits} then {second:?}: {}", text(&out.stderr));
            assert_ended_once(&state, &context);
            continue;
        }
        let out = agentvisor(&state, &["recover", "--resume"]);
        assert!(
            out.status.success(),
            "seed {seed:#x}, kill after {commits}: {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert_finished_once(&state);
    }
}

/// Every row ended, none launched twice, and any failure is a closed-failed resume.
fn assert_ended_once(state: &Path, context: &str) {
    let all = rows(state);
    let goals: Vec<&str> = all.iter().map(|r| r["goal"].as_str().expect("goal")).collect();
    let distinct: BTreeSet<&str> = goals.iter().copied().collect();
    assert_eq!(goals.len(), distinct.len(), "no child was launched twice ({context}): {goals:?}");
    for row in &all {
        let status = row["status"].as_str().expect("status");
        assert!(["exited", "failed", "killed"].contains(&status), "{context}: {row}");
        if status == "failed" {
            assert_eq!(row["outcome"]["error_kind"], "resume_interrupted", "{context}: {row}");
        }
    }
}

#[test]
fn a_command_without_an_image_keeps_the_rows_and_recover_brings_them_back() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let root = env!("CARGO_MANIFEST_DIR");
    let config = format!("{root}/examples/agents/swarm.yaml");
    let scripts = format!("{root}/examples/agents/swarm-scripts.json");
    let args = ["agent", config.as_str(), "lead", "Write the report", "--scripts", scripts.as_str()];
    assert_eq!(killed_after(&state, 12, &args), Killed::AtCommit, "the agent froze mid-run");
    let agent_rows = rows(&state);
    assert!(agent_rows.iter().any(|r| r["status"] != "exited"), "{agent_rows:?}");

    // A demo opens the directory: it has the built-in images, not the agent configuration's.
    let data = work.path().join("data");
    make_tree(&data, 1, 1);
    let demo = agentvisor(&state, &["demo", data.to_str().expect("utf-8")]);
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    for row in rows(&state).iter().filter(|r| r["image"].as_str().is_some_and(|i| i.starts_with("agent"))) {
        assert_ne!(row["status"], "failed", "an image is never a reason to destroy work: {row}");
        assert_ne!(row["status"], "killed", "{row}");
        let before = agent_rows.iter().find(|r| r["pid"] == row["pid"]).expect("the same row");
        assert!(
            row["state_generation"].as_u64() >= before["state_generation"].as_u64(),
            "generations stay monotone: {before} → {row}"
        );
        if row["status"] == "paused" && row["pause_reason"]["kind"] == "image_unavailable" {
            assert_eq!(row["pause_reason"]["image"], row["image"]);
        }
        if row["status"] != "exited" {
            let inspect = agentvisor(&state, &["inspect", row["pid"].as_str().expect("pid")]);
            let out = text(&inspect.stdout);
            assert!(out.contains("image needed") && out.contains("swarm.yaml"), "{out}");
        }
    }

    let out = agentvisor(&state, &["recover", "--resume"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let lead =
        rows(&state).into_iter().find(|r| r["goal"].as_str().is_some_and(|g| g.contains("Write the report")));
    let lead = lead.expect("the lead's row");
    assert_eq!(lead["status"], "exited", "{lead}");
    assert_agents_exited_once(&state, "killed after 12 commits, then a demo, then recover");
}

/// The agent example's processes: the lead, its researcher and its fork, each once, and each
/// exited.
fn assert_agents_exited_once(state: &Path, context: &str) {
    let agents: Vec<_> = rows(state)
        .into_iter()
        .filter(|r| r["image"].as_str().is_some_and(|i| i.starts_with("agent")))
        .collect();
    assert_eq!(agents.len(), 3, "{context}: the lead, the researcher and the fork, once each: {agents:?}");
    for row in &agents {
        assert_eq!(row["status"], "exited", "{context}: {row}");
    }
}

/// The last kill point tried: a run of the agent example makes about 52 commits, fewer when
/// the store groups more of them (under load).
const KILL_POINTS_MAX: u64 = 48;

#[test]
fn an_agent_killed_at_several_commits_recovers_with_no_duplicate_child_and_the_same_results() {
    let seed: u64 =
        std::env::var("AGENTVISOR_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xa9e7_2026);
    let points = kill_points(seed, 6, KILL_POINTS_MAX);
    eprintln!("seed {seed:#x}: killing the agent after commits {points:?} (AGENTVISOR_TEST_SEED replays)");
    let work = tempfile::tempdir().expect("tempdir");
    let root = env!("CARGO_MANIFEST_DIR");
    let config = format!("{root}/examples/agents/swarm.yaml");
    let scripts = format!("{root}/examples/agents/swarm-scripts.json");
    let args = ["agent", config.as_str(), "lead", "Write the report", "--scripts", scripts.as_str()];
    for (i, commits) in points.iter().enumerate() {
        let state = work.path().join(format!("state-{i}"));
        let context = format!("seed {seed:#x}, kill after {commits}");
        // Nothing is launched twice, whatever the kill point, and every agent exits: a turn
        // replayed from its checkpoint sees what its first run saw (the scripted lead fails if
        // its researcher's result is missing from its wait, a finished agent fails if it is
        // asked for a turn its script does not have).
        if killed_after(&state, *commits, &args) == Killed::AtCommit {
            let out = agentvisor(&state, &["recover", "--resume"]);
            assert!(out.status.success(), "{context}: recover --resume: {}", text(&out.stderr));
        }
        assert_agents_exited_once(&state, &context);
    }
}

/// The researcher of the agent example with a second `send_message` to its parent right after
/// the first, so that its first turn sends both as one group: killed after any commit and
/// recovered, the lead holds each message once.
#[test]
fn a_turns_grouped_sends_killed_at_any_commit_are_delivered_once() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = env!("CARGO_MANIFEST_DIR");
    let example =
        std::fs::read_to_string(format!("{root}/examples/agents/swarm-scripts.json")).expect("scripts");
    let mut scripts: serde_json::Value = serde_json::from_str(&example).expect("json");
    let bodies = ["three facts are on my notebook page", "and a second note"];
    let second =
        serde_json::json!({"name": "send_message", "arguments": {"to": "parent", "text": bodies[1]}});
    scripts["researcher"]["turns"][0]["tool_calls"]
        .as_array_mut()
        .expect("the researcher's first calls")
        .push(second);
    let scripts_path = work.path().join("scripts.json");
    std::fs::write(&scripts_path, scripts.to_string()).expect("write the scripts");
    let config = format!("{root}/examples/agents/swarm.yaml");
    let scripts = scripts_path.to_str().expect("utf-8");
    let args = ["agent", config.as_str(), "lead", "Write the report", "--scripts", scripts];
    for commits in 1..=KILL_POINTS_MAX {
        let state = work.path().join(format!("state-{commits}"));
        let context = format!("kill after {commits}");
        if killed_after(&state, commits, &args) == Killed::AtCommit {
            let out = agentvisor(&state, &["recover", "--resume"]);
            assert!(out.status.success(), "{context}: recover --resume: {}", text(&out.stderr));
        }
        assert_agents_exited_once(&state, &context);
        let lead = rows(&state).into_iter().find(|r| r["parent"].is_null()).expect("the lead");
        let lead = lead["pid"].as_str().expect("a pid");
        let out = agentvisor(&state, &["inspect", lead, "--json"]);
        assert!(out.status.success(), "{context}: inspect: {}", text(&out.stderr));
        let inspected: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let received: Vec<&str> = inspected["recent_messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter_map(|m| m["body"].as_str())
            .filter(|body| bodies.contains(body))
            .collect();
        assert_eq!(received, bodies, "{context}: each message once, in order");
    }
}

#[test]
fn a_failing_store_ends_a_command_with_the_error_on_stderr() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, FOLDERS, FILES);
    let state = work.path().join("state");
    let out = agentvisor(&state, &["--fault", "fail-after:5", "demo", data.to_str().expect("utf-8")]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("the store stopped accepting writes"), "{stderr}");
    // What committed before the failure is intact and recoverable.
    let out = agentvisor(&state, &["recover", "--resume"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_finished_once(&state);

    // An agent and a rig run end the same way instead of waiting forever.
    let root = env!("CARGO_MANIFEST_DIR");
    let (config, scripts) =
        (format!("{root}/examples/agents/swarm.yaml"), format!("{root}/examples/agents/swarm-scripts.json"));
    let rig = format!("{root}/examples/rigs/swarm.yaml");
    for (i, args) in [
        vec!["agent", config.as_str(), "lead", "Write the report", "--scripts", scripts.as_str()],
        vec!["run", rig.as_str()],
    ]
    .into_iter()
    .enumerate()
    {
        let state = work.path().join(format!("failing-{i}"));
        let mut all = vec!["--fault", "fail-after:5"];
        all.extend(args.iter().copied());
        let out = agentvisor(&state, &all);
        assert!(!out.status.success(), "{args:?}: {}", text(&out.stdout));
        let stderr = text(&out.stderr);
        assert!(stderr.contains("the store stopped accepting writes"), "{args:?}: {stderr}");
    }
}

#[test]
fn host_actions_gate_ungate_and_revoke_with_clear_refusals() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, FOLDERS, FILES);
    let state = work.path().join("state");
    assert_eq!(demo_killed_after(&state, &data, 6), Killed::AtCommit);
    assert!(agentvisor(&state, &["recover"]).status.success());
    let target = paused(&state).first().cloned().expect("a stale-paused process");
    let row_of = |pid: &str| rows(&state).into_iter().find(|r| r["pid"] == pid).expect("the row");

    let gated = agentvisor(&state, &["gate", &target, "--reason", "inspect first"]);
    assert!(gated.status.success(), "{}", text(&gated.stderr));
    assert_eq!(row_of(&target)["host_gate"], "inspect first");
    let generation = row_of(&target)["state_generation"].clone();
    let refused = agentvisor(&state, &["signal", &target, "resume"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("host_gate"), "{}", text(&refused.stderr));
    assert_eq!(row_of(&target)["state_generation"], generation, "a refused resume changes nothing");

    let ungated = agentvisor(&state, &["ungate", &target]);
    assert!(ungated.status.success(), "{}", text(&ungated.stderr));
    assert_eq!(row_of(&target)["host_gate"], serde_json::Value::Null);
    assert_eq!(row_of(&target)["status"], "paused", "ungate does not resume");

    let unknown = agentvisor(&state, &["signal", "ffffffff", "resume"]);
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("no process matches"), "{}", text(&unknown.stderr));
    let bad_signal = agentvisor(&state, &["signal", &target, "explode"]);
    assert!(text(&bad_signal.stderr).contains("pause, resume, cancel or terminate"));

    let out = agentvisor(&state, &["recover", "--resume"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_finished_once(&state);

    // Revoking needs no live process: the grants of an ended one are revoked all the same.
    let file = rows(&state)
        .into_iter()
        .find(|r| r["status"] == "exited" && r["image"] == "demo.file")
        .expect("an exited file process");
    let pid = file["pid"].as_str().expect("pid");
    let resource = format!("fs:{}", file["goal"].as_str().expect("goal"));
    let not_held = agentvisor(&state, &["revoke", pid, "fs:/nowhere"]);
    assert!(!not_held.status.success());
    assert!(text(&not_held.stderr).contains("not_held"), "{}", text(&not_held.stderr));
    let revoked = agentvisor(&state, &["revoke", pid, &resource]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    assert!(text(&revoked.stdout).contains("revoked"), "{}", text(&revoked.stdout));
    let inspect = agentvisor(&state, &["inspect", pid, "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    let grant =
        view["capabilities"].as_array().expect("grants").iter().find(|g| g["resource"] == resource.as_str());
    assert_eq!(grant.expect("the grant")["live"], false);
}
