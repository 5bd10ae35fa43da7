//! Sends made together (`Call::SendGroup`) answer as the same sends made one by one, each run
//! compared with a second runtime that makes them one call at a time under a random tool-call
//! budget: sends to a live child, to the sender itself, to a child that ended, to another
//! root's child, to a pid nobody has, too large, answering a message the sender received or
//! one it never did, and keyed with a key used twice. A group counts its own messages toward
//! a full mailbox.

mod common;
mod seeded;

use agentvisor_actors::kernel::budget::Budget;
use agentvisor_actors::kernel::launch::LaunchRequest;
use agentvisor_actors::kernel::mailbox::MessageId;
use agentvisor_actors::limits;
use agentvisor_actors::runtime::calls::{Call, CallOk, GroupedSend, SendRequest, SentMessage, ToolError};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::{Pid, Status};
use common::*;
use proptest::prelude::*;

const DEFAULT_SEED: u64 = 0x5e_4d60_0c17;

/// One send of a group.
#[derive(Clone, Debug)]
enum Kind {
    /// To the root's live child.
    Child,
    /// To the root itself.
    Itself,
    /// To the root's child that exited.
    Ended,
    /// To another root's child.
    Stranger,
    /// To a pid nobody has.
    Unknown,
    /// A body over the size limit.
    TooLarge,
    /// To the live child, answering the message it sent the root.
    Answering,
    /// To the live child, answering a message that does not exist.
    AnsweringNothing,
    /// To the live child, keyed with one of two keys.
    Keyed(usize),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Child),
        1 => Just(Kind::Itself),
        1 => Just(Kind::Ended),
        1 => Just(Kind::Stranger),
        1 => Just(Kind::Unknown),
        1 => Just(Kind::TooLarge),
        1 => Just(Kind::Answering),
        1 => Just(Kind::AnsweringNothing),
        2 => (0usize..2).prop_map(Kind::Keyed),
    ]
}

/// The processes a group sends to, made before it.
struct Scene {
    rt: Runtime,
    root: Pid,
    child: Pid,
    ended: Pid,
    stranger: Pid,
    /// The message the child sent the root.
    received: MessageId,
}

/// The tool calls the root spends building a [`Scene`]: a spawn of each of its two children,
/// and the one call the live child may make (its send), reserved from the root's.
const MAKING: u64 = 3;

/// Launches a child of `root` that may make `tool_calls` tool calls.
async fn child_with(rt: &Runtime, root: Pid, goal: &str, tool_calls: u64) -> Pid {
    let budget = Budget { tool_calls: Some(tool_calls), ..Budget::UNLIMITED };
    let request = LaunchRequest { resource_budget: Some(budget), ..launch(goal, None) };
    try_spawn(rt, root, request).await.expect("spawn a child").pid
}

async fn scene(tool_calls: Option<u64>) -> Scene {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let budget = Budget { tool_calls: tool_calls.map(|n| n + MAKING), ..Budget::UNLIMITED };
    let root = rt.spawn_root(root_spec("puppet", budget)).await.expect("root");
    let child = child_with(&rt, root, "the live child", 1).await;
    let ended = child_with(&rt, root, "the ended child", 0).await;
    exit(&rt, ended, None).await;
    let other = puppet_root(&rt).await;
    let stranger = spawn(&rt, other, "a stranger").await;
    let received = match rt.call_as(child, Call::Send(to(root, "hello, parent"))).await {
        Ok(CallOk::Sent(sent)) => sent.message_id,
        other => panic!("the child's send answered {other:?}"),
    };
    Scene { rt, root, child, ended, stranger, received }
}

fn to(recipient: Pid, body: &str) -> SendRequest {
    SendRequest::new(recipient, body)
}

fn send(scene: &Scene, kind: &Kind, index: usize) -> GroupedSend {
    let body = format!("message {index}");
    let request = match kind {
        Kind::Child | Kind::Keyed(_) => to(scene.child, &body),
        Kind::Itself => to(scene.root, &body),
        Kind::Ended => to(scene.ended, &body),
        Kind::Stranger => to(scene.stranger, &body),
        Kind::Unknown => to(Pid(uuid::Uuid::from_u128(index as u128 + 1)), &body),
        Kind::TooLarge => to(scene.child, &"x".repeat(limits::MESSAGE_BYTES_MAX + 1)),
        Kind::Answering => SendRequest { reply_to: Some(scene.received), ..to(scene.child, &body) },
        Kind::AnsweringNothing => {
            SendRequest { reply_to: Some(MessageId(uuid::Uuid::from_u128(7))), ..to(scene.child, &body) }
        }
    };
    let message_key = match kind {
        Kind::Keyed(key) => Some(format!("key-{key}")),
        _ => None,
    };
    GroupedSend { request, message_key }
}

/// Answers with what differs between two runs taken out: a send is its recipient's role and
/// the first answer of the list with its message id (a key answered twice names the first);
/// a refusal is its code, a call of a process that ended being one class however it ended.
fn shape(scene: &Scene, answers: &[Result<SentMessage, ToolError>]) -> Vec<String> {
    let role = |pid: Pid| match pid {
        p if p == scene.child => "child",
        p if p == scene.root => "itself",
        _ => "another",
    };
    answers
        .iter()
        .map(|answer| match answer {
            Ok(sent) => {
                let first = answers
                    .iter()
                    .position(|a| a.as_ref().is_ok_and(|other| other.message_id == sent.message_id))
                    .unwrap_or(usize::MAX);
                format!("sent to {} as #{first}", role(sent.to))
            }
            Err(e) if e.code == "process_ended" || e.code == "process_terminal" => "ended".to_string(),
            Err(e) => format!("refused {}", e.code),
        })
        .collect()
}

/// The root afterwards (its status and the tool calls it was charged) and the unread messages
/// of the child and of the root.
type Aftermath = (Status, u64, u64, u64);

async fn aftermath(scene: &Scene, answers: &[Result<SentMessage, ToolError>]) -> Aftermath {
    if answers.iter().any(|a| a.as_ref().is_err_and(|e| e.code == "budget_exhausted")) {
        scene.rt.wait_terminal(scene.root).await.expect("the exhausted root ends");
    } else {
        // Charges are written with the row's next commit: a charge of nothing writes it now.
        let nothing = Call::Charge(Default::default());
        scene.rt.call_as(scene.root, nothing).await.expect("a charge of nothing");
    }
    let row = row(&scene.rt, scene.root);
    let unread = |pid| scene.rt.store().unread_count(pid).expect("unread");
    (row.status, row.account.self_spent.tool_calls, unread(scene.child), unread(scene.root))
}

async fn sends(kinds: &[Kind], tool_calls: Option<u64>, grouped: bool) -> (Vec<String>, Aftermath) {
    let scene = scene(tool_calls).await;
    let sends: Vec<GroupedSend> =
        kinds.iter().enumerate().map(|(index, kind)| send(&scene, kind, index)).collect();
    let answers = if grouped {
        match scene.rt.call_as(scene.root, Call::SendGroup(sends)).await.expect("a group answers") {
            CallOk::SentGroup(answers) => answers,
            other => panic!("a group answered {other:?}"),
        }
    } else {
        let mut answers = Vec::new();
        for GroupedSend { request, message_key } in sends {
            let call = match message_key {
                Some(message_key) => Call::SendKeyed { message_key, request: Box::new(request) },
                None => Call::Send(request),
            };
            answers.push(scene.rt.call_as(scene.root, call).await.map(|ok| match ok {
                CallOk::Sent(sent) => sent,
                other => panic!("a send answered {other:?}"),
            }));
        }
        answers
    };
    assert_eq!(answers.len(), kinds.len(), "one answer per send");
    let after = aftermath(&scene, &answers).await;
    let shaped = shape(&scene, &answers);
    scene.rt.shutdown().await.expect("shutdown");
    (shaped, after)
}

#[test]
fn a_group_of_sends_answers_as_the_sends_made_one_by_one() {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    let config = seeded::config(
        "a_group_of_sends_answers_as_the_sends_made_one_by_one",
        "SEND_GROUP_SEED",
        DEFAULT_SEED,
        64,
    );
    proptest!(config, |(kinds in prop::collection::vec(kind(), 1..12), tool_calls in prop::option::of(0u64..12))| {
        let (alone, alone_after) = tokio.block_on(sends(&kinds, tool_calls, false));
        let (grouped, grouped_after) = tokio.block_on(sends(&kinds, tool_calls, true));
        prop_assert_eq!(&grouped, &alone, "answers for {:?} under {:?} tool calls", kinds, tool_calls);
        prop_assert_eq!(grouped_after, alone_after, "after {:?}: {:?}", kinds, alone);
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn a_group_counts_its_own_messages_toward_a_full_mailbox() {
    let scene = scene(None).await;
    // The child's mailbox two short of full, filled by the host.
    for index in 0..limits::MAILBOX_UNACKED_MAX - 2 {
        scene.rt.send_message(to(scene.child, &format!("filler {index}"))).await.expect("a filler");
    }
    let sends = (0..4).map(|index| send(&scene, &Kind::Child, index)).collect();
    let answers = match scene.rt.call_as(scene.root, Call::SendGroup(sends)).await.expect("a group answers") {
        CallOk::SentGroup(answers) => answers,
        other => panic!("a group answered {other:?}"),
    };
    let codes: Vec<&str> =
        answers.iter().map(|a| a.as_ref().map_or_else(|e| e.code.as_str(), |_| "sent")).collect();
    assert_eq!(codes, ["sent", "sent", "mailbox_full", "mailbox_full"]);
    let unread = scene.rt.store().unread_count(scene.child).expect("unread");
    assert_eq!(unread, limits::MAILBOX_UNACKED_MAX as u64);
    scene.rt.shutdown().await.expect("shutdown");
}
