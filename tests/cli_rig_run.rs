//! `agentvisor run`, `rig status` and `rig expand` as a user runs them: the example rig to its
//! end, its seats' tokens and source in the status, a terminal seat added to it, and a spec
//! the check refuses, which creates nothing.

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

fn assert_honest(text: &str) {
    let lower = text.to_lowercase();
    for word in ["resumed", "restored", "snapshot"] {
        assert!(!lower.contains(word), "{word:?} in {text}");
    }
}

#[test]
fn the_example_rig_runs_and_its_seats_show_their_own_tokens() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let out = agentvisor(&state, &["run", "examples/rigs/swarm.yaml"]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for member in ["lead", "second-opinion"] {
        let line =
            stdout.lines().find(|l| l.starts_with(member)).unwrap_or_else(|| panic!("{member}: {stdout}"));
        assert!(line.contains("realized") && line.contains("exited"), "{line}");
    }
    assert!(stdout.contains("report published"), "{stdout}");
    assert!(stdout.contains("forked from source session seat:lead"), "{stdout}");
    assert_honest(&stdout);

    let status = agentvisor(&state, &["rig", "status", "swarm", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let view: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    let seats = view["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 2, "{view}");
    let lead = &seats[0];
    let second = &seats[1];
    assert_eq!(lead["member"], "lead");
    assert_eq!(second["member"], "second-opinion");
    for seat in seats {
        assert_eq!(seat["status"], "realized", "{seat}");
        assert!(seat["token"].as_str().is_some_and(|t| !t.is_empty()), "{seat}");
    }
    assert_ne!(lead["token"], second["token"]);
    assert_eq!(lead["source"], serde_json::Value::Null);
    assert_eq!(second["source"], "seat:lead");
    let table = agentvisor(&state, &["rig", "status", "swarm"]);
    assert_eq!(table.status.code(), Some(0), "{}", text(&table.stderr));
    assert!(text(&table.stdout).contains("forked from source session seat:lead"), "{}", text(&table.stdout));
    assert_honest(&text(&table.stdout));

    let members = work.path().join("members.yaml");
    std::fs::write(&members, "members:\n  - {id: shell, runtime: terminal}\n").expect("write");
    let expand = agentvisor(&state, &["rig", "expand", "swarm", members.to_str().expect("utf-8")]);
    let stdout = text(&expand.stdout);
    assert_eq!(expand.status.code(), Some(0), "{stdout}\n{}", text(&expand.stderr));
    assert!(stdout.lines().any(|l| l.starts_with("shell") && l.contains("realized")), "{stdout}");
    let status = agentvisor(&state, &["rig", "status", "swarm", "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    let seats = view["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 3, "{view}");
    assert_eq!(seats[2]["member"], "shell");
    assert_eq!(seats[2]["status"], "realized");
    assert_eq!(seats[0]["token"], lead["token"], "the earlier seats are unchanged");
    assert_eq!(seats[1]["token"], second["token"], "the earlier seats are unchanged");
}

#[test]
fn a_terminal_member_with_a_session_source_is_refused_before_anything_is_created() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let spec = work.path().join("rig.yaml");
    std::fs::write(
        &spec,
        "id: shells\nmembers:\n  - id: shell\n    runtime: terminal\n    session_source:\n      mode: fork\n      \
         ref: {kind: native_id, value: 0b0165d7}\n",
    )
    .expect("write");
    let out = agentvisor(&state, &["run", spec.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("terminal_session_source"), "{}", text(&out.stderr));
    assert!(!state.exists(), "nothing is created for a refused spec");
}
