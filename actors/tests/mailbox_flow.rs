//! Data flow through mailboxes: a message carries its sender's context, delivery needs the
//! recipient's clearance, and reading raises the reader's context.

mod common;

use agentvisor_actors::runtime::calls::{Call, CallOk, CreateObject, ObjectTarget, SendRequest, ToolError};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use agentvisor_actors::{Pid, kernel::mailbox::MailboxQuery};
use common::{launch, puppet, puppet_root, try_spawn};
use serde_json::json;
use std::collections::BTreeSet;

fn labels(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn send(to: Pid, body: &str) -> Call {
    Call::Send(SendRequest::new(to, body))
}

fn context(rt: &Runtime, pid: Pid) -> Vec<String> {
    rt.memory(pid).expect("memory").context
}

async fn learn_secret(rt: &Runtime, pid: Pid) {
    let create = CreateObject { payload: json!("s3cr3t"), labels: labels(&["secret"]), ..Default::default() };
    let Ok(CallOk::Created(created)) = rt.call_as(pid, Call::CreateObject(create)).await else {
        panic!("create refused")
    };
    let read = rt.call_as(pid, Call::ReadObject { target: ObjectTarget::Oid(created.oid) }).await;
    assert!(matches!(read, Ok(CallOk::Object(ref o)) if o.materialized), "{read:?}");
}

#[tokio::test]
async fn messages_carry_the_senders_context_to_cleared_recipients_only() {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let root = puppet_root(&rt).await;
    let open = try_spawn(&rt, root, launch("cleared for everything", None)).await.expect("spawn").pid;
    let narrow = launch("cleared for public only", None);
    let narrow = try_spawn(
        &rt,
        root,
        agentvisor_actors::kernel::launch::LaunchRequest { clearance: Some(labels(&["public"])), ..narrow },
    )
    .await
    .expect("spawn")
    .pid;

    // Before the root knows anything labelled, it may write to both.
    let sent = rt.call_as(root, send(narrow, "hello")).await;
    assert!(matches!(sent, Ok(CallOk::Sent(_))), "{sent:?}");

    learn_secret(&rt, root).await;
    assert_eq!(context(&rt, root), ["secret"]);

    // Now its messages carry "secret": refused to the narrow child, naming the label.
    let refused: ToolError = rt.call_as(root, send(narrow, "the secret")).await.expect_err("refused");
    assert_eq!(refused.code, "flow_denied", "{refused:?}");
    assert!(refused.message.contains("secret"), "{refused:?}");

    // Delivered to the open child, whose context rises only when it reads.
    let sent = rt.call_as(root, send(open, "the secret")).await;
    assert!(matches!(sent, Ok(CallOk::Sent(_))), "{sent:?}");
    assert!(context(&rt, open).is_empty());
    let read = rt
        .call_as(
            open,
            Call::Read {
                query: MailboxQuery { filter: Default::default(), include_acked: false, limit: 20 },
                ack: true,
            },
        )
        .await;
    let Ok(CallOk::Read(page)) = read else { panic!("{read:?}") };
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.messages[0].labels, ["secret"]);
    assert_eq!(context(&rt, open), ["secret"]);

    // What the open child now writes carries the label too.
    let Ok(CallOk::Created(made)) =
        rt.call_as(open, Call::CreateObject(CreateObject { payload: json!(1), ..Default::default() })).await
    else {
        panic!("create refused")
    };
    assert_eq!(made.labels, ["secret"]);
    assert!(rt.object_space().check().is_ok());
    rt.shutdown().await.expect("shutdown");
}
