//! Restart policies through the public Rust API: permanent, transient and temporary children,
//! the intensity, `one_for_all` and `rest_for_one`, budgets across restarts and a refused
//! restart. Children run the "scripted" image, so the test decides when and how each ends;
//! every step waits on telemetry (the supervisor's decision), never on time. The clock is a
//! `ManualClock` that only the test moves.

mod common;

use agentvisor_actors::kernel::budget::{Budget, ChildShare, Usage};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::restart::{RestartPolicy, Strategy, Supervision};
use agentvisor_actors::kernel::status::{FailureKind, Outcome, Sender, SignalKind};
use agentvisor_actors::runtime::calls::Call;
use agentvisor_actors::runtime::clock::ManualClock;
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use agentvisor_actors::{ImageId, Pid, Status};
use common::scripted::{Act, SCRIPTED, Script};
use common::*;
use std::sync::Arc;
use tokio::sync::broadcast;

/// A period no test reaches: the manual clock never moves that far.
const LONG_PERIOD_MS: u64 = 3_600_000;

async fn runtime(script: &Script, clock: Arc<ManualClock>) -> Runtime {
    let options = RuntimeOptions::new().image(puppet()).image(script.image()).clock(clock);
    Runtime::in_memory(options).await.expect("runtime")
}

fn supervisor_spec(supervision: Supervision, budget: Budget) -> RootSpec {
    RootSpec {
        capabilities: vec![spawn_cap(), image_read(SCRIPTED)],
        supervision: Some(supervision),
        ..root_spec("puppet", budget)
    }
}

fn child(goal: &str, restart: RestartPolicy) -> LaunchRequest {
    LaunchRequest {
        goal: goal.into(),
        image: Some(ImageId::from(SCRIPTED)),
        restart,
        ..LaunchRequest::default()
    }
}

/// The next `ChildSupervised` decision of `parent` about `child`: the decision and the new pid.
async fn decision(
    events: &mut broadcast::Receiver<KernelEvent>,
    parent: Pid,
    child: Pid,
) -> (String, Option<Pid>) {
    loop {
        match events.recv().await.expect("telemetry") {
            KernelEvent::ChildSupervised { parent: p, child: c, decision, restarted_as }
                if p == parent && c == child =>
            {
                return (decision.to_string(), restarted_as);
            }
            _ => {}
        }
    }
}

fn children(rt: &Runtime, parent: Pid) -> Vec<agentvisor_actors::kernel::process::ProcessRow> {
    rt.processes(ProcessQuery { parent: Some(parent), include_terminal: true, ..ProcessQuery::default() })
        .expect("children")
}

/// The parent's reservations equal what its live children's rows reserve, and what its
/// terminal children's subtrees spent is charged: the account rebuilt from rows.
fn assert_account_balances(rt: &Runtime, parent: Pid) {
    let row = row(rt, parent);
    let mut rebuilt = row.account;
    rebuilt.rebuild_children(children(rt, parent).iter().map(|c| ChildShare {
        limit: c.account.limit,
        spent: c.account.total_spent(),
        terminal: c.status.is_terminal(),
    }));
    assert_eq!(balance(&row.account), balance(&rebuilt), "the account balances against the children's rows");
}

/// An account's spending and reservations, a dimension nothing reserved in read as 0.
fn balance(
    account: &agentvisor_actors::kernel::budget::Account,
) -> (agentvisor_actors::kernel::budget::Usage, agentvisor_actors::kernel::budget::Usage, [u64; 4]) {
    let r = &account.children_reserved;
    let reserved = [r.tokens, r.cost_micros, r.tool_calls, r.live_children].map(|d| d.unwrap_or(0));
    (account.self_spent, account.children_spent, reserved)
}

#[tokio::test]
async fn a_permanent_child_that_panics_is_restarted_up_to_the_intensity_then_its_supervisor_fails() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(1_000_000))).await;
    let mut events = rt.subscribe();
    let supervision = Supervision { strategy: Strategy::OneForOne, intensity: 2, period_ms: LONG_PERIOD_MS };
    let tokens = Budget { tokens: Some(1000), ..Budget::UNLIMITED };
    let root = rt.spawn_root(supervisor_spec(supervision, tokens)).await.expect("root");
    let request = LaunchRequest {
        resource_budget: Some(Budget { tokens: Some(100), ..Budget::UNLIMITED }),
        ..child("worker", RestartPolicy::Permanent)
    };
    let first = try_spawn(&rt, root, request).await.expect("spawn").pid;

    let mut pid = first;
    let mut incarnations = vec![first];
    for restart in 1..=2u32 {
        script.push("worker", Act::Panic);
        let (what, next) = decision(&mut events, root, pid).await;
        assert_eq!(what, "restarted", "restart {restart}");
        let next = next.expect("a new pid");
        let new_row = row(&rt, next);
        let spec = new_row.restart.spec.as_ref().expect("spec");
        assert_eq!((spec.child_id, spec.incarnation, spec.restart_of), (first, restart, Some(pid)));
        assert!(new_row.state_generation > row(&rt, pid).state_generation, "the child id's generation rises");
        assert_account_balances(&rt, root);
        pid = next;
        incarnations.push(next);
    }
    script.push("worker", Act::Panic);
    assert_eq!(decision(&mut events, root, pid).await.0, "intensity_exceeded");
    let ended = rt.wait_terminal(root).await.expect("root ends");
    match &ended.outcome {
        Some(Outcome::Failed { error_kind: FailureKind::RestartIntensityExceeded, message }) => {
            assert!(message.starts_with("restart_intensity_exceeded"), "{message}");
            assert!(message.contains(&first.to_string()), "names the child: {message}");
            assert!(message.contains("restart 3"), "names the count: {message}");
        }
        other => panic!("the supervisor ends with the intensity: {other:?}"),
    }
    let history = &ended.restart.history;
    assert_eq!(history.len(), 2, "{history:?}");
    for (i, record) in history.iter().enumerate() {
        assert_eq!(
            (record.child_id, record.old_pid, record.new_pid),
            (first, incarnations[i], Some(incarnations[i + 1]))
        );
        assert_eq!(record.incarnation, u32::try_from(i + 1).expect("small"));
        assert_eq!(record.reason, "failed: panic");
        let ended_generation = row(&rt, incarnations[i]).state_generation;
        assert_eq!(
            record.state_generation,
            ended_generation + 1,
            "the new incarnation starts above the ended one"
        );
    }
    let rows = children(&rt, root);
    assert_eq!(rows.len(), 3, "three incarnations, each its own row");
    assert!(rows.iter().all(|c| c.status == Status::Failed));
    assert_eq!(ended.account.children_reserved.tokens, Some(0), "nothing stays reserved");
    assert_account_balances(&rt, root);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_temporary_child_is_never_restarted() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let root = rt.spawn_root(supervisor_spec(Supervision::DEFAULT, Budget::UNLIMITED)).await.expect("root");
    let pid = try_spawn(&rt, root, child("once", RestartPolicy::Temporary)).await.expect("spawn").pid;
    script.push("once", Act::Panic);
    assert_eq!(decision(&mut events, root, pid).await, ("not_restarted".to_string(), None));
    assert_eq!(children(&rt, root).len(), 1);
    assert!(row(&rt, root).restart.history.is_empty());
    let waited = wait(&rt, root, pid, true).await.expect("wait");
    assert_eq!((waited.child_pid, waited.status), (pid, Status::Failed));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_transient_child_is_restarted_after_a_failure_but_not_after_a_normal_exit() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let root = rt.spawn_root(supervisor_spec(Supervision::DEFAULT, Budget::UNLIMITED)).await.expect("root");
    let first = try_spawn(&rt, root, child("job", RestartPolicy::Transient)).await.expect("spawn").pid;
    // The supervisor waits on the child; the wait follows it to its next incarnation.
    let drive = async {
        until_status(&mut events, root, Status::WaitingEvent).await;
        script.push("job", Act::Fail);
        let (what, second) = decision(&mut events, root, first).await;
        assert_eq!(what, "restarted");
        let second = second.expect("new pid");
        script.push("job", Act::Exit);
        assert_eq!(decision(&mut events, root, second).await.0, "not_restarted");
        second
    };
    let (waited, second) = tokio::join!(wait(&rt, root, first, true), drive);
    let waited = waited.expect("wait");
    assert_eq!((waited.child_pid, waited.status), (second, Status::Exited), "the wait followed the child");
    assert_eq!(row(&rt, root).restart.history.len(), 1);
    assert_eq!(children(&rt, root).len(), 2);
    rt.shutdown().await.expect("shutdown");
}

/// A permanent child that ends while its supervisor is paused is restarted when the
/// supervisor resumes, and only once, behind a long history of ended children: 1,500 of them,
/// more than one read of the children returns (the kernel reads them 1,000 at a time).
#[tokio::test]
async fn a_restart_deferred_by_a_pause_is_made_once_on_resume_behind_a_long_history() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(1_000_000))).await;
    let supervision = Supervision { strategy: Strategy::OneForOne, intensity: 1, period_ms: LONG_PERIOD_MS };
    let root = rt.spawn_root(supervisor_spec(supervision, Budget::UNLIMITED)).await.expect("root");
    let history = 1_500;
    let mut done = Vec::new();
    for _ in 0..history {
        script.push("done", Act::Exit);
        done.push(try_spawn(&rt, root, child("done", RestartPolicy::Temporary)).await.expect("spawn").pid);
    }
    for pid in done {
        assert_eq!(rt.wait_terminal(pid).await.expect("ends").status, Status::Exited);
    }
    let mut events = rt.subscribe();
    let worker = try_spawn(&rt, root, child("worker", RestartPolicy::Permanent)).await.expect("spawn").pid;

    rt.signal(root, SignalKind::Pause, None).await.expect("pause");
    script.push("worker", Act::Panic);
    assert_eq!(decision(&mut events, root, worker).await.0, "deferred", "the parent is paused");
    rt.signal(root, SignalKind::Resume, None).await.expect("resume");
    // The resume is answered after the restarts it makes: the decision is already published.
    let made = std::iter::from_fn(|| events.try_recv().ok()).find_map(|event| match event {
        KernelEvent::ChildSupervised { parent, child, decision, restarted_as }
            if parent == root && child == worker =>
        {
            Some((decision.to_string(), restarted_as))
        }
        _ => None,
    });
    let Some((what, Some(next))) = made else { panic!("no restart made on resume: {made:?}") };
    assert_eq!(what, "restarted", "made on resume");
    // Another pause and resume finds the restart made and makes no other.
    rt.signal(root, SignalKind::Pause, None).await.expect("pause again");
    rt.signal(root, SignalKind::Resume, None).await.expect("resume again");
    let all = children(&rt, root);
    assert_eq!(all.len(), history + 2, "the history, the worker and its one successor");
    let live: Vec<Pid> = all.iter().filter(|c| !c.status.is_terminal()).map(|c| c.pid).collect();
    assert_eq!(live, vec![next], "one live incarnation");
    assert_eq!(row(&rt, root).restart.history.len(), 1, "one restart recorded");
    assert_eq!(row(&rt, root).status, Status::Running);
}

#[tokio::test]
async fn a_permanent_child_cancelled_by_its_parent_is_not_restarted() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let root = rt.spawn_root(supervisor_spec(Supervision::DEFAULT, Budget::UNLIMITED)).await.expect("root");
    let pid = try_spawn(&rt, root, child("kept", RestartPolicy::Permanent)).await.expect("spawn").pid;
    signal(&rt, root, pid, SignalKind::Cancel, Some("done with it")).await.expect("cancel");
    assert_eq!(decision(&mut events, root, pid).await.0, "not_restarted");
    assert_eq!(children(&rt, root).len(), 1);
    rt.shutdown().await.expect("shutdown");
}

/// Launches `goals` in order as permanent children (and one temporary bystander), ends the one
/// at `trigger` with a panic, and returns (old pids, new pids by goal in relaunch order, the
/// bystander, the launch order of the new pids as telemetry reported it).
async fn group_restart(strategy: Strategy, trigger: usize) -> (Runtime, Pid, Vec<Pid>, Vec<(Pid, Pid)>, Pid) {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let supervision = Supervision { strategy, intensity: 5, period_ms: LONG_PERIOD_MS };
    let root = rt.spawn_root(supervisor_spec(supervision, Budget::UNLIMITED)).await.expect("root");
    let mut old = Vec::new();
    for goal in ["a", "b", "c"] {
        old.push(try_spawn(&rt, root, child(goal, RestartPolicy::Permanent)).await.expect("spawn").pid);
    }
    let bystander = try_spawn(&rt, root, child("d", RestartPolicy::Temporary)).await.expect("spawn").pid;
    script.push(["a", "b", "c"][trigger], Act::Panic);
    let expected = match strategy {
        Strategy::OneForAll => 3,
        Strategy::RestForOne => 3 - trigger,
        Strategy::OneForOne => 1,
    };
    let mut restarted = Vec::new();
    while restarted.len() < expected {
        if let KernelEvent::ProcessRestarted { parent, old_pid, new_pid, .. } =
            events.recv().await.expect("telemetry")
            && parent == root
        {
            restarted.push((old_pid, new_pid));
        }
    }
    (rt, root, old, restarted, bystander)
}

#[tokio::test]
async fn one_for_all_stops_the_restartable_siblings_and_restarts_all_in_launch_order() {
    let (rt, root, old, restarted, bystander) = group_restart(Strategy::OneForAll, 1).await;
    assert_eq!(restarted.iter().map(|(o, _)| *o).collect::<Vec<_>>(), old, "relaunched in launch order");
    for (i, pid) in old.iter().enumerate() {
        let ended = row(&rt, *pid);
        if i == 1 {
            assert_eq!(ended.status, Status::Failed, "the trigger panicked");
        } else {
            match &ended.outcome {
                Some(Outcome::Killed { signal: SignalKind::Terminate, sender: Sender::Runtime, reason }) => {
                    assert!(reason.as_deref().is_some_and(|r| r.contains("one_for_all")), "{reason:?}");
                }
                other => panic!("a sibling is stopped by the runtime: {other:?}"),
            }
        }
    }
    for (_, new) in &restarted {
        assert!(!row(&rt, *new).status.is_terminal());
    }
    assert!(!row(&rt, bystander).status.is_terminal(), "a temporary sibling is left alone");
    let history = row(&rt, root).restart.history;
    assert_eq!(history.len(), 3);
    assert_eq!(history.iter().filter(|r| r.sibling_of.is_none()).count(), 1, "one restart counts");
    assert_eq!(history[0].sibling_of, Some(old[1]));
    assert_account_balances(&rt, root);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn rest_for_one_restarts_the_child_and_those_launched_after_it() {
    let (rt, root, old, restarted, _) = group_restart(Strategy::RestForOne, 1).await;
    assert_eq!(restarted.iter().map(|(o, _)| *o).collect::<Vec<_>>(), old[1..].to_vec());
    assert!(!row(&rt, old[0]).status.is_terminal(), "launched before it: untouched");
    assert_account_balances(&rt, root);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_restart_the_budget_cannot_cover_is_refused_and_the_parent_is_told() {
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let tokens = Budget { tokens: Some(250), ..Budget::UNLIMITED };
    let root = rt.spawn_root(supervisor_spec(Supervision::DEFAULT, tokens)).await.expect("root");
    let hundred = Some(Budget { tokens: Some(100), ..Budget::UNLIMITED });
    let spender = LaunchRequest { resource_budget: hundred, ..child("spender", RestartPolicy::Permanent) };
    let pid = try_spawn(&rt, root, spender).await.expect("spawn").pid;
    let other = LaunchRequest { resource_budget: hundred, ..child("other", RestartPolicy::Temporary) };
    try_spawn(&rt, root, other).await.expect("spawn");
    // It spends 60 of its 100: 250 - 100 (other) - 60 leaves 90, less than a new 100.
    script.push("spender", Act::SpendThenPanic(60));
    assert_eq!(decision(&mut events, root, pid).await, ("refused".to_string(), None));
    let supervisor = row(&rt, root);
    let record = supervisor.restart.history.last().expect("a record");
    assert!(record.refused.as_deref().is_some_and(|r| r.starts_with("budget_exceeded")), "{record:?}");
    assert_eq!(rt.unread_count(root).expect("unread"), 1, "the supervisor was told");
    assert_eq!(children(&rt, root).len(), 2, "no new incarnation");
    assert_eq!(supervisor.status, Status::Running, "a refusal does not fail the supervisor");
    assert_account_balances(&rt, root);
    rt.shutdown().await.expect("shutdown");
}

/// Children ending together share their parent's settlement commits; each decision is told
/// only once the parent's committed row holds that child's spending.
#[tokio::test]
async fn children_ending_together_are_settled_before_their_decisions_are_told() {
    const CHILDREN: usize = 24;
    const TOKENS: u64 = 10;
    let script = Script::default();
    let rt = runtime(&script, Arc::new(ManualClock::new(0))).await;
    let mut events = rt.subscribe();
    let root = rt.spawn_root(supervisor_spec(Supervision::DEFAULT, Budget::UNLIMITED)).await.expect("root");
    let mut pids = Vec::with_capacity(CHILDREN);
    for i in 0..CHILDREN {
        let request = LaunchRequest { goal: format!("child {i}"), ..LaunchRequest::default() };
        let pid = try_spawn(&rt, root, request).await.expect("spawn").pid;
        let usage = Usage { tokens: TOKENS, ..Usage::default() };
        rt.call_as(pid, Call::Charge(usage)).await.expect("charge");
        pids.push(pid);
    }
    let rt = Arc::new(rt);
    let exits: Vec<_> = pids
        .iter()
        .map(|pid| {
            let (rt, pid) = (Arc::clone(&rt), *pid);
            tokio::spawn(async move { exit(&rt, pid, None).await })
        })
        .collect();
    let mut told = std::collections::HashSet::new();
    while told.len() < CHILDREN {
        if let KernelEvent::ChildSupervised { parent, child, decision, .. } =
            events.recv().await.expect("telemetry")
            && parent == root
        {
            assert_eq!(decision, "not_restarted");
            assert!(told.insert(child), "{child} is told once");
            let spent = row(&rt, root).account.children_spent.tokens;
            assert!(
                spent >= TOKENS * told.len() as u64,
                "told of {} children, the committed row holds {spent} tokens of their spending",
                told.len()
            );
        }
    }
    for exit in exits {
        exit.await.expect("an exit answers");
    }
    assert_eq!(told, pids.iter().copied().collect());
    assert_eq!(row(&rt, root).account.children_spent.tokens, TOKENS * CHILDREN as u64);
    assert_account_balances(&rt, root);
    Arc::into_inner(rt).expect("the only runtime handle").shutdown().await.expect("shutdown");
}
