//! The process lifecycle through the public Rust API: launch, list, wait, batches, signals,
//! host gates, kills, parent exit, panics, budgets, generations and shutdown.
//!
//! Most processes run the "puppet" image, whose program does nothing; the test drives them with
//! `Runtime::call_as`, exactly as their programs would. Suspension is observed through
//! telemetry (published after each commit), never by sleeping.

mod common;

use agentvisor_actors::kernel::budget::{Budget, Dimension, Usage};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::status::{
    FailureKind, Outcome, PauseReason, Sender, SignalKind, Status, WaitState,
};
use agentvisor_actors::runtime::calls::{Call, CallOk, ObjectTarget};
use agentvisor_actors::runtime::program::{Image, ProgramResult, program_fn};
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{BatchItem, Runtime, RuntimeOptions};
use agentvisor_actors::store::{MemoryStore, ProcessQuery, Store};
use agentvisor_actors::{ImageId, Pid};
use common::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

async fn runtime_with(images: Vec<Image>) -> Runtime {
    let mut options = RuntimeOptions::new().image(puppet());
    for image in images {
        options = options.image(image);
    }
    Runtime::in_memory(options).await.expect("start a runtime")
}

async fn runtime() -> Runtime {
    runtime_with(Vec::new()).await
}

#[tokio::test]
async fn spawn_returns_runnable_and_the_child_then_runs() {
    let rt = runtime().await;
    let mut events = rt.subscribe();
    let root = puppet_root(&rt).await;
    let launched = try_spawn(&rt, root, launch("child", None)).await.expect("spawn");
    assert_eq!(launched.status, Status::Runnable, "launch is not success");
    assert_eq!(launched.state_generation, 0);
    assert_eq!((launched.depth, launched.cwd.as_str()), (1, "/work"));
    assert_eq!(launched.image, ImageId::from("puppet"));
    assert_eq!(serde_json::to_value(&launched).expect("json")["status"], "runnable");
    assert_eq!(launched.capabilities.len(), 1, "only the delegated spawn grant");
    assert_eq!(until_status(&mut events, launched.pid, Status::Running).await, 1);
    let child = row(&rt, launched.pid);
    assert_eq!((child.parent, child.depth), (Some(root), 1));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn list_shows_direct_children_only() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let b = spawn(&rt, root, "b").await;
    let a1 = spawn(&rt, a, "a1").await;
    let other_root = puppet_root(&rt).await;
    let _ = spawn(&rt, other_root, "stranger").await;

    let pids = |l: &agentvisor_actors::runtime::calls::ChildList| {
        l.children.iter().map(|c| c.pid).collect::<Vec<_>>()
    };
    assert_eq!(pids(&list(&rt, root, false).await), [a, b]);
    assert_eq!(pids(&list(&rt, a, false).await), [a1]);
    assert!(list(&rt, b, true).await.children.is_empty());

    signal(&rt, root, b, SignalKind::Terminate, None).await.expect("terminate b");
    let live = list(&rt, root, false).await;
    assert_eq!(pids(&live), [a]);
    assert!(!live.has_more);
    let all = list(&rt, root, true).await;
    assert_eq!(pids(&all), [a, b]);
    let b_row = &all.children[1];
    assert_eq!(b_row.status, Status::Killed);
    assert!(matches!(b_row.outcome, Some(Outcome::Killed { signal: SignalKind::Terminate, .. })));
    assert_eq!(b_row.cwd, "/work");
    assert_eq!(b_row.state_generation, row(&rt, b).state_generation);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_nonblocking_wait_on_a_live_child_is_not_ready() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let child = spawn(&rt, root, "c").await;
    let w = wait(&rt, root, child, false).await.expect("wait");
    assert!(!w.ready, "{w:?}");
    assert!(!w.suspended);
    assert!(!w.status.is_terminal());
    assert_eq!((w.outcome, w.result_oid), (None, None));
    assert_eq!(row(&rt, root).status, Status::Running, "an observation does not suspend");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_blocking_wait_suspends_the_caller_and_resumes_it_with_the_outcome() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let child = spawn(&rt, root, "c").await;
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, root, child, true), async {
        until_status(&mut events, root, Status::WaitingEvent).await;
        let parent = row(&rt, root);
        assert_eq!(parent.status, Status::WaitingEvent);
        assert_eq!(parent.wait_state, Some(WaitState::Child { child_pid: child }));
        assert_eq!(
            serde_json::to_value(&parent.wait_state).expect("json"),
            json!({ "kind": "child", "child_pid": child.to_string() })
        );
        // A suspended process makes no calls.
        let refused = rt.call_as(root, Call::List { include_terminal: false }).await.expect_err("suspended");
        assert_eq!(refused.code, "not_running");
        exit(&rt, child, Some(json!({ "answer": 42 }))).await;
    });
    let w = waited.expect("the wait resumes");
    assert!(w.ready && w.suspended, "{w:?}");
    assert_eq!(w.status, Status::Exited);
    let oid = w.result_oid.expect("a result handle");
    assert_eq!(w.outcome, Some(Outcome::Exited { result_oid: Some(oid) }));
    let parent = row(&rt, root);
    assert_eq!((parent.status, parent.wait_state), (Status::Running, None));
    assert!(w.result_handle, "the wait grants a handle on the result: {w:?}");
    match rt.call_as(root, Call::ReadObject { target: ObjectTarget::Oid(oid) }).await {
        Ok(CallOk::Object(o)) => {
            assert!(o.materialized);
            assert_eq!(o.payload, Some(json!({ "answer": 42 })));
        }
        other => panic!("{other:?}"),
    }
    // Waiting again on the terminal child answers at once.
    let again = wait(&rt, root, child, true).await.expect("wait");
    assert!(again.ready && !again.suspended);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn wait_targets_one_direct_child() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let b = spawn(&rt, root, "b").await;
    let a1 = spawn(&rt, a, "a1").await;
    for (caller, target) in [(root, a1), (a, b), (a1, a), (root, root)] {
        let err = wait(&rt, caller, target, true).await.expect_err("not a direct child");
        assert_eq!(err.code, "not_direct_child", "{caller} waiting on {target}");
    }
    assert_eq!(row(&rt, root).status, Status::Running, "a refused wait does not suspend");
    rt.shutdown().await.expect("shutdown");
}

enum BatchReport {
    Child(Pid),
    Batch(&'static str, Vec<BatchItem>),
}

#[tokio::test]
async fn a_suspended_wait_ends_the_tool_batch() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let batcher = Image::new("batcher", move |_| {
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            let child = ctx.spawn_child(launch("c", Some("puppet"))).await?.pid;
            let _ = tx.send(BatchReport::Child(child));
            let first = ctx
                .batch(vec![
                    Call::Wait { child_pid: child, block: true },
                    Call::List { include_terminal: true },
                    Call::Signal { child_pid: child, signal: SignalKind::Pause, reason: None },
                ])
                .await;
            let _ = tx.send(BatchReport::Batch("suspended", first));
            // A wait that does not suspend, and a refused call, do not end a batch.
            let second = ctx
                .batch(vec![
                    Call::Wait { child_pid: child, block: true },
                    Call::Signal { child_pid: child, signal: SignalKind::Pause, reason: None },
                    Call::List { include_terminal: true },
                ])
                .await;
            let _ = tx.send(BatchReport::Batch("immediate", second));
            ctx.exit(None).await?;
            Ok(())
        })
    });
    let rt = runtime_with(vec![batcher]).await;
    let mut events = rt.subscribe();
    let root = rt.spawn_root(root_spec("batcher", Budget::UNLIMITED)).await.expect("root");
    let Some(BatchReport::Child(child)) = rx.recv().await else { panic!("no child reported") };
    until_status(&mut events, root, Status::WaitingEvent).await;
    exit(&rt, child, None).await;

    let Some(BatchReport::Batch("suspended", first)) = rx.recv().await else { panic!("no first batch") };
    assert_eq!(first.len(), 3);
    match &first[0] {
        Ok(CallOk::Waited(w)) => assert!(w.suspended && w.ready, "{w:?}"),
        other => panic!("{other:?}"),
    }
    for later in &first[1..] {
        let err = later.as_ref().expect_err("did not run");
        assert_eq!(err.code, "batch_ended", "{err}");
    }
    let Some(BatchReport::Batch("immediate", second)) = rx.recv().await else { panic!("no second batch") };
    match &second[0] {
        Ok(CallOk::Waited(w)) => assert!(w.ready && !w.suspended, "{w:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(second[1].as_ref().expect_err("terminal").code, "process_terminal");
    assert!(matches!(&second[2], Ok(CallOk::Listed(l)) if l.children.len() == 1), "{:?}", second[2]);
    assert_eq!(rt.wait_terminal(root).await.expect("root ends").status, Status::Exited);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn signals_reach_only_direct_nonterminal_children() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let b = spawn(&rt, root, "b").await;
    let a1 = spawn(&rt, a, "a1").await;
    for (caller, target) in [(root, a1), (a, b), (a1, a), (b, a1)] {
        for kind in [SignalKind::Pause, SignalKind::Terminate] {
            let err = signal(&rt, caller, target, kind, None).await.expect_err("not direct");
            assert_eq!(err.code, "not_direct_child", "{caller} -> {target}");
        }
    }
    assert_eq!(row(&rt, a1).status, Status::Running, "a refused signal changes nothing");
    signal(&rt, root, b, SignalKind::Cancel, None).await.expect("cancel b");
    for kind in [SignalKind::Pause, SignalKind::Resume, SignalKind::Cancel, SignalKind::Terminate] {
        let err = signal(&rt, root, b, kind, None).await.expect_err("terminal");
        assert_eq!(err.code, "process_terminal", "{kind:?}");
    }
    let err = rt.signal(b, SignalKind::Pause, None).await.expect_err("terminal");
    assert_eq!(err.code, "process_terminal");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn pause_keeps_the_wait_and_a_host_gate_blocks_resume_until_cleared() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let a1 = spawn(&rt, a, "a1").await;
    let mut events = rt.subscribe();
    let the_wait = Some(WaitState::Child { child_pid: a1 });
    let (waited, ()) = tokio::join!(wait(&rt, a, a1, true), async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        let paused = signal(&rt, root, a, SignalKind::Pause, Some("hold on")).await.expect("pause");
        assert_eq!((paused.status, &paused.wait_state), (Status::Paused, &the_wait));
        let r = row(&rt, a);
        assert_eq!(
            r.pause_reason,
            Some(PauseReason::Signal { sender: Sender::Process(root), reason: Some("hold on".into()) })
        );
        let resumed = signal(&rt, root, a, SignalKind::Resume, None).await.expect("resume");
        assert_eq!(
            (resumed.status, &resumed.wait_state),
            (Status::WaitingEvent, &the_wait),
            "resume cannot clear a wait"
        );

        let gated = rt.set_gate(a, "needs review").await.expect("gate");
        assert_eq!((gated.status, &gated.wait_state), (Status::Paused, &the_wait));
        assert_eq!(gated.pause_reason, Some(PauseReason::HostGate));
        assert_eq!(gated.host_gate.as_deref(), Some("needs review"));
        let refused = signal(&rt, root, a, SignalKind::Resume, None).await.expect_err("gated");
        assert_eq!(refused.code, "host_gate_held");
        let refused = rt.signal(a, SignalKind::Resume, None).await.expect_err("gated for the host too");
        assert_eq!(refused.code, "host_gate_held");
        let cleared = rt.clear_gate(a).await.expect("clear");
        assert_eq!(
            (cleared.status, cleared.host_gate.as_deref()),
            (Status::Paused, None),
            "clearing does not resume"
        );
        let resumed = signal(&rt, root, a, SignalKind::Resume, None).await.expect("resume");
        assert_eq!((resumed.status, &resumed.wait_state), (Status::WaitingEvent, &the_wait));
        exit(&rt, a1, None).await;
    });
    let w = waited.expect("the wait completes");
    assert!(w.ready && w.suspended);
    assert_eq!(w.status, Status::Exited);
    assert_eq!(row(&rt, a).status, Status::Running);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_child_ending_while_its_waiting_parent_is_paused_is_delivered_on_resume() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let a1 = spawn(&rt, a, "a1").await;
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, a, a1, true), async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        signal(&rt, root, a, SignalKind::Pause, None).await.expect("pause");
        exit(&rt, a1, None).await;
        // The wait is consumed, but the process stays paused.
        loop {
            let r = row(&rt, a);
            if r.wait_state.is_none() {
                assert_eq!(r.status, Status::Paused);
                break;
            }
            match events.recv().await.expect("telemetry") {
                KernelEvent::ProcessTransition { pid, transition: "wait_satisfied", .. } if pid == a => {}
                _ => {}
            }
        }
        let resumed = signal(&rt, root, a, SignalKind::Resume, None).await.expect("resume");
        assert_eq!((resumed.status, resumed.wait_state), (Status::Running, None));
    });
    let w = waited.expect("delivered on resume");
    assert!(w.ready && w.suspended);
    assert_eq!(w.status, Status::Exited);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn cancel_and_terminate_end_killed_with_signal_reason_and_sender() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let a1 = spawn(&rt, a, "a1").await;
    let b = spawn(&rt, root, "b").await;

    let s = signal(&rt, root, a, SignalKind::Cancel, Some("enough")).await.expect("cancel");
    assert_eq!(s.status, Status::Killed);
    assert_eq!(
        row(&rt, a).outcome,
        Some(Outcome::Killed {
            signal: SignalKind::Cancel,
            reason: Some("enough".into()),
            sender: Sender::Process(root)
        })
    );
    // Its live child was ended by it first.
    match row(&rt, a1).outcome {
        Some(Outcome::Killed { signal: SignalKind::Terminate, sender: Sender::Process(p), .. }) => {
            assert_eq!(p, a)
        }
        other => panic!("{other:?}"),
    }

    let s = rt.signal(b, SignalKind::Terminate, None).await.expect("terminate");
    assert_eq!(s.status, Status::Killed);
    assert_eq!(
        row(&rt, b).outcome,
        Some(Outcome::Killed { signal: SignalKind::Terminate, reason: None, sender: Sender::Host })
    );
    assert_eq!(row(&rt, root).status, Status::Running);
    let err = rt.call_as(b, Call::List { include_terminal: false }).await.expect_err("killed");
    assert_eq!(err.code, "process_terminal");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn killing_a_waiting_process_abandons_its_wait_and_ends_its_children() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let a1 = spawn(&rt, a, "a1").await;
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, a, a1, true), async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        let s = signal(&rt, root, a, SignalKind::Terminate, Some("stop waiting")).await.expect("terminate");
        assert_eq!((s.status, s.wait_state), (Status::Killed, None));
    });
    assert_eq!(waited.expect_err("the waiter was killed").code, "process_ended");
    assert_eq!(row(&rt, a1).status, Status::Killed);
    let r = row(&rt, a);
    assert_eq!((r.status, r.wait_state), (Status::Killed, None));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_parent_exit_ends_its_live_children_killed_first() {
    let rt = runtime().await;
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let a1 = spawn(&rt, a, "a1").await;
    let done = spawn(&rt, root, "done").await;
    exit(&rt, done, None).await;
    let mut events = rt.subscribe();
    let e = exit(&rt, root, Some(json!("bye"))).await;
    assert_eq!(e.status, Status::Exited);

    let terminal_order: Vec<Pid> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            KernelEvent::ProcessTransition { pid, to, .. } if to.is_terminal() => Some(pid),
            _ => None,
        })
        .collect();
    assert_eq!(terminal_order, [a1, a, root], "children end before their parent commits its exit");
    match row(&rt, a).outcome {
        Some(Outcome::Killed {
            signal: SignalKind::Terminate,
            reason: Some(reason),
            sender: Sender::Process(p),
        }) => {
            assert_eq!(p, root);
            assert!(reason.contains(&root.to_string()), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(row(&rt, a1).outcome, Some(Outcome::Killed { sender: Sender::Process(p), .. }) if p == a)
    );
    assert_eq!(row(&rt, done).status, Status::Exited, "a terminal child is left as it was");
    rt.shutdown().await.expect("shutdown");
}

fn detonate() -> ProgramResult {
    panic!("boom-7f3a: the fuse program blew up")
}

#[tokio::test]
async fn a_panicking_program_fails_only_its_own_process_and_its_parent_is_told() {
    let trigger = Arc::new(Notify::new());
    let t = trigger.clone();
    let fuse = Image::new("fuse", move |_| {
        let t = t.clone();
        program_fn(move |_ctx| async move {
            t.notified().await;
            detonate()
        })
    });
    let rt = runtime_with(vec![fuse]).await;
    let mut spec = root_spec("puppet", Budget::UNLIMITED);
    spec.capabilities.push(image_read("fuse"));
    let root = rt.spawn_root(spec).await.expect("root");
    let fuse_pid = try_spawn(&rt, root, launch("fuse", Some("fuse"))).await.expect("spawn fuse").pid;
    let sibling = spawn(&rt, root, "sibling").await;
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, root, fuse_pid, true), async {
        until_status(&mut events, root, Status::WaitingEvent).await;
        trigger.notify_one();
    });
    let w = waited.expect("the parent is told");
    assert!(w.ready && w.suspended, "{w:?}");
    assert_eq!(w.status, Status::Failed);
    match &w.outcome {
        Some(Outcome::Failed { error_kind: FailureKind::Panic, message }) => {
            assert!(message.contains("boom-7f3a"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(row(&rt, sibling).status, Status::Running, "the sibling keeps running");
    assert_eq!(list(&rt, sibling, true).await.children.len(), 0, "and still answers calls");
    assert_eq!(row(&rt, root).status, Status::Running);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn exhausting_the_tool_call_budget_fails_the_process() {
    let rt = runtime().await;
    let root = rt
        .spawn_root(root_spec("puppet", Budget { tool_calls: Some(2), ..Budget::UNLIMITED }))
        .await
        .expect("root");
    list(&rt, root, false).await;
    list(&rt, root, false).await;
    let err = rt.call_as(root, Call::List { include_terminal: false }).await.expect_err("third call");
    assert_eq!(err.code, "budget_exhausted");
    let end = rt.wait_terminal(root).await.expect("ends");
    match end.outcome {
        Some(Outcome::Failed { error_kind: FailureKind::BudgetExhausted, message }) => {
            assert!(message.contains("tool_calls"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(end.account.self_spent.tool_calls, 2, "the refused call was not charged");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn an_explicit_child_budget_beyond_the_remaining_is_refused() {
    let rt = runtime().await;
    let mut events = rt.subscribe();
    let root = rt
        .spawn_root(root_spec("puppet", Budget { tokens: Some(1000), ..Budget::UNLIMITED }))
        .await
        .expect("root");
    let with_tokens = |tokens: Option<u64>| LaunchRequest {
        resource_budget: tokens.map(|t| Budget { tokens: Some(t), ..Budget::UNLIMITED }),
        ..launch("c", None)
    };
    let err = try_spawn(&rt, root, with_tokens(Some(1001))).await.expect_err("too much");
    assert_eq!(err.code, "budget_exceeded", "{err}");
    assert!(drain(&mut events).iter().any(|e| matches!(e,
        KernelEvent::LaunchDenied { parent, code, .. } if *parent == root && code == "budget_exceeded")));
    assert!(list(&rt, root, true).await.children.is_empty(), "a denial issues no pid");

    let first = try_spawn(&rt, root, with_tokens(Some(400))).await.expect("fits");
    assert_eq!(first.resource_budget.tokens, Some(400));
    let err = try_spawn(&rt, root, with_tokens(Some(601))).await.expect_err("only 600 remain");
    assert_eq!(err.code, "budget_exceeded");
    let attenuated = try_spawn(&rt, root, with_tokens(None)).await.expect("omitted");
    assert_eq!(attenuated.resource_budget.tokens, Some(300), "half of the remaining, not a copy");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn unused_child_budget_returns_to_the_parent() {
    let rt = runtime().await;
    let root = rt
        .spawn_root(root_spec("puppet", Budget { tokens: Some(1000), ..Budget::UNLIMITED }))
        .await
        .expect("root");
    let request = LaunchRequest {
        resource_budget: Some(Budget { tokens: Some(400), ..Budget::UNLIMITED }),
        ..launch("c", None)
    };
    let child = try_spawn(&rt, root, request).await.expect("spawn").pid;
    assert_eq!(row(&rt, root).account.remaining(Dimension::Tokens, 0), Some(600));
    rt.call_as(child, Call::Charge(Usage { tokens: 150, ..Usage::default() })).await.expect("charge");
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, root, child, true), async {
        until_status(&mut events, root, Status::WaitingEvent).await;
        exit(&rt, child, None).await;
    });
    assert!(waited.expect("wait").ready);
    // The wait's commit carries the settlement.
    let parent = row(&rt, root);
    assert_eq!(parent.account.remaining(Dimension::Tokens, 0), Some(850), "{:?}", parent.account);
    assert_eq!(parent.account.total_spent().tokens, 150);
    let listed = list(&rt, root, true).await;
    let c = &listed.children[0];
    assert_eq!(c.resource_budget.tokens, Some(400));
    assert_eq!(c.usage.tokens, 150);
    // What came back can be given out again.
    let request = LaunchRequest {
        resource_budget: Some(Budget { tokens: Some(850), ..Budget::UNLIMITED }),
        ..launch("d", None)
    };
    try_spawn(&rt, root, request).await.expect("the returned budget is available");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn live_children_budget_is_held_while_a_child_lives_and_returned_when_it_ends() {
    let rt = runtime().await;
    let root = rt
        .spawn_root(root_spec("puppet", Budget { live_children: Some(2), ..Budget::UNLIMITED }))
        .await
        .expect("root");
    let first = try_spawn(&rt, root, launch("a", None)).await.expect("room for one");
    assert_eq!(
        first.resource_budget.live_children,
        Some(0),
        "half of what is left besides itself, rounded down"
    );
    let second = try_spawn(&rt, root, launch("b", None)).await.expect("room for two");
    let err = try_spawn(&rt, root, launch("c", None)).await.expect_err("full");
    assert_eq!(err.code, "budget_exceeded");
    // A grandchild would need room in its parent's own live_children budget.
    let err = try_spawn(&rt, first.pid, launch("a1", None)).await.expect_err("no room below a");
    assert_eq!(err.code, "budget_exceeded");
    let mut events = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, root, second.pid, true), async {
        until_status(&mut events, root, Status::WaitingEvent).await;
        exit(&rt, second.pid, None).await;
    });
    assert!(waited.expect("wait").ready);
    try_spawn(&rt, root, launch("c", None)).await.expect("the ended child's slot came back");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn charging_past_the_token_budget_fails_the_process() {
    let rt = runtime().await;
    let root = rt
        .spawn_root(root_spec("puppet", Budget { tokens: Some(100), ..Budget::UNLIMITED }))
        .await
        .expect("root");
    rt.call_as(root, Call::Charge(Usage { tokens: 60, ..Usage::default() })).await.expect("fits");
    let err = rt
        .call_as(root, Call::Charge(Usage { tokens: 41, ..Usage::default() }))
        .await
        .expect_err("does not fit");
    assert_eq!(err.code, "budget_exhausted");
    let end = rt.wait_terminal(root).await.expect("ends");
    assert!(
        matches!(&end.outcome, Some(Outcome::Failed { error_kind: FailureKind::BudgetExhausted, message }) if message.contains("tokens")),
        "{end:?}"
    );
    assert_eq!(end.account.self_spent.tokens, 60, "the refused charge was not applied");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_wall_time_budget_fails_a_sleeping_program_on_paused_time() {
    let sleeper = Image::new("sleeper", |_| {
        program_fn(|ctx| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ctx.exit(None).await?;
            Ok(())
        })
    });
    let rt = runtime_with(vec![sleeper]).await;
    let mut spec = root_spec("puppet", Budget { wall_time_ms: Some(10_000), ..Budget::UNLIMITED });
    spec.capabilities.push(image_read("sleeper"));
    let root = rt.spawn_root(spec).await.expect("root");
    let request = LaunchRequest {
        resource_budget: Some(Budget { wall_time_ms: Some(1_000), ..Budget::UNLIMITED }),
        ..launch("sleep", Some("sleeper"))
    };
    let child = try_spawn(&rt, root, request).await.expect("spawn").pid;
    let end = rt.wait_terminal(child).await.expect("ends");
    match &end.outcome {
        Some(Outcome::Failed { error_kind: FailureKind::BudgetExhausted, message }) => {
            assert!(message.contains("wall_time_ms"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let ran = end.account.self_spent.wall_time_ms;
    assert!((1_000..3_600_000).contains(&ran), "recorded {ran} ms of virtual time");
    assert_eq!(row(&rt, root).status, Status::Running, "the parent's own 10 s have not run out");

    // The root's own limit applies to the root.
    let end = rt.wait_terminal(root).await.expect("root ends");
    assert!(
        matches!(end.outcome, Some(Outcome::Failed { error_kind: FailureKind::BudgetExhausted, .. })),
        "{end:?}"
    );
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn state_generation_rises_by_one_per_transition() {
    let rt = runtime().await;
    let mut events = rt.subscribe();
    let root = puppet_root(&rt).await;
    let c = spawn(&rt, root, "c").await;
    let d = spawn(&rt, c, "d").await;
    signal(&rt, root, c, SignalKind::Pause, None).await.expect("pause");
    signal(&rt, root, c, SignalKind::Resume, None).await.expect("resume");
    let mut watch = rt.subscribe();
    let (waited, ()) = tokio::join!(wait(&rt, c, d, true), async {
        until_status(&mut watch, c, Status::WaitingEvent).await;
        signal(&rt, root, c, SignalKind::Pause, None).await.expect("pause");
        rt.set_gate(c, "look").await.expect("gate");
        rt.clear_gate(c).await.expect("clear");
        signal(&rt, root, c, SignalKind::Resume, None).await.expect("resume");
        exit(&rt, d, None).await;
    });
    waited.expect("wait");
    exit(&rt, c, None).await;

    let mut last: std::collections::HashMap<Pid, u64> = Default::default();
    let mut c_transitions = Vec::new();
    for event in drain(&mut events) {
        if let KernelEvent::ProcessTransition { pid, transition, state_generation, .. } = event {
            let previous = last.insert(pid, state_generation).unwrap_or(0);
            assert_eq!(state_generation, previous + 1, "{pid} {transition}: generation jumped");
            if pid == c {
                c_transitions.push(transition);
            }
        }
    }
    assert_eq!(
        c_transitions,
        [
            "start",
            "pause",
            "resume",
            "begin_wait",
            "pause",
            "set_gate",
            "clear_gate",
            "resume",
            "wait_satisfied",
            "exit"
        ]
    );
    for pid in [root, c, d] {
        assert_eq!(Some(&row(&rt, pid).state_generation), last.get(&pid), "{pid}: the row matches telemetry");
    }
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn shutdown_leaves_no_running_row() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let waiter = Image::new("waiter", move |_| {
        let tx = tx.clone();
        program_fn(move |ctx| async move {
            let child = ctx.spawn_child(launch("waited", Some("puppet"))).await?.pid;
            let _ = tx.send(child);
            ctx.wait_child(child, true).await?;
            Ok(())
        })
    });
    let store = Arc::new(MemoryStore::new());
    let options = RuntimeOptions::new().image(puppet()).image(waiter);
    let rt = Runtime::start(store.clone(), options).await.expect("start");
    let mut events = rt.subscribe();
    let root = puppet_root(&rt).await;
    let a = spawn(&rt, root, "a").await;
    let b = spawn(&rt, root, "b").await;
    signal(&rt, root, b, SignalKind::Pause, Some("parked")).await.expect("pause b");
    let w = rt.spawn_root(root_spec("waiter", Budget::UNLIMITED)).await.expect("waiter");
    let waited = rx.recv().await.expect("the waiter spawned");
    until_status(&mut events, w, Status::WaitingEvent).await;
    rt.shutdown().await.expect("shutdown");

    let rows =
        store.processes(ProcessQuery { include_terminal: true, ..ProcessQuery::default() }).expect("read");
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r.status != Status::Running), "{rows:#?}");
    let by_pid = |pid: Pid| rows.iter().find(|r| r.pid == pid).expect("row");
    for pid in [root, a, waited] {
        assert_eq!(by_pid(pid).status, Status::Paused);
        assert_eq!(by_pid(pid).pause_reason, Some(PauseReason::Shutdown), "{pid}");
    }
    assert!(
        matches!(by_pid(b).pause_reason, Some(PauseReason::Signal { .. })),
        "an earlier pause keeps its reason"
    );
    assert_eq!(by_pid(w).status, Status::WaitingEvent, "a suspended wait stays durable");
    assert_eq!(by_pid(w).wait_state, Some(WaitState::Child { child_pid: waited }));
}
