//! Wake latency across nodes on a PostgreSQL store: a child blocked in
//! `receive_process_messages`; its parent sends; the time from the send's start until the
//! receive's answer is back with the caller.
//!
//! - `same_node`: the runtime is in this process, on a shard of the database, and the host
//!   calls it directly (`control::host::call`, the JSON tools).
//! - `across_nodes`: the runtime is an `agentvisor node` process serving another shard of the
//!   same database, and both calls go through the database (`control::database::Requester`,
//!   one connection kept for all requests: a `host_requests` row, `NOTIFY`, the node's
//!   answer, `NOTIFY`), as from another machine.
//!
//! Before each measurement the receive is made and the child is seen waiting, outside the time.

mod common;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::store::{NodeLease, PostgresStore, shard_url};
use agentvisor::control::database::{Changes, Requester, request};
use agentvisor::control::protocol::Request;
use agentvisor::control::{RootRequest, host};
use agentvisor::images::{PUPPET_IMAGE, builtin_images};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn root_request(cwd: &str) -> RootRequest {
    RootRequest {
        goal: "wake bench".into(),
        image: PUPPET_IMAGE.into(),
        cwd: cwd.into(),
        capabilities: vec![CapabilityRequest {
            resource: "process:spawn".into(),
            rights: Rights::EXECUTE,
            constraints: Default::default(),
            delegable: true,
        }],
        budget: Default::default(),
        launch_key: None,
    }
}

fn pid_of(answer: &Value) -> Pid {
    answer["pid"].as_str().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no pid in {answer}"))
}

fn receive_args() -> Value {
    json!({"block": true})
}

fn send_args(to: Pid) -> Value {
    json!({"to": to.to_string(), "body": "wake"})
}

/// An `agentvisor node` serving `shard` of the database `url`, once it says it serves.
fn start_node(url: &str, shard: &str, state: &std::path::Path) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(["--store", url, "--shard", shard, "--node", "bench", "node"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the node starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("serving") => break,
            Some(Ok(_)) => {}
            other => panic!("the node ended before serving: {other:?}"),
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    child
}

fn bench(c: &mut Criterion) {
    let Some(url) = pg_server::fresh_database() else {
        eprintln!("PostgreSQL benches skipped");
        return;
    };
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().display().to_string();
    let mut group = c.benchmark_group("send_to_woken_receive_postgres");
    group.measurement_time(Duration::from_secs(10)).sample_size(20);

    let local = shard_url(&url, "local").expect("a shard URL");
    let rt = tokio.block_on(async {
        let lease = NodeLease::new("local", Duration::from_secs(3600)).expect("a lease");
        let store = PostgresStore::open_as(&local, &lease).expect("opens the shard");
        Arc::new(Runtime::start(Arc::new(store), builtin_images()).await.expect("starts"))
    });
    let (parent, child) = tokio.block_on(async {
        let parent = rt.spawn_root(root_request(&cwd).into()).await.expect("a root");
        let spawned = host::call(&rt, parent, "spawn_child_process", json!({"goal": "listen"}), None).await;
        (parent, pid_of(&spawned))
    });
    group.bench_function("same_node", |b| {
        b.to_async(&tokio).iter_custom(|iters| {
            let rt = Arc::clone(&rt);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut events = rt.subscribe();
                    let receive = {
                        let rt = Arc::clone(&rt);
                        tokio::spawn(async move {
                            host::call(&rt, child, "receive_process_messages", receive_args(), None).await
                        })
                    };
                    while rt.process(child).expect("reads").map(|r| r.status.as_str())
                        != Some("waiting_event")
                    {
                        let _ = events.recv().await;
                    }
                    let start = Instant::now();
                    host::call(&rt, parent, "send_process_message", send_args(child), None).await;
                    let received = receive.await.expect("joins");
                    total += start.elapsed();
                    assert!(received.to_string().contains("wake"), "{received}");
                }
                total
            }
        })
    });

    let remote = shard_url(&url, "remote").expect("a shard URL");
    let mut node = start_node(&url, "remote", &work.path().join("node"));
    let (parent, child) = tokio.block_on(async {
        let parent = pid_of(
            &request(&remote, &Request::SpawnRoot { root: root_request(&cwd) })
                .await
                .expect("the node launches"),
        );
        let call = Request::Call {
            pid: parent,
            tool: "spawn_child_process".into(),
            args: json!({"goal": "listen"}),
        };
        (parent, pid_of(&request(&remote, &call).await.expect("the node spawns")))
    });
    let requester = Arc::new(tokio.block_on(Requester::connect(&remote)).expect("connects"));
    group.bench_function("across_nodes", |b| {
        b.to_async(&tokio).iter_custom(|iters| {
            let (remote, requester) = (remote.clone(), Arc::clone(&requester));
            async move {
                let mut commits = Changes::listen(&remote).await.expect("listens");
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let receive = {
                        let requester = Arc::clone(&requester);
                        let call = Request::Call {
                            pid: child,
                            tool: "receive_process_messages".into(),
                            args: receive_args(),
                        };
                        tokio::spawn(async move { requester.request(&call).await })
                    };
                    loop {
                        let row = requester.request(&Request::Process { pid: child }).await.expect("reads");
                        if row["status"] == "waiting_event" {
                            break;
                        }
                        commits.next().await;
                    }
                    let start = Instant::now();
                    let send = Request::Call {
                        pid: parent,
                        tool: "send_process_message".into(),
                        args: send_args(child),
                    };
                    requester.request(&send).await.expect("sends");
                    let received = receive.await.expect("joins").expect("the receive answers");
                    total += start.elapsed();
                    assert!(received.to_string().contains("wake"), "{received}");
                }
                total
            }
        })
    });
    group.finish();
    let _ = node.kill();
    let _ = node.wait();
}

criterion_group!(benches, bench);
criterion_main!(benches);
