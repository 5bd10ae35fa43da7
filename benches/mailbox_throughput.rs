//! Mailbox send → receive throughput on the in-memory store: a parent and a child on the idle
//! image, the host acting as both through `call_as`. Each iteration moves `MESSAGES` messages
//! to a fresh child (acknowledged messages stay in a mailbox, so a reused child would make every
//! later read scan more):
//!
//! - `agentvisor_send_then_receive_pages`: the parent sends them all, then the child receives
//!   them in pages of `PAGE` (non-blocking receives, acknowledging);
//! - `agentvisor_host_send_then_receive_pages`: the same, but the host sends with
//!   `Runtime::send_message` (no actor round trip per send), to show what the round trip costs;
//! - `agentvisor_concurrent_send_and_blocking_receive`: a sender task and a receiver task at
//!   once; the receiver makes blocking receives of up to `PAGE` until it has them all.
//!
//! Baselines in the same run: the same number of `String` bodies through a raw tokio mpsc
//! channel, sent then received in pages (`recv_many`), and by two concurrent tasks; and through
//! a bare ractor actor holding a queue, with two call round trips per message (one to put it,
//! one to take it): the floor of a send and a receive that each go through an actor and are
//! answered.

mod common;

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::mailbox::{MailboxQuery, MessageKind};
use agentvisor::actors::runtime::Runtime;
use agentvisor::actors::runtime::calls::{Call, CallOk, SendRequest};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages moved per iteration.
const MESSAGES: usize = 1_000;

/// Messages per receive (and per `recv_many` in the baseline).
const PAGE: usize = 500;

fn body(i: usize) -> String {
    format!("message {i}")
}

fn request(to: Pid, i: usize) -> SendRequest {
    SendRequest {
        to,
        body: body(i),
        payload: None,
        channel: None,
        correlation_id: None,
        reply_to: None,
        kind: MessageKind::Normal,
    }
}

async fn send(rt: &Runtime, from: Pid, to: Pid, i: usize) {
    match rt.call_as(from, Call::Send(request(to, i))).await {
        Ok(CallOk::Sent(_)) => {}
        other => panic!("send failed: {other:?}"),
    }
}

/// One acknowledging receive of up to `PAGE` messages; returns how many it got.
async fn receive(rt: &Runtime, pid: Pid, block: bool) -> usize {
    let query = MailboxQuery { filter: Default::default(), include_acked: false, limit: PAGE };
    match rt.call_as(pid, Call::Receive { query, ack: true, block }).await {
        Ok(CallOk::Received(r)) => r.messages.len(),
        other => panic!("receive failed: {other:?}"),
    }
}

/// The ractor baseline's actor: a queue of bodies, put and taken by calls.
struct Queue;

enum QueueMsg {
    Put(String, RpcReplyPort<()>),
    Take(RpcReplyPort<Option<String>>),
}

impl Actor for Queue {
    type Msg = QueueMsg;
    type State = VecDeque<String>;
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<QueueMsg>, _: ()) -> Result<VecDeque<String>, ActorProcessingErr> {
        Ok(VecDeque::new())
    }
    async fn handle(
        &self,
        _: ActorRef<QueueMsg>,
        msg: QueueMsg,
        queue: &mut VecDeque<String>,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            QueueMsg::Put(body, reply) => {
                queue.push_back(body);
                let _ = reply.send(());
            }
            QueueMsg::Take(reply) => {
                let _ = reply.send(queue.pop_front());
            }
        }
        Ok(())
    }
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let mut group = c.benchmark_group("mailbox_throughput");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.measurement_time(Duration::from_secs(5)).sample_size(20);

    group.bench_function("baseline_tokio_mpsc_send_then_recv_many", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let start = Instant::now();
                for i in 0..MESSAGES {
                    tx.send(body(i)).expect("send");
                }
                let mut got = 0;
                let mut page = Vec::with_capacity(PAGE);
                while got < MESSAGES {
                    page.clear();
                    got += rx.recv_many(&mut page, PAGE).await;
                }
                total += start.elapsed();
            }
            total
        })
    });

    group.bench_function("baseline_tokio_mpsc_concurrent_tasks", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(PAGE);
                let start = Instant::now();
                let sender = tokio::spawn(async move {
                    for i in 0..MESSAGES {
                        tx.send(body(i)).await.expect("send");
                    }
                });
                let receiver = tokio::spawn(async move {
                    let mut got = 0;
                    let mut page = Vec::with_capacity(PAGE);
                    while got < MESSAGES {
                        page.clear();
                        got += rx.recv_many(&mut page, PAGE).await;
                    }
                });
                sender.await.expect("sender");
                receiver.await.expect("receiver");
                total += start.elapsed();
            }
            total
        })
    });

    group.bench_function("baseline_ractor_two_calls_per_message", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let (queue, handle) = Actor::spawn(None, Queue, ()).await.expect("queue");
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                for i in 0..MESSAGES {
                    queue.call(|reply| QueueMsg::Put(body(i), reply), None).await.expect("put");
                }
                for _ in 0..MESSAGES {
                    let taken = queue.call(QueueMsg::Take, None).await.expect("take");
                    assert!(matches!(taken, ractor::rpc::CallResult::Success(Some(_))));
                }
                total += start.elapsed();
            }
            queue.stop(None);
            handle.await.expect("queue stopped");
            total
        })
    });

    group.bench_function("agentvisor_send_then_receive_pages", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let rt = Runtime::in_memory(common::options()).await.expect("rt");
            let parent = common::root(&rt).await;
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let child = common::spawn(&rt, parent, "idle").await;
                let start = Instant::now();
                for i in 0..MESSAGES {
                    send(&rt, parent, child, i).await;
                }
                let mut got = 0;
                while got < MESSAGES {
                    got += receive(&rt, child, false).await;
                }
                total += start.elapsed();
                rt.call_as(child, Call::Exit { payload: None }).await.expect("exit");
            }
            rt.shutdown().await.expect("shutdown");
            total
        })
    });

    group.bench_function("agentvisor_host_send_then_receive_pages", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let rt = Runtime::in_memory(common::options()).await.expect("rt");
            let parent = common::root(&rt).await;
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let child = common::spawn(&rt, parent, "idle").await;
                let start = Instant::now();
                for i in 0..MESSAGES {
                    rt.send_message(request(child, i)).await.expect("host send");
                }
                let mut got = 0;
                while got < MESSAGES {
                    got += receive(&rt, child, false).await;
                }
                total += start.elapsed();
                rt.call_as(child, Call::Exit { payload: None }).await.expect("exit");
            }
            rt.shutdown().await.expect("shutdown");
            total
        })
    });

    group.bench_function("agentvisor_concurrent_send_and_blocking_receive", |b| {
        b.to_async(&tokio).iter_custom(|iters| async move {
            let rt = Arc::new(Runtime::in_memory(common::options()).await.expect("rt"));
            let parent = common::root(&rt).await;
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let child = common::spawn(&rt, parent, "idle").await;
                let start = Instant::now();
                let sender = {
                    let rt = rt.clone();
                    tokio::spawn(async move {
                        for i in 0..MESSAGES {
                            send(&rt, parent, child, i).await;
                        }
                    })
                };
                let receiver = {
                    let rt = rt.clone();
                    tokio::spawn(async move {
                        let mut got = 0;
                        while got < MESSAGES {
                            got += receive(&rt, child, true).await;
                        }
                    })
                };
                sender.await.expect("sender");
                receiver.await.expect("receiver");
                total += start.elapsed();
                rt.call_as(child, Call::Exit { payload: None }).await.expect("exit");
            }
            if let Ok(rt) = Arc::try_unwrap(rt) {
                rt.shutdown().await.expect("shutdown");
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
