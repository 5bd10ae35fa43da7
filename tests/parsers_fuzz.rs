//! Property tests feeding arbitrary input to every parser a user or a model reaches: tool
//! arguments and scenario files. Each must answer with a typed error, never panic. The seed is
//! fixed and printed; set `PARSERS_FUZZ_SEED` to replay another.

mod seeded;

use agentvisor::scenario::Scenario;
use agentvisor::tools::{ToolName, parse_call};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value};

fn runner() -> TestRunner {
    seeded::runner("parsers_fuzz", "PARSERS_FUZZ_SEED", 0x5eed_f022, 512)
}

/// Arbitrary JSON, biased towards the field names and value shapes the tools use so that
/// deep paths are reached, not only the top-level type check.
fn json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("goal".to_string()),
        Just("child_pid".to_string()),
        Just("block".to_string()),
        Just("signal".to_string()),
        Just("inherit_capabilities".to_string()),
        Just("rights".to_string()),
        Just("resource".to_string()),
        Just("constraints".to_string()),
        Just("resource_budget".to_string()),
        Just("tokens".to_string()),
        Just("to".to_string()),
        Just("message_ids".to_string()),
        Just("limit".to_string()),
        Just("payload".to_string()),
        Just("root_oids".to_string()),
        Just("mode".to_string()),
        Just("oid".to_string()),
        Just("name".to_string()),
        Just("skills".to_string()),
        Just("allowed_tools".to_string()),
        Just("clearance".to_string()),
        "[a-z_]{0,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::String),
        Just(Value::String("01a2290b-06f7-7147-946c-cde758620d40".into())),
        Just(Value::String("execute".into())),
        Just(Value::String("pause".into())),
        Just(Value::String("speculative".into())),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

#[test]
fn tool_arguments_never_panic_and_refusals_are_typed() {
    let tools: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).chain(["no_such_tool", ""]).collect();
    let strategy = (prop::sample::select(tools), json());
    runner()
        .run(&strategy, |(tool, args)| {
            if let Err(e) = parse_call(tool, args) {
                prop_assert!(!e.code.is_empty());
                prop_assert!(!e.message.is_empty());
            }
            Ok(())
        })
        .expect("every input parses or is refused with a typed error");
}

#[test]
fn scenario_files_never_panic() {
    let text = prop_oneof![
        json().prop_map(|v| serde_json::json!({ "steps": [v] }).to_string()),
        json().prop_map(|v| v.to_string()),
        "\\PC{0,64}",
    ];
    runner()
        .run(&text, |text| {
            let _ = Scenario::from_json(&text);
            Ok(())
        })
        .expect("every scenario text parses or is refused with a typed error");
}
