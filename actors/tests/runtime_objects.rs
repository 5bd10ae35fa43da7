//! Object memory through the runtime: what a spawn and each fork mode give the child, results,
//! waits and merges, the release of unmerged children's memory, data flow, checkpoints, and a
//! launch whose commit is refused.
//!
//! Processes run the puppet images (their programs do nothing); the test makes their calls with
//! `Runtime::call_as`, exactly as their programs would, and checks the runtime's object space
//! keeps every invariant after each step.

mod common;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::ids::{IdSource, Oid, Pid};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::objects::{
    DropReason, DroppedSkill, ForkMode, ObjectChange, ObjectKind, Owner, RootSelection, Skill, SkipReason,
    Skipped,
};
use agentvisor_actors::kernel::process::ProcessRow;
use agentvisor_actors::kernel::status::Status;
use agentvisor_actors::runtime::calls::{Call, CreateObject, Launched, NamedWrite, ObjectTarget};
use agentvisor_actors::runtime::ids::UuidV7Ids;
use agentvisor_actors::runtime::program::{Image, ProgramResult, program_fn};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeError, RuntimeOptions};
use agentvisor_actors::store::{Change, MemoryStore, ProcessQuery};
use common::interposed::Interposed;
use common::objects::*;
use common::*;
use parking_lot::Mutex;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A puppet image with a default skill, offering the tools that skill allows.
fn skilled() -> Image {
    Image::new("skilled", |_| program_fn(|_ctx| std::future::pending::<ProgramResult>()))
        .offers(["read_object"])
        .default_skill("summarise", ["read_object"])
}

fn options() -> RuntimeOptions {
    RuntimeOptions::new().image(puppet()).image(skilled())
}

async fn runtime() -> Runtime {
    Runtime::in_memory(options()).await.expect("start a runtime")
}

fn skill(name: &str, tools: &[&str]) -> Skill {
    Skill { name: name.into(), allowed_tools: tools.iter().map(|t| t.to_string()).collect() }
}

fn names(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A root object (bound to `name`, unlabelled, runtime-local).
fn root_object(name: &str, payload: serde_json::Value) -> CreateObject {
    CreateObject { root: true, ..object(Some(name), payload, &[]) }
}

/// Every child row of `parent`, terminal ones included.
fn children(rt: &Runtime, parent: Pid) -> Vec<ProcessRow> {
    let query = ProcessQuery { parent: Some(parent), include_terminal: true, ..ProcessQuery::default() };
    rt.processes(query).expect("read the store")
}

fn released(rt: &Runtime, oid: Oid) -> bool {
    rt.object(oid).expect("the object (or its tombstone) exists").released
}

// ---- spawn ----------------------------------------------------------------------------------

#[tokio::test]
async fn spawn_gives_a_goal_only_view_with_the_image_default_skills() {
    let rt = runtime().await;
    let root = rt.spawn_root(root_spec("skilled", Budget::UNLIMITED)).await.expect("root");
    assert_space(&rt);
    let notes = create_ok(&rt, root, root_object("notes", json!("the parent's notes"))).await;
    load_skills(&rt, root, vec![skill("custom", &["read_object"])]).await;
    assert_space(&rt);

    let launched = try_spawn(&rt, root, launch("spawned goal", None)).await.expect("spawn");
    assert_space(&rt);
    let child = launched.pid;
    let goal = launched.view.goal_oid.expect("a goal object");
    assert_eq!(launched.view.roots, [goal], "the goal is the only root");
    assert_eq!(launched.view.mode, None);
    assert_eq!(launched.view.skills, ["summarise"], "the image defaults, not the parent's snapshot");
    assert!(launched.view.dropped_skills.is_empty() && launched.view.released_roots.is_empty());

    let report = list_objects(&rt, child).await;
    assert_eq!(rt.memory(child).as_ref(), Some(&report), "the host sees what the process lists");
    assert_eq!((report.pid, report.goal_oid), (child, Some(goal)));
    assert_eq!(report.roots, [goal]);
    assert_eq!(report.handles.len(), 1, "only the goal: {report:#?}");
    let handle = &report.handles[0];
    assert_eq!(handle.oid, goal);
    assert_eq!(handle.kind, "goal");
    assert_eq!(handle.owner, format!("process {child}"));
    assert_eq!(handle.rights, names(&["read", "write", "delegate"]));
    assert_eq!(handle.names, names(&["goal"]));
    assert!(handle.root && !handle.ephemeral);
    assert_eq!(report.skills, [skill("summarise", &["read_object"])]);
    assert!(report.context.is_empty());
    assert_eq!((report.clearance, report.collected), (None, None));
    assert_eq!(report.owned.iter().map(|o| o.oid).collect::<Vec<_>>(), [goal]);

    let goal_view = read_target(&rt, child, ObjectTarget::Name("goal".into())).await.expect("read the goal");
    assert_eq!(goal_view.oid, goal);
    assert_eq!(goal_view.kind, "goal");
    assert_eq!(goal_view.payload, Some(json!("spawned goal")));
    assert!(goal_view.materialized && goal_view.durable);
    let meta = rt.object(goal).expect("the goal");
    assert_eq!((meta.owner, meta.kind), (Owner::Process(child), ObjectKind::Goal));

    // Nothing of the parent's is reachable.
    assert_refused(read(&rt, child, notes).await, "missing_right", &[&notes.to_string(), "read"]);
    assert_refused(
        read_target(&rt, child, ObjectTarget::Name("notes".into())).await,
        "unknown_name",
        &["notes"],
    );
    assert_eq!(rights_of(&rt, child, notes), Vec::<String>::new());
    // The parent's view is as it was.
    let parent = rt.memory(root).expect("the root's memory");
    assert!(parent.roots.contains(&notes));
    assert_eq!(parent.skills, [skill("custom", &["read_object"])]);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

// ---- fork modes -----------------------------------------------------------------------------

#[tokio::test]
async fn each_fork_mode_gives_the_child_its_documented_rights_and_skills() {
    let rt = runtime().await;
    let root = rt.spawn_root(root_spec("skilled", Budget::UNLIMITED)).await.expect("root");
    let root_goal = rt.memory(root).and_then(|m| m.goal_oid).expect("the root's goal");
    let shared = create_ok(&rt, root, root_object("shared", json!({ "v": 1 }))).await;
    let private = create_ok(&rt, root, object(Some("private"), json!("not a root"), &[])).await;
    load_skills(&rt, root, vec![skill("custom", &["read_object"])]).await;
    assert_space(&rt);

    let cases = [
        (ForkMode::Worker, vec!["read", "delegate"], false, vec!["custom"]),
        (ForkMode::Restricted, vec!["read"], false, vec!["summarise"]),
        (ForkMode::Copy, vec!["read", "write", "delegate"], false, vec!["custom"]),
        (ForkMode::Speculative, vec!["read"], true, vec!["custom"]),
    ];
    for (mode, rights, ephemeral, skills) in cases {
        let launched = fork(&rt, root, launch(mode.as_str(), None), mode, RootSelection::AllParentRoots)
            .await
            .unwrap_or_else(|e| panic!("{mode} fork: {e}"));
        assert_space(&rt);
        let child = launched.pid;
        let goal = launched.view.goal_oid.expect("a goal");
        assert_eq!(
            launched.view.roots,
            [goal, root_goal, shared],
            "{mode}: the goal, then the parent's roots"
        );
        assert_eq!(launched.view.mode, Some(mode));
        assert_eq!(launched.view.skills, skills, "{mode}");
        if mode == ForkMode::Restricted {
            let dropped = DroppedSkill { name: "custom".into(), reason: DropReason::RestrictedMode };
            assert_eq!(launched.view.dropped_skills, [dropped]);
        } else {
            assert!(launched.view.dropped_skills.is_empty(), "{mode}");
        }

        let report = list_objects(&rt, child).await;
        let inherited = handle_on(&report, shared).unwrap_or_else(|| panic!("{mode}: no handle"));
        assert_eq!(inherited.rights, names(&rights), "{mode}");
        assert_eq!(inherited.ephemeral, ephemeral, "{mode}");
        assert_eq!(inherited.names, names(&["shared"]), "{mode}: bound under the parent's name");
        assert!(inherited.root, "{mode}");
        assert_eq!(inherited.owner, format!("process {root}"));
        assert!(handle_on(&report, private).is_none(), "{mode}: a non-root was not selected");
        assert_eq!(
            report.roots.iter().copied().collect::<BTreeSet<_>>(),
            BTreeSet::from([goal, root_goal, shared])
        );
        let child_goal = handle_on(&report, goal).expect("the child's goal");
        assert_eq!((child_goal.names.clone(), child_goal.rights.len()), (names(&["goal"]), 3));
        let parent_goal = handle_on(&report, root_goal).expect("the parent's goal, inherited");
        assert_eq!(parent_goal.rights, names(&rights), "{mode}");
        let read_back = read(&rt, child, shared).await.expect("every mode can read");
        assert_eq!(read_back.payload, Some(json!({ "v": 1 })));
        assert_space(&rt);
    }
    // The parent still holds everything it held, with every right.
    assert_eq!(rights_of(&rt, root, shared), names(&["read", "write", "delegate"]));

    // A cross-image fork drops the parent skills whose tools the image does not offer.
    let cross =
        fork(&rt, root, launch("cross", Some("puppet")), ForkMode::Worker, RootSelection::NoParentRoots)
            .await
            .expect("cross-image fork");
    assert!(cross.view.skills.is_empty());
    let dropped = DroppedSkill {
        name: "custom".into(),
        reason: DropReason::ToolsNotOffered { tools: names(&["read_object"]) },
    };
    assert_eq!(cross.view.dropped_skills, [dropped]);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_parent_goal_is_inherited_as_a_root_but_not_as_goal() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let root_goal = rt.memory(root).and_then(|m| m.goal_oid).expect("the root's goal");
    let launched = fork(&rt, root, launch("child", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork");
    let child_goal = launched.view.goal_oid.expect("a goal");
    assert_ne!(child_goal, root_goal);
    assert_eq!(launched.view.roots, [child_goal, root_goal]);
    let report = list_objects(&rt, launched.pid).await;
    assert_eq!(handle_on(&report, child_goal).expect("own goal").names, names(&["goal"]));
    assert!(handle_on(&report, root_goal).expect("the parent's goal").names.is_empty());
    let inherited = read(&rt, launched.pid, root_goal).await.expect("read the parent's goal");
    assert_eq!(inherited.payload, Some(json!("root on puppet")));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

fn named(name: &str, payload: serde_json::Value) -> NamedWrite {
    NamedWrite { name: name.into(), payload }
}

fn stored_checkpoint(rt: &Runtime, pid: Pid) -> Option<Vec<u8>> {
    rt.store().checkpoint(pid).expect("the store answers").map(|envelope| envelope.body)
}

/// Checks the writes of the named-write tests: `kept` now 2, `fresh` created durable.
async fn assert_written(rt: &Runtime, root: Pid, kept: Oid) {
    assert_eq!(read(rt, root, kept).await.expect("read").payload, Some(json!(2)));
    let fresh =
        read_target(rt, root, ObjectTarget::Name("fresh".into())).await.expect("created under its name");
    assert_eq!(fresh.payload, Some(json!({"a": 1})));
    assert!(fresh.durable, "created durable");
}

/// Makes, as a worker fork of `root` that may read but not write `root`'s object `shared`, the
/// call `call` builds from two writes: a new object `mine`, then `shared`. Checks that the call
/// is refused at the second (`missing_right`) with the first made; returns the fork.
async fn refused_midway(rt: &Runtime, root: Pid, call: impl FnOnce(Vec<NamedWrite>) -> Call) -> Pid {
    rt.call_as(root, Call::CreateObject(root_object("shared", json!("original")))).await.expect("create");
    let child = fork(rt, root, launch("worker", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let writes = vec![named("mine", json!("made")), named("shared", json!("overwritten"))];
    assert_refused(rt.call_as(child, call(writes)).await, "missing_right", &["write"]);
    let mine =
        read_target(rt, child, ObjectTarget::Name("mine".into())).await.expect("made before the refusal");
    assert_eq!(mine.payload, Some(json!("made")));
    child
}

#[tokio::test]
async fn a_checkpoint_writes_its_named_objects_with_it_and_refuses_as_the_writes_would() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let kept =
        create_ok(&rt, root, CreateObject { durable: true, ..object(Some("kept"), json!(1), &[]) }).await;
    // A checkpoint without writes commits the row, and charges nothing.
    rt.call_as(root, Call::Checkpoint { state: b"zero".to_vec(), writes: Vec::new() })
        .await
        .expect("checkpoint");
    let calls = row(&rt, root).account.self_spent.tool_calls;
    let writes = vec![named("kept", json!(2)), named("fresh", json!({"a": 1}))];
    rt.call_as(root, Call::Checkpoint { state: b"one".to_vec(), writes }).await.expect("checkpoint");
    assert_eq!(row(&rt, root).account.self_spent.tool_calls, calls + 2, "charged as the two object calls");
    assert_eq!(stored_checkpoint(&rt, root).as_deref(), Some(&b"one"[..]));
    assert_written(&rt, root, kept).await;

    // Refused before anything is written: a name twice, a payload over the limit.
    let twice = vec![named("kept", json!(3)), named("kept", json!(4))];
    let refused = rt.call_as(root, Call::Checkpoint { state: b"two".to_vec(), writes: twice }).await;
    assert_refused(refused, "invalid_arguments", &["kept", "twice"]);
    let big = json!("x".repeat(agentvisor_actors::limits::OBJECT_BYTES_MAX));
    let over = vec![named("kept", json!(5)), named("fresh", big)];
    let refused = rt.call_as(root, Call::Checkpoint { state: b"two".to_vec(), writes: over }).await;
    assert_refused(refused, "payload_too_large", &["fresh"]);
    assert_eq!(read(&rt, root, kept).await.expect("read").payload, Some(json!(2)));
    assert_eq!(stored_checkpoint(&rt, root).as_deref(), Some(&b"one"[..]));

    // Refused by the object rules midway: the writes before it are made, the checkpoint is not.
    let child =
        refused_midway(&rt, root, |writes| Call::Checkpoint { state: b"child".to_vec(), writes }).await;
    assert_eq!(stored_checkpoint(&rt, child), None, "no checkpoint after a refused write");
    let shared = read_target(&rt, child, ObjectTarget::Name("shared".into())).await.expect("read");
    assert_eq!(shared.payload, Some(json!("original")));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn named_writes_are_made_in_one_call_as_the_writes_one_by_one_would() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let kept =
        create_ok(&rt, root, CreateObject { durable: true, ..object(Some("kept"), json!(1), &[]) }).await;
    // Charges reach the stored row with its next commit, as a write_object's do: a checkpoint
    // without writes commits it and charges nothing.
    let commit_row = || rt.call_as(root, Call::Checkpoint { state: Vec::new(), writes: Vec::new() });
    commit_row().await.expect("checkpoint");
    let calls = row(&rt, root).account.self_spent.tool_calls;
    let writes = vec![named("kept", json!(2)), named("fresh", json!({"a": 1}))];
    rt.call_as(root, Call::WriteNamed(writes)).await.expect("written");
    commit_row().await.expect("checkpoint");
    assert_eq!(row(&rt, root).account.self_spent.tool_calls, calls + 2, "charged as the two object calls");
    assert_written(&rt, root, kept).await;

    let twice = vec![named("kept", json!(3)), named("kept", json!(4))];
    assert_refused(rt.call_as(root, Call::WriteNamed(twice)).await, "invalid_arguments", &["kept", "twice"]);
    assert_eq!(read(&rt, root, kept).await.expect("read").payload, Some(json!(2)), "nothing written");

    // Refused by the object rules midway: the writes before it are made.
    refused_midway(&rt, root, Call::WriteNamed).await;
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn read_only_fork_modes_cannot_write_inherited_objects() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("original"))).await;
    for (mode, code) in [
        (ForkMode::Worker, "missing_right"),
        (ForkMode::Restricted, "missing_right"),
        (ForkMode::Speculative, "ephemeral_handle"),
    ] {
        let child = fork(&rt, root, launch(mode.as_str(), None), mode, RootSelection::AllParentRoots)
            .await
            .expect("fork")
            .pid;
        let oid = shared.to_string();
        let why = if code == "missing_right" { "write" } else { "speculative" };
        assert_refused(write(&rt, child, shared, json!("overwritten")).await, code, &[&oid, why]);
        let target = ObjectTarget::Name("shared".into());
        let by_name = rt.call_as(child, Call::WriteObject { target, payload: json!("by name") }).await;
        assert_refused(by_name, code, &[&oid]);
        assert_refused(checkpoint(&rt, child, shared).await, "missing_right", &[&oid, "write"]);
        assert_space(&rt);
    }
    let seen = read(&rt, root, shared).await.expect("the parent reads");
    assert_eq!(seen.payload, Some(json!("original")));
    assert!(rt.object(shared).expect("shared").labels.is_empty());
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_copy_child_writes_the_same_object_the_parent_reads() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("original"))).await;
    let child = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let written = write(&rt, child, shared, json!({ "by": "the child" })).await.expect("a copy child writes");
    assert_eq!(written.oid, shared, "the same OID: not copy-on-write");
    assert_space(&rt);
    let seen = read(&rt, root, shared).await.expect("the parent reads");
    assert_eq!(seen.payload, Some(json!({ "by": "the child" })));
    assert_eq!(rt.payload(shared).expect("payload"), Some(json!({ "by": "the child" })));
    // And the other way round.
    write(&rt, root, shared, json!("the parent again")).await.expect("the parent writes");
    let seen = read(&rt, child, shared).await.expect("the child reads");
    assert_eq!(seen.payload, Some(json!("the parent again")));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_speculative_child_leaves_inherited_objects_and_its_own_objects_merge() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("original"))).await;
    let before = rt.object(shared).expect("shared");
    let launched =
        fork(&rt, root, launch("speculate", None), ForkMode::Speculative, RootSelection::AllParentRoots)
            .await
            .expect("fork");
    let child = launched.pid;
    let child_goal = launched.view.goal_oid.expect("a goal");
    assert_refused(
        write(&rt, child, shared, json!("changed")).await,
        "ephemeral_handle",
        &[&shared.to_string()],
    );
    // A grandchild of a speculative view still sees it read-only, whatever mode it asks for.
    let copy =
        fork(&rt, child, launch("copy of a view", None), ForkMode::Copy, RootSelection::Exact(vec![shared]))
            .await;
    assert_refused(copy, "missing_right", &[&shared.to_string(), "write"]);
    let worker =
        fork(&rt, child, launch("worker of a view", None), ForkMode::Worker, RootSelection::AllParentRoots)
            .await
            .expect("a worker fork of a speculative view");
    let view = rt.memory(worker.pid).expect("grandchild memory");
    let h = handle_on(&view, shared).expect("inherited");
    assert_eq!((h.rights.clone(), h.ephemeral), (names(&["read"]), true), "speculative all the way down");
    exit(&rt, worker.pid, None).await;

    let made = create_ok(&rt, child, root_object("finding", json!("what the child found"))).await;
    assert_space(&rt);
    exit(&rt, child, None).await;
    assert_space(&rt);
    let waited = wait(&rt, root, child, true).await.expect("wait");
    assert!(waited.ready && waited.result_oid.is_none() && !waited.result_handle, "{waited:?}");
    let merged = merge(&rt, root, child, false).await.expect("merge");
    assert_space(&rt);
    assert_eq!(merged.merged_oids, [made]);
    let root_goal = rt.memory(root).and_then(|m| m.goal_oid).expect("the root's goal");
    let mut expected = vec![
        Skipped { oid: root_goal, reason: SkipReason::NotChildOwned },
        Skipped { oid: shared, reason: SkipReason::NotChildOwned },
        Skipped { oid: child_goal, reason: SkipReason::Goal },
    ];
    expected.sort_by_key(|s| s.oid);
    assert_eq!(merged.skipped_oids, expected);

    assert_eq!(rt.object(shared), Some(before), "the inherited object is unchanged");
    assert_eq!(read(&rt, root, shared).await.expect("read").payload, Some(json!("original")));
    let adopted = rt.object(made).expect("adopted");
    assert_eq!(adopted.owner, Owner::Process(root));
    assert!(!adopted.released);
    assert_eq!(read(&rt, root, made).await.expect("read").payload, Some(json!("what the child found")));
    rt.shutdown().await.expect("shutdown");
}

// ---- root selection -------------------------------------------------------------------------

#[tokio::test]
async fn root_selection_follows_root_oids_and_include_parent_roots() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let root_goal = rt.memory(root).and_then(|m| m.goal_oid).expect("goal");
    let a = create_ok(&rt, root, root_object("a", json!(1))).await;
    let b = create_ok(&rt, root, root_object("b", json!(2))).await;
    let loose = create_ok(&rt, root, object(None, json!(3), &[])).await;

    let roots_of = |launched: &Launched| {
        let goal = launched.view.goal_oid.expect("a goal");
        assert_eq!(launched.view.roots.first(), Some(&goal), "the goal comes first");
        let report = rt.memory(launched.pid).expect("memory");
        assert_eq!(
            report.roots.iter().copied().collect::<BTreeSet<_>>(),
            launched.view.roots.iter().copied().collect()
        );
        launched.view.roots[1..].to_vec()
    };
    let go = |roots: RootSelection| fork(&rt, root, launch("selection", None), ForkMode::Worker, roots);

    let all = go(RootSelection::AllParentRoots).await.expect("all roots");
    assert_eq!(
        roots_of(&all).into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from([root_goal, a, b]),
        "every live root of the parent, not the loose object"
    );
    let none = go(RootSelection::NoParentRoots).await.expect("include_parent_roots=false");
    assert!(roots_of(&none).is_empty());
    let empty = go(RootSelection::Exact(Vec::new())).await.expect("root_oids: []");
    assert!(roots_of(&empty).is_empty(), "an empty list is an exact selection of nothing");
    assert_eq!(rt.memory(empty.pid).expect("memory").handles.len(), 1, "only its goal");
    let exact = go(RootSelection::Exact(vec![loose, b, loose])).await.expect("exact");
    assert_eq!(roots_of(&exact), [loose, b], "exactly these, deduplicated, in order; any held object");
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_fork_of_an_object_the_parent_does_not_hold_is_denied_and_takes_no_pid() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let stranger = puppet_root(&rt).await;
    let theirs = create_ok(&rt, stranger, root_object("theirs", json!("not yours"))).await;
    let mine = create_ok(&rt, root, root_object("mine", json!("yours"))).await;
    let space_before = rt.object_space();
    let mut events = rt.subscribe();

    let denied =
        fork(&rt, root, launch("thief", None), ForkMode::Worker, RootSelection::Exact(vec![mine, theirs]))
            .await;
    assert_refused(denied, "missing_right", &[&theirs.to_string(), "read"]);
    let denied =
        fork(&rt, root, launch("thief", None), ForkMode::Copy, RootSelection::Exact(vec![theirs])).await;
    assert_refused(denied, "missing_right", &[&theirs.to_string(), "read"]);
    let unknown = UuidV7Ids.oid();
    let denied =
        fork(&rt, root, launch("nothing", None), ForkMode::Worker, RootSelection::Exact(vec![unknown])).await;
    assert_refused(denied, "unknown_object", &[&unknown.to_string()]);

    assert!(children(&rt, root).is_empty(), "a denied fork takes no pid");
    assert_eq!(list(&rt, root, true).await.children.len(), 0);
    assert_eq!(rt.object_space(), space_before, "a denied fork changes no memory");
    let denials: Vec<String> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            KernelEvent::LaunchDenied { parent, code, .. } if parent == root => Some(code),
            KernelEvent::ProcessLaunched { pid, .. } => panic!("{pid} was launched"),
            _ => None,
        })
        .collect();
    assert_eq!(denials, ["missing_right", "missing_right", "unknown_object"]);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

// ---- results, waits, merges -----------------------------------------------------------------

/// The seed's example: a worker child with an inherited root N creates A (a root), B (not a
/// root) and S (an ephemeral root), then exits with a result R.
struct Example {
    root: Pid,
    child: Pid,
    child_goal: Oid,
    n: Oid,
    a: Oid,
    b: Oid,
    s: Oid,
    r: Oid,
}

async fn example(rt: &Runtime) -> Example {
    let root = puppet_root(rt).await;
    let n = create_ok(rt, root, root_object("n", json!("parent root"))).await;
    let launched = fork(rt, root, launch("worker", None), ForkMode::Worker, RootSelection::Exact(vec![n]))
        .await
        .expect("fork");
    let child = launched.pid;
    let child_goal = launched.view.goal_oid.expect("goal");
    let a = create_ok(rt, child, root_object("a", json!("A"))).await;
    let b = create_ok(rt, child, object(Some("b"), json!("B"), &[])).await;
    let s = create_ok(rt, child, CreateObject { ephemeral: true, ..root_object("s", json!("S")) }).await;
    assert_space(rt);
    let exited = exit(rt, child, Some(json!({ "answer": 42 }))).await;
    assert_eq!(exited.status, Status::Exited);
    let r = exited.result_oid.expect("an exit payload makes a result");
    assert_space(rt);
    Example { root, child, child_goal, n, a, b, s, r }
}

#[tokio::test]
async fn an_exit_result_is_readable_only_after_a_wait_and_a_merge_releases_it() {
    let rt = runtime().await;
    let Example { root, child, child_goal, n, a, b, s, r } = example(&rt).await;

    let result = rt.object(r).expect("the result");
    assert_eq!(result.kind, ObjectKind::ProcessResult);
    assert_eq!(result.owner, Owner::ProcessResult(child));
    assert!(!result.released && !result.ephemeral);
    assert_eq!(row(&rt, child).result_oid, Some(r));
    assert!(!rt.memory(child).expect("memory").roots.contains(&r), "a result is not a root");

    assert_refused(read(&rt, root, r).await, "missing_right", &[&r.to_string(), "read"]);
    let waited = wait(&rt, root, child, false).await.expect("wait");
    assert!(waited.ready && waited.result_handle, "{waited:?}");
    assert_eq!((waited.result_oid, waited.result_denied.clone()), (Some(r), None));
    assert_space(&rt);
    assert_eq!(rights_of(&rt, root, r), names(&["read"]));
    let seen = read(&rt, root, r).await.expect("read the result after the wait");
    assert_eq!((seen.kind.as_str(), seen.payload), ("process_result", Some(json!({ "answer": 42 }))));
    assert!(seen.materialized && seen.durable);
    assert_refused(write(&rt, root, r, json!("no")).await, "missing_right", &[&r.to_string(), "write"]);

    let merged = merge(&rt, root, child, false).await.expect("merge");
    assert_space(&rt);
    assert_eq!(merged.child_pid, child);
    assert_eq!(merged.merged_oids, [a]);
    let mut skipped = vec![
        Skipped { oid: n, reason: SkipReason::NotChildOwned },
        Skipped { oid: child_goal, reason: SkipReason::Goal },
        Skipped { oid: s, reason: SkipReason::Ephemeral },
    ];
    skipped.sort_by_key(|s| s.oid);
    assert_eq!(merged.skipped_oids, skipped, "roots only, in OID order");

    // Adopted: same OID, owned by the parent with every right, no name, not a root.
    let adopted = rt.object(a).expect("a");
    assert_eq!((adopted.owner, adopted.released), (Owner::Process(root), false));
    let parent = rt.memory(root).expect("memory");
    let h = handle_on(&parent, a).expect("a handle on the adopted object");
    assert_eq!(h.rights, names(&["read", "write", "delegate"]));
    assert!(h.names.is_empty() && !h.root && !parent.roots.contains(&a));
    assert_eq!(read(&rt, root, a).await.expect("read").payload, Some(json!("A")));
    // Released: the goal, B, S and the waited result, whose handle is revoked.
    for oid in [child_goal, b, s, r] {
        assert!(released(&rt, oid), "{oid} released");
        assert_eq!(rt.payload(oid).expect("payload"), None, "{oid}'s payload went with it");
    }
    assert!(!released(&rt, n), "the parent's own root stays");
    assert!(handle_on(&parent, r).is_none());
    assert_refused(read(&rt, root, r).await, "object_released", &[&r.to_string()]);
    let child_memory = rt.memory(child).expect("the child's memory");
    assert_eq!(child_memory.collected.as_deref(), Some("merged"));
    assert!(child_memory.handles.is_empty());

    assert_refused(merge(&rt, root, child, false).await, "already_merged", &[&child.to_string()]);
    assert_refused(merge(&rt, root, child, true).await, "already_merged", &[&child.to_string()]);
    let again = wait(&rt, root, child, false).await.expect("a wait after the merge");
    assert!(!again.result_handle, "{again:?}");
    assert_eq!(again.result_denied.map(|e| e.code), Some("object_released".to_string()));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_merge_with_child_created_objects_adopts_the_non_roots_too() {
    let rt = runtime().await;
    let Example { root, child, child_goal, n, a, b, s, r } = example(&rt).await;
    let merged = merge(&rt, root, child, true).await.expect("merge");
    assert_space(&rt);
    assert_eq!(merged.merged_oids, [a, b], "roots first, then the other child-created objects");
    let mut skipped = vec![
        Skipped { oid: n, reason: SkipReason::NotChildOwned },
        Skipped { oid: child_goal, reason: SkipReason::Goal },
        Skipped { oid: s, reason: SkipReason::Ephemeral },
    ];
    skipped.sort_by_key(|s| s.oid);
    assert_eq!(merged.skipped_oids, skipped, "the result is never a candidate");
    for oid in [a, b] {
        assert_eq!(rt.object(oid).map(|o| (o.owner, o.released)), Some((Owner::Process(root), false)));
    }
    assert!(released(&rt, r), "an unwaited result is released too");
    let waited = wait(&rt, root, child, false).await.expect("wait");
    assert_eq!(waited.result_oid, Some(r), "the OID survives as evidence");
    assert!(!waited.result_handle);
    assert_eq!(waited.result_denied.map(|e| e.code), Some("object_released".to_string()));
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_merge_of_a_live_child_or_a_stranger_is_refused() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let child = fork(&rt, root, launch("live", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let made = create_ok(&rt, child, root_object("work", json!("in progress"))).await;
    assert_refused(merge(&rt, root, child, true).await, "child_not_terminal", &[&child.to_string()]);
    let grandchild = spawn(&rt, child, "grandchild").await;
    assert_refused(merge(&rt, root, grandchild, true).await, "not_direct_child", &[&grandchild.to_string()]);
    assert_refused(merge(&rt, root, root, true).await, "not_direct_child", &[]);
    assert!(!released(&rt, made) && rt.memory(child).expect("memory").collected.is_none());
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_parent_that_ends_without_merging_releases_its_childrens_memory() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let parent = spawn(&rt, root, "parent").await;
    let kept = create_ok(&rt, parent, root_object("kept", json!("the parent's own"))).await;
    let ended = fork(&rt, parent, launch("ended", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let live = fork(&rt, parent, launch("live", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let grandchild = spawn(&rt, live, "grandchild").await;
    assert_space(&rt);
    let ended_made = create_ok(&rt, ended, root_object("made", json!(1))).await;
    let live_made = create_ok(&rt, live, object(None, json!(2), &[])).await;
    let grandchild_made = create_ok(&rt, grandchild, object(None, json!(3), &[])).await;
    let ended_goal = rt.memory(ended).and_then(|m| m.goal_oid).expect("goal");
    let result = exit(&rt, ended, Some(json!("done"))).await.result_oid.expect("a result");
    assert_space(&rt);
    assert!(wait(&rt, parent, ended, false).await.expect("wait").result_handle);
    assert_space(&rt);

    // The parent exits without merging: its live child is ended first (and its grandchild),
    // then the memory of both children is released in the commit of the parent's end.
    let mut events = rt.subscribe();
    exit(&rt, parent, Some(json!("parent done"))).await;
    assert_space(&rt);
    assert_eq!(row(&rt, live).status, Status::Killed);
    assert_eq!(row(&rt, grandchild).status, Status::Killed);
    for oid in [ended_made, ended_goal, result, live_made, grandchild_made] {
        assert!(released(&rt, oid), "{oid} was released with its owner's memory");
        assert_eq!(rt.payload(oid).expect("payload"), None);
    }
    for pid in [ended, live, grandchild] {
        let memory = rt.memory(pid).expect("memory");
        assert_eq!(memory.collected.as_deref(), Some("released"), "{pid}");
        assert!(memory.handles.is_empty(), "{pid} holds nothing: {memory:?}");
    }
    // The parent's own memory stays until the root collects it; only the handle on the
    // released result went.
    let parent_memory = rt.memory(parent).expect("memory");
    assert_eq!(parent_memory.collected, None);
    assert!(handle_on(&parent_memory, result).is_none());
    assert!(!released(&rt, kept));
    assert!(drain(&mut events).iter().any(|e| matches!(
        e,
        KernelEvent::ProcessTransition { pid, to: Status::Exited, .. } if *pid == parent
    )));

    // The root ends in turn: the parent's memory (and its result) go with it.
    let parent_result = row(&rt, parent).result_oid.expect("the parent's result");
    exit(&rt, root, None).await;
    assert_space(&rt);
    assert!(released(&rt, kept) && released(&rt, parent_result));
    assert_eq!(rt.memory(parent).expect("memory").collected.as_deref(), Some("released"));
    assert!(rt.object_space().handles().all(|h| h.holder == root));
    rt.shutdown().await.expect("shutdown");
}

// ---- data flow ------------------------------------------------------------------------------

#[tokio::test]
async fn a_root_cleared_only_for_public_cannot_create_a_secret_object() {
    let rt = runtime().await;
    let spec = RootSpec { clearance: Some(labels(&["public"])), ..root_spec("puppet", Budget::UNLIMITED) };
    let root = rt.spawn_root(spec.clone()).await.expect("root");
    assert_eq!(rt.memory(root).expect("memory").clearance, Some(names(&["public"])));
    let refused = create(&rt, root, object(Some("s"), json!("classified"), &["secret"])).await;
    assert_refused(refused, "flow_denied", &["secret", &root.to_string()]);
    let refused = create(&rt, root, object(Some("s"), json!("classified"), &["public", "secret"])).await;
    assert_refused(refused, "flow_denied", &["secret"]);
    assert!(rt.memory(root).expect("memory").owned.len() == 1, "only the goal: a refusal creates nothing");
    let public = create(&rt, root, object(Some("p"), json!("fine"), &["public"])).await.expect("public");
    assert_eq!(public.labels, names(&["public"]));
    assert_space(&rt);

    // A goal labelled beyond the clearance is refused at launch.
    let beyond = RootSpec { goal_labels: labels(&["secret"]), ..spec };
    match rt.spawn_root(beyond).await {
        Err(RuntimeError::Tool(e)) => {
            assert_eq!(e.code, "flow_denied", "{e:?}");
            assert!(e.message.contains("secret") && e.message.contains("root"), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_child_with_a_narrower_clearance_cannot_inherit_a_labelled_object() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let secret =
        create_ok(&rt, root, CreateObject { root: true, ..object(Some("s"), json!("x"), &["secret"]) }).await;
    let plain = create_ok(&rt, root, root_object("plain", json!("y"))).await;
    let narrow = |goal: &str| LaunchRequest { clearance: Some(labels(&["public"])), ..launch(goal, None) };
    let space_before = rt.object_space();

    for mode in [ForkMode::Worker, ForkMode::Copy, ForkMode::Speculative, ForkMode::Restricted] {
        let denied = fork(&rt, root, narrow("narrow"), mode, RootSelection::AllParentRoots).await;
        assert_refused(denied, "flow_denied", &[&secret.to_string(), "secret"]);
    }
    let denied =
        fork(&rt, root, narrow("narrow"), ForkMode::Worker, RootSelection::Exact(vec![plain, secret])).await;
    assert_refused(denied, "flow_denied", &[&secret.to_string(), "secret"]);
    assert!(children(&rt, root).is_empty(), "no pid taken");
    assert_eq!(rt.object_space(), space_before);

    // Without the labelled object the narrower child launches, with that clearance.
    let child = fork(&rt, root, narrow("narrow"), ForkMode::Worker, RootSelection::Exact(vec![plain]))
        .await
        .expect("fork without the secret")
        .pid;
    let memory = rt.memory(child).expect("memory");
    assert_eq!(memory.clearance, Some(names(&["public"])));
    assert!(handle_on(&memory, secret).is_none());
    // It cannot widen its own children's clearance past its own.
    let wider = LaunchRequest { clearance: Some(labels(&["public", "secret"])), ..launch("wider", None) };
    assert_refused(try_spawn(&rt, child, wider).await, "clearance_exceeds", &["secret"]);
    assert_eq!(children(&rt, child).len(), 0);
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn reading_a_labelled_object_raises_the_context_and_later_objects_carry_it() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let pii =
        create_ok(&rt, root, CreateObject { root: true, ..object(Some("pii"), json!("a name"), &["pii"]) })
            .await;
    assert!(rt.memory(root).expect("memory").context.is_empty(), "creating raises nothing");
    let child = fork(&rt, root, launch("reader", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let before = create_ok(&rt, child, object(Some("before"), json!(0), &[])).await;
    assert!(rt.object(before).expect("before").labels.is_empty());

    let seen = read(&rt, child, pii).await.expect("read");
    assert_eq!(seen.labels, names(&["pii"]));
    assert_eq!(rt.memory(child).expect("memory").context, names(&["pii"]));
    assert_eq!(list_objects(&rt, child).await.context, names(&["pii"]));
    assert_space(&rt);

    let after = create(&rt, child, object(Some("after"), json!(1), &["public"])).await.expect("create");
    assert_eq!(after.labels, names(&["pii", "public"]), "the creator's context rides along");
    let rewritten = write(&rt, child, before, json!("now tainted")).await.expect("write");
    assert_eq!(rewritten.labels, names(&["pii"]), "a write adds the writer's context");
    // The child's result carries its context; its launches' goals do too.
    let grandchild = try_spawn(&rt, child, launch("knows", None)).await.expect("spawn");
    let goal = grandchild.view.goal_oid.expect("goal");
    assert_eq!(rt.object(goal).expect("goal").labels, labels(&["pii"]));
    assert_eq!(rt.memory(grandchild.pid).expect("memory").context, names(&["pii"]));
    // A child not cleared for what the parent knows cannot be launched at all.
    let blind = LaunchRequest { clearance: Some(BTreeSet::new()), ..launch("blind", None) };
    assert_refused(try_spawn(&rt, child, blind).await, "flow_denied", &["pii", "goal"]);
    exit(&rt, grandchild.pid, None).await;
    let result = exit(&rt, child, Some(json!("report"))).await.result_oid.expect("result");
    assert_eq!(rt.object(result).expect("result").labels, labels(&["pii"]));
    assert!(rt.memory(root).expect("memory").context.is_empty(), "the parent has read nothing yet");
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_write_that_would_taint_an_object_shared_with_an_uncleared_holder_is_refused() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("clean"))).await;
    let narrow = LaunchRequest { clearance: Some(labels(&["public"])), ..launch("narrow", None) };
    let child =
        fork(&rt, root, narrow, ForkMode::Copy, RootSelection::AllParentRoots).await.expect("fork").pid;
    let secret = create_ok(&rt, root, object(Some("secret"), json!("s"), &["secret"])).await;
    read(&rt, root, secret).await.expect("the root reads the secret");
    assert_eq!(rt.memory(root).expect("memory").context, names(&["secret"]));
    let refused = write(&rt, root, shared, json!("leak")).await;
    assert_refused(refused, "flow_denied", &[&child.to_string(), &shared.to_string(), "secret"]);
    assert_eq!(rt.payload(shared).expect("payload"), Some(json!("clean")), "nothing written");
    assert!(rt.object(shared).expect("shared").labels.is_empty());
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

// ---- checkpoints ----------------------------------------------------------------------------

#[tokio::test]
async fn checkpoint_object_needs_write() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("v1"))).await;
    let worker = fork(&rt, root, launch("worker", None), ForkMode::Worker, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    let copy = fork(&rt, root, launch("copy", None), ForkMode::Copy, RootSelection::AllParentRoots)
        .await
        .expect("fork")
        .pid;
    assert_refused(checkpoint(&rt, worker, shared).await, "missing_right", &[&shared.to_string(), "write"]);
    assert!(!read(&rt, root, shared).await.expect("read").durable, "a refused checkpoint changes nothing");
    let done = checkpoint(&rt, copy, shared).await.expect("a copy child holds write");
    assert_eq!((done.oid, done.durable), (shared, true));
    assert!(read(&rt, root, shared).await.expect("read").durable);
    let own = create_ok(&rt, worker, object(None, json!("mine"), &[])).await;
    assert!(checkpoint(&rt, worker, own).await.expect("its own object").durable);
    let written = write(&rt, root, shared, json!("v2")).await.expect("write");
    assert!(written.durable, "every later write is durable too");
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

// ---- a launch whose commit is refused -------------------------------------------------------

/// Whether a change set launches a child (its row, fresh at generation 0).
fn launches(changes: &[Change]) -> bool {
    changes
        .iter()
        .any(|c| matches!(c, Change::PutProcess(row) if row.parent.is_some() && row.state_generation == 0))
}

/// A root with a shared root object forks; just before the fork's change set reaches the store,
/// the spawn grant it delegates from is revoked (a revocation landing between the launch's
/// checks and its commit), so the store refuses the commit. Returns the runtime, the root, its
/// object, and what the refused launch would have made: the child's pid and its goal's OID.
async fn refused_fork() -> (Runtime, Pid, Oid, (Pid, Oid)) {
    let store = Arc::new(Interposed::new(Arc::new(MemoryStore::new())));
    let rt = Runtime::start(store.clone(), options()).await.expect("start");
    let root = puppet_root(&rt).await;
    let shared = create_ok(&rt, root, root_object("shared", json!("s"))).await;
    let spawn_grant = rt
        .grants_of(root)
        .expect("grants")
        .into_iter()
        .find(|g| g.resource == "process:spawn")
        .expect("the spawn grant")
        .id;
    let refused_view = Arc::new(Mutex::new(None));
    let seen = refused_view.clone();
    store.before_submit(
        Box::new(launches),
        Box::new(move |inner, changes| {
            *seen.lock() = changes
                .iter()
                .filter_map(|c| match c {
                    Change::Objects(objects) => Some(objects),
                    _ => None,
                })
                .flatten()
                .find_map(|c| match c {
                    ObjectChange::PutProcess { pid, goal, .. } => Some((*pid, *goal)),
                    _ => None,
                });
            // The memory store commits at submit: the revocation is durable before the launch.
            drop(inner.submit(vec![Change::RevokeGrant(spawn_grant)]));
        }),
    );
    let space_before = rt.object_space();
    let refused = fork(&rt, root, launch("ghost", None), ForkMode::Copy, RootSelection::AllParentRoots).await;
    assert_refused(refused, "capability_revoked", &[&spawn_grant.to_string()]);
    assert_space(&rt);
    assert_eq!(rt.object_space(), space_before, "the refused view was taken back whole");
    let ghost = refused_view.lock().take().expect("the launch reached the store with its view");
    (rt, root, shared, ghost)
}

#[tokio::test]
async fn a_launch_refused_at_commit_leaves_no_ghost_memory() {
    let (rt, root, shared, (ghost, goal)) = refused_fork().await;
    assert!(children(&rt, root).is_empty());
    assert_eq!(rt.process(ghost).expect("read"), None);
    assert!(rt.memory(ghost).is_none());
    assert!(rt.object(goal).is_none());
    assert_eq!(rt.object_space().holders_of(shared).collect::<Vec<_>>(), [root]);
    assert_eq!(rt.store().object_space().expect("read"), rt.object_space(), "memory matches the store");
    // The parent carries on with its refreshed grants: without spawn authority its next launch
    // is refused before any id is issued, and it still works with its memory.
    let next = fork(&rt, root, launch("next", None), ForkMode::Worker, RootSelection::AllParentRoots).await;
    assert_refused(next, "missing_spawn_capability", &[]);
    assert!(children(&rt, root).is_empty());
    write(&rt, root, shared, json!("still mine")).await.expect("write");
    assert_space(&rt);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_launch_refused_at_commit_leaves_no_ghost_payload() {
    let (rt, _root, _shared, (_ghost, goal)) = refused_fork().await;
    assert!(rt.object(goal).is_none());
    assert_eq!(rt.payload(goal).expect("payload"), None, "the goal of a launch that never happened");
    rt.shutdown().await.expect("shutdown");
}
