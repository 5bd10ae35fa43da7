//! A process's sends on the SQLite store: 64 messages to its children made as one send group
//! (`Call::SendGroup`, one commit for all) against the same 64 sends made one by one (a commit
//! each), in the same run. An agent's consecutive `send_message` calls in a turn are sent as
//! one group.

mod common;

use agentvisor::actors::Pid;
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::calls::{Call, CallOk, GroupedSend, SendRequest};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::time::{Duration, Instant};

/// Messages per measured batch.
const SENDS: usize = 64;
/// Children the messages go to, in turn: one message per child a batch, so that no mailbox
/// fills however many batches criterion asks for.
const CHILDREN: usize = SENDS;

fn request(to: Pid, index: usize) -> SendRequest {
    SendRequest::new(to, format!("message {index}"))
}

/// The time `iters` batches of [`SENDS`] take from a root to its children, grouped or not.
async fn sends(iters: u64, grouped: bool) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = Runtime::open(dir.path(), common::options()).await.expect("rt");
    let root = common::root(&rt).await;
    let mut children = Vec::with_capacity(CHILDREN);
    for _ in 0..CHILDREN {
        children.push(common::spawn(&rt, root, "idle").await);
    }
    let start = Instant::now();
    for _ in 0..iters {
        let batch = (0..SENDS).map(|index| request(children[index % CHILDREN], index));
        if grouped {
            let sends = batch.map(|request| GroupedSend { request, message_key: None }).collect();
            match rt.call_as(root, Call::SendGroup(sends)).await {
                Ok(CallOk::SentGroup(answers)) => assert!(answers.iter().all(Result::is_ok), "{answers:?}"),
                other => panic!("a send group answered {other:?}"),
            }
        } else {
            for request in batch {
                match rt.call_as(root, Call::Send(request)).await {
                    Ok(CallOk::Sent(_)) => {}
                    other => panic!("a send answered {other:?}"),
                }
            }
        }
    }
    let elapsed = start.elapsed();
    rt.shutdown().await.expect("shutdown");
    elapsed
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("send_group");
    group
        .measurement_time(Duration::from_secs(5))
        .sample_size(10)
        .throughput(Throughput::Elements(SENDS as u64));
    group.bench_function("baseline_one_by_one", |b| {
        b.to_async(&tokio).iter_custom(|iters| sends(iters, false))
    });
    group
        .bench_function("agentvisor_grouped", |b| b.to_async(&tokio).iter_custom(|iters| sends(iters, true)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
