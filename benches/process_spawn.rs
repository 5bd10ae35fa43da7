//! Spawn + exit of a child on the in-memory store, against a raw ractor `spawn_linked` + stop
//! in the same run.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::time::{Duration, Instant};

struct Noop;

impl Actor for Noop {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

struct Sup;

impl Actor for Sup {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        _: ractor::SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Children per root before the bench moves to a fresh root (the per-parent child limit is
/// far above this; a fresh root keeps every sample alike).
const CHILDREN_PER_ROOT: u64 = 5_000;

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("spawn_exit");
    group.measurement_time(Duration::from_secs(5)).sample_size(30);

    group.bench_function("raw_ractor_spawn_linked_stop", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let (sup, _) = Actor::spawn(None, Sup, ()).await.expect("sup");
            let start = Instant::now();
            for _ in 0..iters {
                let (child, _) = Actor::spawn_linked(None, Noop, (), sup.get_cell()).await.expect("child");
                child.stop_and_wait(None, None).await.expect("stop");
            }
            let elapsed = start.elapsed();
            sup.stop(None);
            elapsed
        })
    });

    group.bench_function("agentvisor_spawn_exit_wait", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let rt = agentvisor::actors::runtime::Runtime::in_memory(common::options()).await.expect("rt");
            let mut root = common::root(&rt).await;
            let start = Instant::now();
            for i in 0..iters {
                if i > 0 && i % CHILDREN_PER_ROOT == 0 {
                    root = common::root(&rt).await;
                }
                let child = common::spawn(&rt, root, "exit").await;
                common::wait(&rt, root, child).await;
            }
            let elapsed = start.elapsed();
            rt.shutdown().await.expect("shutdown");
            elapsed
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
