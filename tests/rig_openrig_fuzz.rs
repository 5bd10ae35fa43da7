//! Property tests feeding arbitrary mutations of a valid OpenRig spec, and arbitrary text in its
//! words, to `parse_rig`: every input is a rig spec or a report, never a panic; every report's
//! problems have a code and a one-line message; every spec that passes holds the OpenRig rules
//! (qualified, unique member ids, each in a pod; edges between two different members; the
//! terminal sentinel checked into a member with no agent and no profile; prefixes removed).
//! The seed is fixed and printed; set `RIG_OPENRIG_FUZZ_SEED` to replay another.

mod rig_rules;
mod seeded;

use agentvisor::rig::{RigSpec, RigSpecReport, SeatRuntime, parse_rig};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn runner(cases: u32) -> TestRunner {
    seeded::runner("rig_openrig_fuzz", "RIG_OPENRIG_FUZZ_SEED", 0x0be2_1e55, cases)
}

/// The rules of [`rig_rules::outcome`], and an OpenRig spec's own ([`holds_the_rules`]).
fn outcome(result: Result<RigSpec, RigSpecReport>) -> Result<(), TestCaseError> {
    rig_rules::outcome(result, holds_the_rules)
}

fn holds_the_rules(rig: &RigSpec) -> Result<(), TestCaseError> {
    prop_assert!(!rig.pods.is_empty());
    prop_assert_eq!(rig.name.as_deref(), Some(rig.id.as_str()));
    prop_assert!(rig.version.as_deref().is_some_and(|v| !v.trim().is_empty()));
    let mut ids = BTreeSet::new();
    for member in &rig.members {
        prop_assert!(ids.insert(member.id.as_str()), "{} twice", member.id);
        let (pod, own) = member.id.as_str().split_once('.').expect("a qualified id");
        prop_assert!(!own.contains('.') && rig.pods.iter().any(|p| p.id == pod), "{}", member.id);
        if member.runtime == SeatRuntime::Terminal {
            prop_assert!(member.agent_ref.is_none() && member.profile.is_none(), "{member:?}");
        }
        if let Some(agent_ref) = &member.agent_ref {
            prop_assert!(!agent_ref.starts_with("local:") && !agent_ref.starts_with("path:"), "{agent_ref}");
        }
    }
    for edge in &rig.edges {
        prop_assert!(edge.from != edge.to);
        prop_assert!(ids.contains(edge.from.as_str()) && ids.contains(edge.to.as_str()), "{edge:?}");
    }
    Ok(())
}

fn member(id: &str, runtime: &str) -> Value {
    if runtime == "terminal" {
        return json!({ "id": id, "runtime": "terminal", "agent_ref": "builtin:terminal", "profile": "none" });
    }
    json!({
        "id": id,
        "runtime": runtime,
        "agent_ref": "local:agents.yaml",
        "profile": "reviewer",
        "prompt": "Review it.",
        "restore_policy": "resume_if_possible",
        "session_source": { "mode": "fork", "ref": { "kind": "native_id", "value": "seat:a.m0" } },
    })
}

fn valid_spec() -> Value {
    json!({
        "name": "rig",
        "version": "1",
        "summary": "A rig.",
        "pods": [
            {
                "id": "a",
                "label": "A",
                "members": [member("m0", "native"), member("m1", "terminal")],
                "edges": [{ "kind": "can_observe", "from": "m0", "to": "m1" }],
            },
            {
                "id": "b",
                "members": [member("m0", "claude-code"), member("m2", "codex")],
                "edges": [{ "kind": "spawned_by", "from": "m0", "to": "a.m0" }],
            },
        ],
        "edges": [{ "kind": "delegates_to", "from": "a.m0", "to": "b.m2" }],
    })
}

/// A value to put somewhere: the format's words, wrong types, odd texts.
fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u32..100).prop_map(|n| json!(f64::from(n) / 10.0)),
        prop::sample::select(vec![
            "",
            " ",
            "a",
            "b",
            "m0",
            "m1",
            "a.m0",
            "b.m0",
            "b.m2",
            "a.b.c",
            "x.y",
            "native",
            "claude-code",
            "codex",
            "terminal",
            "builtin:terminal",
            "builtin:shell",
            "none",
            "reviewer",
            "local:agents.yaml",
            "local:/abs.yaml",
            "path:/abs.yaml",
            "path:rel.yaml",
            "agents.yaml",
            "delegates_to",
            "collaborates_with",
            "escalates_to",
            "bosses",
            "resume_if_possible",
            "checkpoint_only",
            "forever",
            "fork",
            "native_id",
            "seat:b.m0",
        ])
        .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!([])),
        Just(json!({})),
        Just(json!([{ "id": "m9", "runtime": "codex" }])),
        Just(json!({ "kind": "can_observe", "from": "m0", "to": "m0" })),
    ]
}

/// One structured change: set or remove a field at a path (`*` is an entry's index).
#[derive(Clone, Debug)]
enum Mutation {
    Set(Vec<&'static str>, usize, Value),
    Remove(Vec<&'static str>, usize),
}

fn field_path() -> impl Strategy<Value = Vec<&'static str>> {
    prop::sample::select(vec![
        vec!["name"],
        vec!["version"],
        vec!["summary"],
        vec!["pods"],
        vec!["edges"],
        vec!["id"],
        vec!["members"],
        vec!["extra"],
        vec!["pods", "*", "id"],
        vec!["pods", "*", "label"],
        vec!["pods", "*", "members"],
        vec!["pods", "*", "edges"],
        vec!["pods", "*", "bogus"],
        vec!["pods", "*", "members", "*", "id"],
        vec!["pods", "*", "members", "*", "runtime"],
        vec!["pods", "*", "members", "*", "agent_ref"],
        vec!["pods", "*", "members", "*", "profile"],
        vec!["pods", "*", "members", "*", "cwd"],
        vec!["pods", "*", "members", "*", "restore_policy"],
        vec!["pods", "*", "members", "*", "session_source"],
        vec!["pods", "*", "members", "*", "session_source", "ref", "value"],
        vec!["pods", "*", "edges", "*", "kind"],
        vec!["pods", "*", "edges", "*", "from"],
        vec!["pods", "*", "edges", "*", "to"],
        vec!["edges", "*", "kind"],
        vec!["edges", "*", "from"],
        vec!["edges", "*", "to"],
    ])
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (field_path(), 0usize..2, replacement()).prop_map(|(p, i, v)| Mutation::Set(p, i, v)),
        1 => (field_path(), 0usize..2).prop_map(|(p, i)| Mutation::Remove(p, i)),
    ]
}

/// Applies a mutation where its path leads: each `*` is the entry `index` (the spec's lists
/// hold one or two entries, so an index past the end leaves the spec as it is).
fn apply(spec: &mut Value, mutation: &Mutation) {
    let (path, index) = match mutation {
        Mutation::Set(path, index, _) | Mutation::Remove(path, index) => (path, *index),
    };
    let (last, up) = path.split_last().expect("a path has a field");
    let pointer: String =
        up.iter().map(|step| if *step == "*" { format!("/{index}") } else { format!("/{step}") }).collect();
    let Some(object) = spec.pointer_mut(&pointer).and_then(Value::as_object_mut) else { return };
    match mutation {
        Mutation::Set(_, _, value) => {
            object.insert((*last).to_owned(), value.clone());
        }
        Mutation::Remove(..) => {
            object.remove(*last);
        }
    }
}

#[test]
fn mutated_openrig_specs_parse_or_are_reported() {
    let passed = std::cell::Cell::new(0u32);
    let specs = prop::collection::vec(mutation(), 0..4).prop_map(|mutations| {
        let mut spec = valid_spec();
        for m in &mutations {
            apply(&mut spec, m);
        }
        spec
    });
    runner(1024)
        .run(&specs, |spec| {
            let result = parse_rig(&spec.to_string());
            passed.set(passed.get() + u32::from(result.is_ok()));
            outcome(result)
        })
        .expect("every mutated spec parses or is reported");
    println!("{} of 1024 mutated OpenRig specs passed", passed.get());
    assert!(passed.get() >= 100, "too few passed ({}) for the rules to be exercised", passed.get());
}

#[test]
fn arbitrary_openrig_text_never_panics() {
    let text = prop_oneof![
        "\\PC{0,128}",
        "(name|version|pods|edges|members|id|label|kind|from|to|runtime|agent_ref|profile|restore_policy|- |  |: \
         |\n|\\{|\\}|\\[|\\]|, |local:|path:|builtin:terminal|none|terminal|a\\.b|can_observe){0,48}",
    ];
    runner(1024).run(&text, |text| outcome(parse_rig(&text))).expect("every text parses or is reported");
}
