//! Every example scenario in `examples/scenarios/` runs to the end on a fresh state directory
//! with every expectation holding; malformed scenarios are refused with typed errors.

use agentvisor::scenario::{Scenario, ScenarioError, run_scenario};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

async fn run(
    text: &str,
    state: Option<&Path>,
) -> (Result<agentvisor::scenario::ScenarioSummary, ScenarioError>, Vec<Value>) {
    run_in(text, state, Path::new(".")).await
}

/// Runs a scenario whose relative paths (its `agents` configuration) are relative to `dir`.
async fn run_in(
    text: &str,
    state: Option<&Path>,
    dir: &Path,
) -> (Result<agentvisor::scenario::ScenarioSummary, ScenarioError>, Vec<Value>) {
    let scenario = Scenario::from_json(text).expect("scenario parses").relative_to(dir);
    let mut out: Vec<u8> = Vec::new();
    let summary = run_scenario(&scenario, state, None, &mut out).await;
    let lines = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    (summary, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_scenario_completes_with_every_expectation_holding() {
    let files = examples();
    for required in [
        "spawn_wait_exit",
        "denials",
        "signals",
        "batch_ends",
        "restart",
        "messages",
        "receive_restart",
        "fork_worker",
        "fork_restricted",
        "fork_copy",
        "fork_speculative",
        "merge_after_wait",
        "agent_exec_fork",
        "agent_processes",
        "code_path",
        "agent_subagent_wait",
    ] {
        assert!(
            files.iter().any(|f| f.file_stem().is_some_and(|s| s == required)),
            "examples/scenarios/{required}.json is missing"
        );
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let state = tempfile::tempdir().expect("tempdir");
        let dir = file.parent().expect("a file has a directory");
        let (summary, lines) = run_in(&text, Some(state.path()), dir).await;
        let summary = summary.unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let steps = Scenario::from_json(&text).expect("parse").steps.len();
        assert_eq!(summary.steps, steps, "{}: every step ran", file.display());
        assert_eq!(lines.len(), steps, "{}: one line per step", file.display());
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line["step"], i, "{}: {line}", file.display());
            assert!(line["kind"].is_string(), "{}: {line}", file.display());
            let answered = line.get("result").is_some()
                || line.get("error").is_some()
                || line.get("suspended").is_some();
            assert!(answered, "{}: {line}", file.display());
            if line["kind"] == "expect" {
                assert!(line.get("error").is_none(), "{}: failed expectation {line}", file.display());
            }
        }
        assert!(summary.passed(), "{}: {summary}", file.display());
        assert!(summary.expectations_passed > 0, "{}: checks something", file.display());
        assert!(summary.pending_handles.is_empty(), "{}: awaits every handle: {summary}", file.display());
    }
}

#[tokio::test]
async fn a_failed_expectation_is_counted_not_fatal() {
    let text = r#"{"steps": [
        {"spawn_root": {"name": "root", "goal": "g"}},
        {"expect": {"pointer": "/status", "equals": "exited"}},
        {"expect": {"step": 0, "pointer": "/status", "equals": "running"}}
    ]}"#;
    let (summary, lines) = run(text, None).await;
    let summary = summary.expect("runs");
    assert_eq!(summary.expectations_failed, 1);
    assert_eq!(summary.expectations_passed, 1);
    assert!(!summary.passed());
    assert_eq!(lines[1]["error"]["code"], "expectation_failed");
}

#[tokio::test]
async fn restart_without_a_state_directory_is_an_error() {
    let text = r#"{"steps": [{"spawn_root": {"name": "root", "goal": "g"}}, {"restart": {}}]}"#;
    let (summary, lines) = run(text, None).await;
    assert!(matches!(summary, Err(ScenarioError::RestartWithoutStateDir { step: 1 })), "{summary:?}");
    assert_eq!(lines.len(), 1, "the first step still printed");
}

#[test]
fn malformed_scenarios_are_refused_with_the_step_and_field() {
    let cases: [(&str, &str); 10] = [
        ("{\"steps\": [", "failed to parse the scenario"),
        ("[]", "a scenario is a JSON object"),
        ("{\"stepz\": []}", "unknown top-level field \"stepz\""),
        (r#"{"steps": [{"launch": {}}]}"#, "steps[0]: unknown step kind \"launch\""),
        (
            r#"{"steps": [{"call": {"as": "x", "tool": "list_child_processes"}}]}"#,
            "steps[0]: name \"x\" is not bound",
        ),
        (r#"{"steps": [{"spawn_root": {"name": "r"}}]}"#, "steps[0] (spawn_root): missing field `goal`"),
        (
            r#"{"steps": [{"spawn_root": {"name": "r", "goal": "g", "budget": {"tokens": "x"}}}]}"#,
            "steps[0] (spawn_root): budget.tokens",
        ),
        (
            r#"{"steps": [{"spawn_root": {"name": "r", "goal": "g"}}, {"await": "call9"}]}"#,
            "steps[1]: no pending call has handle \"call9\"",
        ),
        (
            r#"{"steps": [{"spawn_root": {"name": "r", "goal": "g"}}, {"expect": {"step": 5, "pointer": "/x", "exists": true}}]}"#,
            "steps[1] (expect): step",
        ),
        (
            r#"{"steps": [{"spawn_root": {"name": "r", "goal": "g"}, "call": {}}]}"#,
            "steps[0] (?): a step has exactly one key",
        ),
    ];
    for (text, want) in cases {
        let err = Scenario::from_json(text).expect_err(text);
        assert!(err.to_string().contains(want), "{text}: {err} (wanted {want:?})");
    }
}

#[tokio::test]
async fn roots_take_a_clearance_and_goal_labels_and_bound_oids_are_referenced_like_pids() {
    let text = r#"{"steps": [
        {"spawn_root": {"name": "root", "goal": "g", "clearance": ["pii", "public"], "goal_labels": ["pii"],
            "capabilities": [{"resource": "process:spawn", "rights": ["execute"], "delegable": true}]}},
        {"expect": {"pointer": "/memory/clearance", "equals": ["pii", "public"]}},
        {"expect": {"pointer": "/memory/context", "equals": ["pii"]}},
        {"call": {"as": "root", "tool": "fork_child_process", "args": {"goal": "c", "include_parent_roots": false},
            "bind": {"kid": "/pid", "kid_goal": "/goal_oid"}}},
        {"call": {"as": "kid", "tool": "create_object", "args": {"payload": 7, "root": true}, "bind": {"made": "/oid"}}},
        {"expect": {"pointer": "/labels", "equals": ["pii"]}},
        {"call": {"as": "kid", "tool": "process_exit"}},
        {"call": {"as": "root", "tool": "merge_child_memory", "args": {"child_pid": "$kid"},
            "bind": {"adopted": "/merged_oids/0", "skipped_goal": "/skipped_oids/0/oid"}}},
        {"expect": {"pointer": "/merged_oids", "equals": ["$made"]}},
        {"expect": {"pointer": "/skipped_oids/0/oid", "equals": "$kid_goal"}},
        {"call": {"as": "root", "tool": "read_object", "args": {"oid": "$adopted"}}},
        {"expect": {"pointer": "/payload", "equals": 7}},
        {"call": {"as": "root", "tool": "read_object", "args": {"oid": "$skipped_goal"}}},
        {"expect": {"pointer": "/error/code", "equals": "object_released"}},
        {"inspect": {"pid": "kid"}},
        {"expect": {"pointer": "/memory/collected", "equals": "merged"}},
        {"spawn_root": {"name": "narrow", "goal": "g", "clearance": [], "goal_labels": ["pii"]}}
    ]}"#;
    let (summary, lines) = run(text, None).await;
    let summary = summary.expect("runs");
    assert!(summary.passed(), "{summary}: {lines:#?}");
    assert_eq!(summary.expectations_passed, 8);
    let refused = &lines[16]["error"];
    assert_eq!(refused["code"], "flow_denied", "a root not cleared for its own goal: {refused}");
    assert!(refused["message"].as_str().is_some_and(|m| m.contains("\"pii\"")), "{refused}");

    let err =
        Scenario::from_json(r#"{"steps": [{"spawn_root": {"name": "r", "goal": "g", "clearance": "pii"}}]}"#)
            .expect_err("a clearance is a list");
    assert!(err.to_string().contains("steps[0] (spawn_root): clearance"), "{err}");
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios")
}

#[tokio::test]
async fn agent_steps_run_in_memory_and_refuse_what_is_not_an_agent() {
    let text = r#"{"agents": "agents.yaml", "steps": [
        {"spawn_agent": {"name": "helper", "agent": "helper", "prompt": "Help"}},
        {"agent_turn": {"as": "helper", "tool_calls": [{"name": "notebook_write", "arguments": {"nope": 1}}, {"name": "spawn_subagent", "arguments": {"agent": "lead", "prompt": "x"}}]}},
        {"expect": {"pointer": "/tool_results/1/result/error/code", "equals": "not_offered"}},
        {"agent_turn": {"as": "helper", "text": "done"}},
        {"expect": {"pointer": "/ended", "equals": true}},
        {"expect": {"pointer": "/result", "equals": "done"}},
        {"agent_turn": {"as": "helper", "text": "again"}},
        {"expect": {"pointer": "/error/code", "equals": "agent_ended"}},
        {"spawn_agent": {"name": "ghost", "agent": "nobody"}},
        {"expect": {"pointer": "/error/code", "equals": "bad_launch"}},
        {"spawn_root": {"name": "puppet", "goal": "g"}},
        {"agent_events": {"as": "puppet"}}
    ]}"#;
    let (summary, lines) = run_in(text, None, &examples_dir()).await;
    assert!(
        matches!(&summary, Err(ScenarioError::NotAnAgent { step: 11, image, .. }) if image == "puppet"),
        "{summary:?}: {lines:#?}"
    );
    for line in &lines {
        if line["kind"] == "expect" {
            assert!(line.get("error").is_none(), "failed expectation {line}");
        }
    }
}

#[tokio::test]
async fn agent_configurations_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("bad.yaml");
    std::fs::write(&config, "profiles:\n  - id: lead\n    roster: [nobody]\n").expect("write");
    let text = r#"{"agents": "bad.yaml", "steps": [{"spawn_agent": {"name": "lead", "agent": "lead"}}]}"#;
    let (summary, lines) = run_in(text, None, dir.path()).await;
    let err = summary.expect_err("refused");
    assert!(matches!(err, ScenarioError::AgentConfig { .. }), "{err}");
    assert!(err.to_string().contains("launch check refused"), "{err}");
    assert!(lines.is_empty());

    let err = Scenario::from_json(r#"{"steps": [{"spawn_agent": {"name": "lead", "agent": "lead"}}]}"#)
        .expect_err("no agents configuration");
    assert!(
        err.to_string().contains("steps[0] (spawn_agent): agent steps need an agent configuration"),
        "{err}"
    );
}

/// A turn that suspends on `wait_for_subagents` is seen as suspended however fast the
/// suspension commits, and prints the results of the calls before the wait: run many times,
/// the scenario never hangs and always binds the subagent it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_suspending_on_wait_for_subagents_is_seen_every_time() {
    let text = std::fs::read_to_string(examples_dir().join("agent_subagent_wait.json")).expect("the example");
    for run_no in 0..30 {
        let (summary, lines) = run_in(&text, None, &examples_dir()).await;
        let summary = summary.unwrap_or_else(|e| panic!("run {run_no}: {e}: {lines:#?}"));
        assert!(summary.passed(), "run {run_no}: {summary}: {lines:#?}");
    }
}
