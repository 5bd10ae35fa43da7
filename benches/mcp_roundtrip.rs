//! The cost of the MCP front door: one `list_child_processes` call made by a real MCP client
//! over stdio against the real `agentvisor mcp` binary, against the same call made in
//! process through `dispatch_as`, in the same run.
//!
//! - `mcp_roundtrip/stdio_mcp`: rmcp's client drives `agentvisor mcp` (a child process owning
//!   a temporary state directory; a new root with three children); one `tools/call` per
//!   iteration, timed from the request to the parsed answer.
//! - `mcp_roundtrip/in_process_dispatch_as`: a runtime opened on another temporary directory
//!   (the same SQLite store), a root with three children, the same call through
//!   `agentvisor::tools::dispatch_as`.
//!
//! The ratio is what JSON-RPC framing, two pipes, the stdio front, rmcp's dispatch and the
//! text and structured copies of the answer add to a kernel call.
//!
//! `cargo bench --bench mcp_roundtrip -- --noplot`

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Constraints, Rights};
use agentvisor::actors::runtime::{RootSpec, Runtime};
use agentvisor::actors::{ImageId, Status};
use agentvisor::images::{PUPPET_IMAGE, builtin_images};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

/// Children under each root, so the listed rows are not empty.
const CHILDREN: usize = 3;

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mcp_dir = tempfile::tempdir().expect("tempdir");
    let local_dir = tempfile::tempdir().expect("tempdir");

    // The MCP server and its client.
    let client = tokio.block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentvisor"));
        cmd.arg("--state").arg(mcp_dir.path()).args(["mcp", "--grant", "process:spawn=x"]);
        let (transport, _) =
            TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().expect("spawn agentvisor mcp");
        let client = ().serve(transport).await.expect("initialize");
        for i in 0..CHILDREN {
            let params = CallToolRequestParams::new("spawn_child_process")
                .with_arguments(args(json!({"goal": format!("child {i}")})));
            let answer = client.call_tool(params).await.expect("spawn");
            assert_ne!(answer.is_error, Some(true), "{answer:?}");
        }
        client
    });

    // The same tree in process.
    let (rt, root) = tokio.block_on(async {
        let rt = Runtime::open(local_dir.path(), builtin_images()).await.expect("open");
        let spawn = CapabilityRequest {
            resource: "process:spawn".into(),
            rights: Rights::EXECUTE,
            constraints: Constraints::new(),
            delegable: true,
        };
        let root = rt
            .spawn_root(RootSpec {
                goal: "bench".into(),
                image: ImageId(PUPPET_IMAGE.into()),
                cwd: "/".into(),
                capabilities: vec![spawn],
                budget: Budget::UNLIMITED,
                clearance: None,
                goal_labels: Default::default(),
                supervision: None,
            })
            .await
            .expect("root");
        started(&rt, root).await;
        for i in 0..CHILDREN {
            let answer = agentvisor::tools::dispatch_as(
                &rt,
                root,
                "spawn_child_process",
                json!({"goal": format!("child {i}")}),
            )
            .await;
            assert!(answer.get("error").is_none(), "{answer}");
        }
        (rt, root)
    });

    let mut group = c.benchmark_group("mcp_roundtrip");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.bench_function("stdio_mcp", |b| {
        b.to_async(&tokio).iter(|| async {
            let params = CallToolRequestParams::new("list_child_processes").with_arguments(args(json!({})));
            let answer = client.call_tool(params).await.expect("list");
            assert_eq!(
                answer.structured_content.as_ref().and_then(|v| v["children"].as_array().map(Vec::len)),
                Some(CHILDREN)
            );
        });
    });
    group.bench_function("in_process_dispatch_as", |b| {
        b.to_async(&tokio).iter(|| async {
            let answer = agentvisor::tools::dispatch_as(&rt, root, "list_child_processes", json!({})).await;
            assert_eq!(answer["children"].as_array().map(Vec::len), Some(CHILDREN));
        });
    });
    group.finish();

    tokio.block_on(async move {
        let _ = client.cancel().await;
        let _ = rt.shutdown().await;
    });
}

/// Waits until a just-launched root has left `runnable` (its actor starts it right after the
/// launch commits).
async fn started(rt: &Runtime, pid: Pid) {
    let mut events = rt.subscribe();
    while matches!(rt.process(pid), Ok(Some(row)) if row.status == Status::Runnable) {
        let _ = events.recv().await;
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
