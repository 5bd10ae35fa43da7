//! The object-memory tools through the JSON layer, as a model would call them: fork modes and
//! their rights, root selection, merge, create/read/write/list/checkpoint, result handles,
//! skills and clearance. Roots are launched through the host API; every call goes through
//! `dispatch_as`.

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime};
use agentvisor::actors::{ImageId, Pid};
use agentvisor::images::{OTHER_PUPPET_IMAGE, PUPPET_IMAGE, builtin_images};
use agentvisor::tools::args::CapabilityArg;
use agentvisor::tools::{dispatch_as, tool_schemas};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The built-in images, and one more that offers a tool outside the kernel (`web_search`), so
/// a skill may allow it.
async fn runtime() -> Runtime {
    let browser = Image::new("browser", |_| program_fn(|_ctx| async { Ok(()) })).offers(["web_search"]);
    Runtime::in_memory(builtin_images().image(browser)).await.expect("runtime")
}

/// A puppet root allowed to spawn (delegably), to read the other puppet image, with a
/// clearance and goal labels.
async fn root_with(rt: &Runtime, clearance: Option<&[&str]>, goal_labels: &[&str]) -> Pid {
    let caps: Vec<CapabilityArg> = serde_json::from_value(json!([
        {"resource": "process:spawn", "rights": ["execute"], "delegable": true},
        {"resource": "image:puppet.other", "rights": ["read"]}
    ]))
    .expect("capabilities");
    let spec = RootSpec {
        clearance: clearance.map(|c| c.iter().map(|s| s.to_string()).collect()),
        goal_labels: goal_labels.iter().map(|s| s.to_string()).collect(),
        goal: "test root".into(),
        image: ImageId::from(PUPPET_IMAGE),
        cwd: "/home/root".into(),
        capabilities: caps.iter().map(|c| c.to_request("capabilities").expect("request")).collect(),
        budget: Budget::UNLIMITED,
        supervision: None,
    };
    rt.spawn_root(spec).await.expect("root")
}

async fn root(rt: &Runtime) -> Pid {
    root_with(rt, None, &[]).await
}

async fn call(rt: &Runtime, caller: Pid, tool: &str, args: Value) -> Value {
    dispatch_as(rt, caller, tool, args).await
}

/// A call that must succeed.
async fn ok(rt: &Runtime, caller: Pid, tool: &str, args: Value) -> Value {
    let out = call(rt, caller, tool, args.clone()).await;
    assert!(out.get("error").is_none(), "{tool} {args} → {out}");
    out
}

fn pid_of(v: &Value) -> Pid {
    v["pid"].as_str().unwrap_or_else(|| panic!("no pid in {v}")).parse().expect("pid")
}

fn oid_of(v: &Value) -> String {
    v["oid"].as_str().unwrap_or_else(|| panic!("no oid in {v}")).to_string()
}

#[track_caller]
fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

#[track_caller]
fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

/// A data object created by `caller`; returns its OID.
async fn create(rt: &Runtime, caller: Pid, args: Value) -> String {
    oid_of(&ok(rt, caller, "create_object", args).await)
}

/// Forks as `parent`; returns the launch result.
async fn fork(rt: &Runtime, parent: Pid, args: Value) -> Value {
    ok(rt, parent, "fork_child_process", args).await
}

/// The caller's handle on `oid` from `list_objects`.
async fn handle(rt: &Runtime, holder: Pid, oid: &str) -> Value {
    let memory = ok(rt, holder, "list_objects", json!({})).await;
    memory["handles"]
        .as_array()
        .expect("handles")
        .iter()
        .find(|h| h["oid"] == oid)
        .cloned()
        .unwrap_or_else(|| panic!("{holder} holds no handle on {oid}: {memory}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("array").iter().map(|s| s.as_str().expect("string").to_string()).collect()
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().expect("object").keys().map(String::as_str).collect()
}

// ---------------------------------------------------------------------------------------------
// Schemas

#[test]
fn object_tool_schemas_take_the_specified_parameters() {
    let schemas = tool_schemas();
    let by = |n: &str| schemas.iter().find(|s| s.name == n).unwrap_or_else(|| panic!("no schema {n}"));
    let props = |n: &str| keys(&by(n).parameters["properties"]).into_iter().collect::<Vec<_>>();
    let required = |n: &str| by(n).required().into_iter().collect::<BTreeSet<_>>();

    let spawn = props("spawn_child_process");
    assert!(spawn.contains(&"clearance"), "{spawn:?}");
    let fork: BTreeSet<&str> = props("fork_child_process").into_iter().collect();
    let expected: BTreeSet<&str> =
        spawn.iter().copied().chain(["root_oids", "include_parent_roots", "mode"]).collect();
    assert_eq!(fork, expected, "fork takes every spawn parameter and the view's");
    assert_eq!(required("fork_child_process"), ["goal"].into_iter().collect());
    let fork_props = &by("fork_child_process").parameters["properties"];
    assert_eq!(fork_props["include_parent_roots"]["default"], true);
    assert_eq!(fork_props["mode"]["default"], "worker");
    assert_eq!(fork_props["mode"]["enum"], json!(["worker", "restricted", "copy", "speculative"]));
    assert_eq!(fork_props["root_oids"]["items"]["format"], "uuid");
    assert_eq!(
        fork_props["inherit_capabilities"],
        by("spawn_child_process").parameters["properties"]["inherit_capabilities"],
        "the same launch parameters, not a copy that can drift"
    );

    let cases: [(&str, &[&str], &[&str]); 7] = [
        ("merge_child_memory", &["child_pid"], &["child_pid", "include_child_created"]),
        ("create_object", &["payload"], &["payload", "name", "labels", "ephemeral", "root", "durable"]),
        ("read_object", &[], &["oid", "name"]),
        ("write_object", &["payload"], &["oid", "name", "payload"]),
        ("list_objects", &[], &[]),
        ("checkpoint_object", &[], &["oid", "name"]),
        ("load_skills", &["skills"], &["skills"]),
    ];
    for (name, want_required, want_props) in cases {
        let schema = by(name);
        assert!(!schema.description.is_empty(), "{name}");
        assert_eq!(required(name), want_required.iter().copied().collect(), "{name} required");
        let got: BTreeSet<&str> = props(name).into_iter().collect();
        assert_eq!(got, want_props.iter().copied().collect(), "{name} properties");
        assert_eq!(schema.parameters["additionalProperties"], false, "{name} refuses unknown fields");
        assert!(!schema.parameters.to_string().contains("$ref"), "{name} is inlined");
    }
    assert_eq!(by("fork_child_process").parameters["additionalProperties"], false);
    let create = &by("create_object").parameters["properties"];
    for flag in ["ephemeral", "root", "durable"] {
        assert_eq!(create[flag]["default"], false, "{flag}");
    }
    assert_eq!(by("merge_child_memory").parameters["properties"]["include_child_created"]["default"], false);
    let skill = &by("load_skills").parameters["properties"]["skills"]["items"];
    assert_eq!(required_of(skill), ["allowed_tools", "name"].into_iter().collect());
}

fn required_of(schema: &Value) -> BTreeSet<&str> {
    schema["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect()
}

// ---------------------------------------------------------------------------------------------
// Argument refusals

#[tokio::test]
async fn every_malformed_object_call_is_refused_naming_the_field() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let oid = "01a2290e-0000-7000-8000-000000000000";
    let pid = "01a2290b-06f7-7147-946c-cde758620d40";
    let cases: Vec<(&str, Value, &[&str])> = vec![
        ("read_object", json!({"oid": oid, "name": "notes"}), &["oid", "name", "not both"]),
        ("read_object", json!({}), &["oid", "name", "neither"]),
        ("read_object", json!({"oid": "zzz"}), &["oid"]),
        ("read_object", json!({"name": 3}), &["name"]),
        ("read_object", json!({"name": "x", "labels": []}), &["labels"]),
        ("write_object", json!({"oid": oid, "name": "notes", "payload": 1}), &["not both"]),
        ("write_object", json!({"payload": 1}), &["neither"]),
        ("write_object", json!({"name": "notes"}), &["payload"]),
        ("checkpoint_object", json!({"oid": oid, "name": "notes"}), &["not both"]),
        ("checkpoint_object", json!({}), &["neither"]),
        ("checkpoint_object", json!({"oid": "x"}), &["oid"]),
        ("create_object", json!({}), &["payload"]),
        ("create_object", json!({"payload": 1, "labels": "pii"}), &["labels"]),
        ("create_object", json!({"payload": 1, "root": "yes"}), &["root"]),
        ("create_object", json!({"payload": 1, "owner": "me"}), &["owner"]),
        ("list_objects", json!({"oid": oid}), &["oid"]),
        ("merge_child_memory", json!({}), &["child_pid"]),
        ("merge_child_memory", json!({"child_pid": "nope"}), &["child_pid"]),
        (
            "merge_child_memory",
            json!({"child_pid": pid, "include_child_created": 1}),
            &["include_child_created"],
        ),
        ("merge_child_memory", json!({"child_pid": pid, "force": true}), &["force"]),
        ("load_skills", json!({}), &["skills"]),
        ("load_skills", json!({"skills": [{"name": "a"}]}), &["skills[0]", "allowed_tools"]),
        ("load_skills", json!({"skills": [{"name": "a", "allowed_tools": [], "x": 1}]}), &["x"]),
        ("fork_child_process", json!({"goal": "x", "mode": "fast"}), &["mode", "fast"]),
        ("fork_child_process", json!({"goal": "x", "root_oids": [oid, "bad"]}), &["root_oids[1]"]),
        ("fork_child_process", json!({"goal": "x", "root_oids": oid}), &["root_oids"]),
        ("fork_child_process", json!({"goal": "x", "include_parent_roots": "no"}), &["include_parent_roots"]),
        ("fork_child_process", json!({"goal": "x", "colour": "red"}), &["colour", "root_oids", "goal"]),
        ("fork_child_process", json!({"mode": "copy"}), &["goal"]),
        (
            "fork_child_process",
            json!({"goal": "x", "resource_budget": {"tokens": -1}}),
            &["resource_budget.tokens"],
        ),
        (
            "fork_child_process",
            json!({"goal": "x", "inherit_paths": [{"path": "a", "mode": "rw"}]}),
            &["inherit_paths[0]", "mode"],
        ),
        ("fork_child_process", json!({"goal": "x", "clearance": "pii"}), &["clearance"]),
        ("fork_child_process", json!("go"), &["arguments"]),
        ("spawn_child_process", json!({"goal": "x", "clearance": [1]}), &["clearance[0]"]),
        ("spawn_child_process", json!({"goal": "x", "mode": "copy"}), &["mode"]),
    ];
    for (tool, args, fields) in cases {
        let out = call(&rt, parent, tool, args.clone()).await;
        assert_eq!(code(&out), "invalid_arguments", "{tool} {args} → {out}");
        for field in fields {
            assert!(message(&out).contains(field), "{tool} {args}: the message names {field}: {out}");
        }
    }
    let memory = ok(&rt, parent, "list_objects", Value::Null).await;
    assert_eq!(memory["handles"].as_array().map(Vec::len), Some(1), "nothing was created: {memory}");
    let children = ok(&rt, parent, "list_child_processes", json!({})).await;
    assert_eq!(children["children"], json!([]), "no child was launched");
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Root selection

#[tokio::test]
async fn root_oids_replace_exactly_while_omitted_root_oids_follow_include_parent_roots() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let parent_goal =
        ok(&rt, parent, "list_objects", json!({})).await["goal_oid"].as_str().expect("goal").to_string();
    let kept = create(&rt, parent, json!({"payload": "root", "name": "kept", "root": true})).await;
    let loose = create(&rt, parent, json!({"payload": "not a root", "name": "loose"})).await;

    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec![&parent_goal, &kept]),
        (json!({"include_parent_roots": true}), vec![&parent_goal, &kept]),
        (json!({"include_parent_roots": false}), vec![]),
        (json!({"root_oids": null, "include_parent_roots": false}), vec![]),
        (json!({"root_oids": []}), vec![]),
        (json!({"root_oids": [], "include_parent_roots": true}), vec![]),
        (json!({"root_oids": [loose], "include_parent_roots": false}), vec![&loose]),
        (json!({"root_oids": [kept, loose, kept]}), vec![&kept, &loose]),
    ];
    for (view, inherited) in cases {
        let mut args = view.clone();
        args["goal"] = json!("look");
        let out = fork(&rt, parent, args).await;
        let goal = out["goal_oid"].as_str().expect("goal_oid").to_string();
        let mut want = vec![goal.clone()];
        want.extend(inherited.iter().map(|s| s.to_string()));
        assert_eq!(strings(&out["roots"]), want, "{view}: the goal first, then the selection: {out}");
        let child = pid_of(&out);
        let memory = ok(&rt, child, "list_objects", json!({})).await;
        let mut roots = want.clone();
        roots.sort();
        assert_eq!(strings(&memory["roots"]), roots, "{view}: {memory}");
        assert_eq!(memory["handles"].as_array().map(Vec::len), Some(want.len()), "{view}: {memory}");
        assert_eq!(memory["goal_oid"], goal.as_str());
    }

    let unknown = "01a2290e-0000-7000-8000-000000000000";
    let out = call(&rt, parent, "fork_child_process", json!({"goal": "x", "root_oids": [unknown]})).await;
    assert_eq!(code(&out), "unknown_object", "{out}");
    assert!(message(&out).contains(unknown), "{out}");
    assert!(out.get("pid").is_none());
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Fork modes

#[tokio::test]
async fn each_fork_mode_grants_the_rights_list_objects_shows() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let notes = create(&rt, parent, json!({"payload": {"v": 1}, "name": "notes", "root": true})).await;
    let cases: [(&str, &[&str], bool); 4] = [
        ("worker", &["read", "delegate"], false),
        ("restricted", &["read"], false),
        ("copy", &["read", "write", "delegate"], false),
        ("speculative", &["read"], true),
    ];
    for (mode, rights, ephemeral) in cases {
        let out = fork(&rt, parent, json!({"goal": mode, "mode": mode, "root_oids": [notes]})).await;
        assert_eq!(out["mode"], mode, "{out}");
        assert_eq!(out["status"], "runnable");
        let child = pid_of(&out);
        let h = handle(&rt, child, &notes).await;
        assert_eq!(h["rights"], json!(rights), "{mode}: {h}");
        assert_eq!(h["ephemeral"], ephemeral, "{mode}: {h}");
        assert_eq!(h["names"], json!(["notes"]), "{mode}: the parent's name carries over");
        assert_eq!(h["root"], true);
        assert_eq!(h["kind"], "data");
        assert_eq!(h["owner"], format!("process {parent}"), "{mode}: the same object, still the parent's");
        let goal = handle(&rt, child, out["goal_oid"].as_str().expect("goal")).await;
        assert_eq!(goal["rights"], json!(["read", "write", "delegate"]), "{mode}: its own goal");
        assert_eq!(goal["names"], json!(["goal"]));

        let write = call(&rt, child, "write_object", json!({"name": "notes", "payload": {"v": mode}})).await;
        match mode {
            "copy" => {
                assert_eq!(write["oid"], notes.as_str(), "{write}");
                let seen = ok(&rt, parent, "read_object", json!({"oid": notes})).await;
                assert_eq!(
                    seen["payload"],
                    json!({"v": "copy"}),
                    "a copy child's write is the parent's object"
                );
            }
            "speculative" => assert_eq!(code(&write), "ephemeral_handle", "{write}"),
            _ => assert_eq!(code(&write), "missing_right", "{mode}: {write}"),
        }
    }
    let spawned = ok(&rt, parent, "spawn_child_process", json!({"goal": "fresh"})).await;
    assert!(spawned.get("mode").is_none(), "a spawn is not a fork: {spawned}");
    assert_eq!(spawned["roots"], json!([spawned["goal_oid"]]), "goal-only: {spawned}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_missing_right_denial_names_the_oid_and_the_right_and_issues_no_pid() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let notes = create(&rt, parent, json!({"payload": 1, "name": "notes", "root": true})).await;
    let worker = pid_of(
        &fork(
            &rt,
            parent,
            json!({"goal": "pass it on", "root_oids": [notes],
                "inherit_capabilities": [{"resource": "process:spawn", "rights": ["execute"]}]}),
        )
        .await,
    );
    let out = call(
        &rt,
        worker,
        "fork_child_process",
        json!({"goal": "edit", "mode": "copy", "root_oids": [notes]}),
    )
    .await;
    assert_eq!(code(&out), "missing_right", "{out}");
    assert!(message(&out).contains(&notes), "names the OID: {out}");
    assert!(message(&out).contains("write"), "names the right: {out}");
    assert!(out.get("pid").is_none());
    let kids = ok(&rt, worker, "list_child_processes", json!({})).await;
    assert_eq!(kids["children"], json!([]), "a denied fork launches nothing");

    let out = call(&rt, worker, "checkpoint_object", json!({"oid": notes})).await;
    assert_eq!(code(&out), "missing_right", "{out}");
    assert!(message(&out).contains(&notes) && message(&out).contains("write"), "{out}");

    // What a worker may do: fork it on read-only, since it holds read and delegate.
    let reader = fork(&rt, worker, json!({"goal": "read", "mode": "restricted", "root_oids": [notes]})).await;
    let reader = pid_of(&reader);
    assert_eq!(handle(&rt, reader, &notes).await["rights"], json!(["read"]));
    // An object outside the worker's view: the denial names it and the right it lacks.
    let stranger = create(&rt, parent, json!({"payload": 2})).await;
    let out = call(&rt, worker, "read_object", json!({"oid": stranger})).await;
    assert_eq!(code(&out), "missing_right", "not in the worker's view: {out}");
    assert!(message(&out).contains(&stranger) && message(&out).contains("read"), "{out}");
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Merge

#[tokio::test]
async fn merge_reports_candidates_releases_the_rest_and_refuses_a_second_merge() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let notes = create(&rt, parent, json!({"payload": "n", "name": "notes", "root": true})).await;
    let out = fork(&rt, parent, json!({"goal": "work", "root_oids": [notes]})).await;
    let child = pid_of(&out);
    let child_goal = out["goal_oid"].as_str().expect("goal").to_string();
    let adopted = create(&rt, child, json!({"payload": "a", "name": "a", "root": true})).await;
    let loose = create(&rt, child, json!({"payload": "b"})).await;
    let scratch = create(&rt, child, json!({"payload": "s", "root": true, "ephemeral": true})).await;
    let exited = ok(&rt, child, "process_exit", json!({"payload": {"done": true}})).await;
    let result = exited["result_oid"].as_str().expect("result").to_string();

    let waited = ok(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string()})).await;
    assert_eq!(waited["result_handle"], true, "{waited}");
    assert!(waited.get("result_denied").is_none(), "{waited}");

    let merged = ok(&rt, parent, "merge_child_memory", json!({"child_pid": child.to_string()})).await;
    assert_eq!(keys(&merged), ["child_pid", "merged_oids", "skipped_oids"].into_iter().collect());
    assert_eq!(merged["child_pid"], child.to_string());
    assert_eq!(merged["merged_oids"], json!([adopted]), "{merged}");
    assert_eq!(
        merged["skipped_oids"],
        json!([
            {"oid": notes, "reason": "not_child_owned"},
            {"oid": child_goal, "reason": "goal"},
            {"oid": scratch, "reason": "ephemeral"}
        ]),
        "candidates are the roots in OID order; the non-root and the result are not listed"
    );
    let h = handle(&rt, parent, &adopted).await;
    assert_eq!(h["rights"], json!(["read", "write", "delegate"]));
    assert_eq!(h["owner"], format!("process {parent}"));
    assert_eq!(h["names"], json!([]), "merge binds no name");
    assert_eq!(h["root"], false, "merge adds no root");
    assert_eq!(ok(&rt, parent, "read_object", json!({"oid": adopted})).await["payload"], "a");
    for gone in [&result, &loose, &scratch, &child_goal] {
        let out = call(&rt, parent, "read_object", json!({"oid": gone})).await;
        assert_eq!(code(&out), "object_released", "{gone}: {out}");
    }
    assert_eq!(ok(&rt, parent, "read_object", json!({"name": "notes"})).await["payload"], "n");

    let again = call(&rt, parent, "merge_child_memory", json!({"child_pid": child.to_string()})).await;
    assert_eq!(code(&again), "already_merged", "{again}");
    let again = call(
        &rt,
        parent,
        "merge_child_memory",
        json!({"child_pid": child.to_string(), "include_child_created": true}),
    )
    .await;
    assert_eq!(code(&again), "already_merged", "{again}");
    let rewait =
        ok(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string(), "block": false})).await;
    assert_eq!(rewait["result_handle"], false, "{rewait}");
    assert_eq!(rewait["result_denied"]["code"], "object_released", "{rewait}");
    let memory = rt.memory(child).expect("the child's memory");
    assert_eq!(memory.collected.as_deref(), Some("merged"));
    assert!(memory.handles.is_empty(), "{memory:?}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn include_child_created_also_adopts_non_root_objects() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let out = fork(&rt, parent, json!({"goal": "work", "include_parent_roots": false})).await;
    let child = pid_of(&out);
    let child_goal = out["goal_oid"].as_str().expect("goal").to_string();
    let kept = create(&rt, child, json!({"payload": 1, "root": true})).await;
    let loose = create(&rt, child, json!({"payload": 2})).await;
    let scratch = create(&rt, child, json!({"payload": 3, "ephemeral": true})).await;
    ok(&rt, child, "process_exit", json!({"payload": "r"})).await;
    let merged = ok(
        &rt,
        parent,
        "merge_child_memory",
        json!({"child_pid": child.to_string(), "include_child_created": true}),
    )
    .await;
    assert_eq!(merged["merged_oids"], json!([kept, loose]), "{merged}");
    assert_eq!(
        merged["skipped_oids"],
        json!([{"oid": child_goal, "reason": "goal"}, {"oid": scratch, "reason": "ephemeral"}]),
        "{merged}"
    );
    assert_eq!(ok(&rt, parent, "read_object", json!({"oid": loose})).await["payload"], 2);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn merge_needs_a_direct_terminal_child() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let child = pid_of(
        &fork(
            &rt,
            parent,
            json!({"goal": "busy", "inherit_capabilities": [
        {"resource": "process:spawn", "rights": ["execute"]}]}),
        )
        .await,
    );
    let out = call(&rt, parent, "merge_child_memory", json!({"child_pid": child.to_string()})).await;
    assert_eq!(code(&out), "child_not_terminal", "{out}");
    assert!(message(&out).contains("running"), "{out}");

    let grandchild = pid_of(&ok(&rt, child, "spawn_child_process", json!({"goal": "deeper"})).await);
    ok(&rt, grandchild, "process_exit", json!({})).await;
    let out = call(&rt, parent, "merge_child_memory", json!({"child_pid": grandchild.to_string()})).await;
    assert_eq!(code(&out), "not_direct_child", "{out}");
    let out = call(&rt, parent, "merge_child_memory", json!({"child_pid": parent.to_string()})).await;
    assert_eq!(code(&out), "not_direct_child", "{out}");
    // The refusals changed nothing: the child still merges once it ends.
    ok(&rt, child, "process_exit", json!({})).await;
    ok(&rt, parent, "merge_child_memory", json!({"child_pid": child.to_string()})).await;
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Create, read, write, list, checkpoint

#[tokio::test]
async fn objects_round_trip_through_create_read_write_list_and_checkpoint() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let created = ok(
        &rt,
        me,
        "create_object",
        json!({"payload": {"items": [1, 2]}, "name": "list", "labels": ["internal"], "root": true}),
    )
    .await;
    assert_eq!(
        keys(&created),
        ["oid", "name", "labels", "root", "ephemeral", "durable"].into_iter().collect(),
        "{created}"
    );
    assert_eq!(created["name"], "list");
    assert_eq!(created["labels"], json!(["internal"]));
    assert_eq!(created["root"], true);
    assert_eq!(created["ephemeral"], false);
    assert_eq!(created["durable"], false);
    let list = oid_of(&created);

    let by_name = ok(&rt, me, "read_object", json!({"name": "list"})).await;
    let by_oid = ok(&rt, me, "read_object", json!({"oid": list})).await;
    assert_eq!(by_name, by_oid, "a name is only a way to an OID");
    assert_eq!(by_name["payload"], json!({"items": [1, 2]}));
    assert_eq!(by_name["kind"], "data");
    assert_eq!(by_name["materialized"], true);
    assert_eq!(by_name["labels"], json!(["internal"]));

    let written = ok(&rt, me, "write_object", json!({"name": "list", "payload": {"items": [3]}})).await;
    assert_eq!(keys(&written), ["oid", "labels", "durable"].into_iter().collect(), "{written}");
    assert_eq!(written["oid"], list.as_str());
    assert_eq!(ok(&rt, me, "read_object", json!({"oid": list})).await["payload"], json!({"items": [3]}));

    let checkpointed = ok(&rt, me, "checkpoint_object", json!({"name": "list"})).await;
    assert_eq!(checkpointed["durable"], true, "{checkpointed}");
    let rewritten = ok(&rt, me, "write_object", json!({"oid": list, "payload": null})).await;
    assert_eq!(rewritten["durable"], true, "every later write is durable too: {rewritten}");
    let read = ok(&rt, me, "read_object", json!({"oid": list})).await;
    assert_eq!(read["payload"], Value::Null);
    assert_eq!(read["materialized"], true, "a null payload is still a payload: {read}");
    assert_eq!(read["durable"], true);

    let durable =
        ok(&rt, me, "create_object", json!({"payload": null, "durable": true, "ephemeral": true})).await;
    assert_eq!(durable["durable"], true);
    assert_eq!(durable["ephemeral"], true);
    assert_eq!(durable["name"], Value::Null);

    let goal = ok(&rt, me, "read_object", json!({"name": "goal"})).await;
    assert_eq!(goal["kind"], "goal");
    assert_eq!(goal["payload"], "test root");

    let memory = ok(&rt, me, "list_objects", json!({})).await;
    assert_eq!(
        keys(&memory),
        ["pid", "goal_oid", "roots", "handles", "owned", "context", "clearance", "skills", "collected"]
            .into_iter()
            .collect(),
        "{memory}"
    );
    assert_eq!(memory["pid"], me.to_string());
    assert_eq!(memory["roots"], json!([memory["goal_oid"], list]));
    assert_eq!(memory["context"], json!(["internal"]), "reading raised the context: {memory}");
    assert_eq!(memory["clearance"], Value::Null);
    assert_eq!(memory["collected"], Value::Null);
    let h = handle(&rt, me, &list).await;
    assert_eq!(
        keys(&h),
        ["oid", "kind", "owner", "rights", "ephemeral", "labels", "names", "root"].into_iter().collect()
    );
    assert_eq!(h["names"], json!(["list"]));
    assert_eq!(h["rights"], json!(["read", "write", "delegate"]));
    let owned = memory["owned"].as_array().expect("owned");
    assert_eq!(owned.len(), 3, "goal, list, the scratch object: {memory}");
    assert!(owned.iter().all(|o| o["released"] == false));

    let taken = call(&rt, me, "create_object", json!({"payload": 1, "name": "list"})).await;
    assert_eq!(code(&taken), "name_taken", "{taken}");
    let missing = call(&rt, me, "read_object", json!({"name": "nothing"})).await;
    assert_eq!(code(&missing), "unknown_name", "{missing}");
    assert!(message(&missing).contains("nothing"), "{missing}");
    let missing = call(&rt, me, "write_object", json!({"name": "nothing", "payload": 1})).await;
    assert_eq!(code(&missing), "unknown_name", "{missing}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_wait_publishes_a_read_handle_on_the_result() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let child = pid_of(&ok(&rt, parent, "spawn_child_process", json!({"goal": "answer"})).await);
    let exited = ok(&rt, child, "process_exit", json!({"payload": {"answer": 42}})).await;
    let result = exited["result_oid"].as_str().expect("result").to_string();
    let early = call(&rt, parent, "read_object", json!({"oid": result})).await;
    assert_eq!(code(&early), "missing_right", "no handle before the wait: {early}");

    let waited = ok(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string()})).await;
    assert_eq!(waited["result_handle"], true, "{waited}");
    assert_eq!(waited["result_oid"], result.as_str());
    let h = handle(&rt, parent, &result).await;
    assert_eq!(h["rights"], json!(["read"]));
    assert_eq!(h["kind"], "process_result");
    assert_eq!(h["owner"], format!("the result of process {child}"));
    assert_eq!(h["root"], false);
    let read = ok(&rt, parent, "read_object", json!({"oid": result})).await;
    assert_eq!(read["payload"]["answer"], 42);

    let quiet = pid_of(&ok(&rt, parent, "spawn_child_process", json!({"goal": "say nothing"})).await);
    ok(&rt, quiet, "process_exit", json!({})).await;
    let waited = ok(&rt, parent, "wait_child_process", json!({"child_pid": quiet.to_string()})).await;
    assert_eq!(waited["result_handle"], false, "no result, no handle: {waited}");
    assert_eq!(waited["result_oid"], Value::Null);
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Skills and clearance

#[tokio::test]
async fn loaded_skills_carry_into_same_image_forks_and_restricted_forks_drop_them() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let loaded = ok(
        &rt,
        parent,
        "load_skills",
        json!({"skills": [
            {"name": "review", "allowed_tools": ["read_object", "list_objects"]},
            {"name": "browse", "allowed_tools": ["web_search"]}
        ]}),
    )
    .await;
    assert_eq!(loaded["skills"][0]["name"], "review", "{loaded}");
    let memory = ok(&rt, parent, "list_objects", json!({})).await;
    assert_eq!(memory["skills"].as_array().map(Vec::len), Some(2), "{memory}");

    let same = fork(&rt, parent, json!({"goal": "same image"})).await;
    assert_eq!(same["skills"], json!(["review", "browse"]), "{same}");
    assert!(same.get("dropped_skills").is_none(), "{same}");
    let child_memory = ok(&rt, pid_of(&same), "list_objects", json!({})).await;
    assert_eq!(child_memory["skills"], memory["skills"], "the whole snapshot");

    let restricted = fork(&rt, parent, json!({"goal": "least authority", "mode": "restricted"})).await;
    assert_eq!(restricted["skills"], json!([]), "image defaults: {restricted}");
    assert_eq!(
        restricted["dropped_skills"],
        json!([{"name": "review", "reason": "restricted_mode"}, {"name": "browse", "reason": "restricted_mode"}])
    );

    let cross = fork(&rt, parent, json!({"goal": "other image", "image": OTHER_PUPPET_IMAGE})).await;
    assert_eq!(cross["skills"], json!(["review"]), "{cross}");
    assert_eq!(
        cross["dropped_skills"],
        json!([{"name": "browse", "reason": {"tools_not_offered": {"tools": ["web_search"]}}}])
    );

    let spawned = ok(&rt, parent, "spawn_child_process", json!({"goal": "fresh"})).await;
    assert_eq!(spawned["skills"], json!([]), "a spawn starts from the image defaults: {spawned}");

    let twice = call(
        &rt,
        parent,
        "load_skills",
        json!({"skills": [{"name": "a", "allowed_tools": []}, {"name": "a", "allowed_tools": []}]}),
    )
    .await;
    assert_eq!(code(&twice), "invalid_skill", "{twice}");
    let cleared = ok(&rt, parent, "load_skills", json!({"skills": []})).await;
    assert_eq!(cleared["skills"], json!([]));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn clearance_narrows_a_launch_and_data_flow_refuses_what_it_excludes() {
    let rt = runtime().await;
    let parent = root_with(&rt, Some(&["pii", "public"]), &[]).await;
    let memory = ok(&rt, parent, "list_objects", json!({})).await;
    assert_eq!(memory["clearance"], json!(["pii", "public"]));
    let secret = create(&rt, parent, json!({"payload": "ssn", "labels": ["pii"], "root": true})).await;
    let out = call(&rt, parent, "create_object", json!({"payload": 1, "labels": ["secret"]})).await;
    assert_eq!(code(&out), "flow_denied", "{out}");

    let out = call(&rt, parent, "spawn_child_process", json!({"goal": "x", "clearance": ["secret"]})).await;
    assert_eq!(code(&out), "clearance_exceeds", "{out}");
    let out = call(
        &rt,
        parent,
        "fork_child_process",
        json!({"goal": "x", "clearance": ["public"], "root_oids": [secret]}),
    )
    .await;
    assert_eq!(code(&out), "flow_denied", "{out}");
    assert!(message(&out).contains(&secret), "{out}");
    assert!(out.get("pid").is_none());

    let narrow =
        fork(&rt, parent, json!({"goal": "public work", "clearance": ["public"], "root_oids": []})).await;
    let child_memory = ok(&rt, pid_of(&narrow), "list_objects", json!({})).await;
    assert_eq!(child_memory["clearance"], json!(["public"]), "{child_memory}");
    let spawned = ok(&rt, parent, "spawn_child_process", json!({"goal": "no labels", "clearance": []})).await;
    let spawned_memory = ok(&rt, pid_of(&spawned), "list_objects", json!({})).await;
    assert_eq!(spawned_memory["clearance"], json!([]), "{spawned_memory}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn delegate_object_hands_a_live_child_the_rights_its_parent_holds() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let notes = create(&rt, parent, json!({"payload": "v1", "name": "notes"})).await;
    let spawn_cap = json!([{"resource": "process:spawn", "rights": ["execute"]}]);
    let child = pid_of(
        &ok(&rt, parent, "spawn_child_process", json!({"goal": "helper", "inherit_capabilities": spawn_cap}))
            .await,
    );
    let grandchild = pid_of(&ok(&rt, child, "spawn_child_process", json!({"goal": "below"})).await);

    // Before: the spawned child holds only its goal.
    let read = call(&rt, child, "read_object", json!({"oid": notes})).await;
    assert_eq!(code(&read), "missing_right", "{read}");

    // By name, read only: the child reads the same OID; it may not write it.
    let given = ok(
        &rt,
        parent,
        "delegate_object",
        json!({"name": "notes", "to": child.to_string(), "rights": ["read"]}),
    )
    .await;
    assert_eq!(given["oid"], json!(notes));
    assert_eq!(given["rights"], json!(["read"]));
    assert_eq!(ok(&rt, child, "read_object", json!({"oid": notes})).await["payload"], "v1");
    let write = call(&rt, child, "write_object", json!({"oid": notes, "payload": "v2"})).await;
    assert_eq!(code(&write), "missing_right", "{write}");

    // Rights add up; a write is then visible to the parent (the same OID, nothing copied).
    let more = ok(
        &rt,
        parent,
        "delegate_object",
        json!({"oid": notes, "to": child.to_string(), "rights": ["write"]}),
    )
    .await;
    assert_eq!(more["rights"], json!(["read", "write"]));
    ok(&rt, child, "write_object", json!({"oid": notes, "payload": "v2"})).await;
    assert_eq!(ok(&rt, parent, "read_object", json!({"name": "notes"})).await["payload"], "v2");

    // The child holds no delegate right, so it cannot pass the object on.
    let onward = call(
        &rt,
        child,
        "delegate_object",
        json!({"oid": notes, "to": grandchild.to_string(), "rights": ["read"]}),
    )
    .await;
    assert_eq!(code(&onward), "missing_right", "{onward}");
    assert!(message(&onward).contains(&notes) && message(&onward).contains("delegate"), "{onward}");

    // Only to a direct child; never empty; the right names are checked.
    let far = call(
        &rt,
        parent,
        "delegate_object",
        json!({"oid": notes, "to": grandchild.to_string(), "rights": ["read"]}),
    )
    .await;
    assert_eq!(code(&far), "not_direct_child", "{far}");
    let none =
        call(&rt, parent, "delegate_object", json!({"oid": notes, "to": child.to_string(), "rights": []}))
            .await;
    assert_eq!(code(&none), "empty_rights", "{none}");
    let bad = call(
        &rt,
        parent,
        "delegate_object",
        json!({"oid": notes, "to": child.to_string(), "rights": ["own"]}),
    )
    .await;
    assert_eq!(code(&bad), "invalid_arguments", "{bad}");
    let both = call(
        &rt,
        parent,
        "delegate_object",
        json!({"oid": notes, "name": "notes", "to": child.to_string(), "rights": ["read"]}),
    )
    .await;
    assert_eq!(code(&both), "invalid_arguments", "{both}");

    // A terminal child receives nothing.
    ok(&rt, child, "process_exit", json!({})).await;
    let ended = call(
        &rt,
        parent,
        "delegate_object",
        json!({"oid": notes, "to": child.to_string(), "rights": ["read"]}),
    )
    .await;
    assert_eq!(code(&ended), "process_terminal", "{ended}");
    assert!(rt.object_space().check().is_ok());
    rt.shutdown().await.expect("shutdown");
}
