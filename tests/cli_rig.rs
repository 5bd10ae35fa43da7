//! `agentvisor rig validate` as a user runs it: a valid spec, a spec with problems, a missing
//! file.

use std::path::Path;
use std::process::{Command, Output};

fn agentvisor(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn rig_validate_prints_a_summary_or_every_problem() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    // The native member's agent configuration: `rig validate` reads it and checks its profile.
    std::fs::write(
        work.path().join("a.yaml"),
        "brains:\n  - {id: b, kind: scripted, script: s}\nprofiles:\n  - {id: planner, brain: b, window_tokens: 4096}\n",
    )
    .expect("write");
    let good = work.path().join("rig.yaml");
    std::fs::write(
        &good,
        "id: review-rig\nmembers:\n  - id: reviewer-2\n    runtime: claude-code\n    session_source:\n      \
         mode: fork\n      ref: {kind: native_id, value: 0b0165d7}\n  - {id: planner, runtime: native, agent_ref: \
         a.yaml, profile: planner}\n  - {id: shell, runtime: terminal}\n",
    )
    .expect("write");
    let out = agentvisor(&state, &["rig", "validate", good.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "rig review-rig: 3 members valid\n");

    let bad = work.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "id: review-rig\nmembers:\n  - id: reviewer-2\n    runtime: claude-code\n    session_source:\n      \
         mode: fork\n      ref:\n        kind: artifact_path\n        value: /tmp/x\n  - id: shell\n    runtime: \
         terminal\n    session_source: {mode: fork}\n",
    )
    .expect("write");
    let out = agentvisor(&state, &["rig", "validate", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[0].ends_with("bad.yaml: 2 problems"), "{stderr}");
    assert!(
        lines[1].starts_with(
            "line 8: members[0] (reviewer-2) session_source.ref.kind: `artifact_path` is deferred"
        ),
        "{stderr}"
    );
    assert!(lines[1].ends_with("(deferred_ref_kind)"), "{stderr}");
    assert!(lines[2].starts_with("line 12: members[1] (shell) session_source:"), "{stderr}");
    assert!(lines[2].ends_with("(terminal_session_source)"), "{stderr}");
    assert!(text(&out.stdout).is_empty());

    let out =
        agentvisor(&state, &["rig", "validate", work.path().join("missing.yaml").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("failed to read"), "{}", text(&out.stderr));
}
