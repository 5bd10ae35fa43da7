//! Agent telemetry through its public surface: emit and what it feeds (records, per-agent
//! streams, subscribers), the JSONL file and reading it back, the serde shape of every event,
//! and the typed errors.

use agentvisor::agent::brain::{Message, Usage};
use agentvisor::agent::telemetry::{
    AgentEvent, CallError, CallRecord, EVENTS_FILE, EventFileReader, EventRecord, ModuleMoveRecord, REDACTED,
    Redactor, SpawnVia, Telemetry, TelemetryError, TransitionKind, cap_text, cap_value, last_seq, read_jsonl,
};
use agentvisor::agent::window::ChunkId;
use serde_json::{Value, json};
use std::io::Write;

mod seeded;

const PID: &str = "01a2290b-06f7-7147-946c-cde758620d40";
const OTHER_PID: &str = "01a2290b-06f7-7147-946c-cde758620d41";

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage { input_tokens, output_tokens, cached_tokens: 0, cache_write_tokens: 0, cost_micros: None }
}

/// One of every event, in the order an agent's life might produce them.
fn every_event() -> Vec<AgentEvent> {
    vec![
        AgentEvent::AgentSpawned {
            profile: "planner".into(),
            parent_agent_id: None,
            via: SpawnVia::Root,
            depth: 0,
            machine: Some("review".into()),
            state: Some("draft".into()),
            inherited_messages: 0,
            inherited: Default::default(),
            opening: vec![Message::user("plan the release")],
        },
        AgentEvent::ContextChunk {
            chunk: ChunkId::of(b"chunk"),
            messages: vec![Message::note("earlier")].into(),
        },
        AgentEvent::FsmState { machine: "review".into(), state: "draft".into(), from: None },
        AgentEvent::TurnCompleted {
            turn: 1,
            usage: usage(120, 30),
            text: Some("making it".into()),
            tool_calls: vec!["create_object".into()],
            calls: vec![CallRecord {
                tool: "create_object".into(),
                arguments: json!({"name": "plan"}),
                result: Some(json!({"oid": "o-1"})),
                error: None,
                calls: Vec::new(),
            }],
            compacted: false,
        },
        AgentEvent::Compacted { turn: 2, tokens_before: 9000, tokens_after: 2000, cut: 40 },
        AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "status?".into() },
        AgentEvent::MessageReceived {
            from_pid: OTHER_PID.into(),
            text: "done".into(),
            kind: "normal".into(),
        },
        AgentEvent::ToolRefused {
            turn: 2,
            tool: "exec".into(),
            code: "not_on_roster".into(),
            message: "exec may name: coder".into(),
        },
        AgentEvent::AgentTransition {
            kind: TransitionKind::Fsm,
            to_agent_id: "agent-2".into(),
            to_profile: "reviewer".into(),
            modules: vec![ModuleMoveRecord { module: "tasks".into(), action: "kept".into() }],
            turn: 2,
        },
        AgentEvent::AgentFinished {
            outcome: "exited".into(),
            result: Some(json!({"ok": true})),
            usage: usage(300, 80),
        },
    ]
}

#[test]
fn emit_feeds_records_streams_and_subscribers_in_seq_order() {
    let telemetry = Telemetry::new();
    let mut subscriber = telemetry.subscribe();
    let a = telemetry.emit(
        PID,
        "agent-1",
        AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "a".into() },
    );
    let clone = telemetry.clone();
    let b =
        clone.emit(OTHER_PID, "agent-9", AgentEvent::MessageSent { to_pid: PID.into(), text: "b".into() });
    let c = telemetry.emit(
        PID,
        "agent-1",
        AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "c".into() },
    );

    assert_eq!((a.seq, b.seq, c.seq), (1, 2, 3), "one counter shared by clones, from 1");
    assert_eq!((a.pid.as_str(), a.agent_id.as_str()), (PID, "agent-1"));
    assert!(a.at_ms > 1_600_000_000_000, "unix milliseconds: {}", a.at_ms);
    assert!(a.at_ms <= c.at_ms);
    assert_eq!(telemetry.records(), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(clone.records(), telemetry.records(), "clones share one stream");
    assert_eq!(telemetry.stream("agent-1"), vec![a.clone(), c.clone()]);
    assert_eq!(telemetry.stream("agent-9"), vec![b.clone()]);
    assert_eq!(telemetry.stream("nobody"), vec![]);
    for expected in [a, b, c] {
        assert_eq!(subscriber.try_recv().expect("a record"), expected);
    }
    assert!(subscriber.try_recv().is_err(), "nothing more");
    assert_eq!(telemetry.dropped_writes(), 0);
}

/// Emits `per_thread` events from each of four threads at once, on streams `agent-0` to
/// `agent-3`: `event(thread, i)`.
fn emit_from_four_threads(telemetry: &Telemetry, per_thread: u64, event: fn(usize, u64) -> AgentEvent) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let telemetry = telemetry.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    telemetry.emit(PID, &format!("agent-{t}"), event(t, i));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("no panic");
    }
}

#[test]
fn seq_is_monotone_across_threads() {
    let telemetry = Telemetry::new();
    emit_from_four_threads(&telemetry, 250, |_, i| AgentEvent::Compacted {
        turn: i,
        tokens_before: 2,
        tokens_after: 1,
        cut: 1,
    });
    let seqs: Vec<u64> = telemetry.records().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=1000).collect::<Vec<u64>>(), "records are kept in seq order, none lost");
    for t in 0..4 {
        let turns: Vec<u64> = telemetry
            .stream(&format!("agent-{t}"))
            .iter()
            .map(|r| match r.event {
                AgentEvent::Compacted { turn, .. } => turn,
                _ => u64::MAX,
            })
            .collect();
        assert_eq!(turns, (0..250).collect::<Vec<u64>>(), "each stream in emit order");
    }
}

#[test]
fn the_file_holds_every_record_emitted_from_many_threads_once_the_last_clone_is_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(EVENTS_FILE);
    let telemetry = Telemetry::with_jsonl(&path).expect("open");
    // More records than the writer's queue holds: emitters wait for it, and nothing is lost.
    let per_thread = (agentvisor::agent::telemetry::WRITER_QUEUE_MAX / 4 + 1000) as u64;
    emit_from_four_threads(&telemetry, per_thread, |t, i| AgentEvent::MessageSent {
        to_pid: OTHER_PID.into(),
        text: format!("{t}:{i}"),
    });
    // No flush: dropping the last clone writes what is queued before it returns.
    drop(telemetry);
    let written = read_jsonl(&path).expect("read");
    let seqs: Vec<u64> = written.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=4 * per_thread).collect::<Vec<u64>>(), "every record, in seq order");
    for t in 0..4 {
        let texts: Vec<String> = written
            .iter()
            .filter(|r| r.agent_id == format!("agent-{t}"))
            .map(|r| match &r.event {
                AgentEvent::MessageSent { text, .. } => text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected: Vec<String> = (0..per_thread).map(|i| format!("{t}:{i}")).collect();
        assert_eq!(texts, expected, "stream {t} in emit order");
    }
}

/// The nice value of thread `task` of this process (`/proc/self/task/TASK/stat`, field 19),
/// or of the calling thread for `thread-self`.
#[cfg(target_os = "linux")]
fn nice_of(stat: &std::path::Path) -> Option<i32> {
    let stat = std::fs::read_to_string(stat).ok()?;
    // Fields after the name in parentheses start at field 3.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19 - 3)?.parse().ok()
}

/// This process's threads named `agent-events`, by task id.
#[cfg(target_os = "linux")]
fn event_writers() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|c| c.trim() == "agent-events")
        })
        .map(|task| task.file_name().to_string_lossy().into_owned())
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn the_event_writer_runs_at_a_lower_priority_than_the_emitting_threads() {
    let mine = nice_of(std::path::Path::new("/proc/thread-self/stat")).expect("this thread's nice value");
    let before = event_writers();
    let telemetry = Telemetry::new();
    telemetry.emit(PID, "agent-0", AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "hi".into() });
    // The writer lowers its priority before it handles anything, so after a flush it has.
    telemetry.flush();
    let lowered: Vec<i32> = event_writers()
        .difference(&before)
        .filter_map(|task| nice_of(&std::path::Path::new("/proc/self/task").join(task).join("stat")))
        .collect();
    // Other tests may start writers at the same time; this telemetry's is among the new ones.
    assert!(
        lowered.contains(&(mine + 10).min(19)),
        "a writer started since at nice {} (this thread: {mine}); new writers: {lowered:?}",
        (mine + 10).min(19)
    );
    drop(telemetry);
}

#[test]
fn the_jsonl_file_round_trips_and_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(EVENTS_FILE);
    let telemetry = Telemetry::with_jsonl(&path).expect("open");
    let emitted: Vec<EventRecord> = every_event()
        .into_iter()
        .map(|event| EventRecord::clone(&telemetry.emit(PID, "agent-1", event)))
        .collect();
    // The file is written by a thread of its own: a reader in the same process flushes.
    telemetry.flush();
    assert_eq!(read_jsonl(&path).expect("read"), emitted);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.lines().count(), emitted.len());
    assert!(text.ends_with('\n'));
    for (line, record) in text.lines().zip(&emitted) {
        assert_eq!(serde_json::from_str::<EventRecord>(line).expect("a record a line"), *record);
    }

    // A second instance appends; its seq continues after the file's last.
    drop(telemetry);
    let again = Telemetry::with_jsonl(&path).expect("reopen");
    let more = again.emit(
        OTHER_PID,
        "agent-2",
        AgentEvent::FsmState { machine: "m".into(), state: "b".into(), from: Some("a".into()) },
    );
    assert_eq!(more.seq, emitted.len() as u64 + 1);
    again.flush();
    let all = read_jsonl(&path).expect("read");
    assert_eq!(all.len(), emitted.len() + 1);
    assert_eq!(all.last(), Some(&*more));

    // An incremental reader sees only what was appended since it last read.
    let mut reader = EventFileReader::new(&path);
    assert_eq!(reader.read_new().expect("read").len(), all.len());
    assert!(reader.read_new().expect("read").is_empty());
    let last =
        again.emit(PID, "agent-1", AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "x".into() });
    again.flush();
    let new = reader.read_new().expect("read");
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].record, *last);
    assert_eq!(new[0].line, all.len() as u64 + 1);
    assert_eq!(new[0].text, serde_json::to_string(&last).expect("json"));
    assert_eq!(reader.finish().expect("finish"), None);
}

fn shape(event: AgentEvent) -> Value {
    let record = Telemetry::new().emit(PID, "agent-1", event);
    serde_json::to_value(&record).expect("json")
}

#[test]
fn every_event_has_its_type_tag_next_to_the_record_fields() {
    let tags: Vec<String> = every_event()
        .into_iter()
        .map(|event| {
            let name = event.type_name();
            let value = shape(event);
            for field in ["seq", "at_ms", "pid", "agent_id", "type"] {
                assert!(value.get(field).is_some(), "{field} in {value}");
            }
            assert_eq!(value["type"], name);
            value["type"].as_str().expect("a string").to_string()
        })
        .collect();
    assert_eq!(
        tags,
        [
            "agent_spawned",
            "context_chunk",
            "fsm_state",
            "turn_completed",
            "compacted",
            "message_sent",
            "message_received",
            "tool_refused",
            "agent_transition",
            "agent_finished",
        ]
    );
}

#[test]
fn event_fields_are_written_as_documented() {
    let events = every_event();
    let spawned = shape(events[0].clone());
    assert_eq!(spawned["via"], "root");
    assert_eq!(spawned["parent_agent_id"], Value::Null);
    assert_eq!(spawned["inherited_messages"], 0);
    assert_eq!(spawned["opening"], json!([{"role": "user", "text": "plan the release"}]));
    assert_eq!(spawned["machine"], "review");
    assert_eq!(spawned["state"], "draft");
    assert_eq!(spawned["inherited"], json!({"chunks": [], "tail": []}));
    let old: EventRecord = serde_json::from_value(json!({
        "seq": 1, "at_ms": 5, "pid": PID, "agent_id": "a", "type": "agent_spawned", "profile": "p",
        "parent_agent_id": null, "via": "root", "depth": 0, "machine": null, "state": null,
        "inherited_messages": 0, "opening": []
    }))
    .expect("a record written before `inherited` existed reads");
    assert!(
        matches!(old.event, AgentEvent::AgentSpawned { inherited, .. } if inherited == Default::default())
    );

    let chunk = shape(events[1].clone());
    assert_eq!(chunk["chunk"], ChunkId::of(b"chunk").to_string(), "a chunk id is 64 hex digits");
    assert_eq!(chunk["messages"], json!([{"role": "note", "text": "earlier"}]));

    let entry = shape(events[2].clone());
    assert!(entry.get("from").is_none_or(Value::is_null), "no state left on entry: {entry}");
    let entry: EventRecord = serde_json::from_value(json!({
        "seq": 1, "at_ms": 5, "pid": PID, "agent_id": "a", "type": "fsm_state", "machine": "m", "state": "s"
    }))
    .expect("from may be absent");
    assert_eq!(entry.event, AgentEvent::FsmState { machine: "m".into(), state: "s".into(), from: None });

    let turn = shape(events[3].clone());
    assert_eq!(turn["usage"], json!({"input_tokens": 120, "output_tokens": 30, "cached_tokens": 0}));
    assert_eq!(turn["text"], "making it");
    assert_eq!(turn["tool_calls"], json!(["create_object"]));
    assert_eq!(
        turn["calls"],
        json!([{"tool": "create_object", "arguments": {"name": "plan"}, "result": {"oid": "o-1"}}])
    );
    // A record written before turns carried their text and calls still reads.
    let old: EventRecord = serde_json::from_value(json!({
        "seq": 1, "at_ms": 5, "pid": PID, "agent_id": "a", "type": "turn_completed", "turn": 1,
        "usage": {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 0}, "tool_calls": [], "compacted": false
    }))
    .expect("text and calls may be absent");
    assert!(matches!(old.event, AgentEvent::TurnCompleted { text: None, ref calls, .. } if calls.is_empty()));
    assert_eq!(turn["compacted"], false);

    let transition = shape(events[8].clone());
    assert_eq!(transition["kind"], "fsm");
    assert_eq!(transition["modules"], json!([{"module": "tasks", "action": "kept"}]));
    assert_eq!(transition["to_agent_id"], "agent-2");

    let finished = shape(events[9].clone());
    assert_eq!(finished["result"], json!({"ok": true}));
    assert_eq!(finished["outcome"], "exited");

    for (via, name) in [
        (SpawnVia::Root, "root"),
        (SpawnVia::Spawn, "spawn"),
        (SpawnVia::Fork, "fork"),
        (SpawnVia::Exec, "exec"),
        (SpawnVia::Fsm, "fsm"),
    ] {
        assert_eq!(serde_json::to_value(via).expect("json"), name);
        assert_eq!(via.as_str(), name);
    }
    for (kind, name) in
        [(TransitionKind::Exec, "exec"), (TransitionKind::Fork, "fork"), (TransitionKind::Fsm, "fsm")]
    {
        assert_eq!(serde_json::to_value(kind).expect("json"), name);
    }
}

#[test]
fn a_malformed_line_is_reported_with_its_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(EVENTS_FILE);
    let telemetry = Telemetry::with_jsonl(&path).expect("open");
    telemetry.emit(PID, "agent-1", AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "ok".into() });
    telemetry.flush();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
    file.write_all(b"\n{\"seq\": 2, \"type\": \"no_such_event\"}\n").expect("write");
    match read_jsonl(&path) {
        Err(TelemetryError::Malformed { line, path: reported, message }) => {
            assert_eq!(line, 3, "the blank line 2 is skipped but counted");
            assert_eq!(reported, path);
            assert!(!message.is_empty());
        }
        other => panic!("expected a malformed line, got {other:?}"),
    }
    let error = read_jsonl(&path).expect_err("malformed");
    assert!(error.to_string().contains("line 3"), "{error}");
}

#[test]
fn a_file_in_a_missing_directory_is_refused_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("no-such-dir").join(EVENTS_FILE);
    match Telemetry::with_jsonl(&path) {
        Err(TelemetryError::Open { path: reported, source }) => {
            assert_eq!(reported, path);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected an open error, got {other:?}"),
    }
    assert!(matches!(read_jsonl(&path), Err(TelemetryError::Read { .. })));
}

#[test]
fn summaries_are_one_line() {
    for event in every_event() {
        let summary = event.summary();
        assert!(!summary.is_empty());
        assert!(!summary.contains('\n'), "{summary}");
    }
    let long = AgentEvent::MessageSent { to_pid: PID.into(), text: "x\n".repeat(500) };
    let summary = long.summary();
    assert!(!summary.contains('\n'));
    assert!(summary.chars().count() < 200, "{summary}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_failing_file_is_counted_and_never_stops_emitting() {
    // Every write to /dev/full fails with "no space left on device".
    let telemetry = Telemetry::with_jsonl("/dev/full").expect("open");
    let mut subscriber = telemetry.subscribe();
    for text in ["a", "b", "c"] {
        telemetry.emit(
            PID,
            "agent-1",
            AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: text.into() },
        );
    }
    assert_eq!(telemetry.dropped_writes(), 3);
    assert_eq!(telemetry.records().len(), 3, "kept in memory all the same");
    assert_eq!(subscriber.try_recv().expect("sent all the same").seq, 1);
}

#[test]
fn seq_continues_after_the_last_whole_record_of_a_large_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(EVENTS_FILE);
    assert_eq!(last_seq(&path).expect("a missing file"), None);
    let first = Telemetry::with_jsonl(&path).expect("open");
    // Enough records that the file is several of the tail reader's chunks long.
    let big = "y".repeat(10_000);
    for _ in 0..40 {
        first.emit(PID, "agent-1", AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: big.clone() });
    }
    first.flush();
    assert_eq!(last_seq(&path).expect("read"), Some(40));
    drop(first);
    // A crash left half a line at the end: it is passed over.
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
    file.write_all(b"{\"seq\": 9999, \"at_ms\"").expect("write");
    drop(file);
    assert_eq!(last_seq(&path).expect("read"), Some(40));
    let second = Telemetry::with_jsonl(&path).expect("reopen");
    let next = second.emit(
        PID,
        "agent-1",
        AgentEvent::Compacted { turn: 1, tokens_before: 2, tokens_after: 1, cut: 1 },
    );
    assert_eq!(next.seq, 41);
}

#[test]
fn secrets_are_redacted_in_every_field_before_the_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(EVENTS_FILE);
    let telemetry = Telemetry::with_jsonl(&path).expect("open");
    let mut subscriber = telemetry.subscribe();
    telemetry.redact(["s3cr3t-token".to_string(), String::new()]);
    let limit = agentvisor::agent::limits::EVENT_FIELD_CHARS_MAX;
    // The secret straddles the cap: redacted first, it cannot leave a prefix behind.
    let text = format!("{}s3cr3t-token tail", "a".repeat(limit - 4));
    let record = telemetry.emit(
        PID,
        "agent-1",
        AgentEvent::TurnCompleted {
            turn: 1,
            usage: usage(1, 1),
            text: Some(text),
            tool_calls: vec!["read_object".into()],
            calls: vec![CallRecord {
                tool: "read_object".into(),
                arguments: json!({"s3cr3t-token": "key", "n": 1}),
                result: None,
                error: Some(CallError {
                    code: "denied".into(),
                    message: "token s3cr3t-token refused".into(),
                }),
                calls: Vec::new(),
            }],
            compacted: false,
        },
    );
    telemetry.emit(
        PID,
        "agent-1",
        AgentEvent::MessageSent { to_pid: OTHER_PID.into(), text: "s3cr3t-token".into() },
    );
    telemetry.flush();
    let file = std::fs::read_to_string(&path).expect("read");
    assert_eq!(file.lines().count(), 2);
    assert!(!file.contains("s3cr3t") && !file.contains("s3c"), "{file}");
    assert_eq!(subscriber.try_recv().expect("sent"), record);
    let AgentEvent::TurnCompleted { text: Some(text), calls, .. } = &record.event else { panic!("a turn") };
    assert!(text.ends_with(" chars cut]") && !text.contains("s3"), "{}", &text[text.len() - 40..]);
    assert_eq!(calls[0].arguments, json!({"[redacted]": "key", "n": 1}));
    assert_eq!(calls[0].error.as_ref().map(|e| e.message.as_str()), Some("token [redacted] refused"));
    assert!(
        matches!(&telemetry.records()[1].event, AgentEvent::MessageSent { text, .. } if text == REDACTED)
    );
}

#[test]
fn the_cap_counts_what_it_cut() {
    assert_eq!(cap_text("short", 10), "short");
    assert_eq!(cap_text("abcdefghij", 10), "abcdefghij");
    assert_eq!(cap_text("abcdefghijkl", 10), "abcdefghij… [2 chars cut]");
    assert_eq!(cap_text("ééééé", 2), "éé… [3 chars cut]");
}

/// `cap_value` keeps a value whose JSON text is at most `max` characters and cuts a longer one
/// (as `cap_text` cuts that text), whatever the text's mix of one- and multi-byte characters:
/// it counts bytes first and characters only past `max` bytes.
#[test]
fn cap_value_cuts_by_characters_for_random_values() {
    use proptest::prelude::*;
    let mut runner = seeded::runner("agent_telemetry", "CAP_VALUE_SEED", 0xca9_7a1e, 512);
    let text = proptest::collection::vec(
        prop_oneof![Just("a"), Just("é"), Just("字"), Just("😀"), Just("\"")],
        0..40,
    )
    .prop_map(|parts| parts.concat());
    let value = prop_oneof![
        text.clone().prop_map(Value::String),
        (text.clone(), text).prop_map(|(k, v)| json!({ k: v, "n": [1, 2, 3] })),
    ];
    runner
        .run(&(value, 0usize..120), |(value, max)| {
            let json = value.to_string();
            let capped = cap_value(value.clone(), max);
            if json.chars().count() <= max {
                prop_assert_eq!(capped, value);
            } else {
                prop_assert_eq!(capped, Value::String(cap_text(&json, max)));
            }
            Ok(())
        })
        .expect("cap_value keeps or cuts by characters");
}

#[test]
fn a_redactor_applied_to_a_chunk_statement_redacts_before_the_cap() {
    let limit = agentvisor::agent::limits::EVENT_FIELD_CHARS_MAX;
    let text = format!("{}s3cr3t-token tail", "a".repeat(limit - 4));
    let mut event =
        AgentEvent::ContextChunk { chunk: ChunkId::of(b"chunk"), messages: vec![Message::user(text)].into() };
    Redactor::new(["s3cr3t-token".to_string()]).apply(&mut event);
    let AgentEvent::ContextChunk { messages, .. } = &event else { panic!("a chunk") };
    let Message::User { text } = &messages[0] else { panic!("a user message") };
    let end: String = text.chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(!text.contains("s3c"), "no part of the secret is left: …{end}");
    assert!(text.ends_with("chars cut]"), "then capped: …{end}");
}
