//! Claude Code and Codex as supervised processes, through the command line, with a fake CLI
//! (`tests/fixtures/fake_agent_cli.py`) that speaks their stream formats and calls
//! agentvisor's tools over MCP as the real tools do: the exact command lines, the result and
//! cost, a child spawned and waited on through MCP, a budget exhausted mid-stream, cancel
//! killing the whole process group, pause refused, and a crash continued with the session's
//! own id.

mod cli_support;

use cli_support::fake_cli::{SECRET, Work, args_of, gone, gone_now};
use cli_support::text;
use serde_json::{Value, json};
use std::process::Stdio;

const LEAD: &str = "  - id: lead
    runtime: claude-code
    description: leads the work
    roster: [worker]
    capabilities: {subagents: true}
    cli:
      program: PROGRAM
      model: sonnet
      permission_mode: acceptEdits
      allowed_tools: [Read, Grep]
      max_turns: 7
      env: {PROFILE_TOKEN: {from_env: FAKE_SECRET}, PROFILE_MODE: test}
      extra_args: [--add-dir, /tmp]";

#[test]
fn a_claude_code_agent_runs_its_profile_and_its_result_and_cost_are_the_process() {
    let work = Work::new(LEAD);
    work.plan(json!({
        "turns": [
            {"text": "Reading the code.", "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 50}},
            {"text": "Found it.", "usage": {"input_tokens": 200, "output_tokens": 30}}
        ],
        "result": "all done",
        "cost": 0.0123456
    }));
    let out = work.agent("lead", "Review the code");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("status  exited"), "{stdout}");
    assert!(stdout.contains("result  \"all done\""), "{stdout}");

    let calls = work.invocations();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let argv = args_of(&calls[0]);
    let session = argv[5].clone();
    assert!(uuid::Uuid::parse_str(&session).is_ok(), "{argv:?}");
    let rows = work.rows();
    let pid = rows[0]["pid"].as_str().expect("pid").to_string();
    assert_eq!(rows[0]["image"], "agent:claude-code", "{rows:?}");
    let state = std::fs::canonicalize(work.state()).expect("state");
    let mcp = json!({"mcpServers": {"agentvisor": {
        "command": env!("CARGO_BIN_EXE_agentvisor"),
        "args": ["mcp", "--state", state.display().to_string(), "--as", pid],
    }}});
    let note_at = argv.iter().position(|a| a == "--append-system-prompt").expect("a note") + 1;
    let expected: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--session-id",
        &session,
        "--model",
        "sonnet",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Read,Grep",
        "--max-turns",
        "7",
        "--add-dir",
        "/tmp",
        "--mcp-config",
        &mcp.to_string(),
        "--append-system-prompt",
        &argv[note_at],
        "--",
        "Review the code",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(argv, expected);
    assert!(argv[note_at].contains("`worker` (image `agent`): counts things"), "{}", argv[note_at]);
    let cwd = std::fs::canonicalize(work.dir.path()).expect("cwd");
    assert_eq!(calls[0]["cwd"], cwd.display().to_string());
    assert_eq!(calls[0]["env"]["PROFILE_TOKEN"], SECRET);
    assert_eq!(calls[0]["env"]["PROFILE_MODE"], "test");

    let view = work.json(&["inspect", &pid, "--json"]);
    let usage = &view["agent"]["incarnations"][0]["usage"];
    assert_eq!(usage["input_tokens"], 350, "{view}");
    assert_eq!(usage["output_tokens"], 50);
    assert_eq!(usage["cached_tokens"], 50);
    // 0.0123456 dollars, rounded up to the micro-dollar.
    assert_eq!(usage["cost_micros"], 12346);
    assert_eq!(view["agent"]["identity"]["session_id"], session.as_str());
    assert_eq!(view["agent"]["subtree_by_profile"]["lead"]["cost_micros"], 12346);

    let events = text(&work.run(&["events", "--json", &pid]).stdout);
    let kinds: Vec<String> = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json")["type"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(kinds, ["agent_spawned", "turn_completed", "turn_completed", "agent_finished"], "{events}");
    assert!(events.contains("Found it."));
    let all = std::fs::read_to_string(work.state().join("agent-events.jsonl")).unwrap_or_default();
    assert!(!all.contains(SECRET));
}

#[test]
fn a_claude_code_process_spawns_and_waits_on_a_native_child_through_mcp() {
    let work = Work::new(LEAD);
    let goal = json!({"agent": "worker", "prompt": "Count the items."}).to_string();
    work.plan(json!({
        "turns": [
            {"text": "Starting a worker.", "mcp": {"tool": "spawn_child_process", "arguments": {"image": "agent", "goal": goal}}},
            {"mcp": {"tool": "wait_child_process", "arguments": {"child_pid": "{{prev.pid}}", "block": true}}},
            {"mcp": {"tool": "read_object", "arguments": {"oid": "{{prev.result_oid}}"}}}
        ],
        "result": "the worker counted",
        "cost": 0.5
    }));
    let out = work.agent("lead", "Get the count");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("result  \"the worker counted\""), "{stdout}");

    let rows = work.rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["status"] == "exited"), "{rows:?}");
    let root = rows.iter().find(|r| r["depth"] == 0).expect("root");
    let child = rows.iter().find(|r| r["depth"] == 1).expect("child");
    assert_eq!(child["parent"], root["pid"], "{rows:?}");
    assert_eq!(child["image"], "agent");

    let root_pid = root["pid"].as_str().expect("pid");
    let events = text(&work.run(&["events", "--json", root_pid]).stdout);
    assert!(events.contains("mcp__agentvisor__wait_child_process"), "{events}");
    assert!(events.contains("mcp__agentvisor__read_object"), "{events}");
    assert!(events.contains("42 items"), "the child's result reached the session: {events}");
    let view = work.json(&["inspect", root_pid, "--json"]);
    let subtree = &view["agent"]["subtree_by_profile"];
    assert_eq!(subtree["lead"]["cost_micros"], 500000, "{view}");
    assert!(subtree["worker"].is_object(), "the child's cost is in the parent's subtree: {view}");
}

#[test]
fn a_budget_exhausted_mid_stream_ends_the_session_and_fails_the_process() {
    let work = Work::new(&format!("{LEAD}\n    budget: {{tokens: 150}}"));
    let turns: Vec<Value> = (0..40)
        .map(|i| json!({"text": format!("step {i}"), "usage": {"input_tokens": 40, "output_tokens": 20}}))
        .collect();
    work.plan(json!({"grandchild": true, "turns": turns, "result": "never"}));
    let out = work.agent("lead", "Spend");
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let rows = work.rows();
    assert_eq!(rows[0]["status"], "failed", "{rows:?}");
    let pid = rows[0]["pid"].as_str().expect("pid");
    let view = work.json(&["inspect", pid, "--json"]);
    assert!(view["process"]["outcome"].to_string().contains("budget_exhausted"), "{view}");
    for pid in work.read_pids() {
        assert!(gone(pid), "process {pid} of the session's group outlived it");
    }
    let events = text(&work.run(&["events", "--json", pid]).stdout);
    assert!(!events.contains("step 39"), "the session went on after its budget ran out: {events}");
}

#[test]
fn cancel_kills_the_whole_process_group_and_pause_is_refused() {
    let work = Work::new(LEAD);
    work.pids_pipe();
    work.plan(json!({"grandchild": true, "turns": [{"text": "working"}], "hang": true}));
    let owner = work
        .command(&["agent", "agents.yaml", "lead", "Work forever", "--scripts", "scripts.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pids = work.read_pids();
    let rows = work.rows();
    let pid = rows[0]["pid"].as_str().expect("pid").to_string();

    let pause = work.run(&["signal", &pid, "pause"]);
    assert!(!pause.status.success());
    let refusal = text(&pause.stderr) + &text(&pause.stdout);
    assert!(refusal.contains("pause_unsupported") && refusal.contains("Claude Code"), "{refusal}");

    let cancel = work.run(&["signal", &pid, "cancel"]);
    assert!(cancel.status.success(), "{}", text(&cancel.stderr));
    let out = owner.wait_with_output().expect("the owner ends");
    assert!(text(&out.stdout).contains("status  killed"), "{}", text(&out.stdout));
    for pid in pids {
        assert!(gone(pid), "process {pid} of the session's group outlived the cancel");
    }
}

#[test]
fn after_a_crash_the_session_is_paused_and_resuming_continues_its_own_session() {
    let work = Work::new(LEAD);
    work.pids_pipe();
    work.plan(json!({
        "fresh": {"turns": [{"text": "half way"}], "hang": true},
        "resume": {"turns": [{"text": "picking up"}], "result": "finished after the crash", "cost": 0.01}
    }));
    let mut owner = work
        .command(&["agent", "agents.yaml", "lead", "Long task", "--scripts", "scripts.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pids = work.read_pids();
    owner.kill().expect("SIGKILL the owner");
    owner.wait().expect("reaped");
    // The owner died; the session command it ran is an orphan now, still running.
    assert!(pids.iter().all(|pid| !gone_now(*pid)), "the orphan is not running: {pids:?}");
    let rows = work.rows();
    // A read-only view shows the crashed execution as stale; reopened, it is paused.
    assert_eq!((&rows[0]["status"], &rows[0]["stale"]), (&json!("running"), &json!(true)), "{rows:?}");
    let pid = rows[0]["pid"].as_str().expect("pid").to_string();

    let out = work.run(&["recover", "--resume"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    // The reopened runtime ended the orphan before it continued the session.
    for pid in &pids {
        assert!(gone(*pid), "the crashed owner's session command {pid} still runs beside the continued one");
    }
    let calls = work.invocations();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let first = args_of(&calls[0]);
    let second = args_of(&calls[1]);
    let session = &first[5];
    assert_eq!(&second[4..6], ["--resume", session.as_str()], "{second:?}");
    assert!(!second.contains(&"--session-id".to_string()), "{second:?}");
    assert_eq!(second.last().map(String::as_str), Some(agentvisor::agent::external::CONTINUE_PROMPT));
    let rows = work.rows();
    assert_eq!(rows[0]["status"], "exited", "{rows:?}");
    let view = work.json(&["inspect", &pid, "--json"]);
    assert_eq!(view["agent"]["identity"]["session_id"], session.as_str());
}

#[test]
fn a_codex_agent_runs_with_its_sandbox_and_reports_its_thread_and_usage() {
    let work = Work::new(
        "  - id: coder
    runtime: codex
    cli:
      program: PROGRAM
      model: gpt-5-codex
      sandbox: workspace-write
      approval_policy: never",
    );
    work.plan(json!({
        "turns": [{"text": "Editing.", "usage": {"input_tokens": 500, "cache_read_input_tokens": 100, "output_tokens": 40}}],
        "result": "patched"
    }));
    let out = work.agent("coder", "Fix the bug");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("result  \"patched\""), "{stdout}");
    let rows = work.rows();
    let pid = rows[0]["pid"].as_str().expect("pid").to_string();
    assert_eq!(rows[0]["image"], "agent:codex");
    let argv = args_of(&work.invocations()[0]);
    let state = std::fs::canonicalize(work.state()).expect("state").display().to_string();
    let command = format!("mcp_servers.agentvisor.command=\"{}\"", env!("CARGO_BIN_EXE_agentvisor"));
    let list = format!("mcp_servers.agentvisor.args=[\"mcp\",\"--state\",\"{state}\",\"--as\",\"{pid}\"]");
    assert_eq!(
        argv[..13],
        [
            "exec",
            "--json",
            "--model",
            "gpt-5-codex",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-c",
            &command,
            "-c",
            &list,
            "--"
        ]
    );
    assert!(argv[13].ends_with("\n\nFix the bug"), "{argv:?}");
    let view = work.json(&["inspect", &pid, "--json"]);
    let usage = &view["agent"]["incarnations"][0]["usage"];
    assert_eq!(usage["input_tokens"], 501, "{view}");
    assert_eq!(usage["cached_tokens"], 100);
    assert!(usage["cost_micros"].is_null(), "Codex reports no cost: {view}");
    let thread = view["agent"]["identity"]["session_id"].as_str().expect("a thread id");
    assert!(uuid::Uuid::parse_str(thread).is_ok());
}

#[test]
fn a_failed_session_keeps_the_runtimes_standard_error_in_the_outcome() {
    let work = Work::new(LEAD);
    work.plan(json!({"turns": [], "result": "it broke", "is_error": true, "exit": 1, "stderr": "fatal: the model refused"}));
    let out = work.agent("lead", "Break");
    assert!(!out.status.success());
    let rows = work.rows();
    assert_eq!(rows[0]["status"], "failed");
    let pid = rows[0]["pid"].as_str().expect("pid");
    let view = work.json(&["inspect", pid, "--json"]);
    let outcome = view["process"]["outcome"].to_string();
    assert!(outcome.contains("it broke") && outcome.contains("fatal: the model refused"), "{outcome}");
}

#[test]
fn the_launch_check_refuses_what_an_external_profile_cannot_honour() {
    let yaml = "
brains: [{id: b, kind: scripted, script: s}]
profiles:
  - id: c
    runtime: codex
    brain: b
    capabilities: {exec: true}
    roster: [n]
    cli: {permission_mode: plan, sandbox: everything, env: {\"1BAD\": x, OK: {from_env: \"not a name\"}}, max_turns: 0}
  - id: n
    brain: b
    window_tokens: 1000
    cli: {model: m}
";
    let report = match agentvisor::agent::config::load_yaml(yaml) {
        Err(agentvisor::agent::config::LoadError::Check(report)) => report,
        other => panic!("not refused by the launch check: {other:?}"),
    };
    let problems: Vec<(String, String)> =
        report.problems().iter().map(|p| (p.path.clone(), p.code.as_str().to_string())).collect();
    for (path, code) in [
        ("profiles.c.brain", "field_not_for_kind"),
        ("profiles.c.capabilities.exec", "field_not_for_kind"),
        ("profiles.c.cli.permission_mode", "field_not_for_kind"),
        ("profiles.c.cli.max_turns", "field_not_for_kind"),
        ("profiles.c.cli.sandbox", "setting_out_of_range"),
        ("profiles.c.cli.env.1BAD", "invalid_env_var_name"),
        ("profiles.c.cli.env.OK.from_env", "invalid_env_var_name"),
        ("profiles.n.cli", "field_not_for_kind"),
    ] {
        assert!(problems.iter().any(|(p, c)| p == path && c == code), "no {code} at {path}: {problems:?}");
    }
}
