//! Child exit → parent wake latency: a parent blocked in `wait_child_process` on a live child;
//! the child exits; time until the parent's wait answers. Baseline in the same run: the same
//! hand-off between two tasks over a tokio oneshot. (A bare ractor call round trip is measured
//! in `mailbox_throughput`.)

mod common;

use agentvisor::actors::Status;
use agentvisor::actors::runtime::calls::Call;
use agentvisor::actors::runtime::telemetry::KernelEvent;
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::{Duration, Instant};

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("exit_to_wake");
    group.measurement_time(Duration::from_secs(5)).sample_size(30);

    group.bench_function("baseline_tokio_oneshot_handoff", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let waiter = tokio::spawn(async move { rx.await.is_ok() });
                tokio::task::yield_now().await;
                let start = Instant::now();
                let _ = tx.send(());
                let _ = waiter.await;
                total += start.elapsed();
            }
            total
        })
    });

    group.bench_function("agentvisor_exit_to_parent_wake", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let rt = std::sync::Arc::new(
                agentvisor::actors::runtime::Runtime::in_memory(common::options()).await.expect("rt"),
            );
            let mut root = common::root(&rt).await;
            let mut total = Duration::ZERO;
            for i in 0..iters {
                if i > 0 && i % 5_000 == 0 {
                    root = common::root(&rt).await;
                }
                let child = common::spawn(&rt, root, "idle").await;
                let mut events = rt.subscribe();
                let waiter = {
                    let rt = rt.clone();
                    tokio::spawn(async move { common::wait(&rt, root, child).await })
                };
                // The parent is suspended once its waiting_event transition is published.
                loop {
                    match events.recv().await {
                        Ok(KernelEvent::ProcessTransition { pid, to: Status::WaitingEvent, .. })
                            if pid == root =>
                        {
                            break;
                        }
                        Ok(_) => {}
                        Err(e) => panic!("telemetry: {e}"),
                    }
                }
                let start = Instant::now();
                rt.call_as(child, Call::Exit { payload: None }).await.expect("exit");
                waiter.await.expect("waiter");
                total += start.elapsed();
            }
            if let Ok(rt) = std::sync::Arc::try_unwrap(rt) {
                rt.shutdown().await.expect("shutdown");
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
