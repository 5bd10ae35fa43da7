//! The mailbox tools (`send_process_message`, `read_process_messages`,
//! `receive_process_messages`) driven as a model drives them: JSON in through `dispatch_as`,
//! JSON out. Roots are launched and host messages sent through the host API; every process
//! call goes through the JSON layer. Nothing sleeps: a suspension is seen as its
//! `process_transition` to `waiting_event` on telemetry, and "nothing happened yet" is checked
//! with a later call to the same process actor, which handles its messages in order.

use agentvisor::actors::kernel::budget::Budget;
use agentvisor::actors::kernel::capability::{CapabilityRequest, Rights};
use agentvisor::actors::kernel::mailbox::MailboxQuery;
use agentvisor::actors::limits::{MAILBOX_UNACKED_MAX, MESSAGE_BYTES_MAX};
use agentvisor::actors::runtime::calls::SendRequest;
use agentvisor::actors::runtime::telemetry::KernelEvent;
use agentvisor::actors::runtime::{RootSpec, Runtime};
use agentvisor::actors::{ImageId, Pid, Status};
use agentvisor::images::{PUPPET_IMAGE, builtin_images};
use agentvisor::tools::{BatchCall, dispatch_as, dispatch_batch_as};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use tokio::sync::broadcast;

async fn runtime() -> Runtime {
    Runtime::in_memory(builtin_images()).await.expect("runtime")
}

/// A puppet root that may spawn.
async fn root(rt: &Runtime) -> Pid {
    let spawn = CapabilityRequest {
        resource: "process:spawn".into(),
        rights: Rights::EXECUTE,
        constraints: Default::default(),
        delegable: true,
    };
    let spec = RootSpec {
        clearance: None,
        goal_labels: Default::default(),
        goal: "mailbox root".into(),
        image: ImageId::from(PUPPET_IMAGE),
        cwd: "/".into(),
        capabilities: vec![spawn],
        budget: Budget::UNLIMITED,
        supervision: None,
    };
    rt.spawn_root(spec).await.expect("root")
}

/// A child of `parent` that may spawn in turn.
async fn child(rt: &Runtime, parent: Pid, goal: &str) -> Pid {
    let caps = json!([{ "resource": "process:spawn", "rights": ["execute"], "delegable": true }]);
    let out =
        dispatch_as(rt, parent, "spawn_child_process", json!({"goal": goal, "inherit_capabilities": caps}))
            .await;
    out["pid"].as_str().unwrap_or_else(|| panic!("no pid in {out}")).parse().expect("pid")
}

/// A root with two children.
async fn family() -> (Runtime, Pid, Pid, Pid) {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let a = child(&rt, parent, "a").await;
    let b = child(&rt, parent, "b").await;
    (rt, parent, a, b)
}

async fn call(rt: &Runtime, pid: Pid, tool: &str, args: Value) -> Value {
    dispatch_as(rt, pid, tool, args).await
}

/// `send_process_message` from `from` to `to` with `extra` arguments; returns the answer.
async fn try_send(rt: &Runtime, from: Pid, to: Pid, body: &str, extra: Value) -> Value {
    let mut args = json!({"to": to.to_string(), "body": body});
    if let (Some(map), Value::Object(extra)) = (args.as_object_mut(), extra) {
        map.extend(extra);
    }
    call(rt, from, "send_process_message", args).await
}

/// A send that must succeed; returns the new message's id.
async fn send(rt: &Runtime, from: Pid, to: Pid, body: &str, extra: Value) -> String {
    let out = try_send(rt, from, to, body, extra).await;
    out["message_id"].as_str().unwrap_or_else(|| panic!("send refused: {out}")).to_string()
}

/// A normal message with only a body.
fn request(to: Pid, body: &str) -> SendRequest {
    SendRequest::new(to, body)
}

/// The host sends a message; returns its id.
async fn host_send(rt: &Runtime, request: SendRequest) -> String {
    rt.send_message(request).await.expect("host send").message_id.to_string()
}

#[track_caller]
fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("expected an error, got {v}"))
}

/// The ids of the returned messages, in order.
#[track_caller]
fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {v}"))
        .iter()
        .map(|m| m["message_id"].as_str().expect("id").to_string())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("array").iter().map(|s| s.as_str().expect("string").to_string()).collect()
}

fn owned(ids: &[&String]) -> Vec<String> {
    ids.iter().map(|s| (*s).clone()).collect()
}

fn unread(rt: &Runtime, pid: Pid) -> u64 {
    rt.unread_count(pid).expect("unread count")
}

/// Waits for telemetry saying `pid` entered `status` (published after its commit).
async fn until_status(events: &mut broadcast::Receiver<KernelEvent>, pid: Pid, status: Status) {
    loop {
        match events.recv().await {
            Ok(KernelEvent::ProcessTransition { pid: p, to, .. }) if p == pid && to == status => return,
            Ok(_) => {}
            Err(e) => panic!("telemetry ended while waiting for {pid} to be {status}: {e}"),
        }
    }
}

/// The notices delivered with an answer (empty when the field is absent).
fn notices(v: &Value) -> Vec<Value> {
    v.get("notices").map(|n| n.as_array().expect("notices is an array").clone()).unwrap_or_default()
}

fn sender_json(pid: Pid) -> Value {
    json!({"kind": "process", "pid": pid.to_string()})
}

// ---------------------------------------------------------------------------------------------
// Send

#[tokio::test]
async fn a_host_grant_on_a_mailbox_lets_a_sibling_send_and_a_revoke_takes_it_back() {
    use agentvisor::actors::kernel::mailbox::mailbox_resource;
    let (rt, _parent, a, b) = family().await;
    let refused = try_send(&rt, a, b, "before", json!({})).await;
    assert_eq!(code(&refused), "recipient_not_reachable", "{refused}");
    // A grant without WRITE opens nothing.
    let read_only = CapabilityRequest {
        resource: mailbox_resource(b),
        rights: Rights::READ,
        constraints: Default::default(),
        delegable: false,
    };
    rt.grant(a, &read_only).await.expect("grant read");
    assert_eq!(code(&try_send(&rt, a, b, "read", json!({})).await), "recipient_not_reachable");
    let write = CapabilityRequest { rights: Rights::WRITE, ..read_only };
    let grant = rt.grant(a, &write).await.expect("grant write");
    assert!(rt.grants_of(a).expect("grants").iter().any(|g| g.id == grant.id && g.live));
    send(&rt, a, b, "from a sibling", json!({})).await;
    // The grant is a's alone: b still cannot reach a.
    assert_eq!(code(&try_send(&rt, b, a, "back", json!({})).await), "recipient_not_reachable");
    rt.revoke(grant.id).await.expect("revoke");
    assert_eq!(code(&try_send(&rt, a, b, "after", json!({})).await), "recipient_not_reachable");
}

#[tokio::test]
async fn every_send_refusal_names_its_code_and_delivers_nothing() {
    let (rt, parent, a, b) = family().await;
    let grandchild = child(&rt, a, "grandchild").await;
    let done = child(&rt, parent, "done").await;
    call(&rt, done, "process_exit", json!({})).await;
    let in_a = send(&rt, parent, a, "for a", json!({})).await;
    let nobody: Pid = "01a2290e-0000-7000-8000-000000000000".parse().expect("pid");
    let missing_message = "01a2290e-0000-7000-8000-00000000beef";
    let big = "x".repeat(MESSAGE_BYTES_MAX + 1);
    let half = "x".repeat(MESSAGE_BYTES_MAX / 2 + 1);

    let cases: Vec<(Pid, Pid, &str, Value, &str)> = vec![
        (a, b, "to a sibling", json!({}), "recipient_not_reachable"),
        (parent, grandchild, "to a grandchild", json!({}), "recipient_not_reachable"),
        (grandchild, parent, "to a grandparent", json!({}), "recipient_not_reachable"),
        (parent, done, "to a terminal child", json!({}), "process_terminal"),
        (parent, nobody, "to nobody", json!({}), "unknown_process"),
        (parent, a, "reply to nothing", json!({"reply_to": missing_message}), "unknown_reply_to"),
        // The message exists, but in a's mailbox, not the sender's.
        (parent, a, "reply to another's message", json!({"reply_to": in_a}), "unknown_reply_to"),
        (parent, a, &big, json!({}), "message_too_large"),
        (parent, a, &half, json!({"payload": half}), "message_too_large"),
        (parent, a, "long channel", json!({"channel": "c".repeat(257)}), "invalid_arguments"),
        (parent, a, "bad kind", json!({"kind": "urgent"}), "invalid_arguments"),
        (parent, a, "bad reply_to", json!({"reply_to": "nope"}), "invalid_arguments"),
    ];
    for (from, to, body, extra, want) in cases {
        let out = try_send(&rt, from, to, body, extra.clone()).await;
        assert_eq!(code(&out), want, "{from} → {to} {extra}: {out}");
        assert!(out.get("message_id").is_none(), "a refusal issues no message: {out}");
    }
    let out = call(&rt, parent, "send_process_message", json!({"to": "not-a-pid", "body": "x"})).await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    let out = call(&rt, parent, "send_process_message", json!({"body": "x"})).await;
    assert_eq!(code(&out), "invalid_arguments", "`to` is required: {out}");

    for pid in [parent, b, grandchild, done] {
        assert_eq!(unread(&rt, pid), 0, "nothing reached {pid}");
    }
    assert_eq!(unread(&rt, a), 1, "only the one accepted message reached a");

    // Self, parent and direct child are reachable; exactly the limit is accepted.
    let exact = "x".repeat(MESSAGE_BYTES_MAX);
    send(&rt, a, a, "to myself", json!({})).await;
    send(&rt, a, parent, "to my parent", json!({})).await;
    send(&rt, a, grandchild, &exact, json!({})).await;
    assert_eq!((unread(&rt, a), unread(&rt, parent), unread(&rt, grandchild)), (2, 1, 1));
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_full_mailbox_refuses_more_and_drops_nothing() {
    let rt = runtime().await;
    let parent = root(&rt).await;
    let kid = child(&rt, parent, "kid").await;
    for i in 0..MAILBOX_UNACKED_MAX {
        rt.send_message(request(kid, &i.to_string())).await.expect("below the limit");
    }
    let out = try_send(&rt, parent, kid, "one too many", json!({})).await;
    assert_eq!(code(&out), "mailbox_full", "{out}");
    assert_eq!(unread(&rt, kid) as usize, MAILBOX_UNACKED_MAX);
    // Reading (and so acknowledging) makes room again.
    let read = call(&rt, kid, "read_process_messages", json!({"limit": 1})).await;
    assert_eq!(read["messages"][0]["body"], "0", "oldest first: {}", read["messages"]);
    send(&rt, parent, kid, "room again", json!({})).await;
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn reply_to_links_an_answer_to_the_exact_message() {
    let (rt, parent, a, _b) = family().await;
    let question = try_send(
        &rt,
        parent,
        a,
        "how many words?",
        json!({"channel": "work", "correlation_id": "job-1", "payload": {"dir": "/data"}}),
    )
    .await;
    assert_eq!(question["to"], a.to_string(), "{question}");
    assert_eq!(question["kind"], "normal");
    assert_eq!(question["channel"], "work");
    assert_eq!(question["correlation_id"], "job-1");
    assert_eq!(question["reply_to"], Value::Null);
    let question_id = question["message_id"].as_str().expect("id").to_string();

    let inbox = call(&rt, a, "read_process_messages", json!({})).await;
    let m = &inbox["messages"][0];
    assert_eq!(m["message_id"], question_id.as_str(), "{inbox}");
    assert_eq!(m["sender"], sender_json(parent));
    assert_eq!(m["recipient"], a.to_string());
    assert_eq!(m["body"], "how many words?");
    assert_eq!(m["payload"], json!({"dir": "/data"}));

    let answer = try_send(
        &rt,
        a,
        parent,
        "240",
        json!({"channel": "work", "correlation_id": "job-1", "reply_to": question_id}),
    )
    .await;
    assert_eq!(answer["reply_to"], question_id.as_str(), "{answer}");
    let answer_id = answer["message_id"].as_str().expect("id").to_string();
    send(&rt, a, parent, "unrelated", json!({"channel": "work", "correlation_id": "job-1"})).await;

    let replies = call(&rt, parent, "read_process_messages", json!({"reply_to": question_id})).await;
    assert_eq!(ids(&replies), [answer_id.as_str()], "{replies}");
    assert_eq!(replies["messages"][0]["reply_to"], question_id.as_str());
    assert_eq!(replies["messages"][0]["sender"], sender_json(a));

    // The host may answer any stored message.
    let answer_to_answer =
        SendRequest { reply_to: Some(answer_id.parse().expect("id")), ..request(a, "host answer") };
    let sent = rt.send_message(answer_to_answer).await.expect("host reply");
    let from_host = call(&rt, a, "read_process_messages", json!({"sender": "host"})).await;
    assert_eq!(ids(&from_host), [sent.message_id.to_string()]);
    assert_eq!(from_host["messages"][0]["sender"], json!({"kind": "host"}));
    assert_eq!(from_host["messages"][0]["reply_to"], answer_id.as_str());
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Read

#[tokio::test]
async fn read_filters_apply_alone_and_anded() {
    let (rt, parent, a, b) = family().await;
    // The parent's mailbox: from a, b, the host and itself, on two channels.
    let m1 = send(&rt, a, parent, "1", json!({"channel": "x", "correlation_id": "c1"})).await;
    let m2 =
        send(&rt, b, parent, "2", json!({"channel": "y", "correlation_id": "c1", "kind": "interrupt"})).await;
    let m3 = host_send(&rt, SendRequest { channel: Some("x".into()), ..request(parent, "3") }).await;
    // The parent answers m1 to itself (m1 is in its own mailbox); the host answers it too.
    let m4 =
        send(&rt, parent, parent, "4", json!({"channel": "x", "reply_to": m1, "kind": "interrupt"})).await;
    let m5 = host_send(
        &rt,
        SendRequest {
            channel: Some("y".into()),
            correlation_id: Some("c2".into()),
            reply_to: Some(m1.parse().expect("id")),
            ..request(parent, "5")
        },
    )
    .await;
    let all = [&m1, &m2, &m3, &m4, &m5];

    let cases: Vec<(Value, Vec<&String>)> = vec![
        (json!({}), all.to_vec()),
        (json!({"kind": "normal"}), vec![&m1, &m3, &m5]),
        (json!({"kind": "interrupt"}), vec![&m2, &m4]),
        (json!({"sender": a.to_string()}), vec![&m1]),
        (json!({"sender": b.to_string()}), vec![&m2]),
        (json!({"sender": parent.to_string()}), vec![&m4]),
        (json!({"sender": "host"}), vec![&m3, &m5]),
        (json!({"channel": "x"}), vec![&m1, &m3, &m4]),
        (json!({"channel": "z"}), vec![]),
        (json!({"correlation_id": "c1"}), vec![&m1, &m2]),
        (json!({"reply_to": m1}), vec![&m4, &m5]),
        (json!({"message_ids": [m5, m2]}), vec![&m2, &m5]),
        (json!({"message_ids": []}), vec![]),
        // ANDed.
        (json!({"channel": "x", "kind": "normal"}), vec![&m1, &m3]),
        (json!({"sender": "host", "channel": "y"}), vec![&m5]),
        (json!({"sender": a.to_string(), "channel": "y"}), vec![]),
        (json!({"correlation_id": "c1", "kind": "interrupt"}), vec![&m2]),
        (json!({"reply_to": m1, "kind": "normal"}), vec![&m5]),
        (json!({"reply_to": m1, "sender": parent.to_string(), "channel": "x"}), vec![&m4]),
        (json!({"message_ids": [m1, m2, m3], "channel": "x", "sender": "host"}), vec![&m3]),
    ];
    for (filters, want) in cases {
        let mut args = filters.clone();
        args["ack"] = json!(false);
        let out = call(&rt, parent, "read_process_messages", args).await;
        assert_eq!(ids(&out), owned(&want), "{filters} → {out}");
        assert_eq!(out["acked_message_ids"], json!([]), "ack=false acknowledges nothing");
    }
    assert_eq!(unread(&rt, parent), 5, "ack=false reads changed nothing");

    let out = call(&rt, parent, "read_process_messages", json!({"channels": "x"})).await;
    assert_eq!(code(&out), "invalid_arguments", "unknown fields are refused: {out}");
    let out = call(&rt, parent, "read_process_messages", json!({"sender": "nobody"})).await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    let out = call(&rt, parent, "read_process_messages", json!({"message_ids": ["x"]})).await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    assert!(out["error"]["message"].as_str().expect("message").contains("message_ids[0]"), "{out}");
    let out = call(&rt, parent, "read_process_messages", json!({"limit": 501})).await;
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn an_ordinary_read_acknowledges_and_ack_is_not_deletion() {
    let (rt, parent, a, _b) = family().await;
    let m1 = send(&rt, parent, a, "1", json!({})).await;
    let m2 = send(&rt, parent, a, "2", json!({})).await;

    let peek = call(&rt, a, "read_process_messages", json!({"ack": false})).await;
    assert_eq!(ids(&peek), [m1.clone(), m2.clone()]);
    assert_eq!(peek["acked_message_ids"], json!([]));
    assert_eq!(peek["messages"][0]["acked"], false);
    assert_eq!(unread(&rt, a), 2);

    let first = call(&rt, a, "read_process_messages", json!({"message_ids": [m1]})).await;
    assert_eq!(ids(&first), [m1.as_str()]);
    assert_eq!(strings(&first["acked_message_ids"]), [m1.as_str()], "{first}");
    assert_eq!(unread(&rt, a), 1);

    let rest = call(&rt, a, "read_process_messages", json!({})).await;
    assert_eq!(ids(&rest), [m2.as_str()], "acknowledged messages are excluded by default: {rest}");
    assert_eq!(strings(&rest["acked_message_ids"]), [m2.as_str()]);
    assert_eq!(rest["has_more"], false);
    assert_eq!(rest["omitted_count"], 0);
    assert_eq!(rest["continuation"], Value::Null);

    let none = call(&rt, a, "read_process_messages", json!({})).await;
    assert_eq!(ids(&none), Vec::<String>::new());
    assert_eq!(unread(&rt, a), 0);

    let again = call(&rt, a, "read_process_messages", json!({"include_acked": true})).await;
    assert_eq!(ids(&again), [m1.clone(), m2.clone()], "ack is not deletion: {again}");
    assert_eq!(again["acked_message_ids"], json!([]), "nothing was unread");
    assert!(again["messages"].as_array().expect("messages").iter().all(|m| m["acked"] == true));

    // The host reads without acknowledging.
    let m3 = send(&rt, parent, a, "3", json!({})).await;
    let query = MailboxQuery { filter: Default::default(), include_acked: true, limit: 10 };
    let page = rt.read_mailbox(a, &query).expect("host read");
    assert_eq!(page.messages.len(), 3);
    assert_eq!(page.messages.iter().filter(|m| !m.acked).count(), 1);
    assert_eq!(page.messages[2].message_id.to_string(), m3);
    assert_eq!(unread(&rt, a), 1, "the host's read acknowledged nothing");
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Paging

/// Five messages from the parent to `a`, oldest first.
async fn five(rt: &Runtime, parent: Pid, a: Pid) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..5 {
        out.push(send(rt, parent, a, &format!("m{i}"), json!({"channel": "feed"})).await);
    }
    out
}

#[tokio::test]
async fn repeating_a_default_read_advances_page_by_page() {
    let (rt, parent, a, _b) = family().await;
    let m = five(&rt, parent, a).await;
    let args = json!({"channel": "feed", "limit": 2});

    let p1 = call(&rt, a, "read_process_messages", args.clone()).await;
    assert_eq!(ids(&p1), m[0..2], "{p1}");
    assert_eq!(strings(&p1["acked_message_ids"]), m[0..2]);
    assert_eq!(p1["has_more"], true);
    assert_eq!(p1["omitted_count"], 3);
    assert_eq!(p1["continuation"], json!({"reuse_filters": true, "advances": true}));

    let p2 = call(&rt, a, "read_process_messages", args.clone()).await;
    assert_eq!(ids(&p2), m[2..4], "{p2}");
    assert_eq!(p2["has_more"], true);
    assert_eq!(p2["omitted_count"], 1);
    assert_eq!(p2["continuation"]["advances"], true);

    let p3 = call(&rt, a, "read_process_messages", args.clone()).await;
    assert_eq!(ids(&p3), m[4..5], "{p3}");
    assert_eq!(p3["has_more"], false);
    assert_eq!(p3["omitted_count"], 0);
    assert_eq!(p3["continuation"], Value::Null);

    let p4 = call(&rt, a, "read_process_messages", args).await;
    assert_eq!(ids(&p4), Vec::<String>::new());
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn without_ack_or_with_include_acked_the_same_first_page_repeats() {
    let (rt, parent, a, _b) = family().await;
    let m = five(&rt, parent, a).await;

    let args = json!({"limit": 2, "ack": false});
    for _ in 0..3 {
        let page = call(&rt, a, "read_process_messages", args.clone()).await;
        assert_eq!(ids(&page), m[0..2], "ack=false replays the first page: {page}");
        assert_eq!(page["acked_message_ids"], json!([]));
        assert_eq!(page["has_more"], true);
        assert_eq!(page["omitted_count"], 3);
        assert_eq!(page["continuation"], json!({"reuse_filters": true, "advances": false}));
    }
    assert_eq!(unread(&rt, a), 5);

    // include_acked=true with ack=true acknowledges the first page, then returns it again.
    let args = json!({"limit": 2, "include_acked": true});
    let first = call(&rt, a, "read_process_messages", args.clone()).await;
    assert_eq!(ids(&first), m[0..2]);
    assert_eq!(strings(&first["acked_message_ids"]), m[0..2]);
    assert_eq!(first["continuation"], json!({"reuse_filters": true, "advances": false}));
    for _ in 0..2 {
        let page = call(&rt, a, "read_process_messages", args.clone()).await;
        assert_eq!(ids(&page), m[0..2], "include_acked=true replays the first page: {page}");
        assert_eq!(page["acked_message_ids"], json!([]), "already acknowledged");
        assert_eq!(page["omitted_count"], 3);
        assert_eq!(page["continuation"]["advances"], false);
    }
    assert_eq!(unread(&rt, a), 3);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_zero_limit_page_never_claims_to_advance() {
    let (rt, parent, a, _b) = family().await;
    five(&rt, parent, a).await;
    for _ in 0..2 {
        let page = call(&rt, a, "read_process_messages", json!({"limit": 0})).await;
        assert_eq!(ids(&page), Vec::<String>::new());
        assert_eq!(page["has_more"], true, "{page}");
        assert_eq!(page["omitted_count"], 5);
        assert_eq!(
            page["continuation"],
            json!({"reuse_filters": true, "advances": false}),
            "an empty page acknowledges nothing, so repeating it cannot advance: {page}"
        );
    }
    assert_eq!(unread(&rt, a), 5);
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Receive

#[tokio::test]
async fn a_non_blocking_receive_answers_at_once() {
    let (rt, parent, a, _b) = family().await;
    let out = call(&rt, a, "receive_process_messages", json!({"block": false})).await;
    assert_eq!(out["ready"], false, "ready=false is not failure: {out}");
    assert_eq!(out["suspended"], false);
    assert_eq!(ids(&out), Vec::<String>::new());

    let m = send(&rt, parent, a, "now", json!({"channel": "c"})).await;
    let out = call(&rt, a, "receive_process_messages", json!({"block": false, "channel": "other"})).await;
    assert_eq!(out["ready"], false, "{out}");
    let out = call(&rt, a, "receive_process_messages", json!({"block": false, "channel": "c"})).await;
    assert_eq!((out["ready"].clone(), out["suspended"].clone()), (json!(true), json!(false)), "{out}");
    assert_eq!(ids(&out), [m.as_str()]);
    assert_eq!(strings(&out["acked_message_ids"]), [m]);
    // A blocking receive with a match already there answers at once, too.
    let m2 = send(&rt, parent, a, "again", json!({})).await;
    let out = call(&rt, a, "receive_process_messages", json!({})).await;
    assert_eq!((out["ready"].clone(), out["suspended"].clone()), (json!(true), json!(false)), "{out}");
    assert_eq!(ids(&out), [m2]);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_blocking_receive_suspends_until_a_matching_message_arrives() {
    let (rt, parent, a, _b) = family().await;
    let mut events = rt.subscribe();
    let receive = call(&rt, a, "receive_process_messages", json!({"channel": "go"}));
    let steer = async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        let row = rt.process(a).expect("read").expect("row");
        let wait = serde_json::to_value(&row.wait_state).expect("wait state");
        assert_eq!(wait["kind"], "message", "{wait}");
        assert!(wait["filter"].as_str().expect("saved receive").contains("go"), "{wait}");

        let other = send(&rt, parent, a, "not yet", json!({"channel": "later"})).await;
        // The actor handles the arrival before this call: the receive is still waiting.
        let busy = call(&rt, a, "list_child_processes", json!({})).await;
        assert_eq!(code(&busy), "not_running", "a non-matching message leaves it waiting: {busy}");
        assert_eq!(rt.process(a).expect("read").expect("row").status, Status::WaitingEvent);
        assert_eq!(unread(&rt, a), 1, "the non-matching message stays queued");

        let go = send(&rt, parent, a, "go!", json!({"channel": "go"})).await;
        (other, go)
    };
    let (received, (other, go)) = tokio::join!(receive, steer);
    assert_eq!(received["ready"], true, "{received}");
    assert_eq!(received["suspended"], true, "it suspended before answering");
    assert_eq!(ids(&received), [go.as_str()], "only the match");
    assert_eq!(strings(&received["acked_message_ids"]), [go]);
    let row = rt.process(a).expect("read").expect("row");
    assert_eq!((row.status, row.wait_state), (Status::Running, None));

    let left = call(&rt, a, "read_process_messages", json!({})).await;
    assert_eq!(ids(&left), [other.as_str()], "the non-match is still unread: {left}");
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn pause_keeps_a_saved_receive_and_a_match_while_paused_answers_on_resume() {
    let (rt, parent, a, _b) = family().await;
    let mut events = rt.subscribe();
    let receive = call(&rt, a, "receive_process_messages", json!({"channel": "go"}));
    let steer = async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        let paused =
            call(&rt, parent, "signal_child_process", json!({"child_pid": a.to_string(), "signal": "pause"}))
                .await;
        assert_eq!(paused["status"], "paused", "{paused}");
        assert_eq!(paused["wait_state"]["kind"], "message", "pause keeps the saved receive: {paused}");
        let go = send(&rt, parent, a, "go while paused", json!({"channel": "go"})).await;
        // The arrival is handled before this host query reaches the actor.
        let row = rt.set_gate(a, "look").await.expect("gate");
        assert_eq!(
            (row.status, row.wait_state.clone()),
            (Status::Paused, None),
            "satisfied, held until resume"
        );
        assert_eq!(unread(&rt, a), 0, "the match was acknowledged with the satisfied wait");
        rt.clear_gate(a).await.expect("ungate");
        let resumed = call(
            &rt,
            parent,
            "signal_child_process",
            json!({"child_pid": a.to_string(), "signal": "resume"}),
        )
        .await;
        assert_eq!(resumed["status"], "running", "{resumed}");
        go
    };
    let (received, go) = tokio::join!(receive, steer);
    assert_eq!(
        (received["ready"].clone(), received["suspended"].clone()),
        (json!(true), json!(true)),
        "{received}"
    );
    assert_eq!(ids(&received), [go]);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_receive_that_can_never_match_cannot_block() {
    let (rt, parent, a, _b) = family().await;
    send(&rt, parent, a, "there is one", json!({})).await;
    for args in [json!({"limit": 0}), json!({"message_ids": []}), json!({"block": true, "limit": 0})] {
        let out = call(&rt, a, "receive_process_messages", args.clone()).await;
        assert_eq!(code(&out), "cannot_block", "{args} → {out}");
    }
    let out = call(&rt, a, "receive_process_messages", json!({"limit": 0, "block": false})).await;
    assert_eq!(ids(&out), Vec::<String>::new(), "{out}");
    assert_eq!(out["omitted_count"], 1);
    let out = call(&rt, a, "receive_process_messages", json!({"message_ids": [], "block": false})).await;
    assert_eq!(out["ready"], false, "an empty id list matches nothing: {out}");
    assert_eq!(unread(&rt, a), 1);
    assert_eq!(rt.process(a).expect("read").expect("row").status, Status::Running);
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Notices

#[tokio::test]
async fn an_interrupt_notice_comes_with_the_next_non_message_call_only() {
    let (rt, parent, a, _b) = family().await;
    let m = send(&rt, parent, a, "stop and re-plan", json!({"kind": "interrupt", "channel": "ctl"})).await;

    // Message calls (that do not return the message) do not deliver it.
    let out = call(&rt, a, "read_process_messages", json!({"channel": "other"})).await;
    assert!(notices(&out).is_empty(), "not with a read: {out}");
    let out = call(&rt, a, "receive_process_messages", json!({"channel": "other", "block": false})).await;
    assert!(notices(&out).is_empty(), "not with a receive: {out}");
    let out = try_send(&rt, a, parent, "busy", json!({})).await;
    assert!(notices(&out).is_empty(), "not with a send: {out}");

    let out = call(&rt, a, "list_child_processes", json!({})).await;
    assert_eq!(
        notices(&out),
        [json!({"message_id": m, "kind": "interrupt", "sender": sender_json(parent)})],
        "ids only, no body: {out}"
    );
    assert!(out["children"].is_array(), "the call's own answer is intact: {out}");
    let out = call(&rt, a, "list_child_processes", json!({})).await;
    assert!(out.get("notices").is_none(), "delivered once: {out}");
    assert_eq!(unread(&rt, a), 1, "a notice is not an acknowledgement");

    // Neither pauses nor cancels.
    assert_eq!(rt.process(a).expect("read").expect("row").status, Status::Running);
    rt.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_normal_notice_comes_with_the_next_answer_of_any_call() {
    let (rt, parent, a, _b) = family().await;
    let m = send(&rt, parent, a, "fyi", json!({})).await;
    let out = try_send(&rt, a, parent, "a message call", json!({})).await;
    assert!(out["message_id"].is_string(), "{out}");
    let delivered = notices(&out);
    assert_eq!(delivered, [json!({"message_id": m, "kind": "normal", "sender": sender_json(parent)})]);
    let keys: BTreeSet<&str> = delivered[0].as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys, ["kind", "message_id", "sender"].into_iter().collect(), "ids only");
    let out = call(&rt, a, "list_child_processes", json!({})).await;
    assert!(out.get("notices").is_none(), "delivered once: {out}");

    // A host message is noticed too, and a refused call still carries notices.
    let h = host_send(&rt, request(a, "from the host")).await;
    let out =
        call(&rt, a, "wait_child_process", json!({"child_pid": parent.to_string(), "block": false})).await;
    assert_eq!(code(&out), "not_direct_child");
    assert_eq!(notices(&out), [json!({"message_id": h, "kind": "normal", "sender": {"kind": "host"}})]);

    // A message read before it was noticed is not noticed afterwards.
    let r = send(&rt, parent, a, "read me first", json!({})).await;
    let out = call(&rt, a, "read_process_messages", json!({})).await;
    assert_eq!(ids(&out), [m, h, r], "{out}");
    assert!(notices(&out).is_empty(), "{out}");
    let out = call(&rt, a, "list_child_processes", json!({})).await;
    assert!(out.get("notices").is_none(), "{out}");
    rt.shutdown().await.expect("shutdown");
}

// ---------------------------------------------------------------------------------------------
// Batches

#[tokio::test]
async fn a_suspended_receive_ends_the_batch() {
    let (rt, parent, a, _b) = family().await;
    let early = send(&rt, parent, a, "early", json!({"channel": "early"})).await;
    let calls: Vec<BatchCall> = serde_json::from_value(json!([
        {"tool": "read_process_messages", "args": {"channel": "early"}},
        {"tool": "receive_process_messages", "args": {"channel": "go", "block": false}},
        {"tool": "receive_process_messages", "args": {"channel": "go"}},
        {"tool": "send_process_message", "args": {"to": parent.to_string(), "body": "never sent"}},
        {"tool": "list_child_processes"}
    ]))
    .expect("calls");
    let mut events = rt.subscribe();
    let batch = dispatch_batch_as(&rt, a, calls);
    let steer = async {
        until_status(&mut events, a, Status::WaitingEvent).await;
        send(&rt, parent, a, "go", json!({"channel": "go"})).await
    };
    let (answers, go) = tokio::join!(batch, steer);
    assert_eq!(answers.len(), 5);
    assert_eq!(ids(&answers[0]), [early], "{}", answers[0]);
    assert_eq!(answers[1]["ready"], false, "a non-blocking receive does not end the batch");
    assert_eq!(answers[2]["suspended"], true, "{}", answers[2]);
    assert_eq!(ids(&answers[2]), [go]);
    assert_eq!(code(&answers[3]), "batch_ended");
    assert_eq!(code(&answers[4]), "batch_ended");
    assert_eq!(unread(&rt, parent), 0, "the send after the receive never ran");
    rt.shutdown().await.expect("shutdown");
}
