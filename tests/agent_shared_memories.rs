//! `shared` memories are one instance bound to the profile, per state directory: unrelated
//! roots, a subagent, a fork and an exec incarnation of the profile all read and write it, an
//! exec out of the profile lets go of it without deleting it, and a reopened state directory
//! finds the same instance.

mod agent_support;

use agent_support::*;
use agentvisor::actors::kernel::objects::{ObjectRights, Owner};
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::{Oid, Pid, Status};
use agentvisor::agent::brain::ScriptedTurn;
use serde_json::json;

/// `keeper` shares its memories; `visitor` holds none and can become a keeper; `other` shares
/// memories of its own.
const SHARED: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: keeper
    brain: s
    window_tokens: 100000
    roster: [keeper, visitor]
    capabilities:
      memories: {scope: shared}
      subagents: true
      fork: true
      exec: true
  - id: visitor
    brain: s
    window_tokens: 100000
    roster: [keeper]
    capabilities:
      exec: true
  - id: other
    brain: s
    window_tokens: 100000
    capabilities:
      memories: {scope: shared}
"#;

/// The key of `profile`'s memories instance on the default agent image.
fn key(profile: &str) -> String {
    format!("agent/{profile}/agent.memories")
}

/// The profile's instance, if one was made.
fn instance(runtime: &Runtime, profile: &str) -> Option<Oid> {
    runtime.object_space().profile_instance(&key(profile))
}

/// What `pid` binds `agent.memories` to, if anything.
fn bound(runtime: &Runtime, pid: Pid) -> Option<Oid> {
    runtime.object_space().process(pid).and_then(|m| m.namespace.get("agent.memories").copied())
}

fn remember(key: &str, text: &str) -> ScriptedTurn {
    ScriptedTurn::call("remember", json!({"key": key, "text": text}))
}

fn recall(key: &str) -> ScriptedTurn {
    ScriptedTurn::call("recall", json!({"key": key}))
}

#[tokio::test]
async fn unrelated_roots_of_one_profile_read_each_others_writes() {
    let scripts = Scripts::new()
        .with("keeper:first", vec![remember("k", "first-wrote"), ScriptedTurn::text("done")])
        .with(
            "keeper:second",
            vec![
                recall("k"),
                remember("k2", "second-wrote").expect_tool_result("first-wrote"),
                ScriptedTurn::text("done"),
            ],
        )
        .with("other", vec![recall("k"), ScriptedTurn::text("done").expect_tool_result("unknown_memory")]);
    let host = host(SHARED, scripts);
    let runtime = runtime(&host).await;
    let (first, done) = run_root(&host, &runtime, "keeper", "first").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let (second, done) = run_root(&host, &runtime, "keeper", "second").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert!(refusals(&host, second).is_empty(), "{:?}", refusals(&host, second));

    let oid = instance(&runtime, "keeper").expect("the keeper's instance");
    assert_eq!(bound(&runtime, first), Some(oid));
    assert_eq!(bound(&runtime, second), Some(oid));
    let space = runtime.object_space();
    assert_eq!(space.object(oid).map(|o| o.owner.clone()), Some(Owner::Profile(key("keeper"))));
    let contents = runtime.payload(oid).expect("payload").expect("durable").to_string();
    assert!(contents.contains("first-wrote") && contents.contains("second-wrote"), "{contents}");

    // Another profile's shared memories are another instance.
    let (third, done) = run_root(&host, &runtime, "other", "look").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(refusals(&host, third).len(), 1, "the keeper's key is not in other's memories");
    let others = instance(&runtime, "other").expect("other's instance");
    assert_ne!(others, oid);
}

#[tokio::test]
async fn two_roots_starting_at_once_bind_exactly_one_instance() {
    let scripts = Scripts::new().with("keeper", vec![recall("nothing"), ScriptedTurn::text("done")]);
    let host = host(SHARED, scripts);
    let runtime = runtime(&host).await;
    let a = runtime.spawn_root(host.root_spec("keeper", "a").expect("spec"));
    let b = runtime.spawn_root(host.root_spec("keeper", "b").expect("spec"));
    let (a, b) = tokio::join!(a, b);
    let (a, b) = (a.expect("spawn a"), b.expect("spawn b"));
    for pid in [a, b] {
        assert_eq!(finished(&runtime, pid).await.status, Status::Exited);
    }
    let space = runtime.object_space();
    let owned: Vec<Oid> = space.owned_by(&Owner::Profile(key("keeper"))).collect();
    assert_eq!(owned.len(), 1, "exactly one instance: {owned:?}");
    assert_eq!(bound(&runtime, a), Some(owned[0]));
    assert_eq!(bound(&runtime, b), Some(owned[0]));
}

#[tokio::test]
async fn a_subagent_and_a_fork_of_the_profile_use_its_instance() {
    let lead = vec![
        remember("lead", "lead-wrote"),
        ScriptedTurn::call("spawn_subagent", json!({"agent": "keeper", "prompt": "sub"})),
        ScriptedTurn::call("fork", json!({"prompt": "copy"})),
        ScriptedTurn::call("wait_for_subagents", json!({})),
        recall("sub"),
        recall("copy").expect_tool_result("sub-wrote"),
        ScriptedTurn::text("done").expect_tool_result("copy-wrote"),
    ];
    let sub = vec![
        recall("lead"),
        remember("sub", "sub-wrote").expect_tool_result("lead-wrote"),
        ScriptedTurn::text("sub done"),
    ];
    let copy = vec![
        recall("lead"),
        remember("copy", "copy-wrote").expect_tool_result("lead-wrote"),
        ScriptedTurn::text("copy done"),
    ];
    let scripts = Scripts::new().with("keeper:main", lead).with("keeper:sub", sub).with("keeper:copy", copy);
    let host = host(SHARED, scripts);
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "keeper", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("done"));
    assert!(refusals(&host, pid).is_empty(), "{:?}", refusals(&host, pid));

    // The children's memory was released when the lead ended; the instance was not.
    let oid = instance(&runtime, "keeper").expect("instance");
    let space = runtime.object_space();
    assert!(space.object(oid).is_some_and(|o| !o.released), "children ending never release it");
    assert_eq!(bound(&runtime, pid), Some(oid));
    let contents = runtime.payload(oid).expect("payload").expect("durable").to_string();
    for wrote in ["lead-wrote", "sub-wrote", "copy-wrote"] {
        assert!(contents.contains(wrote), "{contents}");
    }
}

#[tokio::test]
async fn an_exec_incarnation_of_the_profile_uses_its_instance_and_an_exec_out_lets_go_of_it() {
    let scripts = Scripts::new()
        .with(
            "keeper#1",
            vec![remember("k", "keeper-wrote"), ScriptedTurn::call("exec", json!({"agent": "visitor"}))],
        )
        .with("visitor#2", vec![ScriptedTurn::text("wandered").expect_tail("stay with its agents")])
        .with("visitor#1", vec![ScriptedTurn::call("exec", json!({"agent": "keeper"}))])
        .with(
            "keeper#2",
            vec![
                recall("k").expect_tail("every agent running keeper reads and writes them"),
                ScriptedTurn::text("seen").expect_tool_result("keeper-wrote"),
            ],
        );
    let host = host(SHARED, scripts);
    let runtime = runtime(&host).await;

    // Scripts by incarnation: the first root runs keeper#1 then visitor#2, the second
    // visitor#1 then keeper#2.
    // A keeper writes, then becomes a visitor: the instance stays, the process lets go of it.
    let (left, done) = run_root(&host, &runtime, "keeper", "write").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "visitor");
    let oid = instance(&runtime, "keeper").expect("instance");
    let space = runtime.object_space();
    assert!(space.object(oid).is_some_and(|o| !o.released), "one agent's exec never deletes it");
    assert_eq!(bound(&runtime, left), None);
    assert_eq!(space.rights(left, oid), ObjectRights::empty());

    // A visitor becomes a keeper: its second incarnation reads the instance.
    let (came, done) = run_root(&host, &runtime, "visitor", "come").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!((done.profile().as_str(), done.result()), ("keeper", json!("seen")));
    assert!(refusals(&host, came).is_empty(), "{:?}", refusals(&host, came));
    assert_eq!(bound(&runtime, came), Some(oid));
}

#[tokio::test]
async fn a_reopened_state_directory_finds_the_same_instance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = Scripts::new()
        .with("keeper:before", vec![remember("k", "before-reopen"), ScriptedTurn::text("done")])
        .with(
            "keeper:after",
            vec![recall("k"), ScriptedTurn::text("done").expect_tool_result("before-reopen")],
        );
    let host = host(SHARED, scripts);

    let runtime = Runtime::open(dir.path(), RuntimeOptions::new().image(host.image())).await.expect("open");
    let (_, done) = run_root(&host, &runtime, "keeper", "before").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    let before = instance(&runtime, "keeper").expect("instance");
    runtime.shutdown().await.expect("shutdown");

    let runtime = Runtime::open(dir.path(), RuntimeOptions::new().image(host.image())).await.expect("reopen");
    assert_eq!(instance(&runtime, "keeper"), Some(before), "the binding survived the reopen");
    let (after, done) = run_root(&host, &runtime, "keeper", "after").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert!(refusals(&host, after).is_empty(), "{:?}", refusals(&host, after));
    assert_eq!(bound(&runtime, after), Some(before));
    runtime.shutdown().await.expect("shutdown");
}
