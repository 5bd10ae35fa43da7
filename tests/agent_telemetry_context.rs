//! Self-contained streams: an incarnation that starts with an inherited window (a fork's copy,
//! an exec's successor) states that window on its own stream — sealed chunks by id with their
//! content once per stream, the tail in full — so its starting context is rebuilt from that
//! stream alone, message by message. Checked against the window the agent's brain was asked
//! with, and as a property over random windows.

mod agent_support;
mod seeded;

use agent_support::config::TEAM;
use agent_support::*;
use agentvisor::agent::brain::{Message, ScriptedTurn};
use agentvisor::agent::run::AgentHost;
use agentvisor::agent::telemetry::{
    AgentEvent, ContextError, ContextSource, EventOn, EventRecord, SpawnVia, Telemetry, rebuild_context,
};
use agentvisor::agent::window::{CHUNK_ITEMS_MAX, ChunkId, Window};
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

/// A turn of `notes` calls, each writing its own page: enough messages to seal chunks.
fn many_notes(notes: usize) -> ScriptedTurn {
    let mut turn = ScriptedTurn::call("write_note", json!({"page": "p0", "text": "note 0"}));
    for i in 1..notes {
        turn = turn.with_call("write_note", json!({"page": format!("p{i}"), "text": format!("note {i}")}));
    }
    turn
}

/// The agent ids spawned `via`, in order.
fn spawned_via(host: &AgentHost, via: SpawnVia) -> Vec<String> {
    host.telemetry()
        .records()
        .iter()
        .filter(|r| matches!(&r.event, AgentEvent::AgentSpawned { via: v, .. } if *v == via))
        .map(|r| r.agent_id.clone())
        .collect()
}

/// The chunk ids whose content `stream` states, in order.
fn stated(stream: &[Arc<EventRecord>]) -> Vec<ChunkId> {
    stream
        .iter()
        .filter_map(|r| match &r.event {
            AgentEvent::ContextChunk { chunk, .. } => Some(*chunk),
            _ => None,
        })
        .collect()
}

/// The chunks `stream`'s `agent_spawned` names.
fn named(stream: &[Arc<EventRecord>]) -> Vec<ChunkId> {
    stream
        .iter()
        .find_map(|r| match &r.event {
            AgentEvent::AgentSpawned { inherited, .. } => Some(inherited.chunks.clone()),
            _ => None,
        })
        .expect("an agent_spawned")
}

/// Asserts that `agent_id`'s stream alone rebuilds the window its brain was first asked with,
/// and that the stream states each chunk it names exactly once.
fn rebuilds_first_request(host: &AgentHost, requests: &Requests, agent_id: &str) {
    let stream = host.telemetry().stream(agent_id);
    let rebuilt = rebuild_context(&stream).expect("the stream tells its context");
    let asked = requests.lock().expect("requests").iter().find(|a| a.agent_id == agent_id).cloned();
    let window = asked.expect("the agent's brain was asked").window;
    assert_eq!(rebuilt.len(), window.len());
    for (i, (rebuilt, actual)) in rebuilt.iter().zip(&window).enumerate() {
        assert_eq!(rebuilt, actual, "message {i}");
    }
    let named = named(&stream);
    assert!(!named.is_empty(), "the inherited window has sealed chunks");
    assert_eq!(stated(&stream), named, "each named chunk stated once, in order");
}

#[tokio::test]
async fn each_fork_copy_rebuilds_its_context_from_its_own_stream() {
    let scripts = two_forks(vec![many_notes(CHUNK_ITEMS_MAX + 6)]);
    let (host, requests) = host_recording(TEAM, scripts);
    run_to_exit(&host, "lead", "start").await;

    let copies = spawned_via(&host, SpawnVia::Fork);
    assert_eq!(copies.len(), 2);
    // Both copies share the forker's chunks, and each stream states them for itself.
    for copy in &copies {
        rebuilds_first_request(&host, &requests, copy);
    }
    let root = spawned_via(&host, SpawnVia::Root);
    assert!(stated(&host.telemetry().stream(&root[0])).is_empty(), "a fresh root inherits nothing");
}

#[tokio::test]
async fn an_exec_successor_rebuilds_its_context_from_its_own_stream() {
    let lead = vec![
        many_notes(CHUNK_ITEMS_MAX + 6),
        ScriptedTurn::call("exec", json!({"agent": "helper", "prompt": "go on"})),
    ];
    let scripts = Scripts::new().with("lead", lead).with("helper", vec![ScriptedTurn::text("helped")]);
    let (host, requests) = host_recording(TEAM, scripts);
    run_to_exit(&host, "lead", "start").await;

    let successors = spawned_via(&host, SpawnVia::Exec);
    assert_eq!(successors.len(), 1);
    rebuilds_first_request(&host, &requests, &successors[0]);
}

/// A window of `n` distinct user messages.
fn window_of(n: usize) -> Window<Message> {
    let mut window = Window::new();
    for i in 0..n {
        window.push(Message::user(format!("m{i}"))).expect("push");
    }
    window
}

fn spawned(agent_id: &str, context: &ContextSource) -> EventOn {
    EventOn {
        pid: "01a2290b-06f7-7147-946c-cde758620d40".into(),
        agent_id: agent_id.into(),
        event: AgentEvent::AgentSpawned {
            profile: "p".into(),
            parent_agent_id: Some("before".into()),
            via: SpawnVia::Exec,
            depth: 0,
            machine: None,
            state: None,
            inherited_messages: context.len() as u64,
            inherited: context.named(),
            opening: vec![Message::note("opened")],
        },
    }
}

#[test]
fn a_second_reference_on_one_stream_names_a_chunk_without_its_content() {
    let telemetry = Telemetry::new();
    let first = window_of(CHUNK_ITEMS_MAX * 2 + 3);
    let mut longer = first.fork();
    for i in 0..CHUNK_ITEMS_MAX {
        longer.push(Message::user(format!("n{i}"))).expect("push");
    }
    let first = ContextSource::of(&first).expect("ids");
    let longer = ContextSource::of(&longer).expect("ids");
    let ids = longer.named().chunks;
    assert_eq!(ids.len(), 3);

    let once = telemetry.emit_spawn(None, spawned("a", &first), &first);
    assert_eq!(
        once.iter().map(|r| r.event.type_name()).collect::<Vec<_>>(),
        ["agent_spawned", "context_chunk", "context_chunk"]
    );
    // The same stream names all three again: only the new one's content is stated.
    let again = telemetry.emit_spawn(None, spawned("a", &longer), &longer);
    assert_eq!(again.len(), 2);
    assert_eq!(stated(&again), [ids[2]]);
    assert_eq!(stated(&telemetry.stream("a")), ids, "each chunk's content once on the stream");
    // Another stream states them all for itself: no stream points into another.
    let other = telemetry.emit_spawn(None, spawned("b", &longer), &longer);
    assert_eq!(stated(&other), ids);
    let rebuilt = rebuild_context(&telemetry.stream("b")).expect("rebuilt");
    let expected: Vec<Message> =
        (0..CHUNK_ITEMS_MAX * 2 + 3).map(|i| Message::user(format!("m{i}"))).collect();
    assert_eq!(rebuilt[..expected.len()], expected[..]);
}

#[test]
fn the_transition_and_the_spawn_are_consecutive_records() {
    let telemetry = Telemetry::new();
    let context = ContextSource::of(&window_of(CHUNK_ITEMS_MAX + 1)).expect("ids");
    let transition = EventOn {
        pid: "01a2290b-06f7-7147-946c-cde758620d40".into(),
        agent_id: "before".into(),
        event: AgentEvent::AgentTransition {
            kind: agentvisor::agent::telemetry::TransitionKind::Exec,
            to_agent_id: "a".into(),
            to_profile: "p".into(),
            modules: Vec::new(),
            turn: 1,
        },
    };
    let run = telemetry.emit_spawn(Some(transition), spawned("a", &context), &context);
    let shape: Vec<(u64, &str, &str)> =
        run.iter().map(|r| (r.seq, r.agent_id.as_str(), r.event.type_name())).collect();
    assert_eq!(
        shape,
        [(1, "before", "agent_transition"), (2, "a", "agent_spawned"), (3, "a", "context_chunk")]
    );
}

#[test]
fn a_stream_without_its_spawn_or_a_chunk_is_refused_with_what_to_fix() {
    let telemetry = Telemetry::new();
    let context = ContextSource::of(&window_of(CHUNK_ITEMS_MAX)).expect("ids");
    telemetry.emit_spawn(None, spawned("a", &context), &context);
    telemetry.emit_spawn(None, spawned("b", &context), &context);
    let stream = telemetry.stream("a");
    assert_eq!(rebuild_context(&stream[1..]), Err(ContextError::NoSpawn));
    let chunk = context.named().chunks[0];
    assert_eq!(rebuild_context(&stream[..1]), Err(ContextError::MissingChunk { chunk }));
    let mixed = telemetry.records();
    let refused = rebuild_context(&mixed).expect_err("two streams");
    assert!(matches!(refused, ContextError::MixedStreams { .. }), "{refused}");
    assert!(refused.to_string().contains("pass one agent id's stream"), "{refused}");
}

#[test]
fn secrets_in_an_inherited_window_are_redacted_where_the_content_is_stated() {
    let telemetry = Telemetry::new();
    telemetry.redact(["s3cret-token".to_string()]);
    let mut window = window_of(CHUNK_ITEMS_MAX);
    window.push(Message::user("tail holds s3cret-token")).expect("push");
    let context = ContextSource::of(&window).expect("ids");
    let run = telemetry.emit_spawn(None, spawned("a", &context), &context);
    let text = serde_json::to_string(&run).expect("json");
    assert!(!text.contains("s3cret-token"), "{text}");
    let rebuilt = rebuild_context(&telemetry.stream("a")).expect("rebuilt");
    assert_eq!(rebuilt[CHUNK_ITEMS_MAX], Message::user("tail holds [redacted]"));
}

#[test]
fn a_long_inherited_window_is_in_the_file_redacted_once_the_telemetry_is_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(agentvisor::agent::telemetry::EVENTS_FILE);
    let telemetry = Telemetry::with_jsonl(&path).expect("open");
    telemetry.redact(["s3cret-token".to_string()]);
    // 400 chunks of 64 messages of about 500 characters: a window of some 13 MB, stated by the
    // writer thread after the emit returned.
    let mut window = Window::new();
    for chunk in 0..400 {
        for i in 0..CHUNK_ITEMS_MAX {
            let secret = if i == 7 { " s3cret-token" } else { "" };
            window.push(Message::user(format!("{chunk}.{i}{secret} {}", "w".repeat(490)))).expect("push");
        }
    }
    window.push(Message::user("tail")).expect("push");
    let context = ContextSource::of(&window).expect("ids");
    telemetry.emit_spawn(None, spawned("a", &context), &context);
    drop(telemetry);
    let file = std::fs::read_to_string(&path).expect("read");
    assert!(!file.contains("s3cret"), "a secret reached the file");
    let records = agentvisor::agent::telemetry::read_jsonl(&path).expect("read");
    assert_eq!(records.len(), 401, "agent_spawned and a context_chunk per chunk");
    let rebuilt = rebuild_context(&records).expect("rebuilt");
    let expected: Vec<Message> = window
        .iter()
        .map(|m| match m {
            Message::User { text } => Message::user(text.replace("s3cret-token", "[redacted]")),
            other => other.clone(),
        })
        .chain([Message::note("opened")])
        .collect();
    assert!(rebuilt == expected, "the file rebuilds the window, redacted, then the opening");
}

#[test]
fn a_chunk_is_stated_without_a_copy_unless_redaction_or_the_cap_changes_it() {
    let telemetry = Telemetry::new();
    telemetry.redact(["s3cret-token".to_string()]);
    let long = "x".repeat(agentvisor::agent::limits::EVENT_FIELD_CHARS_MAX + 10);
    let mut window = Window::new();
    for chunk in 0..3 {
        for i in 0..CHUNK_ITEMS_MAX {
            let text = match (chunk, i) {
                (1, 0) => "holds s3cret-token".to_string(),
                (2, 0) => long.clone(),
                _ => format!("m{chunk}.{i}"),
            };
            window.push(Message::user(text)).expect("push");
        }
    }
    window.push(Message::user("tail")).expect("push");
    let sealed = window.sealed_chunks().expect("ids");
    assert_eq!(sealed.len(), 3);
    let context = ContextSource::of(&window).expect("ids");
    let run = telemetry.emit_spawn(None, spawned("a", &context), &context);
    let stated: Vec<Arc<[Message]>> = run
        .iter()
        .filter_map(|r| match &r.event {
            AgentEvent::ContextChunk { messages, .. } => Some(messages.shared()),
            _ => None,
        })
        .collect();
    assert_eq!(stated.len(), 3);
    assert!(Arc::ptr_eq(&stated[0], &sealed[0].shared_items()), "a clean chunk is shared, not copied");
    assert!(!Arc::ptr_eq(&stated[1], &sealed[1].shared_items()));
    assert_eq!(stated[1][0], Message::user("holds [redacted]"));
    assert_eq!(stated[1][1..], sealed[1].items()[1..]);
    let Message::User { text } = &stated[2][0] else { panic!("a user message: {:?}", stated[2][0]) };
    assert!(text.ends_with("[10 chars cut]"), "{}", &text[text.len() - 40..]);
    // The window itself is as it was.
    assert_eq!(sealed[1].items()[0], Message::user("holds s3cret-token"));
    assert_eq!(sealed[2].items()[0], Message::user(long));
}

/// How a random window is made: runs of one message repeated (so that equal chunks occur),
/// then an optional compaction cut (which makes a short first chunk), then more runs.
type Runs = Vec<(u8, usize)>;

fn window_plan() -> impl Strategy<Value = (Runs, Option<(usize, bool)>, Runs)> {
    let runs = |most| proptest::collection::vec((0u8..3, 1usize..(CHUNK_ITEMS_MAX * 3)), 0..most);
    (runs(5), proptest::option::of((0usize..(CHUNK_ITEMS_MAX * 3), any::<bool>())), runs(3))
}

fn push_runs(window: &mut Window<Message>, runs: &Runs) {
    for (kind, times) in runs {
        for _ in 0..*times {
            window.push(message(*kind)).expect("push");
        }
    }
}

fn message(kind: u8) -> Message {
    match kind {
        0 => Message::user("same"),
        1 => Message::note("noted"),
        _ => Message::Tool { tool_call_id: "c1".into(), text: "{\"ok\":true}".into() },
    }
}

#[test]
fn a_rebuilt_context_equals_the_window_for_random_windows() {
    let mut runner = seeded::runner("agent_telemetry_context", "AGENT_CONTEXT_SEED", 0x5eed_c0de, 256);
    let repeated = std::cell::Cell::new(0);
    runner
        .run(&window_plan(), |(before, cut, after)| {
            let mut window = Window::new();
            push_runs(&mut window, &before);
            if let Some((n, summary)) = cut {
                let n = n.min(window.len());
                if summary {
                    window.replace_prefix(n, Message::note("summary")).expect("cut");
                } else {
                    window.truncate_front(n).expect("cut");
                }
            }
            push_runs(&mut window, &after);

            let telemetry = Telemetry::new();
            let context = ContextSource::of(&window).expect("ids");
            telemetry.emit_spawn(None, spawned("a", &context), &context);
            let stream = telemetry.stream("a");
            let mut expected: Vec<Message> = window.iter().cloned().collect();
            expected.push(Message::note("opened"));
            prop_assert_eq!(rebuild_context(&stream).expect("rebuilt"), expected);
            // Each distinct chunk's content is stated once, however often the window holds it.
            let ids = context.named().chunks;
            let distinct: HashSet<ChunkId> = ids.iter().copied().collect();
            let stated = stated(&stream);
            prop_assert_eq!(stated.len(), distinct.len());
            if distinct.len() < ids.len() {
                repeated.set(repeated.get() + 1);
            }
            prop_assert_eq!(stated.iter().copied().collect::<HashSet<_>>(), distinct);
            Ok(())
        })
        .expect("the rebuilt context equals the window");
    assert!(repeated.get() > 0, "some windows held one chunk twice");
}
