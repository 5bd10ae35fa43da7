//! Property tests feeding arbitrary input to the agent configuration parsers and the launch
//! check: every input loads or is refused with a typed error, never a panic; every refusal is
//! a report whose problems all have a path, a code and a message; and every configuration that
//! passes holds the seed's rules. The seed is fixed and printed; set `AGENT_CONFIG_FUZZ_SEED` to
//! replay another.

mod seeded;

use agentvisor::agent::config::{Capability, CheckedConfig, LoadError, load_toml, load_yaml};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value, json};

fn runner(cases: u32) -> TestRunner {
    seeded::runner("agent_config_fuzz", "AGENT_CONFIG_FUZZ_SEED", 0xc0f1_65ee, cases)
}

/// Loads or refuses; a refusal by the check is a well-formed report, a pass holds the rules.
fn outcome(result: Result<CheckedConfig, LoadError>) -> Result<(), TestCaseError> {
    match result {
        Ok(config) => holds_the_rules(&config),
        Err(LoadError::Check(report)) => {
            prop_assert!(!report.problems().is_empty());
            for p in report.problems() {
                prop_assert!(!p.path.is_empty() && !p.message.is_empty() && !p.code.as_str().is_empty());
            }
            prop_assert_eq!(report.to_string().lines().count(), report.problems().len());
            Ok(())
        }
        Err(other) => {
            prop_assert!(!other.to_string().is_empty());
            Ok(())
        }
    }
}

fn holds_the_rules(config: &CheckedConfig) -> Result<(), TestCaseError> {
    for profile in config.profiles() {
        let caps = profile.capabilities();
        let id = profile.id().as_str();
        let in_state = config.states_running(id).next().is_some();
        prop_assert!(config.brain(profile.brain().as_str()).is_some());
        if caps.contains(Capability::Exec) {
            prop_assert!(!profile.roster().is_empty() && !in_state, "exec on {id}");
        }
        if caps.contains(Capability::Fork) {
            prop_assert!(caps.contains(Capability::Subagents), "fork without subagents on {id}");
        }
        if caps.contains(Capability::TransitionState) {
            prop_assert!(in_state, "transition_state outside a machine on {id}");
        }
        for target in profile.roster() {
            let resolved = config.target(target.as_str());
            prop_assert_eq!(resolved.as_ref(), Some(target));
        }
    }
    for machine in config.machines() {
        prop_assert!(config.profile(machine.entry().profile().as_str()).is_some());
    }
    Ok(())
}

/// Ids from a small pool, so that references often resolve, plus a few invalid ones.
fn id() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["a", "b", "c", "m", "n", "s", "t", "", "a.b", "-x"]).prop_map(Value::from)
}

fn maybe(
    key: &'static str,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Option<(String, Value)>> {
    prop::option::weighted(0.7, value.prop_map(move |v| (key.to_owned(), v)))
}

fn object(fields: Vec<Option<(String, Value)>>) -> Value {
    Value::Object(fields.into_iter().flatten().collect::<Map<_, _>>())
}

fn switch() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<bool>().prop_map(|on| json!({ "enabled": on })),
        Just(json!({}))
    ]
}

fn capabilities() -> impl Strategy<Value = Value> {
    let scope =
        prop::sample::select(vec!["isolated", "shared", "inherited", "read-only"]).prop_map(Value::from);
    let small = prop_oneof![Just(0u64), Just(4), Just(6), Just(17), 0u64..5000].prop_map(Value::from);
    (
        (maybe("history", switch()), maybe("tasks", switch()), maybe("notebook", switch())),
        maybe(
            "memories",
            prop_oneof![Just(json!(true)), prop::option::of(scope).prop_map(|s| json!({ "scope": s }))],
        ),
        maybe(
            "program_library",
            (small.clone(), small).prop_map(|(r, l)| json!({ "retention_entries": r, "id_length": l })),
        ),
        (maybe("subagents", switch()), maybe("exec", switch()), maybe("fork", switch())),
        maybe("transition_state", switch()),
    )
        .prop_map(|((h, t, n), m, p, (s, e, f), ts)| object(vec![h, t, n, m, p, s, e, f, ts]))
        .prop_map(strip_nulls)
}

/// TOML has no null; JSON nulls from `Option`s are dropped as if left out.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

fn profile() -> impl Strategy<Value = Value> {
    let window = prop_oneof![Just(0u64), Just(4096), Just(1u64 << 30)].prop_map(Value::from);
    let compaction = (
        prop::option::of(prop::sample::select(vec!["summarize", "truncate"])),
        prop::option::of(prop::sample::select(vec!["brain", "other"])),
        prop::option::of(0u64..120),
    )
        .prop_map(|(s, b, t)| strip_nulls(json!({ "strategy": s, "summarizer": b, "trigger_percent": t })));
    (
        (
            maybe("id", id()),
            maybe("brain", prop::sample::select(vec!["brain", "nope"]).prop_map(Value::from)),
        ),
        maybe("window_tokens", window),
        maybe("roster", prop::collection::vec(id(), 0..3).prop_map(Value::Array)),
        maybe("capabilities", capabilities()),
        maybe("compaction", compaction),
        maybe(
            "system_prompt",
            prop::sample::select(vec!["{{profile}}", "{{nope}}", "{{", "plain"]).prop_map(Value::from),
        ),
    )
        .prop_map(|((i, b), w, r, c, k, s)| object(vec![i, b, w, r, c, k, s]))
}

fn machine() -> impl Strategy<Value = Value> {
    let state = (maybe("id", id()), maybe("profile", id())).prop_map(|(i, p)| object(vec![i, p]));
    let transition = (maybe("from", id()), maybe("to", id())).prop_map(|(f, t)| object(vec![f, t]));
    (
        maybe("id", id()),
        maybe("entry", id()),
        maybe("states", prop::collection::vec(state, 0..4).prop_map(Value::Array)),
        maybe("transitions", prop::collection::vec(transition, 0..4).prop_map(Value::Array)),
    )
        .prop_map(|(i, e, s, t)| object(vec![i, e, s, t]))
}

/// Configurations shaped like the real thing: most fields present, ids from a small pool,
/// capabilities in every combination.
fn config() -> impl Strategy<Value = Value> {
    let brains = prop_oneof![
        Just(json!([{ "id": "brain", "kind": "scripted", "script": "s" }])),
        Just(
            json!([{ "id": "brain", "kind": "openai", "base_url": "http://h/v1", "model": "m", "api_key_env": "K" },
                    { "id": "other", "kind": "scripted", "script": "s" }])
        ),
        Just(json!([{ "id": "brain", "kind": "openai", "script": "s" }])),
    ];
    (brains, prop::collection::vec(profile(), 0..5), prop::collection::vec(machine(), 0..3))
        .prop_map(|(b, p, m)| json!({ "brains": b, "profiles": p, "machines": m }))
}

/// Configurations with unique, resolving ids, most of whose profiles are made to follow the
/// rules between capabilities, rosters and machines (a fifth keep their random switches), so
/// that a good share passes and the rules are checked on what passes.
fn wellformed_config() -> impl Strategy<Value = Value> {
    let flags = prop::collection::vec(any::<bool>(), 6);
    let profile = (flags, prop::collection::vec(0usize..8, 0..3), prop::bool::weighted(0.8));
    let machine =
        (1usize..4, prop::collection::vec((0usize..4, 0usize..4), 0..3), prop::collection::vec(0usize..8, 4));
    (prop::collection::vec(profile, 1..6), prop::collection::vec(machine, 0..3))
        .prop_map(|(profiles, machines)| assemble(&profiles, &machines))
}

type ProfileDraft = (Vec<bool>, Vec<usize>, bool);
type MachineDraft = (usize, Vec<(usize, usize)>, Vec<usize>);

fn assemble(profiles: &[ProfileDraft], machines: &[MachineDraft]) -> Value {
    use std::collections::BTreeSet;
    let (n, m) = (profiles.len(), machines.len());
    // Machines first: which profiles are states, and which of those have moves out.
    let mut in_state = BTreeSet::new();
    let mut moving = BTreeSet::new();
    let machines: Vec<Value> = machines
        .iter()
        .enumerate()
        .map(|(j, (states, extra, runs))| {
            // A chain s0 → s1 → … keeps every state reachable; extras add loops and skips.
            let mut moves: BTreeSet<(usize, usize)> = (1..*states).map(|k| (k - 1, k)).collect();
            moves.extend(extra.iter().map(|(a, b)| (a % states, b % states)));
            for (k, run) in runs.iter().enumerate().take(*states) {
                in_state.insert(run % n);
                if moves.iter().any(|(a, _)| *a == k) {
                    moving.insert(run % n);
                }
            }
            json!({
                "id": format!("m{j}"),
                "entry": "s0",
                "states": (0..*states).map(|k| json!({ "id": format!("s{k}"), "profile": format!("p{}", runs[k] % n) })).collect::<Vec<_>>(),
                "transitions": moves.iter().map(|(a, b)| json!({ "from": format!("s{a}"), "to": format!("s{b}") })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let profiles: Vec<Value> = profiles
        .iter()
        .enumerate()
        .map(|(i, (flags, picks, coherent))| {
            let [tasks, mut subagents, mut exec, mut fork, mut transition_state, memories] =
                <[bool; 6]>::try_from(flags.as_slice()).expect("six flags");
            let mut roster: Vec<(usize, String)> = Vec::new();
            for k in picks.iter().map(|k| k % (n + m)) {
                let id = if k < n { format!("p{k}") } else { format!("m{}", k - n) };
                if !roster.iter().any(|(_, r)| *r == id) {
                    roster.push((k, id));
                }
            }
            if *coherent {
                roster.retain(|(k, _)| *k >= n || !moving.contains(k));
                transition_state = moving.contains(&i);
                exec = exec && !in_state.contains(&i) && !roster.is_empty();
                subagents = subagents || fork || (!roster.is_empty() && !exec);
                fork = fork || (subagents && roster.is_empty());
            }
            json!({
                "id": format!("p{i}"), "brain": "brain", "window_tokens": 1000,
                "roster": roster.into_iter().map(|(_, id)| id).collect::<Vec<_>>(),
                "capabilities": {
                    "tasks": tasks, "subagents": subagents, "exec": exec, "fork": fork,
                    "transition_state": transition_state,
                    "memories": { "enabled": memories, "scope": "inherited" },
                },
            })
        })
        .collect();
    json!({ "brains": [{ "id": "brain", "kind": "scripted", "script": "s" }], "profiles": profiles, "machines": machines })
}

/// Arbitrary JSON, biased towards the format's field names.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "brains",
            "profiles",
            "machines",
            "id",
            "kind",
            "brain",
            "window_tokens",
            "roster",
            "capabilities",
            "exec",
            "fork",
            "memories",
            "scope",
            "states",
            "transitions",
            "entry",
            "from",
            "to",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{0,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::String),
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
fn shaped_configurations_load_or_are_reported_alike_in_yaml_and_toml() {
    runner(1024)
        .run(&config(), |value| {
            // JSON is YAML 1.2.
            let yaml = load_yaml(&value.to_string());
            let toml_text = toml::to_string(&value).expect("a shaped config has no nulls");
            let toml = load_toml(&toml_text);
            match (&yaml, &toml) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(LoadError::Check(a)), Err(LoadError::Check(b))) => prop_assert_eq!(a, b),
                _ => prop_assert!(false, "YAML and TOML disagree: {yaml:?} / {toml:?}"),
            }
            outcome(yaml)
        })
        .expect("every shaped configuration loads or is reported, the same in both formats");
}

#[test]
fn wellformed_configurations_that_pass_hold_the_rules() {
    let passed = std::cell::Cell::new(0u32);
    runner(1024)
        .run(&wellformed_config(), |value| {
            let yaml = load_yaml(&value.to_string());
            passed.set(passed.get() + u32::from(yaml.is_ok()));
            let toml_text = toml::to_string(&value).expect("no nulls");
            prop_assert_eq!(format!("{yaml:?}"), format!("{:?}", load_toml(&toml_text)));
            outcome(yaml)
        })
        .expect("every configuration loads or is reported, the same in both formats");
    println!("{} of 1024 well-formed configurations passed the check", passed.get());
    assert!(passed.get() >= 200, "too few passed ({}) for the rules to be exercised", passed.get());
}

#[test]
fn arbitrary_structures_never_panic() {
    runner(512)
        .run(&json_value(), |value| {
            outcome(load_yaml(&value.to_string()))?;
            if let Ok(text) = toml::to_string(&value) {
                outcome(load_toml(&text))?;
            }
            Ok(())
        })
        .expect("every structure loads or is refused with a typed error");
}

#[test]
fn arbitrary_text_never_panics() {
    let text = prop_oneof![
        "\\PC{0,128}",
        "[a-z_:\\[\\]{}\\-, \n\"'=#&*!|>]{0,128}",
        json_value().prop_map(|v| format!("profiles:\n  - {v}\n")),
    ];
    runner(512)
        .run(&text, |text| {
            outcome(load_yaml(&text))?;
            outcome(load_toml(&text))
        })
        .expect("every text loads or is refused with a typed error");
}
