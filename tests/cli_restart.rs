//! Restart history as a user sees it: a supervisor whose permanent child keeps panicking
//! restarts it up to its intensity and then fails; `agentvisor inspect` (text and `--json`)
//! shows every restart on the supervisor and each incarnation's place on the child.

mod cli_support;

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::kernel::launch::LaunchRequest;
use agentvisor::actors::kernel::restart::{RestartPolicy, Strategy, Supervision};
use agentvisor::actors::runtime::calls::{Call, CallOk};
use agentvisor::actors::runtime::program::{Image, ProgramResult, program_fn};
use agentvisor::actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor::actors::{ImageId, Pid, Status};
use cli_support::agentvisor;
use std::path::Path;

fn cap(resource: &str, rights: Rights) -> CapabilityRequest {
    CapabilityRequest { resource: resource.into(), rights, constraints: Default::default(), delegable: true }
}

/// A supervisor (intensity 2 in an hour) whose permanent child panics at every start.
async fn build(state: &Path) -> (Pid, Pid) {
    let options = RuntimeOptions::new()
        .image(Image::new("idle", |_| program_fn(|_| std::future::pending::<ProgramResult>())))
        .image(Image::new("crasher", |_| program_fn(|_| async { panic!("the crasher crashed") })));
    let rt = Runtime::open(state, options).await.expect("open");
    let root = rt
        .spawn_root(RootSpec {
            goal: "supervise".into(),
            image: ImageId::from("idle"),
            cwd: "/".into(),
            capabilities: vec![cap("process:spawn", Rights::EXECUTE), cap("image:crasher", Rights::READ)],
            budget: Budget::UNLIMITED,
            clearance: None,
            goal_labels: Default::default(),
            supervision: Some(Supervision {
                strategy: Strategy::OneForOne,
                intensity: 2,
                period_ms: 3_600_000,
            }),
        })
        .await
        .expect("root");
    let request = LaunchRequest {
        goal: "crash".into(),
        image: Some(ImageId::from("crasher")),
        restart: RestartPolicy::Permanent,
        ..LaunchRequest::default()
    };
    let first = match rt.call_as(root, Call::Spawn(request)).await.expect("spawn") {
        CallOk::Spawned(launched) => launched.pid,
        other => panic!("spawn answered {other:?}"),
    };
    let ended = rt.wait_terminal(root).await.expect("the supervisor ends");
    assert_eq!(ended.status, Status::Failed, "{ended:?}");
    rt.shutdown().await.expect("shutdown");
    (root, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_each_restart_of_a_panicking_permanent_child() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    let (root, first) = build(&state).await;

    let out = agentvisor(&state, &["inspect", &root.to_string(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let outcome = &view["process"]["outcome"];
    assert_eq!(outcome["error_kind"], "restart_intensity_exceeded", "{view}");
    let restart = &view["restart"];
    assert_eq!(restart["supervision"]["intensity"], 2);
    let history = restart["history"].as_array().expect("history");
    assert_eq!(history.len(), 2, "{restart}");
    let mut previous = first.to_string();
    for (i, record) in history.iter().enumerate() {
        assert_eq!(record["child_id"], first.to_string());
        assert_eq!(record["old_pid"], previous);
        assert_eq!(record["incarnation"], i + 1);
        assert_eq!(record["reason"], "failed: panic");
        assert!(record["at_ms"].as_u64().is_some_and(|ms| ms > 0), "{record}");
        assert!(record["state_generation"].as_u64().is_some(), "{record}");
        previous = record["new_pid"].as_str().expect("new pid").to_string();
    }
    assert_eq!(view["children"].as_array().expect("children").len(), 3, "three incarnations");

    let last = agentvisor(&state, &["inspect", &previous, "--json"]);
    let last: serde_json::Value = serde_json::from_slice(&last.stdout).expect("json");
    assert_eq!(last["restart"]["policy"], "permanent");
    assert_eq!(last["restart"]["incarnation"], 2);
    assert_eq!(last["restart"]["child_id"], first.to_string());
    let middle = history[0]["new_pid"].as_str().expect("pid");
    assert_eq!(last["restart"]["restart_of"], middle);
    let middle = agentvisor(&state, &["inspect", middle, "--json"]);
    let middle: serde_json::Value = serde_json::from_slice(&middle.stdout).expect("json");
    assert_eq!(middle["restart"]["restarted_as"], previous, "an ended incarnation names its successor");

    let text = agentvisor(&state, &["inspect", &root.to_string()]);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("supervision one_for_one intensity 2 per 3600000 ms"), "{text}");
    assert_eq!(text.matches("restart at ").count(), 2, "{text}");
}
