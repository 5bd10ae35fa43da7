//! `agentvisor transcript` on the example swarm (a lead that spawns, forks, messages and execs
//! into the review machine), the `seq` of the event file across two runs on one state
//! directory, and `-v` logging on stderr only.

mod cli_support;

use cli_support::{agentvisor, into_closed_pipe, rows, text};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/agents").join(name).display().to_string()
}

/// Runs the example swarm's lead to its end in `state`, with `extra` global flags first.
fn run_swarm(state: &Path, extra: &[&str]) -> std::process::Output {
    let (config, scripts) = (example("swarm.yaml"), example("swarm-scripts.json"));
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["agent", &config, "lead", "Write the report", "--scripts", &scripts]);
    let out = agentvisor(state, &args);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    out
}

/// The pids of the root and of the lead's fork (the process with the lead profile's script
/// for forks), from `ps`.
fn root_and_fork(state: &Path) -> (String, String) {
    let rows = rows(state);
    let pid = |row: &Value| row["pid"].as_str().expect("pid").to_string();
    let root = rows.iter().find(|r| r["depth"] == 0).map(pid).expect("a root");
    let events = agentvisor(state, &["events", "--json"]);
    let fork_agent = text(&events.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|v| v["type"] == "agent_spawned" && v["via"] == "fork")
        .expect("a fork's agent_spawned");
    (root, fork_agent["pid"].as_str().expect("pid").to_string())
}

fn transcript_json(state: &Path, pid: &str) -> Vec<Value> {
    let out = agentvisor(state, &["transcript", "--json", pid]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect()
}

#[test]
fn a_transcript_follows_one_agent_across_its_exec_and_its_fork() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    run_swarm(&state, &[]);
    let (root, fork) = root_and_fork(&state);
    let short = &root[root.len() - 8..];

    // The root's transcript, by its short id, as a person reads it.
    let out = agentvisor(&state, &["transcript", short]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for expected in [
        format!("transcript of process {root}"),
        "── lead (agent ".to_string(),
        "  user: ".to_string(),
        "turn 1  in=".to_string(),
        "  → spawn_subagent {\"agent\":\"researcher\"".to_string(),
        format!("  ⑂ forked child {} (agent ", &fork[fork.len() - 8..]),
        "  → wait_for_subagents {\"merge\":true}".to_string(),
        "three facts found".to_string(),
        "── exec → profile writer at turn 3".to_string(),
        "── writer (agent ".to_string(),
        "   state review: enters draft".to_string(),
        "── transition → profile checker at turn 4".to_string(),
        "   state review: draft → check".to_string(),
        "   state review: check → publish".to_string(),
        "  → finish {\"result\":\"report published\"}".to_string(),
        "finished: exited, result \"report published\"".to_string(),
        "process: exited".to_string(),
    ] {
        assert!(stdout.contains(&expected), "{expected:?} missing from\n{stdout}");
    }
    let exec_at = stdout.find("── exec → profile writer").expect("the exec mark");
    let writer_at = stdout.find("── writer (agent ").expect("the writer's incarnation");
    assert!(exec_at < writer_at, "the exec mark comes before the incarnation it starts");

    // The same as JSON lines, by a unique prefix.
    let entries = transcript_json(&state, &root[..13]);
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e["kind"].as_str()).collect();
    for kind in [
        "incarnation",
        "opening",
        "turn",
        "call",
        "forked_child",
        "exec",
        "transition",
        "fsm_state",
        "finished",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert_eq!(kinds.last(), Some(&"process"), "{kinds:?}");
    let profiles: Vec<&str> =
        entries.iter().filter(|e| e["kind"] == "incarnation").filter_map(|e| e["profile"].as_str()).collect();
    assert_eq!(profiles, ["lead", "writer", "checker", "publisher"]);
    let spawn =
        entries.iter().find(|e| e["kind"] == "call" && e["tool"] == "spawn_subagent").expect("the spawn");
    assert_eq!(spawn["arguments"]["agent"], "researcher");
    assert!(spawn["result"]["id"].is_string(), "the tool's JSON answer: {spawn}");
    let forked = entries.iter().find(|e| e["kind"] == "forked_child").expect("the fork mark");
    assert_eq!(forked["pid"].as_str(), Some(fork.as_str()));
    assert_eq!(forked["turn"], 1);

    // `events` takes the same short ids.
    let by_short = agentvisor(&state, &["events", "--json", short]);
    let by_whole = agentvisor(&state, &["events", "--json", &root]);
    assert!(by_short.status.success(), "{}", text(&by_short.stderr));
    assert_eq!(text(&by_short.stdout), text(&by_whole.stdout));
    assert!(!text(&by_whole.stdout).is_empty());

    // The fork's own transcript says where it came from.
    let out = agentvisor(&state, &["transcript", &fork]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains(&format!("   forked from {short} at turn 1")), "{stdout}");
    assert!(stdout.contains("finished: exited, result \"plan checked\""), "{stdout}");
    let entries = transcript_json(&state, &fork);
    let from = entries.iter().find(|e| e["kind"] == "forked_from").expect("forked_from");
    assert_eq!((from["pid"].as_str(), from["turn"].as_u64()), (Some(root.as_str()), Some(1)));
}

#[test]
fn transcript_refuses_what_is_not_a_process_and_ends_quietly_into_a_closed_pipe() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    run_swarm(&state, &[]);
    let (root, _) = root_and_fork(&state);
    let before = cli_support::snapshot(&state);

    let out = agentvisor(&state, &["transcript", "zz"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("is not a pid"), "{}", text(&out.stderr));
    let out = agentvisor(&state, &["transcript", "ffffffff"]);
    assert!(text(&out.stderr).contains("no process matches"), "{}", text(&out.stderr));

    for args in [vec!["transcript", root.as_str()], vec!["transcript", "--json", root.as_str()]] {
        let out = into_closed_pipe(&state, &args);
        assert!(out.status.success(), "{args:?}: {} {}", out.status, text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?} is quiet");
    }
    assert_eq!(cli_support::snapshot(&state), before, "transcript writes nothing");
}

#[test]
fn seqs_never_repeat_across_two_runs_on_one_state_directory() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    run_swarm(&state, &[]);
    let first = std::fs::read_to_string(state.join("agent-events.jsonl")).expect("events").lines().count();
    run_swarm(&state, &[]);
    let seqs: Vec<u64> = std::fs::read_to_string(state.join("agent-events.jsonl"))
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record")["seq"].as_u64().expect("a seq"))
        .collect();
    assert!(seqs.len() > first, "the second run appended");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "strictly increasing across both runs: {seqs:?}");
    assert_eq!(seqs[first], seqs[first - 1] + 1, "the second run continues after the first");
}

#[test]
fn verbose_logs_go_to_stderr_and_nothing_is_logged_without_asking() {
    let work = tempfile::tempdir().expect("tempdir");
    let quiet = run_swarm(&work.path().join("quiet"), &[]);
    assert!(!text(&quiet.stderr).contains("agent_turn"), "{}", text(&quiet.stderr));
    let loud = run_swarm(&work.path().join("loud"), &["-v"]);
    let stderr = text(&loud.stderr);
    for span in ["agent_process{", "agent_turn{", "tool_call{", "INFO"] {
        assert!(stderr.contains(span), "{span} missing from {stderr}");
    }
    let stdout = text(&loud.stdout);
    assert!(stdout.contains("result  \"report published\""), "{stdout}");
    assert!(!stdout.contains("INFO") && !stdout.contains("agent_turn"), "no log line on stdout: {stdout}");
}
