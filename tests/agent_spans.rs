//! The `tracing` spans of a scripted agent run, seen by a test layer that records every span's
//! name, fields and parent: process > turn > tool call, and the model request inside its turn,
//! with pid, agent id, profile, turn, tool and the GenAI attributes.

mod agent_support;

use agent_support::{Scripts, host, run_root, runtime};
use agentvisor::actors::Status;
use agentvisor::agent::brain::ScriptedTurn;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as the layer saw it.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// When it was created, counted from 0: span ids are slab slots, not creation order.
    order: usize,
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<BTreeMap<u64, Seen>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S> tracing_subscriber::Layer<S> for Collect
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id().into_u64());
        let mut spans = self.0.lock().expect("lock");
        let mut seen =
            Seen { order: spans.len(), name: attrs.metadata().name().to_string(), parent, ..Seen::default() };
        attrs.record(&mut Fields(&mut seen.fields));
        spans.insert(id.into_u64(), seen);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(seen) = self.0.lock().expect("lock").get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
}

const CONFIG: &str = "
brains:
  - {id: s, kind: scripted, script: planner-script}
profiles:
  - id: planner
    brain: s
    window_tokens: 100000
    capabilities: {tasks: true, notebook: true}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_run_has_process_turn_tool_and_model_request_spans() {
    let collect = Collect::default();
    // The one test of this binary sets the global subscriber: the agent's tasks run on any
    // worker thread.
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(collect.clone()))
        .expect("the only subscriber of this test binary");

    let scripts = Scripts::new().with(
        "planner",
        vec![
            ScriptedTurn::call("add_task", json!({"title": "one"}))
                .with_call("write_note", json!({"page": "p", "text": "t"}))
                .with_text("Planning."),
            ScriptedTurn::text("done"),
        ],
    );
    let host = host(CONFIG, scripts);
    let rt = runtime(&host).await;
    let (pid, finished) = run_root(&host, &rt, "planner", "plan it").await;
    assert_eq!(finished.status, Status::Exited);

    let spans = collect.0.lock().expect("lock").clone();
    // In creation order.
    let named = |name: &str| -> Vec<(u64, Seen)> {
        let mut found: Vec<(u64, Seen)> =
            spans.iter().filter(|(_, s)| s.name == name).map(|(id, s)| (*id, s.clone())).collect();
        found.sort_by_key(|(_, s)| s.order);
        found
    };
    let processes = named("agent_process");
    assert_eq!(processes.len(), 1, "{spans:#?}");
    let (process_id, process) = &processes[0];
    assert_eq!(process.fields["pid"], pid.to_string());
    assert_eq!(process.fields["profile"], "planner");
    assert!(process.fields.contains_key("agent_id"));

    let turns = named("agent_turn");
    assert_eq!(turns.len(), 2, "two turns");
    for (number, (_, turn)) in turns.iter().enumerate() {
        assert_eq!(turn.parent, Some(*process_id), "a turn is inside its process");
        assert_eq!(turn.fields["turn"], (number + 1).to_string());
        assert_eq!(turn.fields["pid"], pid.to_string());
        assert_eq!(turn.fields["profile"], "planner");
        assert_eq!(turn.fields["agent_id"], process.fields["agent_id"]);
    }
    let turn_ids: Vec<u64> = turns.iter().map(|(id, _)| *id).collect();

    let calls = named("tool_call");
    let tools: Vec<&str> = calls.iter().map(|(_, c)| c.fields["tool"].as_str()).collect();
    assert_eq!(tools, ["add_task", "write_note"]);
    assert!(
        calls.iter().all(|(_, c)| c.parent == Some(turn_ids[0]) && c.fields["turn"] == "1"),
        "{calls:#?}"
    );

    let requests = named("model_request");
    assert_eq!(requests.len(), 2, "one model request per turn");
    for ((_, request), turn_id) in requests.iter().zip(&turn_ids) {
        assert_eq!(request.parent, Some(*turn_id), "a model request is inside its turn");
        let field = |name: &str| request.fields.get(name).map(String::as_str);
        assert_eq!(field("otel.name"), Some("chat planner-script"));
        assert_eq!(field("gen_ai.operation.name"), Some("chat"));
        assert_eq!(field("gen_ai.provider.name"), Some("scripted"));
        assert_eq!(field("gen_ai.system"), Some("scripted"));
        assert_eq!(field("gen_ai.request.model"), Some("planner-script"));
        assert_eq!(field("model"), Some("planner-script"));
        assert_eq!(field("profile"), Some("planner"));
        assert!(field("gen_ai.usage.input_tokens").is_some_and(|t| t.parse::<u64>().is_ok_and(|t| t > 0)));
        assert!(field("gen_ai.usage.output_tokens").is_some());
    }
    assert_eq!(requests[0].1.fields["gen_ai.response.finish_reasons"], "tool_calls");
    assert_eq!(requests[1].1.fields["gen_ai.response.finish_reasons"], "stop");
}
