//! Tool refusals as a caller meets them: one code for "no such process", reasons and huge
//! inputs bounded, unknown objects named as unknown, skills and image needs checked.

use agentvisor::actors::ImageId;
use agentvisor::actors::Pid;
use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::limits::REASON_BYTES_MAX;
use agentvisor::actors::runtime::program::{Image, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime};
use agentvisor::images::{PUPPET_IMAGE, builtin_images};
use agentvisor::tools::dispatch_as;
use serde_json::{Value, json};

/// An image whose program needs `fs:/data`, which it declares.
const NEEDY_IMAGE: &str = "needy";

async fn runtime() -> Runtime {
    let needy = Image::new(NEEDY_IMAGE, |_| program_fn(|_ctx| async { Ok(()) })).requires("fs:/data");
    Runtime::in_memory(builtin_images().image(needy)).await.expect("runtime")
}

async fn root(rt: &Runtime) -> Pid {
    let grant = |resource: &str, rights| CapabilityRequest {
        resource: resource.into(),
        rights,
        constraints: Default::default(),
        delegable: true,
    };
    rt.spawn_root(RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: "conformance root".into(),
        image: ImageId::from(PUPPET_IMAGE),
        cwd: "/".into(),
        capabilities: vec![
            grant("process:spawn", Rights::EXECUTE),
            grant(&format!("image:{NEEDY_IMAGE}"), Rights::READ),
            grant("fs:/data", Rights::READ),
        ],
        budget: Budget::UNLIMITED,
        supervision: None,
    })
    .await
    .expect("root")
}

#[track_caller]
fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

#[tokio::test]
async fn a_pid_that_names_no_process_is_unknown_process_for_every_tool() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let nobody = "0190f5a2-7b1c-7d3e-8f40-123456789abc";
    let calls = [
        ("wait_child_process", json!({"child_pid": nobody})),
        ("signal_child_process", json!({"child_pid": nobody, "signal": "pause"})),
        ("merge_child_memory", json!({"child_pid": nobody})),
        ("send_process_message", json!({"to": nobody, "body": "hi"})),
    ];
    for (tool, args) in calls {
        let out = dispatch_as(&rt, me, tool, args).await;
        assert_eq!(code(&out), "unknown_process", "{tool}: {out}");
    }
    let created = dispatch_as(&rt, me, "create_object", json!({"payload": 1, "name": "n"})).await;
    assert!(created.get("error").is_none(), "{created}");
    let out =
        dispatch_as(&rt, me, "delegate_object", json!({"name": "n", "to": nobody, "rights": ["read"]})).await;
    assert_eq!(code(&out), "unknown_process", "{out}");
    // A process that exists but is not a child keeps its own code.
    let out = dispatch_as(&rt, me, "wait_child_process", json!({"child_pid": me.to_string()})).await;
    assert_eq!(code(&out), "not_direct_child", "{out}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_reason_over_its_bound_is_refused_not_cut() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let child = dispatch_as(&rt, me, "spawn_child_process", json!({"goal": "idle"})).await;
    let child = child["pid"].as_str().expect("pid").to_string();
    let long = "r".repeat(REASON_BYTES_MAX + 1);
    let out = dispatch_as(
        &rt,
        me,
        "signal_child_process",
        json!({"child_pid": child, "signal": "pause", "reason": long}),
    )
    .await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    assert!(out["error"]["message"].as_str().expect("message").len() < 200, "the reason is not echoed");
    let pid: Pid = child.parse().expect("pid");
    let row = rt.process(pid).expect("read").expect("row");
    assert_ne!(row.status.as_str(), "paused", "a refused signal changes nothing");
    let gate = rt.set_gate(pid, &"g".repeat(REASON_BYTES_MAX + 1)).await.expect_err("refused");
    assert_eq!(gate.code, "invalid_arguments");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn errors_quote_a_bounded_part_of_a_huge_input() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let image = "i".repeat(100_000);
    let out = dispatch_as(&rt, me, "spawn_child_process", json!({"goal": "g", "image": image})).await;
    let message = out["error"]["message"].as_str().expect("an error");
    assert!(message.len() < 1_000, "{} bytes: {}", message.len(), &message[..200]);
    assert!(message.contains("100000 characters"), "{message}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_not_echoed_whole() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let huge = "x".repeat(100_000);
    let out = dispatch_as(
        &rt,
        me,
        "spawn_child_process",
        json!({"goal": "g", "resource_budget": {"tokens": huge}}),
    )
    .await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    let message = out["error"]["message"].as_str().expect("message");
    assert!(message.starts_with("resource_budget.tokens: invalid type"), "the field comes first: {message}");
    assert!(message.len() < 1_000, "{} bytes", message.len());
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn checkpointing_an_object_that_never_existed_is_unknown_object() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let nothing = "0190f5a2-7b1c-7d3e-8f40-cba987654321";
    for tool in ["read_object", "write_object", "checkpoint_object"] {
        let mut args = json!({"oid": nothing});
        if tool == "write_object" {
            args["payload"] = json!(1);
        }
        let out = dispatch_as(&rt, me, tool, args).await;
        assert_eq!(code(&out), "unknown_object", "{tool}: {out}");
    }
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_skill_may_allow_only_tools_the_image_offers() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let out = dispatch_as(
        &rt,
        me,
        "load_skills",
        json!({"skills": [
            {"name": "web", "allowed_tools": ["browse_the_web", "spawn_child_process"]},
            {"name": "mail", "allowed_tools": ["send_email"]}
        ]}),
    )
    .await;
    assert_eq!(code(&out), "tool_not_offered", "{out}");
    let message = out["error"]["message"].as_str().expect("message");
    for named in ["\"browse_the_web\" (skill \"web\")", "\"send_email\" (skill \"mail\")"] {
        assert!(message.contains(named), "every tool no image offers is named: {message}");
    }
    assert!(!message.contains("spawn_child_process"), "an offered tool is not: {message}");
    let listed = dispatch_as(&rt, me, "list_objects", json!({})).await;
    assert_eq!(listed["skills"], json!([]), "nothing was loaded: {listed}");
    let ok = dispatch_as(
        &rt,
        me,
        "load_skills",
        json!({"skills": [{"name": "delegate", "allowed_tools": ["spawn_child_process"]}]}),
    )
    .await;
    assert!(ok.get("error").is_none(), "{ok}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_launch_must_delegate_what_its_image_requires() {
    let rt = runtime().await;
    let me = root(&rt).await;
    let out =
        dispatch_as(&rt, me, "spawn_child_process", json!({"goal": "read data", "image": NEEDY_IMAGE})).await;
    assert_eq!(code(&out), "missing_required_capability", "{out}");
    assert!(out["error"]["message"].as_str().expect("message").contains("fs:/data"), "{out}");
    let listed = dispatch_as(&rt, me, "list_child_processes", json!({})).await;
    assert_eq!(listed["children"], json!([]), "a denied launch issues no pid: {listed}");
    let out = dispatch_as(
        &rt,
        me,
        "spawn_child_process",
        json!({"goal": "read data", "image": NEEDY_IMAGE,
               "inherit_capabilities": [{"resource": "fs:/data", "rights": ["read"]}]}),
    )
    .await;
    assert_eq!(out["status"], "runnable", "{out}");
    rt.shutdown().await.expect("shutdown");
}
