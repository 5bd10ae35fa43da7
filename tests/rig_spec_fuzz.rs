//! Property tests feeding arbitrary text and arbitrary mutations of a valid rig spec to
//! `parse_rig`: every input is a rig spec or a report, never a panic; every report's problems
//! have a path or a line, a code and a one-line message; every spec that passes holds the v1
//! rules. The seed is fixed and printed; set `RIG_SPEC_FUZZ_SEED` to replay another.

mod rig_rules;
mod seeded;

use agentvisor::rig::{RigSpec, RigSpecReport, parse_members, parse_rig};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value, json};

fn runner(cases: u32) -> TestRunner {
    seeded::runner("rig_spec_fuzz", "RIG_SPEC_FUZZ_SEED", 0x51c5_bec0, cases)
}

/// The rules of [`rig_rules::outcome`]; a flat spec needs nothing more.
fn outcome(result: Result<RigSpec, RigSpecReport>) -> Result<(), TestCaseError> {
    rig_rules::outcome(result, |_| Ok(()))
}

fn valid_member(i: usize) -> Value {
    json!({
        "id": format!("m{i}"),
        "runtime": "claude-code",
        "agent_ref": "agents.yaml",
        "profile": "reviewer",
        "cwd": ".",
        "prompt": "Review it.",
        "session_source": { "mode": "fork", "ref": { "kind": "native_id", "value": "0b0165d7" } },
    })
}

/// A value to put somewhere: the format's words, wrong types, odd texts.
fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            "",
            " ",
            "fork",
            "rebuild",
            "resume",
            "fresh",
            "native_id",
            "artifact_path",
            "name",
            "last",
            "artifact_set",
            "native",
            "claude-code",
            "codex",
            "terminal",
            "m0",
            "m1",
            "-x",
            "a b",
            "é",
        ])
        .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!([])),
        Just(json!({})),
        Just(json!({ "mode": "fork" })),
        Just(json!({ "kind": "native_id" })),
    ]
}

/// One structured change to a spec: set, remove or add a field at a path, or duplicate or
/// drop a member.
#[derive(Clone, Debug)]
enum Mutation {
    Set(Vec<&'static str>, usize, Value),
    Remove(Vec<&'static str>, usize),
    DuplicateMember(usize),
    DropMember(usize),
}

fn field_path() -> impl Strategy<Value = Vec<&'static str>> {
    prop::sample::select(vec![
        vec!["id"],
        vec!["members"],
        vec!["extra"],
        vec!["members", "*", "id"],
        vec!["members", "*", "runtime"],
        vec!["members", "*", "agent_ref"],
        vec!["members", "*", "profile"],
        vec!["members", "*", "cwd"],
        vec!["members", "*", "prompt"],
        vec!["members", "*", "bogus"],
        vec!["members", "*", "session_source"],
        vec!["members", "*", "session_source", "mode"],
        vec!["members", "*", "session_source", "ref"],
        vec!["members", "*", "session_source", "ref", "kind"],
        vec!["members", "*", "session_source", "ref", "value"],
        vec!["members", "*", "session_source", "ref", "other"],
    ])
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (field_path(), 0usize..4, replacement()).prop_map(|(p, i, v)| Mutation::Set(p, i, v)),
        2 => (field_path(), 0usize..4).prop_map(|(p, i)| Mutation::Remove(p, i)),
        1 => (0usize..4).prop_map(Mutation::DuplicateMember),
        1 => (0usize..4).prop_map(Mutation::DropMember),
    ]
}

/// The object at `path` (with `*` the `index`-th member), if there is one.
fn parent<'a>(root: &'a mut Value, path: &[&str], index: usize) -> Option<&'a mut Map<String, Value>> {
    let mut at = root;
    for step in path {
        at = if *step == "*" {
            let members = at.as_array_mut()?;
            let len = members.len();
            members.get_mut(index % len.max(1))?
        } else {
            at.as_object_mut()?.get_mut(*step)?
        };
    }
    at.as_object_mut()
}

fn apply(spec: &mut Value, mutation: &Mutation) {
    match mutation {
        Mutation::Set(path, i, value) => {
            let (last, up) = path.split_last().expect("a path has a field");
            if let Some(object) = parent(spec, up, *i) {
                object.insert((*last).to_owned(), value.clone());
            }
        }
        Mutation::Remove(path, i) => {
            let (last, up) = path.split_last().expect("a path has a field");
            if let Some(object) = parent(spec, up, *i) {
                object.remove(*last);
            }
        }
        Mutation::DuplicateMember(i) | Mutation::DropMember(i) => {
            if let Some(members) = spec.get_mut("members").and_then(Value::as_array_mut)
                && !members.is_empty()
            {
                let at = i % members.len();
                if matches!(mutation, Mutation::DuplicateMember(_)) {
                    let copy = members[at].clone();
                    members.push(copy);
                } else {
                    members.remove(at);
                }
            }
        }
    }
}

fn mutated_spec() -> impl Strategy<Value = Value> {
    (1usize..4, prop::collection::vec(mutation(), 0..5)).prop_map(|(n, mutations)| {
        let mut spec = json!({ "id": "rig", "members": (0..n).map(valid_member).collect::<Vec<_>>() });
        for m in &mutations {
            apply(&mut spec, m);
        }
        spec
    })
}

/// Renders JSON as block YAML, so that lines and columns are exercised as a person writes them.
fn block_yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, v) in map {
                out.push_str(&format!("{pad}{key}:"));
                nested(v, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                nested(v, indent, out);
            }
        }
        other => out.push_str(&format!("{pad}{other}\n")),
    }
}

fn nested(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block_yaml(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block_yaml(v, indent + 2, out);
        }
        other => out.push_str(&format!(" {other}\n")),
    }
}

#[test]
fn mutated_specs_parse_or_are_reported() {
    let passed = std::cell::Cell::new(0u32);
    runner(1024)
        .run(&mutated_spec(), |spec| {
            // JSON is YAML 1.2; block YAML is what people write. Both must agree.
            let flow = parse_rig(&spec.to_string());
            let mut block = String::new();
            block_yaml(&spec, 0, &mut block);
            let blocked = parse_rig(&block);
            passed.set(passed.get() + u32::from(flow.is_ok()));
            prop_assert_eq!(
                flow.as_ref().map_err(|r| r.codes().collect::<Vec<_>>()),
                blocked.as_ref().map_err(|r| r.codes().collect::<Vec<_>>()),
                "{}",
                block
            );
            outcome(flow)?;
            outcome(blocked)
        })
        .expect("every mutated spec parses or is reported");
    println!("{} of 1024 mutated specs passed", passed.get());
    assert!(passed.get() >= 100, "too few passed ({}) for the rules to be exercised", passed.get());
}

#[test]
fn arbitrary_text_never_panics() {
    let text = prop_oneof![
        "\\PC{0,128}",
        "[a-z_:\\[\\]{}\\-, \n\"'#&*!|>]{0,128}",
        "(id|members|runtime|session_source|mode|ref|kind|value|- |  |: |\n|fork|native_id|terminal){0,40}",
    ];
    runner(1024)
        .run(&text, |text| {
            outcome(parse_rig(&text))?;
            if let Err(report) = parse_members(&text) {
                prop_assert!(!report.problems.is_empty());
            }
            Ok(())
        })
        .expect("every text parses or is reported");
}
