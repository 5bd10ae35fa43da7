//! Calls made together answer as the same calls made one by one, each compared with a second
//! runtime that makes them one call at a time under a random tool-call budget:
//!
//! - launches (`Call::SpawnGroup`): random requests (plain, with a child budget that the
//!   launches before it may have used up, on an image nobody may run, keyed with a key used
//!   twice);
//! - non-blocking waits (`Call::WaitGroup`): children that exited (with a result or without),
//!   were killed or still run, another root's child, and a pid nobody has.

mod common;
mod seeded;

use agentvisor_actors::kernel::budget::{Budget, Usage};
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::status::SignalKind;
use agentvisor_actors::runtime::calls::{Call, CallOk, Launched, ToolError, WaitResult};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use agentvisor_actors::{ImageId, Pid, Status};
use common::objects::handle_on;
use common::*;
use proptest::prelude::*;

const DEFAULT_SEED: u64 = 0x5a_4e60_0c17;

/// One request of a group.
#[derive(Clone, Debug)]
enum Kind {
    Plain,
    /// A child budget of this many tokens, out of the root's 1,000.
    Tokens(u64),
    /// An image the root has no authority to run.
    Forbidden,
    /// Keyed with one of two keys.
    Keyed(usize),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Plain),
        2 => prop::sample::select(vec![100u64, 400, 700]).prop_map(Kind::Tokens),
        1 => Just(Kind::Forbidden),
        2 => (0usize..2).prop_map(Kind::Keyed),
    ]
}

fn request(kind: &Kind, index: usize) -> LaunchRequest {
    let base = launch(&format!("child {index}"), None);
    match kind {
        Kind::Plain => base,
        Kind::Tokens(tokens) => LaunchRequest {
            resource_budget: Some(Budget { tokens: Some(*tokens), ..Budget::UNLIMITED }),
            ..base
        },
        Kind::Forbidden => LaunchRequest { image: Some(ImageId::from("forbidden")), ..base },
        Kind::Keyed(key) => LaunchRequest { launch_key: Some(format!("key-{key}")), ..base },
    }
}

/// An answer with what differs between two runs taken out: a launch is its budget and the
/// first launch of the list that has its pid (a key answered twice names the first); a
/// refusal is its code, a call of a process that ended being one class however it ended.
fn shape(answers: &[Result<Launched, ToolError>]) -> Vec<String> {
    answers
        .iter()
        .map(|answer| match answer {
            Ok(launched) => {
                let first = answers
                    .iter()
                    .position(|a| a.as_ref().is_ok_and(|other| other.pid == launched.pid))
                    .unwrap_or(usize::MAX);
                format!("launched as #{first} with tokens {:?}", launched.resource_budget.tokens)
            }
            Err(e) if e.code == "process_ended" || e.code == "process_terminal" => "ended".to_string(),
            Err(e) => format!("refused {}", e.code),
        })
        .collect()
}

/// The root afterwards: its status, the tool calls it was charged, and its children.
fn aftermath(rt: &Runtime, root: Pid) -> (Status, u64, usize) {
    let row = row(rt, root);
    let children = rt
        .store()
        .processes(ProcessQuery { parent: Some(root), include_terminal: true, ..ProcessQuery::default() })
        .expect("children")
        .len();
    (row.status, row.account.self_spent.tool_calls, children)
}

async fn root_with(rt: &Runtime, tool_calls: Option<u64>) -> Pid {
    let budget = Budget { tokens: Some(1000), tool_calls, ..Budget::UNLIMITED };
    rt.spawn_root(root_spec("puppet", budget)).await.expect("root")
}

/// The root once it is terminal, if it exhausted its budget; as it is otherwise.
async fn settled(rt: &Runtime, root: Pid, answers: &[Result<Launched, ToolError>]) -> (Status, u64, usize) {
    if answers.iter().any(|a| a.as_ref().is_err_and(|e| e.code == "budget_exhausted")) {
        rt.wait_terminal(root).await.expect("the exhausted root ends");
    }
    aftermath(rt, root)
}

async fn one_by_one(kinds: &[Kind], tool_calls: Option<u64>) -> (Vec<String>, (Status, u64, usize)) {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let root = root_with(&rt, tool_calls).await;
    let mut answers = Vec::new();
    for (index, kind) in kinds.iter().enumerate() {
        answers.push(rt.call_as(root, Call::Spawn(request(kind, index))).await.map(|ok| match ok {
            CallOk::Spawned(launched) => launched,
            other => panic!("a spawn answered {other:?}"),
        }));
    }
    let after = settled(&rt, root, &answers).await;
    rt.shutdown().await.expect("shutdown");
    (shape(&answers), after)
}

async fn together(kinds: &[Kind], tool_calls: Option<u64>) -> (Vec<String>, (Status, u64, usize)) {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let root = root_with(&rt, tool_calls).await;
    let requests = kinds.iter().enumerate().map(|(index, kind)| request(kind, index)).collect();
    let answers = match rt.call_as(root, Call::SpawnGroup(requests)).await.expect("a group answers") {
        CallOk::SpawnedGroup(answers) => answers,
        other => panic!("a group answered {other:?}"),
    };
    assert_eq!(answers.len(), kinds.len(), "one answer per launch");
    let after = settled(&rt, root, &answers).await;
    rt.shutdown().await.expect("shutdown");
    (shape(&answers), after)
}

#[test]
fn a_group_of_launches_answers_as_the_launches_made_one_by_one() {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let config = seeded::config(
        "a_group_of_launches_answers_as_the_launches_made_one_by_one",
        "LAUNCH_GROUP_SEED",
        DEFAULT_SEED,
        64,
    );
    proptest!(config, |(kinds in prop::collection::vec(kind(), 1..12), tool_calls in prop::option::of(1u64..14))| {
        let (alone, alone_after) = tokio.block_on(one_by_one(&kinds, tool_calls));
        let (grouped, grouped_after) = tokio.block_on(together(&kinds, tool_calls));
        prop_assert_eq!(&grouped, &alone, "answers for {:?} under {:?} tool calls", kinds, tool_calls);
        prop_assert_eq!(grouped_after, alone_after, "the root after {:?}: {:?}", kinds, alone);
    });
}

/// The target of one wait of a group.
#[derive(Clone, Debug)]
enum Target {
    /// A child that exited, with a result payload or without.
    Exited(bool),
    /// A child that was terminated.
    Killed,
    /// A child still running.
    Running,
    /// A child of another root.
    Stranger,
    /// A pid nobody has.
    Unknown,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<bool>().prop_map(Target::Exited),
        1 => Just(Target::Killed),
        2 => Just(Target::Running),
        1 => Just(Target::Stranger),
        1 => Just(Target::Unknown),
    ]
}

/// Makes the processes `targets` name under a fresh root: their pids, in order.
async fn targets_under(rt: &Runtime, root: Pid, targets: &[Target]) -> Vec<Pid> {
    let mut pids = Vec::with_capacity(targets.len());
    for (index, target) in targets.iter().enumerate() {
        let pid = match target {
            Target::Unknown => Pid(uuid::Uuid::from_u128(index as u128 + 1)),
            Target::Stranger => {
                let other = rt.spawn_root(root_spec("puppet", Budget::UNLIMITED)).await.expect("a root");
                spawn(rt, other, &format!("stranger {index}")).await
            }
            _ => {
                // A child that may make no tool call reserves none of the root's.
                let none = Budget { tool_calls: Some(0), ..Budget::UNLIMITED };
                let request =
                    LaunchRequest { resource_budget: Some(none), ..launch(&format!("child {index}"), None) };
                try_spawn(rt, root, request).await.expect("spawn a child").pid
            }
        };
        match target {
            Target::Exited(with_result) => {
                exit(rt, pid, with_result.then(|| serde_json::json!({"index": index}))).await;
            }
            Target::Killed => {
                signal(rt, root, pid, SignalKind::Terminate, None).await.expect("terminate");
                rt.wait_terminal(pid).await.expect("the child ends");
            }
            _ => {}
        }
        pids.push(pid);
    }
    pids
}

/// A wait's answer with what differs between two runs taken out.
fn wait_shape(answers: &[Result<WaitResult, ToolError>]) -> Vec<String> {
    answers
        .iter()
        .map(|answer| match answer {
            // A child still running may be `runnable` or `running` by then.
            Ok(w) if !w.ready => "not ready".to_string(),
            Ok(w) => format!(
                "{} result {} handle {} denied {}",
                w.status,
                w.result_oid.is_some(),
                w.result_handle,
                w.result_denied.is_some()
            ),
            Err(e) if e.code == "process_ended" || e.code == "process_terminal" => "ended".to_string(),
            Err(e) => format!("refused {}", e.code),
        })
        .collect()
}

/// The root afterwards: its status, the tool calls it was charged, and the payloads it can
/// read through the result handles its waits answered with.
async fn wait_aftermath(
    rt: &Runtime,
    root: Pid,
    answers: &[Result<WaitResult, ToolError>],
) -> (Status, u64, Vec<Option<serde_json::Value>>) {
    let exhausted = answers.iter().any(|a| a.as_ref().is_err_and(|e| e.code == "budget_exhausted"));
    if exhausted {
        rt.wait_terminal(root).await.expect("the exhausted root ends");
    } else {
        // Charges are written with the row's next commit: a charge of nothing writes it now.
        rt.call_as(root, Call::Charge(Usage::default())).await.expect("a charge of nothing");
    }
    // An exhausted root has ended, and its handles went with it.
    let memory = rt.memory(root);
    let mut payloads = Vec::new();
    for w in answers.iter().flatten().filter(|w| w.result_handle) {
        let oid = w.result_oid.expect("a handle is on a result");
        let held = memory.as_ref().is_some_and(|m| handle_on(m, oid).is_some());
        assert_eq!(held, !exhausted, "the root holds a handle on {oid} while it lives");
        payloads.push(rt.payload(oid).ok().flatten());
    }
    let row = row(rt, root);
    (row.status, row.account.self_spent.tool_calls, payloads)
}

type WaitOutcome = (Vec<String>, (Status, u64, Vec<Option<serde_json::Value>>));

/// The tool calls the root makes to build `targets`: a spawn of each child, a signal to
/// each killed one.
fn making(targets: &[Target]) -> u64 {
    targets
        .iter()
        .map(|t| match t {
            Target::Unknown | Target::Stranger => 0,
            Target::Killed => 2,
            _ => 1,
        })
        .sum()
}

async fn waits(targets: &[Target], tool_calls: Option<u64>, grouped: bool) -> WaitOutcome {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    // The budget limits the waits alone: the calls that make the targets are added to it.
    let budget = Budget { tool_calls: tool_calls.map(|n| n + making(targets)), ..Budget::UNLIMITED };
    let root = rt.spawn_root(root_spec("puppet", budget)).await.expect("root");
    let pids = targets_under(&rt, root, targets).await;
    let answers = if grouped {
        match rt.call_as(root, Call::WaitGroup(pids)).await.expect("a group answers") {
            CallOk::WaitedGroup(answers) => answers,
            other => panic!("a group answered {other:?}"),
        }
    } else {
        // One by one, a child still running is not waited on: the group answers it
        // `ready=false` without a charge, or as a call of an ended process once the root ran
        // out of budget.
        let mut answers: Vec<Result<WaitResult, ToolError>> = Vec::new();
        for (pid, target) in pids.iter().zip(targets) {
            let exhausted = answers.iter().any(|a| a.as_ref().is_err_and(|e| e.code == "budget_exhausted"));
            answers.push(match target {
                Target::Running if exhausted => Err(ToolError::process_ended(root)),
                Target::Running => Ok(WaitResult { ready: false, ..row_result(&rt, *pid) }),
                _ => wait(&rt, root, *pid, false).await,
            });
        }
        answers
    };
    assert_eq!(answers.len(), targets.len(), "one answer per wait");
    let after = wait_aftermath(&rt, root, &answers).await;
    rt.shutdown().await.expect("shutdown");
    (wait_shape(&answers), after)
}

/// What a non-blocking wait on a running `pid` answers, read from its row.
fn row_result(rt: &Runtime, pid: Pid) -> WaitResult {
    let row = row(rt, pid);
    WaitResult {
        child_pid: pid,
        ready: false,
        status: row.status,
        state_generation: row.state_generation,
        wait_state: row.wait_state,
        outcome: row.outcome,
        result_oid: row.result_oid,
        suspended: false,
        result_handle: false,
        result_denied: None,
    }
}

#[test]
fn a_group_of_waits_answers_as_the_waits_made_one_by_one() {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let config = seeded::config(
        "a_group_of_waits_answers_as_the_waits_made_one_by_one",
        "WAIT_GROUP_SEED",
        DEFAULT_SEED,
        48,
    );
    proptest!(config, |(targets in prop::collection::vec(target(), 1..10), tool_calls in prop::option::of(0u64..10))| {
        let (alone, alone_after) = tokio.block_on(waits(&targets, tool_calls, false));
        let (grouped, grouped_after) = tokio.block_on(waits(&targets, tool_calls, true));
        prop_assert_eq!(&grouped, &alone, "answers for {:?} under {:?} tool calls", targets, tool_calls);
        prop_assert_eq!(grouped_after, alone_after, "the root after {:?}: {:?}", targets, alone);
    });
}
