//! Launches made together (`Call::SpawnGroup`) answer as the same launches made one by one: a
//! property over random requests (plain, with a child budget that the launches before it may
//! have used up, on an image nobody may run, keyed with a key used twice) under a random
//! tool-call budget, compared with a second runtime that makes them one call at a time.

mod common;
mod seeded;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::runtime::calls::{Call, CallOk, Launched, ToolError};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::store::ProcessQuery;
use agentvisor_actors::{ImageId, Pid, Status};
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
