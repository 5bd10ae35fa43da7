//! Claude Code and Codex seats through the command line, on the fake CLI
//! (`tests/fixtures/fake_agent_cli.py`): members run their profile's `cli` settings (the exact
//! command lines and environment), usage and cost are recorded and shown, a failed seat shows
//! its runtime's standard error, an interrupt kills a hung seat's whole process group and
//! records why (and leaves a running native seat paused by the shutdown), `rig restore`
//! continues each seat's own session, and an OpenRig spec runs, shows its edges and runs again
//! by its members' restore policies.

mod cli_support;

use cli_support::fake_cli::{SECRET, Work, args_of, gone};
use cli_support::text;
use serde_json::{Value, json};
use std::process::Stdio;

const PROFILES: &str = "  - id: reviewer
    runtime: claude-code
    description: reviews the change
    cli:
      program: PROGRAM
      model: sonnet
      permission_mode: plan
      allowed_tools: [Read]
      max_turns: 3
      env: {PROFILE_TOKEN: {from_env: FAKE_SECRET}}
      extra_args: [--add-dir, /tmp]
  - id: coder
    runtime: codex
    description: writes the fix
    cli:
      program: PROGRAM
      model: gpt-5
      sandbox: read-only
      approval_policy: never";

/// A work directory whose `rig.yaml` holds `members` (YAML list entries) under rig `pair`.
fn rig(members: &str) -> Work {
    let work = Work::new(PROFILES);
    // A rig's agent configuration plays the scripts beside it.
    std::fs::copy(work.path("scripts.json"), work.path("agents-scripts.json")).expect("scripts");
    if !members.is_empty() {
        std::fs::write(work.path("rig.yaml"), format!("id: pair\nmembers:\n{members}")).expect("rig spec");
    }
    work
}

const PAIR: &str =
    "  - {id: rev, runtime: claude-code, agent_ref: agents.yaml, profile: reviewer, prompt: Review it}
  - {id: cod, runtime: codex, agent_ref: agents.yaml, profile: coder, prompt: Fix it}
";

/// The `reviewer` profile's Claude Code command line, then `tail`.
fn claude_command(tail: &[&str]) -> Vec<String> {
    let head = [
        "-p",
        "--output-format",
        "json",
        "--model",
        "sonnet",
        "--permission-mode",
        "plan",
        "--allowedTools",
        "Read",
        "--max-turns",
        "3",
        "--add-dir",
        "/tmp",
    ];
    head.iter().chain(tail).map(|a| a.to_string()).collect()
}

fn seats(work: &Work, rig: &str) -> Vec<Value> {
    work.json(&["rig", "status", rig, "--json"])["seats"].as_array().expect("seats").clone()
}

fn seat<'a>(seats: &'a [Value], member: &str) -> &'a Value {
    seats.iter().find(|s| s["member"] == member).unwrap_or_else(|| panic!("no seat {member}: {seats:?}"))
}

fn invocation_of(work: &Work, runtime: &str) -> Vec<Value> {
    work.invocations().into_iter().filter(|i| (args_of(i)[0] == "exec") == (runtime == "codex")).collect()
}

#[test]
fn seats_run_their_profiles_settings_and_record_their_usage_and_cost() {
    let work = rig(PAIR);
    work.plan(json!({
        "turns": [{"text": "looking", "usage": {"input_tokens": 100, "output_tokens": 20}}],
        "result": "done",
        "cost": 0.25
    }));
    let out = work.run(&["run", "rig.yaml"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));

    let claude = invocation_of(&work, "claude-code");
    assert_eq!(claude.len(), 1, "{claude:?}");
    let argv = args_of(&claude[0]);
    let session = argv[argv.iter().position(|a| a == "--session-id").expect("a session id") + 1].clone();
    assert_eq!(argv, claude_command(&["--session-id", &session, "--", "Review it"]));
    assert_eq!(claude[0]["env"]["PROFILE_TOKEN"], SECRET, "the secret reaches the seat by reference");
    let codex = invocation_of(&work, "codex");
    assert_eq!(
        args_of(&codex[0]),
        [
            "exec",
            "--json",
            "--model",
            "gpt-5",
            "--sandbox",
            "read-only",
            "-c",
            "approval_policy=\"never\"",
            "--",
            "Fix it"
        ]
    );
    let cwd = std::fs::canonicalize(work.dir.path()).expect("cwd");
    assert_eq!(claude[0]["cwd"], cwd.display().to_string());

    // The run table shows each seat's usage and cost.
    let line = |member: &str| stdout.lines().find(|l| l.starts_with(member)).unwrap_or_default().to_string();
    assert!(line("rev").contains("0.25") && line("rev").contains("100"), "{stdout}");
    assert!(line("cod").contains("not reported") && line("cod").contains("101"), "{stdout}");

    // The seat store keeps it, and `rig status` shows it.
    let seats = seats(&work, "pair");
    assert_eq!(seat(&seats, "rev")["token"], session.as_str());
    assert_eq!(seat(&seats, "rev")["usage"]["cost_micros"], 250_000);
    assert_eq!(seat(&seats, "rev")["usage"]["input_tokens"], 100);
    assert_eq!(seat(&seats, "cod")["usage"]["input_tokens"], 101, "the turn's and the final turn's");
    assert_eq!(seat(&seats, "cod")["usage"]["cost_micros"], Value::Null);
    let table = text(&work.run(&["rig", "status", "pair"]).stdout);
    assert!(table.contains("COST_USD") && table.contains("0.25"), "{table}");
    // The secret is never written to the state directory.
    for file in ["rigs.sqlite", "agent-events.jsonl"] {
        let bytes = std::fs::read(work.state().join(file)).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains(SECRET), "the secret is in {file}");
    }
}

#[test]
fn a_failed_seat_shows_its_runtimes_standard_error_in_the_summary() {
    let work = rig("  - {id: rev, runtime: claude-code, agent_ref: agents.yaml, profile: reviewer}\n");
    work.plan(
        json!({"result": "gave up", "is_error": true, "exit": 1, "stderr": "API overloaded: try later"}),
    );
    let out = work.run(&["run", "rig.yaml"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("failed at start_command"), "{stdout}");
    assert!(
        stdout.contains("claude-code stderr:") && stdout.contains("| API overloaded: try later"),
        "{stdout}"
    );
    let seats = seats(&work, "pair");
    assert!(
        seat(&seats, "rev")["stderr"].as_str().unwrap_or_default().contains("API overloaded"),
        "{seats:?}"
    );
}

#[test]
fn a_member_naming_a_profile_its_configuration_lacks_is_a_spec_error() {
    let work = rig("  - {id: rev, runtime: claude-code, agent_ref: agents.yaml, profile: nobody}\n");
    work.plan(json!({"result": "never"}));
    let out = work.run(&["run", "rig.yaml"]);
    let stderr = text(&out.stderr);
    // One pass over the spec: the profile is checked against the configuration before launch.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown_profile") && stderr.contains("nobody"), "{stderr}");
    assert!(stderr.contains("members[0] (rev) profile"), "{stderr}");
    assert!(work.invocations().is_empty(), "the runtime ran: {:?}", work.invocations());
}

#[test]
fn an_interrupt_kills_a_hung_seats_process_group_and_records_it_interrupted() {
    let work = rig("  - {id: rev, runtime: claude-code, agent_ref: agents.yaml, profile: reviewer}\n");
    work.plan(json!({"hang": true, "grandchild": true}));
    work.pids_pipe();
    let child = work
        .command(&["run", "rig.yaml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    // Blocks until the hung seat has started its grandchild and reported both.
    let pids = work.read_pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let sent =
        std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("run ends");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for pid in pids {
        assert!(gone(pid), "process {pid} outlived the interrupted run");
    }
    assert!(stdout.contains("failed at interrupted"), "{stdout}");
    let seats = seats(&work, "pair");
    assert_eq!(seat(&seats, "rev")["status"], "failed", "{seats:?}");
    assert_eq!(seat(&seats, "rev")["failed_step"], "interrupted", "{seats:?}");
    assert!(seat(&seats, "rev")["error"].as_str().unwrap_or_default().contains("process group"), "{seats:?}");
}

#[test]
fn restore_continues_each_seats_own_session_never_its_source() {
    let source = "0b0165d7-cb4d-4650-90de-15c0a1ede9e6";
    let work = rig(&format!(
        "  - id: rev\n    runtime: claude-code\n    agent_ref: agents.yaml\n    profile: reviewer\n    \
         session_source: {{mode: fork, ref: {{kind: native_id, value: {source}}}}}\n  - {{id: cod, runtime: codex, \
         agent_ref: agents.yaml, profile: coder}}\n"
    ));
    let turn = |n: u64| json!({"turns": [{"text": "ok", "usage": {"input_tokens": n, "output_tokens": 1}}], "cost": 0.5});
    work.plan(json!({"fresh": turn(10), "fork": turn(10), "resume": turn(30)}));
    let out = work.run(&["run", "rig.yaml"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let before = seats(&work, "pair");
    let rev_token = seat(&before, "rev")["token"].as_str().expect("a token").to_string();
    let cod_token = seat(&before, "cod")["token"].as_str().expect("a token").to_string();
    assert_ne!(rev_token, source);
    let claude_fork = args_of(&invocation_of(&work, "claude-code")[0]);
    assert!(claude_fork.contains(&"--fork-session".to_string()) && claude_fork.contains(&source.to_string()));

    // Unknown members and unknown rigs are refused, and nothing runs.
    let calls = work.invocations().len();
    let refused = work.run(&["rig", "restore", "pair", "nobody"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("unknown_member"), "{}", text(&refused.stderr));
    let refused = work.run(&["rig", "restore", "nowhere"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("unknown_rig"), "{}", text(&refused.stderr));
    assert_eq!(work.invocations().len(), calls, "a refused restore ran something");

    let out = work.run(&["rig", "restore", "pair", "--prompt", "Carry on"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", text(&out.stdout));
    assert!(stderr.contains(&format!("restored seat rev (its own session {rev_token})")), "{stderr}");
    assert!(stderr.contains(&format!("restored seat cod (its own session {cod_token})")), "{stderr}");
    let claude = invocation_of(&work, "claude-code");
    let resumed = args_of(claude.last().expect("a restore"));
    assert_eq!(resumed, claude_command(&["--resume", &rev_token, "--", "Carry on"]));
    let codex = invocation_of(&work, "codex");
    let resumed = args_of(codex.last().expect("a restore"));
    assert_eq!(&resumed[..3], ["exec", "resume", cod_token.as_str()], "{resumed:?}");
    assert_eq!(resumed.last().map(String::as_str), Some("Carry on"));

    // Tokens stay; usage adds up over the launch and the restore.
    let after = seats(&work, "pair");
    assert_eq!(seat(&after, "rev")["token"], rev_token.as_str());
    assert_eq!(seat(&after, "rev")["source"], source);
    assert_eq!(seat(&after, "rev")["usage"]["input_tokens"], 40);
    assert_eq!(seat(&after, "rev")["usage"]["cost_micros"], 1_000_000);
    assert_eq!(seat(&after, "cod")["usage"]["input_tokens"], 42, "10 + 1 at launch, 30 + 1 restored");
}

/// An OpenRig spec: two pods, edges within and across them, the terminal sentinel, and a
/// reviewer that continues its own session when the spec runs again.
const OPENRIG: &str = "name: pair
version: 0.1
summary: A reviewer and a coder.
pods:
  - id: review
    label: Review
    members:
      - {id: alice, runtime: claude-code, agent_ref: local:agents.yaml, profile: reviewer, prompt: Review it,
         restore_policy: resume_if_possible}
      - {id: shell, runtime: terminal, agent_ref: builtin:terminal, profile: none}
    edges:
      - {kind: can_observe, from: alice, to: shell}
  - id: build
    members:
      - {id: bob, runtime: codex, agent_ref: local:agents.yaml, profile: coder, prompt: Fix it,
         restore_policy: checkpoint_only}
edges:
  - {kind: delegates_to, from: review.alice, to: build.bob}
";

#[test]
fn an_openrig_spec_validates_runs_shows_its_edges_and_runs_again_by_restore_policy() {
    let work = rig("");
    std::fs::write(work.path("openrig.yaml"), OPENRIG).expect("spec");
    let valid = work.run(&["rig", "validate", "openrig.yaml"]);
    assert!(valid.status.success(), "{}", text(&valid.stderr));
    work.plan(
        json!({"turns": [{"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 1}}], "cost": 0.1}),
    );

    let out = work.run(&["run", "openrig.yaml"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let seats = seats(&work, "pair");
    let ids: Vec<&str> = seats.iter().map(|s| s["member"].as_str().unwrap_or_default()).collect();
    assert_eq!(ids, ["review.alice", "review.shell", "build.bob"]);
    assert!(seats.iter().all(|s| s["status"] == "realized"), "{seats:?}");
    let alice = seat(&seats, "review.alice")["token"].as_str().expect("a token").to_string();
    let status = work.json(&["rig", "status", "pair", "--json"]);
    assert_eq!(
        status["edges"],
        json!([
            {"kind": "can_observe", "from": "review.alice", "to": "review.shell"},
            {"kind": "delegates_to", "from": "review.alice", "to": "build.bob"}
        ])
    );
    let table = text(&work.run(&["rig", "status", "pair"]).stdout);
    assert!(table.contains("review.alice delegates_to build.bob"), "{table}");

    // Run again: alice says resume_if_possible, so the rig is restored, not run anew.
    let calls = work.invocations().len();
    let again = work.run(&["run", "openrig.yaml"]);
    let stderr = text(&again.stderr);
    assert!(again.status.success(), "{}\n{stderr}", text(&again.stdout));
    assert!(stderr.contains(&format!("restored seat review.alice (its own session {alice})")), "{stderr}");
    let rigs = work.json(&["rig", "status", "--json"]);
    assert_eq!(rigs.as_array().map(Vec::len), Some(1), "no second instance: {rigs:?}");
    let later = work.invocations();
    assert_eq!(later.len(), calls + 1, "only alice ran again: {later:?}");
    let argv = args_of(later.last().expect("a call"));
    assert_eq!(argv, claude_command(&["--resume", &alice, "--", agentvisor::rig::run::RESTORE_PROMPT]));
    let stdout = text(&again.stdout);
    assert!(stdout.contains("kept as recorded (restore_policy checkpoint_only)"), "{stdout}");
}

#[test]
fn an_interrupt_leaves_a_running_native_seat_paused_by_the_shutdown() {
    use std::io::BufRead;
    let work = rig("  - {id: lead, runtime: native, agent_ref: waiter.yaml, profile: waiter}\n");
    // An agent whose model never answers: a server on loopback that takes the connection and
    // says nothing, so the seat's process is running (in its first turn) whenever the
    // interrupt comes. A waiting process would keep its state through a shutdown.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = silent.local_addr().expect("its address").port();
    std::fs::write(
        work.path("waiter.yaml"),
        format!(
            "brains:\n  - {{id: w, kind: openai, base_url: 'http://127.0.0.1:{port}/v1', model: m, \
             api_key_env: AGENTVISOR_TEST_SILENT_KEY}}\nprofiles:\n  - id: waiter\n    description: waits\n    \
             brain: w\n    window_tokens: 16000\n"
        ),
    )
    .expect("config");
    let mut child = work
        .command(&["run", "rig.yaml"])
        .env("AGENTVISOR_TEST_SILENT_KEY", "unused")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    // The live view prints one line per change when stderr is not a terminal.
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).expect("read") > 0, "run ended before the seat ran: {seen}");
        seen.push_str(&line);
        if line.starts_with("lead") && line.contains("running") {
            break;
        }
    }
    let sent =
        std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    let out = child.wait_with_output().expect("run ends");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{seen}{rest}");
    assert!(stdout.contains("its process is paused"), "{stdout}");
    let seats = seats(&work, "pair");
    assert_eq!(seat(&seats, "lead")["status"], "realized", "{seats:?}");
    // The shutdown paused it, a pause `run --resume` and `recover --resume` continue.
    let rows = work.rows();
    assert_eq!(
        (&rows[0]["status"], &rows[0]["pause_reason"]["kind"]),
        (&json!("paused"), &json!("shutdown")),
        "{rows:?}"
    );
    drop(silent);
}
