//! The `agentvisor` binary as a user runs it: the demo tree, the read-only views, and bad input.

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

/// Four folders of four subfolders of three files each: 48 files, 21 folders, 3 levels below
/// the root.
fn make_tree(root: &Path) {
    for a in 0..4 {
        for b in 0..4 {
            let dir = root.join(format!("d{a}")).join(format!("s{b}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in 0..3 {
                std::fs::write(dir.join(format!("f{f}.txt")), "one two three\nfour five\n").expect("write");
            }
        }
    }
}

#[test]
fn demo_runs_a_real_tree_and_results_flow_up() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data);
    let state = work.path().join("state");
    let out = agentvisor(&state, &["demo", data.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "demo failed: {stdout}\n{}", text(&out.stderr));
    // 48 files × 5 words, 69 processes (48 files + 21 folders) over 4 levels.
    assert!(stdout.contains("240 words"), "{stdout}");
    assert!(stdout.contains("in 48 files and 21 folders"), "{stdout}");
    assert!(stdout.contains("69 processes over 4 levels"), "{stdout}");

    let ps = agentvisor(&state, &["ps", "--all", "--json"]);
    assert!(ps.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    assert_eq!(rows.len(), 69);
    for row in rows {
        assert_eq!(row["status"], "exited", "{row}");
        for field in ["pid", "wait_state", "outcome", "result_oid", "cwd", "state_generation", "unread"] {
            assert!(row.get(field).is_some(), "missing {field} in {row}");
        }
        assert_eq!(row["unread"], 0, "{row}");
    }
    // No live rows are left behind.
    let live = agentvisor(&state, &["ps", "--json"]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&live.stdout).expect("json"),
        serde_json::json!([])
    );

    let root = rows.iter().find(|r| r["depth"] == 0).expect("a root");
    let pid = root["pid"].as_str().expect("pid");
    let inspect = agentvisor(&state, &["inspect", pid, "--json"]);
    assert!(inspect.status.success());
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    assert_eq!(view["result"]["payload"]["words"], 240);
    assert_eq!(view["result"]["materialized"], true);
    assert_eq!(view["children"].as_array().expect("children").len(), 4);

    let tree = agentvisor(&state, &["tree"]);
    assert!(tree.status.success());
    assert_eq!(text(&tree.stdout).lines().count(), 69);
}

#[test]
fn ps_and_inspect_show_unread_messages_without_acknowledging_them() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let scenario = work.path().join("mail.json");
    let steps = serde_json::json!({"steps": [
        {"spawn_root": {"name": "root", "goal": "send mail",
            "capabilities": [{"resource": "process:spawn", "rights": ["execute"], "delegable": true}]}},
        {"call": {"as": "root", "tool": "spawn_child_process", "args": {"goal": "get mail"}, "bind": {"kid": "/pid"}}},
        {"call": {"as": "root", "tool": "send_process_message", "args": {"to": "$kid", "body": "first"}}},
        {"call": {"as": "root", "tool": "send_process_message", "args": {"to": "$kid", "body": "second", "channel": "news"}}},
        {"call": {"as": "root", "tool": "send_process_message", "args": {"to": "$kid", "body": "third", "kind": "interrupt"}}},
        {"call": {"as": "kid", "tool": "read_process_messages", "args": {"limit": 1}}}
    ]});
    std::fs::write(&scenario, steps.to_string()).expect("write the scenario");
    let run = agentvisor(&state, &["script", scenario.to_str().expect("utf-8"), "--persist"]);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));

    let ps = agentvisor(&state, &["ps", "--json"]);
    assert!(ps.status.success(), "{}", text(&ps.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let by_goal =
        |goal: &str| rows.as_array().expect("rows").iter().find(|r| r["goal"] == goal).cloned().expect(goal);
    let kid = by_goal("get mail");
    assert_eq!(kid["unread"], 2, "{kid}");
    assert_eq!(by_goal("send mail")["unread"], 0);
    let table = text(&agentvisor(&state, &["ps"]).stdout);
    let header = table.lines().next().expect("a header");
    assert!(header.contains("UNREAD"), "{table}");
    let kid_pid = kid["pid"].as_str().expect("pid");
    let kid_line = table.lines().find(|l| l.starts_with(kid_pid)).expect("the kid's line");
    let column = header.find("UNREAD").expect("column");
    assert_eq!(kid_line[column..column + "UNREAD".len()].trim(), "2", "{table}");

    for _ in 0..2 {
        let out = agentvisor(&state, &["inspect", kid_pid, "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(view["unread"], 2, "inspect never acknowledges: {view}");
        assert_eq!(view["messages_total"], 3);
        let recent = view["recent_messages"].as_array().expect("recent messages");
        let seen: Vec<(&str, bool)> = recent
            .iter()
            .map(|m| (m["body"].as_str().expect("body"), m["acked"].as_bool().expect("acked")))
            .collect();
        assert_eq!(seen, [("first", true), ("second", false), ("third", false)]);
        assert_eq!(recent[2]["kind"], "interrupt");
    }
    let out = text(&agentvisor(&state, &["inspect", kid_pid]).stdout);
    assert!(out.lines().any(|l| l.starts_with("unread") && l.trim_end().ends_with(" 2")), "{out}");
    assert!(out.contains("channel=news unread: second"), "{out}");
}

#[test]
fn inspect_shows_object_memory() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let scenario = work.path().join("memory.json");
    let steps = serde_json::json!({"steps": [
        {"spawn_root": {"name": "root", "goal": "keep notes", "clearance": ["pii", "public"],
            "capabilities": [{"resource": "process:spawn", "rights": ["execute"], "delegable": true}]}},
        {"call": {"as": "root", "tool": "create_object",
            "args": {"payload": "n", "name": "notes", "labels": ["pii"], "root": true}}},
        {"call": {"as": "root", "tool": "load_skills",
            "args": {"skills": [{"name": "review", "allowed_tools": ["read_object"]}]}}},
        {"call": {"as": "root", "tool": "fork_child_process",
            "args": {"goal": "look", "mode": "speculative"}, "bind": {"kid": "/pid"}}},
        {"call": {"as": "kid", "tool": "create_object", "args": {"payload": 1, "ephemeral": true}}},
        {"call": {"as": "kid", "tool": "process_exit"}},
        {"call": {"as": "root", "tool": "merge_child_memory", "args": {"child_pid": "$kid"}}}
    ]});
    std::fs::write(&scenario, steps.to_string()).expect("write the scenario");
    let run = agentvisor(&state, &["script", scenario.to_str().expect("utf-8"), "--persist"]);
    assert!(run.status.success(), "{}\n{}", text(&run.stdout), text(&run.stderr));

    let ps = agentvisor(&state, &["ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let pid_of = |goal: &str| {
        rows.as_array().expect("rows").iter().find(|r| r["goal"] == goal).expect(goal)["pid"]
            .as_str()
            .expect("pid")
            .to_string()
    };
    let (root, kid) = (pid_of("keep notes"), pid_of("look"));

    let out = agentvisor(&state, &["inspect", &root, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let memory = &view["memory"];
    assert_eq!(memory["pid"], root.as_str());
    assert_eq!(memory["clearance"], serde_json::json!(["pii", "public"]));
    assert_eq!(memory["context"], serde_json::json!([]), "creating does not raise the context");
    assert_eq!(memory["skills"][0]["name"], "review");
    assert_eq!(memory["collected"], serde_json::Value::Null);
    let handles = memory["handles"].as_array().expect("handles");
    assert_eq!(handles.len(), 2, "its goal and its notes: {memory}");
    let notes = &handles[1];
    assert_eq!(notes["names"], serde_json::json!(["notes"]));
    assert_eq!(notes["labels"], serde_json::json!(["pii"]));
    assert_eq!(notes["rights"], serde_json::json!(["read", "write", "delegate"]));
    assert_eq!(notes["root"], true);
    assert_eq!(memory["roots"].as_array().map(Vec::len), Some(2));
    assert_eq!(memory["goal_oid"], handles[0]["oid"]);

    let out = agentvisor(&state, &["inspect", &kid, "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let memory = &view["memory"];
    assert_eq!(memory["collected"], "merged", "{memory}");
    assert_eq!(memory["handles"], serde_json::json!([]), "a merged child holds nothing");
    let owned = memory["owned"].as_array().expect("owned");
    assert_eq!(owned.len(), 2, "its goal and its scratch, both tombstones: {memory}");
    assert!(owned.iter().all(|o| o["released"] == true), "{memory}");

    let human = text(&agentvisor(&state, &["inspect", &root]).stdout);
    let notes_oid = notes["oid"].as_str().expect("oid");
    let line = human.lines().find(|l| l.trim_start().starts_with(notes_oid)).expect("a line for the notes");
    for part in ["data", "rights=read,write,delegate", "root", "names=notes", "labels=pii"] {
        assert!(line.contains(part), "{part} in {line:?}");
    }
    assert!(human.lines().any(|l| l.trim() == "clearance   pii public"), "{human}");
    assert!(human.lines().any(|l| l.trim() == "skills      review[read_object]"), "{human}");
    assert!(human.lines().any(|l| l.trim() == "handles     2"), "{human}");
    let human = text(&agentvisor(&state, &["inspect", &kid]).stdout);
    assert!(human.lines().any(|l| l.trim() == "collected   merged"), "{human}");
    let tombstones = human.lines().filter(|l| l.trim_end().ends_with(" released")).count();
    assert_eq!(tombstones, 2, "{human}");
    assert!(human.lines().any(|l| l.trim().starts_with("owned       2")), "{human}");
}

#[test]
fn events_prints_the_agent_event_file() {
    use agentvisor::agent::brain::{Message, Usage};
    use agentvisor::agent::telemetry::{AgentEvent, EVENTS_FILE, SpawnVia, Telemetry};

    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let out = agentvisor(&state, &["events"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), format!("no agent events recorded in {}", state.display()));

    std::fs::create_dir_all(&state).expect("mkdir");
    let (root, kid) = ("01a2290b-06f7-7147-946c-cde758620d40", "01a2290b-06f7-7147-946c-cde758620d41");
    let telemetry = Telemetry::with_jsonl(state.join(EVENTS_FILE)).expect("open");
    telemetry.emit(
        root,
        "root-1",
        AgentEvent::AgentSpawned {
            profile: "planner".into(),
            parent_agent_id: None,
            via: SpawnVia::Root,
            depth: 0,
            machine: None,
            state: None,
            inherited_messages: 0,
            inherited: Default::default(),
            opening: vec![Message::user("plan")],
        },
    );
    telemetry.emit(
        kid,
        "kid-1",
        AgentEvent::MessageReceived { from_pid: root.into(), text: "start".into(), kind: "normal".into() },
    );
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 2,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cost_micros: None,
    };
    telemetry.emit(
        root,
        "root-1",
        AgentEvent::AgentFinished { outcome: "exited".into(), result: None, usage },
    );
    drop(telemetry);

    let out = agentvisor(&state, &["events"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three records: {table}");
    for column in ["SEQ", "TIME", "PID", "AGENT", "TYPE", "SUMMARY"] {
        assert!(lines[0].contains(column), "{table}");
    }
    assert!(lines[1].trim_start().starts_with("1 "), "{table}");
    for part in [root, "root-1", "agent_spawned", "root as planner"] {
        assert!(lines[1].contains(part), "{part} in {table}");
    }
    assert!(lines[1].contains('T') && lines[1].contains('Z'), "a UTC time: {table}");
    assert!(lines[2].contains("message_received") && lines[2].contains("normal from"), "{table}");
    assert!(lines[3].contains("agent_finished") && lines[3].contains("exited"), "{table}");

    let out = agentvisor(&state, &["events", "--json"]);
    assert!(out.status.success());
    let raw = std::fs::read_to_string(state.join(EVENTS_FILE)).expect("read");
    assert_eq!(text(&out.stdout), raw, "the records as written");

    let out = agentvisor(&state, &["events", "--json", kid]);
    assert!(out.status.success());
    let records: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["pid"], kid);
    assert_eq!(records[0]["type"], "message_received");
    let out = agentvisor(&state, &["events", root]);
    assert_eq!(text(&out.stdout).lines().count(), 3, "{}", text(&out.stdout));

    let out = agentvisor(&state, &["events", "not-a-pid"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("agentvisor: invalid pid \"not-a-pid\""), "{stderr}");

    std::fs::write(state.join(EVENTS_FILE), format!("{raw}not json\n")).expect("write");
    let out = agentvisor(&state, &["events"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("line 4"), "{}", text(&out.stderr));
}

#[test]
fn bad_input_is_one_line_and_a_nonzero_exit() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let cases: Vec<Vec<&str>> = vec![
        vec!["ps"],                                  // no state yet
        vec!["inspect", "not-a-pid"],                // bad pid
        vec!["demo", "/definitely/not/here"],        // missing directory
        vec!["script", "/definitely/not/here.json"], // missing file
    ];
    for args in cases {
        let out = agentvisor(&state, &args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("agentvisor: ") || stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // An unknown pid in an existing state directory.
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("a.txt"), "x").expect("write");
    assert!(agentvisor(&state, &["demo", data.to_str().expect("utf-8")]).status.success());
    let out = agentvisor(&state, &["inspect", "01a2290b-06f7-7147-946c-cde758620d40"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unknown process"));
}

/// `ps --all` reads the history a page at a time: a tree of more processes than one page
/// lists every process once, in pid order, as JSON (one array) and as a table.
#[test]
fn ps_all_lists_a_history_longer_than_a_page_once_in_order() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    for d in 0..5 {
        let dir = data.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..220 {
            std::fs::write(dir.join(format!("f{f}.txt")), "one two\n").expect("write");
        }
    }
    let state = work.path().join("state");
    let out = agentvisor(&state, &["demo", data.to_str().expect("utf-8")]);
    assert!(out.status.success(), "demo failed: {}\n{}", text(&out.stdout), text(&out.stderr));

    let ps = agentvisor(&state, &["ps", "--all", "--json"]);
    assert!(ps.status.success(), "{}", text(&ps.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("one JSON array");
    let pids: Vec<String> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(|row| row["pid"].as_str().expect("a pid").to_string())
        .collect();
    assert_eq!(pids.len(), 1_106, "1,100 files and six folders");
    let mut sorted = pids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(pids, sorted, "every process once, in pid order");

    let table = agentvisor(&state, &["ps", "--all"]);
    assert!(table.status.success());
    let table = text(&table.stdout);
    let listed: Vec<&str> = table.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(listed, pids, "the table lists the same processes in the same order");

    let live = agentvisor(&state, &["ps", "--json"]);
    let live: serde_json::Value = serde_json::from_slice(&live.stdout).expect("json");
    assert_eq!(live, serde_json::json!([]), "nothing is live");
}
