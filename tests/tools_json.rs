//! The JSON tool surface, driven as an LLM would drive it: JSON arguments in through
//! `dispatch_as`, JSON answers out. Roots are launched and gates set through the host API;
//! every tool call goes through the JSON layer.

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::limits::{BATCH_CALLS_MAX, CAPABILITY_ENTRIES_MAX, DEPTH_MAX};
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime};
use agentvisor::actors::{ImageId, Pid};
use agentvisor::images::{OTHER_PUPPET_IMAGE, PUPPET_IMAGE, builtin_images};
use agentvisor::tools::args::CapabilityArg;
use agentvisor::tools::{BatchCall, ToolName, dispatch_as, dispatch_batch_as, dispatch_ctx, tool_schemas};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use tokio::sync::broadcast::error::RecvError;

async fn runtime() -> Runtime {
    Runtime::in_memory(builtin_images()).await.expect("runtime")
}

/// Launches a puppet root with host grants given as `inherit_capabilities`-shaped JSON.
async fn root(rt: &Runtime, capabilities: Value, budget: Value) -> Pid {
    let caps: Vec<CapabilityArg> = serde_json::from_value(capabilities).expect("capabilities");
    let budget: Budget = serde_json::from_value(budget).expect("budget");
    let spec = RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: "test root".into(),
        image: ImageId::from(PUPPET_IMAGE),
        cwd: "/home/root".into(),
        capabilities: caps.iter().map(|c| c.to_request("capabilities").expect("request")).collect(),
        budget,
        supervision: None,
    };
    rt.spawn_root(spec).await.expect("root")
}

fn spawner() -> Value {
    json!([{ "resource": "process:spawn", "rights": ["execute"], "delegable": true }])
}

async fn spawn(rt: &Runtime, parent: Pid, args: Value) -> Pid {
    let out = dispatch_as(rt, parent, "spawn_child_process", args).await;
    pid_of(&out)
}

fn pid_of(v: &Value) -> Pid {
    v["pid"].as_str().unwrap_or_else(|| panic!("no pid in {v}")).parse().expect("pid")
}

#[track_caller]
fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

#[track_caller]
fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

/// Waits, without sleeping, until `pid`'s committed status is `status`.
async fn until_status(rt: &Runtime, pid: Pid, status: &str) {
    let mut events = rt.subscribe();
    loop {
        let row = rt.process(pid).expect("read").expect("row");
        if row.status.as_str() == status {
            return;
        }
        match events.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => panic!("runtime closed while waiting for {status}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schemas

#[test]
fn every_tool_has_a_schema_whose_required_fields_match_the_spec() {
    let schemas = tool_schemas();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "spawn_child_process",
            "fork_child_process",
            "list_child_processes",
            "wait_child_process",
            "signal_child_process",
            "merge_child_memory",
            "process_exit",
            "create_object",
            "read_object",
            "write_object",
            "list_objects",
            "checkpoint_object",
            "delegate_object",
            "load_skills",
            "send_process_message",
            "read_process_messages",
            "receive_process_messages"
        ]
    );
    let filters = ["kind", "sender", "channel", "correlation_id", "reply_to", "message_ids"];
    let read_props: Vec<&str> = filters.iter().copied().chain(["include_acked", "ack", "limit"]).collect();
    let receive_props: Vec<&str> = read_props.iter().copied().chain(["block"]).collect();
    let launch_props = [
        "goal",
        "image",
        "working_directory",
        "inherit_capabilities",
        "inherit_paths",
        "resource_budget",
        "clearance",
        "launch_key",
        "restart",
        "supervision",
    ];
    let fork_props: Vec<&str> =
        launch_props.iter().copied().chain(["root_oids", "include_parent_roots", "mode"]).collect();
    let expected: [(&str, &[&str], &[&str]); 17] = [
        ("spawn_child_process", &["goal"], &launch_props),
        ("fork_child_process", &["goal"], &fork_props),
        ("list_child_processes", &[], &["include_terminal"]),
        ("wait_child_process", &["child_pid"], &["child_pid", "block"]),
        ("signal_child_process", &["child_pid", "signal"], &["child_pid", "signal", "reason"]),
        ("merge_child_memory", &["child_pid"], &["child_pid", "include_child_created"]),
        ("process_exit", &[], &["payload"]),
        ("create_object", &["payload"], &["payload", "name", "labels", "ephemeral", "root", "durable"]),
        ("read_object", &[], &["oid", "name"]),
        ("write_object", &["payload"], &["oid", "name", "payload"]),
        ("list_objects", &[], &[]),
        ("checkpoint_object", &[], &["oid", "name"]),
        ("delegate_object", &["to", "rights"], &["oid", "name", "to", "rights"]),
        ("load_skills", &["skills"], &["skills"]),
        (
            "send_process_message",
            &["to"],
            &["to", "body", "payload", "channel", "correlation_id", "reply_to", "kind", "message_key"],
        ),
        ("read_process_messages", &[], &read_props),
        ("receive_process_messages", &[], &receive_props),
    ];
    for (schema, (name, required, properties)) in schemas.iter().zip(expected) {
        assert_eq!(schema.name, name);
        assert!(!schema.description.is_empty(), "{name} has no description");
        let required_got: BTreeSet<&str> = schema.required().into_iter().collect();
        assert_eq!(required_got, required.iter().copied().collect(), "{name} required");
        let props: BTreeSet<&str> = schema.parameters["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(props, properties.iter().copied().collect(), "{name} properties");
        assert_eq!(schema.parameters["type"], "object", "{name}");
        assert_eq!(schema.parameters["additionalProperties"], false, "{name} refuses unknown fields");
        assert!(!schema.parameters.to_string().contains("$ref"), "{name} is fully inlined");
        let openai = schema.to_openai();
        assert_eq!(openai["type"], "function");
        assert_eq!(openai["function"]["name"], name);
        assert_eq!(openai["function"]["parameters"], schema.parameters);
        assert_eq!(ToolName::parse(name).map(|t| t.as_str()), Some(name));
    }
    let by = |n: &str| schemas.iter().find(|s| s.name == n).expect("schema").parameters.clone();
    assert_eq!(by("list_child_processes")["properties"]["include_terminal"]["default"], true);
    assert_eq!(by("wait_child_process")["properties"]["block"]["default"], true);
    for tool in ["read_process_messages", "receive_process_messages"] {
        let props = &by(tool)["properties"];
        assert_eq!(props["include_acked"]["default"], false, "{tool}");
        assert_eq!(props["ack"]["default"], true, "{tool}");
    }
    assert_eq!(by("receive_process_messages")["properties"]["block"]["default"], true);
    assert_eq!(by("send_process_message")["properties"]["kind"]["default"], "normal");
    let signals = by("signal_child_process")["properties"]["signal"]["enum"].clone();
    assert_eq!(signals, json!(["pause", "resume", "cancel", "terminate"]));
    let spawn = by("spawn_child_process");
    let cap = &spawn["properties"]["inherit_capabilities"]["items"];
    let cap_required: BTreeSet<&str> =
        cap["required"].as_array().expect("req").iter().filter_map(Value::as_str).collect();
    assert_eq!(cap_required, ["resource", "rights"].into_iter().collect());
    assert_eq!(cap["properties"]["rights"]["minItems"], 1);
    assert_eq!(cap["properties"]["delegable"]["default"], false);
    let path = &spawn["properties"]["inherit_paths"]["items"];
    assert_eq!(path["required"], json!(["path"]));
    assert_eq!(path["properties"]["rights"]["default"], json!(["read"]));
    assert_eq!(path["properties"]["delegable"]["default"], false);
    let budget: BTreeSet<&str> = spawn["properties"]["resource_budget"]["properties"]
        .as_object()
        .expect("budget")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        budget,
        ["tokens", "cost_micros", "tool_calls", "wall_time_ms", "live_children"].into_iter().collect()
    );
}

// ---------------------------------------------------------------------------------------------
// Spawn

#[tokio::test]
async fn every_spawn_refusal_names_its_rule_and_issues_no_pid() {
    let rt = runtime().await;
    let nospawn = root(&rt, json!([]), json!({})).await;
    let out = dispatch_as(&rt, nospawn, "spawn_child_process", json!({"goal": "x"})).await;
    assert_eq!(code(&out), "missing_spawn_capability", "{out}");

    let boss = root(
        &rt,
        json!([
            {"resource": "process:spawn", "rights": ["execute"], "delegable": true},
            {"resource": "provider:openai", "rights": ["execute"]},
            {"resource": "provider:anthropic", "rights": ["execute"], "constraints": {"max_calls": 10}, "delegable": true},
            {"resource": "fs:/data", "rights": ["read", "write"], "delegable": true},
            {"resource": "fs:/logs", "rights": ["read"], "delegable": true}
        ]),
        json!({"tokens": 1000, "live_children": 3}),
    )
    .await;
    let data_grant = rt
        .grants_of(boss)
        .expect("grants")
        .into_iter()
        .find(|g| g.resource == "fs:/data")
        .expect("fs:/data grant")
        .id;
    rt.revoke(data_grant).await.expect("revoke");

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "provider:openai", "rights": ["execute"]}]}),
            "capability_not_delegable",
        ),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "fs:/data", "rights": ["read"]}]}),
            "capability_revoked",
        ),
        (json!({"goal": "x", "inherit_paths": [{"path": "/data/sub"}]}), "capability_revoked"),
        (
            json!({"goal": "x", "inherit_paths": [{"path": "/logs", "rights": ["read", "write"]}]}),
            "rights_exceed",
        ),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "net:web", "rights": ["read"]}]}),
            "capability_not_held",
        ),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "provider:anthropic", "rights": ["execute"], "constraints": {"max_calls": 11}}]}),
            "constraint_loosened",
        ),
        (json!({"goal": "x", "image": OTHER_PUPPET_IMAGE}), "image_read_denied"),
        (json!({"goal": "x", "image": "no.such.image"}), "unknown_image"),
        (json!({"goal": "x", "working_directory": "../../.."}), "invalid_path"),
        (json!({"goal": "x", "inherit_paths": [{"path": "../../../../etc"}]}), "invalid_path"),
        (json!({"goal": "x", "working_directory": ""}), "invalid_path"),
        (json!({"goal": "x", "resource_budget": {"tokens": 1001}}), "budget_exceeded"),
        (json!({"goal": "x", "resource_budget": {"live_children": 3}}), "budget_exceeded"),
        (json!({"goal": ""}), "invalid_goal"),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "fs:/logs", "rights": []}]}),
            "empty_rights",
        ),
        (json!({"goal": "x", "inherit_paths": [{"path": "/logs", "rights": []}]}), "empty_rights"),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "fs:/logs", "rights": ["fly"]}]}),
            "unknown_right",
        ),
        (
            json!({"goal": "x", "inherit_capabilities": [{"resource": "", "rights": ["read"]}]}),
            "invalid_resource",
        ),
        (json!({"image": "puppet"}), "invalid_arguments"),
    ];
    for (args, want) in cases {
        let out = dispatch_as(&rt, boss, "spawn_child_process", args.clone()).await;
        assert_eq!(code(&out), want, "{args} → {out}");
        assert!(out.get("pid").is_none(), "a denial issues no pid: {out}");
    }

    let many: Vec<Value> =
        (0..=CAPABILITY_ENTRIES_MAX).map(|_| json!({"resource": "fs:/logs", "rights": ["read"]})).collect();
    let out =
        dispatch_as(&rt, boss, "spawn_child_process", json!({"goal": "x", "inherit_capabilities": many}))
            .await;
    assert_eq!(code(&out), "too_many_entries", "{out}");

    for parent in [nospawn, boss] {
        let list = dispatch_as(&rt, parent, "list_child_processes", json!({})).await;
        assert_eq!(list["children"], json!([]), "no child was created: {list}");
    }
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn spawn_resolves_paths_delegates_and_attenuates_the_budget() {
    let rt = runtime().await;
    let boss = root(
        &rt,
        json!([
            {"resource": "process:spawn", "rights": ["execute"], "delegable": true},
            {"resource": "fs:/home/root", "rights": ["read", "write"], "delegable": true},
            {"resource": "image:puppet.other", "rights": ["read"]}
        ]),
        json!({"tokens": 1000, "tool_calls": 100}),
    )
    .await;
    let out = dispatch_as(
        &rt,
        boss,
        "spawn_child_process",
        json!({
            "goal": "work in a subdirectory",
            "image": OTHER_PUPPET_IMAGE,
            "working_directory": "../shared",
            "inherit_paths": [{"path": "notes", "rights": ["read", "write"], "delegable": true}],
            "resource_budget": {"tokens": 300}
        }),
    )
    .await;
    assert_eq!(out["status"], "runnable", "launch, not success: {out}");
    assert_eq!(out["state_generation"], 0);
    assert_eq!(out["depth"], 1);
    assert_eq!(out["image"], OTHER_PUPPET_IMAGE);
    assert_eq!(out["cwd"], "/home/shared", "relative to the parent's cwd");
    assert_eq!(
        out["capabilities"][0]["resource"], "fs:/home/root/notes",
        "paths resolve against the parent's cwd"
    );
    assert_eq!(out["capabilities"][0]["rights"], json!(["read", "write"]));
    assert_eq!(out["capabilities"][0]["delegable"], true);
    assert_eq!(out["resource_budget"]["tokens"], 300, "explicit");
    // tool_calls omitted: half of what remains (100 minus the spawn call itself).
    assert_eq!(out["resource_budget"]["tool_calls"], 49, "attenuated, not copied: {out}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn spawn_depth_is_limited() {
    let rt = runtime().await;
    let mut parent = root(&rt, spawner(), json!({})).await;
    let pass_on = json!([{ "resource": "process:spawn", "rights": ["execute"], "delegable": true }]);
    for depth in 1..=DEPTH_MAX {
        let out = dispatch_as(
            &rt,
            parent,
            "spawn_child_process",
            json!({"goal": "deeper", "inherit_capabilities": pass_on}),
        )
        .await;
        assert_eq!(out["depth"], depth, "{out}");
        parent = pid_of(&out);
    }
    let out = dispatch_as(
        &rt,
        parent,
        "spawn_child_process",
        json!({"goal": "too deep", "inherit_capabilities": pass_on}),
    )
    .await;
    assert_eq!(code(&out), "depth_exceeded", "{out}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn malformed_calls_are_refused_with_the_field_named() {
    let rt = runtime().await;
    let boss = root(&rt, spawner(), json!({})).await;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("fork_children", json!({}), "unknown_tool", "fork_children"),
        ("spawn_child_process", json!({"goal": "x", "colour": "red"}), "invalid_arguments", "colour"),
        ("spawn_child_process", json!("go"), "invalid_arguments", "arguments"),
        ("spawn_child_process", json!({"goal": 7}), "invalid_arguments", "goal"),
        (
            "spawn_child_process",
            json!({"goal": "x", "resource_budget": {"tokens": -1}}),
            "invalid_arguments",
            "resource_budget.tokens",
        ),
        (
            "spawn_child_process",
            json!({"goal": "x", "resource_budget": {"gold": 1}}),
            "invalid_arguments",
            "gold",
        ),
        (
            "spawn_child_process",
            json!({"goal": "x", "inherit_capabilities": [{"resource": "fs:/a", "rights": ["read"], "constraints": {"k": {"deep": 1}}}]}),
            "invalid_arguments",
            "inherit_capabilities[0].constraints.k",
        ),
        (
            "spawn_child_process",
            json!({"goal": "x", "inherit_paths": [{"rights": ["read"]}]}),
            "invalid_arguments",
            "path",
        ),
        ("wait_child_process", json!({}), "invalid_arguments", "child_pid"),
        ("wait_child_process", json!({"child_pid": "not-a-pid"}), "invalid_arguments", "child_pid"),
        ("wait_child_process", json!({"child_pid": 12}), "invalid_arguments", "child_pid"),
        (
            "wait_child_process",
            json!({"child_pid": "01a2290e-0000-7000-8000-000000000000", "block": "yes"}),
            "invalid_arguments",
            "block",
        ),
        (
            "wait_child_process",
            json!({"child_pid": "01a2290e-0000-7000-8000-000000000000", "timeout": 5}),
            "invalid_arguments",
            "timeout",
        ),
        (
            "signal_child_process",
            json!({"child_pid": "01a2290e-0000-7000-8000-000000000000", "signal": "kill"}),
            "invalid_arguments",
            "signal",
        ),
        (
            "signal_child_process",
            json!({"child_pid": "01a2290e-0000-7000-8000-000000000000"}),
            "invalid_arguments",
            "signal",
        ),
        ("list_child_processes", json!({"include_terminal": 1}), "invalid_arguments", "include_terminal"),
        ("process_exit", json!({"result": 1}), "invalid_arguments", "result"),
        ("read_object", json!({"oid": "zzz"}), "invalid_arguments", "oid"),
    ];
    for (tool, args, want, field) in cases {
        let out = dispatch_as(&rt, boss, tool, args.clone()).await;
        assert_eq!(code(&out), want, "{tool} {args} → {out}");
        assert!(message(&out).contains(field), "{tool} {args}: the message names {field}: {out}");
    }
    // `null` arguments read as `{}`; defaults apply.
    let out = dispatch_as(&rt, boss, "list_child_processes", Value::Null).await;
    assert_eq!(out["children"], json!([]), "{out}");
    let out =
        dispatch_as(&rt, boss, "read_object", json!({"oid": "01a2290e-0000-7000-8000-000000000000"})).await;
    assert_eq!(code(&out), "unknown_object", "{out}");
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Wait

#[tokio::test]
async fn wait_observes_waits_and_publishes_the_result() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child", "inherit_capabilities": spawner()})).await;
    let grandchild = spawn(&rt, child, json!({"goal": "grandchild"})).await;

    let out =
        dispatch_as(&rt, parent, "wait_child_process", json!({"child_pid": grandchild.to_string()})).await;
    assert_eq!(code(&out), "not_direct_child", "only direct children: {out}");
    let out = dispatch_as(
        &rt,
        parent,
        "wait_child_process",
        json!({"child_pid": parent.to_string(), "block": false}),
    )
    .await;
    assert_eq!(code(&out), "not_direct_child", "not itself: {out}");

    let out = dispatch_as(
        &rt,
        parent,
        "wait_child_process",
        json!({"child_pid": child.to_string(), "block": false}),
    )
    .await;
    assert_eq!(out["ready"], false, "{out}");
    assert_eq!(out["suspended"], false);
    assert_eq!(out["status"], "running");
    assert_eq!(out["outcome"], Value::Null);
    assert_eq!(out["result_oid"], Value::Null);

    let exit = dispatch_as(&rt, child, "process_exit", json!({"payload": {"answer": 42}})).await;
    assert_eq!(exit["status"], "exited", "{exit}");
    let killed_grandchild = rt.process(grandchild).expect("read").expect("row");
    assert_eq!(killed_grandchild.status.as_str(), "killed", "exit ends live children first");

    let out = dispatch_as(
        &rt,
        parent,
        "wait_child_process",
        json!({"child_pid": child.to_string(), "block": false}),
    )
    .await;
    assert_eq!(out["ready"], true, "{out}");
    assert_eq!(out["status"], "exited");
    assert_eq!(out["outcome"]["status"], "exited");
    assert_eq!(out["outcome"]["result_oid"], exit["result_oid"]);
    assert_eq!(out["result_oid"], exit["result_oid"]);
    assert_eq!(out["suspended"], false);

    // block=true on a terminal child answers at once.
    let again = dispatch_as(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string()})).await;
    assert_eq!(again["ready"], true);
    assert_eq!(again["suspended"], false);

    let object = dispatch_as(&rt, parent, "read_object", json!({"oid": out["result_oid"]})).await;
    assert_eq!(object["payload"], json!({"answer": 42}), "{object}");
    assert_eq!(object["materialized"], true);
    assert_eq!(object["kind"], "process_result");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_blocking_wait_suspends_the_caller_until_the_child_ends() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child"})).await;
    let wait = dispatch_as(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string()}));
    let finish = async {
        until_status(&rt, parent, "waiting_event").await;
        let row = rt.process(parent).expect("read").expect("row");
        assert_eq!(row.wait_state.as_ref().map(|w| w.kind()), Some("child"));
        let busy = dispatch_as(&rt, parent, "list_child_processes", json!({})).await;
        assert_eq!(code(&busy), "not_running", "a suspended process makes no calls: {busy}");
        dispatch_as(&rt, child, "process_exit", json!({"payload": "done"})).await
    };
    let (waited, exited) = tokio::join!(wait, finish);
    assert_eq!(exited["status"], "exited", "{exited}");
    assert_eq!(waited["ready"], true, "{waited}");
    assert_eq!(waited["suspended"], true);
    assert_eq!(waited["status"], "exited");
    assert_eq!(waited["result_oid"], exited["result_oid"]);
    assert_eq!(rt.process(parent).expect("read").expect("row").status.as_str(), "running");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_blocking_wait_ends_the_batch() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child"})).await;
    let other = spawn(&rt, parent, json!({"goal": "other"})).await;
    let calls = |v: Value| -> Vec<BatchCall> { serde_json::from_value(v).expect("calls") };

    // A refusal and a non-blocking wait do not end a batch.
    let answers = dispatch_batch_as(
        &rt,
        parent,
        calls(json!([
            {"tool": "wait_child_process", "args": {"child_pid": "bad"}},
            {"tool": "wait_child_process", "args": {"child_pid": child.to_string(), "block": false}},
            {"tool": "list_child_processes"}
        ])),
    )
    .await;
    assert_eq!(code(&answers[0]), "invalid_arguments");
    assert_eq!(answers[1]["ready"], false);
    assert_eq!(answers[2]["children"].as_array().map(Vec::len), Some(2));

    let batch = dispatch_batch_as(
        &rt,
        parent,
        calls(json!([
            {"tool": "list_child_processes", "args": {}},
            {"tool": "wait_child_process", "args": {"child_pid": child.to_string()}},
            {"tool": "signal_child_process", "args": {"child_pid": other.to_string(), "signal": "cancel"}},
            {"tool": "process_exit", "args": {}}
        ])),
    );
    let finish = async {
        until_status(&rt, parent, "waiting_event").await;
        dispatch_as(&rt, child, "process_exit", json!({})).await
    };
    let (answers, _) = tokio::join!(batch, finish);
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0]["children"].as_array().map(Vec::len), Some(2), "{}", answers[0]);
    assert_eq!(answers[1]["suspended"], true, "{}", answers[1]);
    assert_eq!(answers[1]["ready"], true);
    assert_eq!(code(&answers[2]), "batch_ended");
    assert_eq!(code(&answers[3]), "batch_ended");
    assert_eq!(
        rt.process(other).expect("read").expect("row").status.as_str(),
        "running",
        "the cancel never ran"
    );
    assert_eq!(
        rt.process(parent).expect("read").expect("row").status.as_str(),
        "running",
        "the exit never ran"
    );

    let too_many: Vec<BatchCall> = (0..=BATCH_CALLS_MAX)
        .map(|_| BatchCall { tool: "list_child_processes".into(), args: json!({}) })
        .collect();
    let answers = dispatch_batch_as(&rt, parent, too_many).await;
    assert!(answers.iter().all(|a| code(a) == "batch_too_large"));
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Signal

#[tokio::test]
async fn signals_reach_direct_nonterminal_children_only() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child", "inherit_capabilities": spawner()})).await;
    let grandchild = spawn(&rt, child, json!({"goal": "grandchild"})).await;
    let signal =
        |target: Pid, name: &str| json!({"child_pid": target.to_string(), "signal": name, "reason": "test"});

    let out = dispatch_as(&rt, parent, "signal_child_process", signal(grandchild, "pause")).await;
    assert_eq!(code(&out), "not_direct_child", "{out}");

    let out = dispatch_as(&rt, parent, "signal_child_process", signal(child, "pause")).await;
    assert_eq!(out["status"], "paused", "{out}");
    assert_eq!(out["signal"], "pause");
    assert_eq!(out["child_pid"], child.to_string());
    let paused_generation = out["state_generation"].as_u64().expect("generation");
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(child, "pause")).await;
    assert_eq!(code(&out), "illegal_transition", "pausing twice: {out}");
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(child, "resume")).await;
    assert_eq!(out["status"], "running", "{out}");
    assert_eq!(out["state_generation"].as_u64(), Some(paused_generation + 1));

    let doomed = spawn(&rt, parent, json!({"goal": "cancel me"})).await;
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(doomed, "cancel")).await;
    assert_eq!(out["status"], "killed", "{out}");
    let row = rt.process(doomed).expect("read").expect("row");
    let outcome = serde_json::to_value(&row.outcome).expect("outcome");
    assert_eq!(
        outcome,
        json!({"status": "killed", "signal": "cancel", "reason": "test", "sender": {"kind": "process", "pid": parent.to_string()}})
    );
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(doomed, "resume")).await;
    assert_eq!(code(&out), "process_terminal", "{out}");

    let stuck = spawn(&rt, parent, json!({"goal": "terminate me"})).await;
    let out = dispatch_as(
        &rt,
        parent,
        "signal_child_process",
        json!({"child_pid": stuck.to_string(), "signal": "terminate"}),
    )
    .await;
    assert_eq!(out["status"], "killed", "{out}");
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(stuck, "terminate")).await;
    assert_eq!(code(&out), "process_terminal", "{out}");

    let exited = spawn(&rt, parent, json!({"goal": "exit"})).await;
    dispatch_as(&rt, exited, "process_exit", json!({})).await;
    let out = dispatch_as(&rt, parent, "signal_child_process", signal(exited, "pause")).await;
    assert_eq!(code(&out), "process_terminal", "{out}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn pause_and_resume_keep_a_wait_and_a_host_gate_blocks_resume() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child", "inherit_capabilities": spawner()})).await;
    let grandchild = spawn(&rt, child, json!({"goal": "grandchild"})).await;
    let signal = |name: &str| json!({"child_pid": child.to_string(), "signal": name});

    let wait = dispatch_as(&rt, child, "wait_child_process", json!({"child_pid": grandchild.to_string()}));
    let steer = async {
        until_status(&rt, child, "waiting_event").await;
        let wait_state = json!({"kind": "child", "child_pid": grandchild.to_string()});

        let out = dispatch_as(&rt, parent, "signal_child_process", signal("pause")).await;
        assert_eq!(out["status"], "paused", "{out}");
        assert_eq!(out["wait_state"], wait_state, "pause keeps the wait");
        let out = dispatch_as(&rt, parent, "signal_child_process", signal("resume")).await;
        assert_eq!(out["status"], "waiting_event", "resume returns to the wait: {out}");
        assert_eq!(out["wait_state"], wait_state);

        let gated = rt.set_gate(child, "held by the host").await.expect("gate");
        assert_eq!(gated.status.as_str(), "paused");
        let out = dispatch_as(&rt, parent, "signal_child_process", signal("resume")).await;
        assert_eq!(code(&out), "host_gate_held", "{out}");
        let list = dispatch_as(&rt, parent, "list_child_processes", json!({})).await;
        assert_eq!(list["children"][0]["host_gate"], "held by the host");
        assert_eq!(list["children"][0]["wait_state"], wait_state);
        rt.clear_gate(child).await.expect("ungate");
        let out = dispatch_as(&rt, parent, "signal_child_process", signal("resume")).await;
        assert_eq!(out["status"], "waiting_event", "{out}");

        dispatch_as(&rt, grandchild, "process_exit", json!({"payload": 1})).await
    };
    let (waited, _) = tokio::join!(wait, steer);
    assert_eq!(waited["ready"], true, "{waited}");
    assert_eq!(waited["suspended"], true);
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// List and exit

#[tokio::test]
async fn list_shows_direct_children_and_terminal_rows_by_default() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let a = spawn(
        &rt,
        parent,
        json!({"goal": "a", "inherit_capabilities": spawner(), "working_directory": "/a"}),
    )
    .await;
    let b = spawn(&rt, parent, json!({"goal": "b"})).await;
    let _grandchild = spawn(&rt, a, json!({"goal": "grandchild"})).await;
    dispatch_as(&rt, b, "process_exit", json!({"payload": "b done"})).await;

    let all = dispatch_as(&rt, parent, "list_child_processes", json!({})).await;
    let rows = all["children"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "direct children only, terminal included by default: {all}");
    assert_eq!(all["has_more"], false);
    assert_eq!(rows[0]["pid"], a.to_string());
    assert_eq!(rows[0]["status"], "running");
    assert_eq!(rows[0]["cwd"], "/a");
    assert_eq!(rows[1]["pid"], b.to_string());
    assert_eq!(rows[1]["status"], "exited");
    assert_eq!(rows[1]["outcome"]["status"], "exited");
    assert!(rows[1]["result_oid"].is_string());
    for row in rows {
        for field in ["status", "wait_state", "outcome", "result_oid", "cwd", "state_generation"] {
            assert!(row.get(field).is_some(), "{field} in {row}");
        }
    }
    let explicit = dispatch_as(&rt, parent, "list_child_processes", json!({"include_terminal": true})).await;
    assert_eq!(explicit, all);
    let live = dispatch_as(&rt, parent, "list_child_processes", json!({"include_terminal": false})).await;
    assert_eq!(live["children"].as_array().map(Vec::len), Some(1), "{live}");
    assert_eq!(live["children"][0]["pid"], a.to_string());
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn process_exit_ends_the_process_with_a_result() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let child = spawn(&rt, parent, json!({"goal": "child", "inherit_capabilities": spawner()})).await;
    let grandchild = spawn(&rt, child, json!({"goal": "grandchild"})).await;

    let out = dispatch_as(&rt, child, "process_exit", json!({"payload": [1, "two", {"three": 3}]})).await;
    assert_eq!(out["pid"], child.to_string(), "{out}");
    assert_eq!(out["status"], "exited");
    assert!(out["result_oid"].is_string());
    assert!(out["state_generation"].as_u64().is_some());
    let gc = rt.process(grandchild).expect("read").expect("row");
    assert_eq!(gc.status.as_str(), "killed", "live children end first");

    // The result is readable once a wait has granted the parent a handle on it.
    let early = dispatch_as(&rt, parent, "read_object", json!({"oid": out["result_oid"]})).await;
    assert_eq!(code(&early), "missing_right", "{early}");
    let waited =
        dispatch_as(&rt, parent, "wait_child_process", json!({"child_pid": child.to_string()})).await;
    assert_eq!(waited["result_handle"], true, "{waited}");
    let object = dispatch_as(&rt, parent, "read_object", json!({"oid": out["result_oid"]})).await;
    assert_eq!(object["payload"], json!([1, "two", {"three": 3}]));

    let after = dispatch_as(&rt, child, "list_child_processes", json!({})).await;
    assert!(["process_terminal", "process_ended"].contains(&code(&after)), "{after}");

    let empty = spawn(&rt, parent, json!({"goal": "no payload"})).await;
    let out = dispatch_as(&rt, empty, "process_exit", Value::Null).await;
    assert_eq!(out["status"], "exited", "{out}");
    assert_eq!(out["result_oid"], Value::Null);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn programs_dispatch_json_through_their_context() {
    let boss = Image::new("json.boss", |_| {
        program_fn(|ctx| async move {
            let spawned =
                dispatch_ctx(&ctx, "spawn_child_process", json!({"goal": "idle", "image": PUPPET_IMAGE}))
                    .await;
            let child = spawned["pid"].clone();
            let bad = dispatch_ctx(&ctx, "wait_child_process", json!({"child_pid": "nope"})).await;
            let cancelled =
                dispatch_ctx(&ctx, "signal_child_process", json!({"child_pid": child, "signal": "cancel"}))
                    .await;
            let waited = dispatch_ctx(&ctx, "wait_child_process", json!({"child_pid": child})).await;
            let payload = json!({"bad": bad["error"]["code"], "cancelled": cancelled["status"], "waited": waited["status"]});
            dispatch_ctx(&ctx, "process_exit", json!({ "payload": payload })).await;
            Ok(())
        })
    });
    let rt = Runtime::in_memory(builtin_images().image(boss)).await.expect("runtime");
    let spec = RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: "drive json".into(),
        image: ImageId::from("json.boss"),
        cwd: "/".into(),
        capabilities: serde_json::from_value::<Vec<CapabilityArg>>(json!([
            {"resource": "process:spawn", "rights": ["execute"]},
            {"resource": "image:puppet", "rights": ["read"]}
        ]))
        .expect("caps")
        .iter()
        .map(|c| c.to_request("capabilities").expect("request"))
        .collect(),
        budget: Budget::UNLIMITED,
        supervision: None,
    };
    let pid = rt.spawn_root(spec).await.expect("root");
    let row = rt.wait_terminal(pid).await.expect("terminal");
    assert_eq!(row.status.as_str(), "exited", "{row:?}");
    let payload = rt.payload(row.result_oid.expect("oid")).expect("read").expect("payload");
    assert_eq!(payload, json!({"bad": "invalid_arguments", "cancelled": "killed", "waited": "killed"}));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn keyed_launches_forks_and_sends_through_json_happen_once() {
    let rt = runtime().await;
    let parent = root(&rt, spawner(), json!({})).await;
    let first =
        dispatch_as(&rt, parent, "spawn_child_process", json!({"goal": "a", "launch_key": "entry-a"})).await;
    let again =
        dispatch_as(&rt, parent, "spawn_child_process", json!({"goal": "a", "launch_key": "entry-a"})).await;
    assert_eq!(first, again, "the second launch answers the first: {again}");
    let forked =
        dispatch_as(&rt, parent, "fork_child_process", json!({"goal": "b", "launch_key": "fork-b"})).await;
    let forked_again =
        dispatch_as(&rt, parent, "fork_child_process", json!({"goal": "b", "launch_key": "fork-b"})).await;
    assert_eq!(pid_of(&forked), pid_of(&forked_again));
    let listed = dispatch_as(&rt, parent, "list_child_processes", json!({})).await;
    assert_eq!(listed["children"].as_array().expect("children").len(), 2, "{listed}");

    let to = pid_of(&first).to_string();
    let sent = dispatch_as(
        &rt,
        parent,
        "send_process_message",
        json!({"to": to, "body": "go", "message_key": "go-1"}),
    )
    .await;
    let resent = dispatch_as(
        &rt,
        parent,
        "send_process_message",
        json!({"to": to, "body": "go", "message_key": "go-1"}),
    )
    .await;
    assert_eq!(sent["message_id"], resent["message_id"], "{resent}");
    assert_eq!(rt.unread_count(pid_of(&first)).expect("count"), 1);
    let bad = dispatch_as(&rt, parent, "spawn_child_process", json!({"goal": "c", "launch_key": ""})).await;
    assert_eq!(code(&bad), "invalid_arguments", "{bad}");
}
