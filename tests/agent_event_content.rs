//! What agent events carry of what the model said and did, through the command line: each
//! turn's text, each call's arguments and answer, the size cap, and the secrets the
//! configuration names (and the brains' API keys) replaced by `[redacted]` before anything is
//! written.

mod cli_support;

use agentvisor::agent::limits::EVENT_FIELD_CHARS_MAX;
use cli_support::text;
use serde_json::{Value, json};
use std::process::Command;

const SECRET: &str = "hunter2-literal-secret";
const API_KEY: &str = "sk-test-api-key-value-8c1f";
const OTHER_SECRET: &str = "db-password-from-env-77";

const CONFIG: &str = "
brains:
  - {id: s, kind: scripted, script: main}
  - {id: cloud, kind: openai, base_url: 'http://127.0.0.1:9/v1', model: m, api_key_env: AGENTVISOR_CONTENT_TEST_KEY}
profiles:
  - id: a
    brain: s
    window_tokens: 100000
    capabilities: {notebook: true}
telemetry:
  redact: [hunter2-literal-secret]
  redact_env: [AGENTVISOR_CONTENT_TEST_OTHER]
";

#[test]
fn events_carry_text_arguments_and_results_capped_and_redacted() {
    let work = tempfile::tempdir().expect("tempdir");
    let long = "x".repeat(EVENT_FIELD_CHARS_MAX + 500);
    let page = format!("the key is {SECRET}, the other {OTHER_SECRET} {long}");
    let scripts = json!({"main": {"turns": [
        {"text": format!("Noting it down. My key is {API_KEY}."),
         "tool_calls": [{"name": "write_note", "arguments": {"page": "p", "text": page}}]},
        {"tool_calls": [
            {"name": "read_note", "arguments": {"page": "p"}},
            {"name": "exec", "arguments": {"agent": "a"}}
        ]},
        {"text": "done"}
    ]}});
    std::fs::write(work.path().join("a.yaml"), CONFIG).expect("write");
    std::fs::write(work.path().join("scripts.json"), scripts.to_string()).expect("write");
    let state = work.path().join("state");
    let out = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(&state)
        .args(["agent", "a.yaml", "a", "Note the key", "--scripts", "scripts.json"])
        .current_dir(work.path())
        .env("AGENTVISOR_CONTENT_TEST_KEY", API_KEY)
        .env("AGENTVISOR_CONTENT_TEST_OTHER", OTHER_SECRET)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));

    let file = std::fs::read_to_string(state.join("agent-events.jsonl")).expect("events");
    for secret in [SECRET, API_KEY, OTHER_SECRET] {
        assert!(!file.contains(secret), "{secret} reached the event file");
        assert!(!text(&out.stderr).contains(secret), "{secret} reached stderr");
    }
    let turns: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .filter(|r| r["type"] == "turn_completed")
        .collect();
    assert_eq!(turns.len(), 3);

    // Turn 1: the text (its key redacted) and the call, its arguments cut at the cap.
    assert_eq!(turns[0]["text"], "Noting it down. My key is [redacted].");
    let write = &turns[0]["calls"][0];
    assert_eq!(write["tool"], "write_note");
    let arguments = write["arguments"].as_str().expect("arguments over the cap are their JSON text, cut");
    assert!(
        arguments.starts_with(r#"{"page":"p","text":"the key is [redacted], the other [redacted] xxx"#),
        "{arguments}"
    );
    let cut = arguments.rsplit_once("… [").expect("a cut marker").1;
    assert!(cut.ends_with(" chars cut]"), "{cut}");
    let cut_chars: usize = cut.trim_end_matches(" chars cut]").parse().expect("a count");
    let full =
        json!({"page": "p", "text": page.replace(SECRET, "[redacted]").replace(OTHER_SECRET, "[redacted]")});
    assert_eq!(
        cut_chars,
        full.to_string().chars().count() - EVENT_FIELD_CHARS_MAX,
        "the marker counts what was cut"
    );
    assert!(write["result"].is_object() && write.get("error").is_none(), "{write}");

    // Turn 2: the secret came back in a tool's result, redacted and cut; a refused call has
    // its error instead of a result.
    let read = &turns[1]["calls"][0];
    assert_eq!(read["tool"], "read_note");
    let result = read["result"].as_str().expect("a result over the cap is its JSON text, cut");
    assert!(result.contains("the key is [redacted]") && result.ends_with(" chars cut]"), "{result}");
    let exec = &turns[1]["calls"][1];
    assert_eq!((exec["tool"].as_str(), exec.get("result")), (Some("exec"), None));
    assert!(exec["error"]["code"].is_string() && exec["error"]["message"].is_string(), "{exec}");
    assert_eq!(turns[1]["tool_calls"], json!(["read_note", "exec"]));
    assert_eq!(turns[1]["text"], Value::Null);

    // Turn 3: text only, no calls.
    assert_eq!(
        (turns[2]["text"].as_str(), turns[2]["calls"].as_array().map(Vec::len)),
        (Some("done"), Some(0))
    );
}

#[test]
fn a_telemetry_section_with_unknown_fields_or_bad_entries_is_refused() {
    use agentvisor::agent::config::{ProblemCode, load_yaml};
    let base = "brains:\n  - {id: s, kind: scripted, script: main}\nprofiles:\n  - {id: a, brain: s, window_tokens: 10}\n";
    let unknown = load_yaml(&format!("{base}telemetry: {{redcat: [x]}}\n")).expect_err("an unknown field");
    assert!(unknown.to_string().contains("redcat"), "names the field: {unknown}");
    let bad = load_yaml(&format!("{base}telemetry: {{redact: [abc], redact_env: [1BAD, GOOD]}}\n"))
        .expect_err("bad entries");
    let agentvisor::agent::config::LoadError::Check(report) = bad else { panic!("a launch report: {bad}") };
    let found: Vec<(String, ProblemCode)> =
        report.problems().iter().map(|p| (p.path.clone(), p.code)).collect();
    assert_eq!(
        found,
        [
            ("telemetry.redact[0]".to_string(), ProblemCode::RedactLiteralTooShort),
            ("telemetry.redact_env[0]".to_string(), ProblemCode::InvalidEnvVarName),
        ]
    );
    assert!(!report.to_string().contains("abc"), "a would-be secret is not repeated: {report}");
}
