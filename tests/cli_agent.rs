//! `agentvisor agent` as a user runs it: the example swarm on scripted brains (spawn, fork,
//! messages, wait, exec into a declared machine and its transitions), then `inspect` and
//! `events` reading what it left in the state directory; a configuration the launch check
//! refuses launches nothing.

use std::path::Path;
use std::process::{Command, Output};

fn agentvisor(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn the_example_swarm_runs_to_its_published_report() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let out = agentvisor(
        &state,
        &[
            "agent",
            "examples/agents/swarm.yaml",
            "lead",
            "Write the report",
            "--scripts",
            "examples/agents/swarm-scripts.json",
        ],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("result  \"report published\""), "{stdout}");
    assert!(stdout.contains("in machine review state publish"), "{stdout}");
    // The subtree's cost includes the researcher it spawned and the fork it made of itself.
    let subtree = stdout.split("subtree cost by profile").nth(1).expect("a subtree section");
    for profile in ["lead", "researcher", "writer", "checker", "publisher"] {
        assert!(subtree.contains(&format!("  {profile} in ")), "{profile} missing from {subtree}");
    }
    for event in [
        "agent_transition exec to writer",
        "fsm_state review: enters draft",
        "fsm_state review: draft -> check",
    ] {
        assert!(stderr.contains(event), "{event} missing from {stderr}");
    }

    let ps = agentvisor(&state, &["ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    assert_eq!(rows.len(), 3, "the lead, its researcher and its fork: {rows:?}");
    assert!(rows.iter().all(|r| r["status"] == "exited"), "{rows:?}");
    let root = rows.iter().find(|r| r["depth"] == 0).expect("root")["pid"].as_str().expect("pid").to_string();

    let inspect = agentvisor(&state, &["inspect", &root, "--json"]);
    assert!(inspect.status.success(), "{}", text(&inspect.stderr));
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    let incarnations = view["agent"]["incarnations"].as_array().expect("incarnations");
    let profiles: Vec<&str> = incarnations.iter().filter_map(|i| i["profile"].as_str()).collect();
    assert_eq!(profiles, ["lead", "writer", "checker", "publisher"]);
    assert!(view["agent"]["subtree_by_profile"]["researcher"]["input_tokens"].as_u64().unwrap_or(0) > 0);

    let events = agentvisor(&state, &["events", "--json", &root]);
    assert!(events.status.success(), "{}", text(&events.stderr));
    let lines = text(&events.stdout);
    let kinds: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|v| v["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("agent_spawned"));
    assert_eq!(kinds.last().map(String::as_str), Some("agent_finished"));
    assert_eq!(kinds.iter().filter(|k| *k == "agent_transition").count(), 4, "{kinds:?}");
}

/// What a run of the example swarm left.
#[derive(Debug, PartialEq)]
struct SwarmRun {
    /// The `result` line.
    result: String,
    /// Each process row's depth and status.
    processes: Vec<(u64, String)>,
    /// The root's incarnations' profiles.
    profiles: Vec<String>,
    /// The type of every event of every process.
    streams: Vec<Vec<String>>,
}

/// Runs the example swarm with `scripts` on the state directory `state`.
fn swarm_run(state: &Path, scripts: &str) -> SwarmRun {
    let out = agentvisor(
        state,
        &["agent", "examples/agents/swarm.yaml", "lead", "Write the report", "--scripts", scripts],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{scripts}: {stdout}\n{}", text(&out.stderr));
    let result = stdout.lines().find(|l| l.starts_with("result")).unwrap_or_default().to_string();
    let ps = agentvisor(state, &["ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let rows = rows.as_array().expect("array").clone();
    let processes: Vec<(u64, String)> = rows
        .iter()
        .map(|r| (r["depth"].as_u64().unwrap_or(99), r["status"].as_str().unwrap_or_default().to_string()))
        .collect();
    let root = rows.iter().find(|r| r["depth"] == 0).expect("root")["pid"].as_str().expect("pid").to_string();
    let inspect = agentvisor(state, &["inspect", &root, "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    let profiles = view["agent"]["incarnations"]
        .as_array()
        .expect("incarnations")
        .iter()
        .filter_map(|i| i["profile"].as_str().map(str::to_string))
        .collect();
    let mut streams = Vec::new();
    for row in &rows {
        let pid = row["pid"].as_str().expect("pid");
        let events = agentvisor(state, &["events", "--json", pid]);
        let kinds = text(&events.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
            .map(|v| v["type"].as_str().unwrap_or_default().to_string())
            .collect();
        streams.push(kinds);
    }
    SwarmRun { result, processes, profiles, streams }
}

#[test]
fn the_example_swarm_ends_the_same_when_its_lead_answers_with_programs() {
    let work = tempfile::tempdir().expect("tempdir");
    let calls = swarm_run(&work.path().join("calls"), "examples/agents/swarm-scripts.json");
    let state = work.path().join("code");
    let code = swarm_run(&state, "examples/agents/swarm-code-scripts.json");
    assert_eq!(calls.result, "result  \"report published\"");
    assert_eq!(calls, code);

    // The transcript shows each program with the calls it made under it.
    let ps = agentvisor(&state, &["ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let root = rows.as_array().expect("array").iter().find(|r| r["depth"] == 0).expect("root")["pid"]
        .as_str()
        .expect("pid")
        .to_string();
    let transcript = text(&agentvisor(&state, &["transcript", &root]).stdout);
    assert!(transcript.contains("  → run_code "), "{transcript}");
    for nested in ["      → add_task ", "      → spawn_subagent ", "      → fork ", "      → exec "] {
        assert!(transcript.contains(nested), "{nested} missing from {transcript}");
    }
}

#[test]
fn a_refused_configuration_launches_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let out = agentvisor(&state, &["agent", "examples/agents/broken.yaml", "lead", "go"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("launch check refused"), "{}", text(&out.stderr));
    assert!(!state.exists(), "nothing is created before the configuration passes");
}

#[test]
fn a_prompt_too_long_is_refused_as_a_prompt_and_launches_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    // Under the largest single argument the OS passes (128 KiB), over what a launch holds.
    let prompt = "p".repeat(100_000);
    let out = agentvisor(&state, &["agent", "examples/agents/swarm.yaml", "lead", &prompt]);
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the prompt is 100000 bytes; at most"), "{stderr}");
    assert!(stderr.contains("shorten the prompt"), "{stderr}");
    assert!(!stderr.contains("goal"), "speaks of the prompt: {stderr}");
    assert!(stderr.len() < 1_000, "the prompt is not echoed: {} bytes", stderr.len());
}

#[test]
fn budget_flags_cap_the_root_and_bad_ones_launch_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "agent",
            "examples/agents/swarm.yaml",
            "lead",
            "Write the report",
            "--scripts",
            "examples/agents/swarm-scripts.json",
        ];
        args.extend_from_slice(extra);
        agentvisor(&state, &args)
    };
    for bad in [&["--max-cost-usd", "1e3"][..], &["--max-turns", "0"][..]] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out.stderr));
        assert!(!state.join("windows.sqlite").exists(), "nothing was created for {bad:?}");
    }
    let out = run(&["--max-turns", "1"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("status  failed"), "{stdout}");
    assert!(stdout.contains("budget_exhausted") && stdout.contains("budget turns exhausted"), "{stdout}");
}

#[test]
fn an_unset_key_variable_stops_the_launch_before_any_process() {
    let work = tempfile::tempdir().expect("tempdir");
    let config = work.path().join("cloud.yaml");
    std::fs::write(
        &config,
        "brains:\n  - {id: c, kind: openai, base_url: 'http://127.0.0.1:9/v1', model: m, api_key_env: AGENTVISOR_TEST_SURELY_UNSET_KEY}\nprofiles:\n  - {id: a, brain: c, window_tokens: 1000}\n",
    )
    .expect("write");
    let state = work.path().join("state");
    let out = agentvisor(&state, &["agent", config.to_str().expect("utf-8"), "a", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("AGENTVISOR_TEST_SURELY_UNSET_KEY") && stderr.contains("not set"), "{stderr}");
    assert!(!state.join("windows.sqlite").exists(), "no state was opened");
}
