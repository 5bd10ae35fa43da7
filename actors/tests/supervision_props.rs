//! Property test of restart policies through the runtime: random children (policy, budget)
//! under a random `one_for_one` supervision, and random sequences of child ends (panic,
//! failure, spending then panicking, normal exit) with the manual clock moved between them.
//! After every end the supervisor's decision is the one a plain model of OTP's rules predicts,
//! no window of `period_ms` holds more than `intensity` restarts, and the budget is conserved:
//! the supervisor's reservation is exactly its live children's limits and its account equals
//! the one rebuilt from its children's rows.
//!
//! The runs come from a fixed, printed seed with ChaCha; set `SUPERVISION_PROPS_SEED=<n>` to
//! explore another and `SUPERVISION_PROPS_CASES=<n>` for more cases.

mod common;
mod seeded;

use agentvisor_actors::kernel::budget::{Budget, ChildShare};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::restart::{RestartPolicy, Strategy as RestartStrategy, Supervision};
use agentvisor_actors::runtime::clock::ManualClock;
use agentvisor_actors::runtime::telemetry::KernelEvent;
use agentvisor_actors::runtime::{RootSpec, Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use agentvisor_actors::{ImageId, Pid, Status};
use common::scripted::{Act, SCRIPTED, Script};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::sync::Arc;

const DEFAULT_SEED: u64 = 0x5e7e_0001;
const DEFAULT_CASES: u32 = 128;
const CHILD_TOKENS: u64 = 100;
const ROOT_TOKENS: u64 = 100_000;
const START_MS: u64 = 1_000_000;

fn config() -> Config {
    let cases =
        std::env::var("SUPERVISION_PROPS_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_CASES);
    seeded::config("supervision_props", "SUPERVISION_PROPS_SEED", DEFAULT_SEED, cases)
}

#[derive(Clone, Debug)]
struct Step {
    child: usize,
    act: Act,
    advance_ms: u64,
}

fn policy() -> impl Strategy<Value = RestartPolicy> {
    prop_oneof![
        Just(RestartPolicy::Permanent),
        Just(RestartPolicy::Transient),
        Just(RestartPolicy::Temporary)
    ]
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![Just(Act::Panic), Just(Act::Fail), Just(Act::Exit), (1u64..=50).prop_map(Act::SpendThenPanic)]
}

fn case() -> impl Strategy<Value = (u32, u64, Vec<RestartPolicy>, Vec<Step>)> {
    (0u32..4, prop_oneof![Just(100u64), Just(1000u64)], prop::collection::vec(policy(), 1..4)).prop_flat_map(
        |(intensity, period_ms, policies)| {
            let n = policies.len();
            let step = (0..n, act(), 0..period_ms * 2).prop_map(|(child, act, advance_ms)| Step {
                child,
                act,
                advance_ms,
            });
            (Just(intensity), Just(period_ms), Just(policies), prop::collection::vec(step, 1..16))
        },
    )
}

fn fail(e: impl std::fmt::Debug) -> TestCaseError {
    TestCaseError::fail(format!("{e:?}"))
}

async fn run(
    intensity: u32,
    period_ms: u64,
    policies: &[RestartPolicy],
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let script = Script::default();
    let clock = Arc::new(ManualClock::new(START_MS));
    let options = RuntimeOptions::new().image(puppet()).image(script.image()).clock(clock.clone());
    let rt = Runtime::in_memory(options).await.map_err(fail)?;
    let mut events = rt.subscribe();
    let supervision = Supervision { strategy: RestartStrategy::OneForOne, intensity, period_ms };
    let spec = RootSpec {
        capabilities: vec![spawn_cap(), image_read(SCRIPTED)],
        supervision: Some(supervision),
        ..root_spec("puppet", Budget { tokens: Some(ROOT_TOKENS), ..Budget::UNLIMITED })
    };
    let root = rt.spawn_root(spec).await.map_err(fail)?;
    // The model: each child's live pid, and the times of the restarts made.
    let mut live: Vec<Option<Pid>> = Vec::new();
    for (i, policy) in policies.iter().enumerate() {
        let request = LaunchRequest {
            goal: format!("c{i}"),
            image: Some(ImageId::from(SCRIPTED)),
            restart: *policy,
            resource_budget: Some(Budget { tokens: Some(CHILD_TOKENS), ..Budget::UNLIMITED }),
            ..LaunchRequest::default()
        };
        live.push(Some(try_spawn(&rt, root, request).await.map_err(fail)?.pid));
    }
    let mut restarts_at: Vec<u64> = Vec::new();
    let mut supervisor_failed = false;
    let mut now = START_MS;
    for step in steps {
        clock.advance(step.advance_ms);
        now += step.advance_ms;
        let Some(pid) = live[step.child] else { continue };
        script.push(&format!("c{}", step.child), step.act);
        let (decision, restarted_as) = loop {
            if let KernelEvent::ChildSupervised { parent, child, decision, restarted_as } =
                events.recv().await.map_err(fail)?
                && parent == root
                && child == pid
            {
                break (decision, restarted_as);
            }
        };
        let failed = !matches!(step.act, Act::Exit);
        let due = match policies[step.child] {
            RestartPolicy::Permanent => true,
            RestartPolicy::Transient => failed,
            RestartPolicy::Temporary => false,
        };
        let recent = restarts_at.iter().filter(|at| now - **at < period_ms).count();
        let expected = match (due, recent + 1 > intensity as usize) {
            (false, _) => "not_restarted",
            (true, true) => "intensity_exceeded",
            (true, false) => "restarted",
        };
        prop_assert_eq!(decision, expected, "step {:?} with {} recent restarts", step, recent);
        match decision {
            "restarted" => {
                restarts_at.push(now);
                live[step.child] = restarted_as;
            }
            "intensity_exceeded" => {
                supervisor_failed = true;
                break;
            }
            _ => live[step.child] = None,
        }
        check_budget(&rt, root, live.iter().flatten().count())?;
    }
    let supervisor =
        if supervisor_failed { rt.wait_terminal(root).await.map_err(fail)? } else { row(&rt, root) };
    if supervisor_failed {
        prop_assert_eq!(supervisor.status, Status::Failed);
    }
    // No window of the period holds more restarts than the intensity.
    let made: Vec<u64> =
        supervisor.restart.history.iter().filter(|r| r.new_pid.is_some()).map(|r| r.at_ms).collect();
    prop_assert_eq!(&made, &restarts_at);
    for at in &made {
        let within = made.iter().filter(|other| **other <= *at && at - **other < period_ms).count();
        prop_assert!(within <= intensity as usize, "{} restarts within {} ms of {}", within, period_ms, at);
    }
    if !supervisor_failed {
        check_budget(&rt, root, live.iter().flatten().count())?;
    }
    rt.shutdown().await.map_err(fail)?;
    Ok(())
}

fn check_budget(rt: &Runtime, root: Pid, live: usize) -> Result<(), TestCaseError> {
    let supervisor = row(rt, root);
    let children = rt
        .processes(ProcessQuery { parent: Some(root), include_terminal: true, ..ProcessQuery::default() })
        .map_err(fail)?;
    let reserved = CHILD_TOKENS * u64::try_from(live).map_err(fail)?;
    prop_assert_eq!(
        supervisor.account.children_reserved.tokens,
        Some(reserved),
        "reserved == live children's limits"
    );
    let mut rebuilt = supervisor.account;
    rebuilt.rebuild_children(children.iter().map(|c| ChildShare {
        limit: c.account.limit,
        spent: c.account.total_spent(),
        terminal: c.status.is_terminal(),
    }));
    let balance = |a: &agentvisor_actors::kernel::budget::Account| {
        let r = &a.children_reserved;
        (a.children_spent, [r.tokens, r.cost_micros, r.tool_calls, r.live_children].map(|d| d.unwrap_or(0)))
    };
    prop_assert_eq!(balance(&supervisor.account), balance(&rebuilt), "the account balances against the rows");
    let spent: u64 =
        children.iter().filter(|c| c.status.is_terminal()).map(|c| c.account.total_spent().tokens).sum();
    prop_assert_eq!(
        supervisor.account.children_spent.tokens,
        spent,
        "every incarnation's spending is charged"
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Random child ends under random supervision keep OTP's rules and the budget.
    #[test]
    fn random_child_ends_keep_the_intensity_and_the_budget((intensity, period_ms, policies, steps) in case()) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
        tokio.block_on(run(intensity, period_ms, &policies, &steps))?;
    }
}
