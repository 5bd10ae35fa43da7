//! Property test of mailbox delivery on a live runtime: random sequences of sends between a
//! parent and its two children (only the relations the kernel allows: self, parent, direct
//! child) interleaved with acknowledging reads by the recipients. Every message is delivered
//! exactly once to its recipient across all acknowledging reads, and for each (sender,
//! recipient) pair in send order.
//!
//! 64 cases of at most 24 steps, ChaCha from a fixed seed that is printed (shown by the test
//! harness when the test fails); set `MAILBOX_PROPS_SEED=<n>` to replay or explore another
//! seed. On failure proptest prints the minimal sequence it shrank to.

mod common;
mod seeded;

use agentvisor_actors::Pid;
use agentvisor_actors::kernel::mailbox::{MailboxQuery, MessageFilter, MessageId, MessageKind};
use agentvisor_actors::kernel::status::Sender;
use agentvisor_actors::runtime::calls::{Call, CallOk, SendRequest};
use agentvisor_actors::runtime::{Runtime, RuntimeOptions};
use common::{puppet, puppet_root, spawn};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEED: u64 = 0x0a9e_47e1_5012_0003;

fn config() -> Config {
    seeded::config("mailbox_props", "MAILBOX_PROPS_SEED", DEFAULT_SEED, 64)
}

/// The three processes, by index: 0 is the parent, 1 and 2 its children.
const PARENT: usize = 0;

/// Whether the kernel lets `from` send to `to`: self, parent, or direct child. The two
/// children are siblings and may not reach each other.
fn allowed(from: usize, to: usize) -> bool {
    from == to || from == PARENT || to == PARENT
}

#[derive(Clone, Debug)]
enum Op {
    /// `from` sends to `to` (an allowed pair), normal or interrupt.
    Send { from: usize, to: usize, interrupt: bool },
    /// `reader` reads its mailbox with the defaults (ack=true, include_acked=false), at most
    /// `limit` messages, optionally only those from one of the three.
    Read { reader: usize, limit: usize, from: Option<usize> },
}

fn op() -> impl Strategy<Value = Op> {
    let pairs: Vec<(usize, usize)> =
        (0..3).flat_map(|f| (0..3).map(move |t| (f, t))).filter(|&(f, t)| allowed(f, t)).collect();
    prop_oneof![
        3 => (proptest::sample::select(pairs), any::<bool>())
            .prop_map(|((from, to), interrupt)| Op::Send { from, to, interrupt }),
        2 => (0usize..3, 1usize..4, proptest::option::of(0usize..3))
            .prop_map(|(reader, limit, from)| Op::Read { reader, limit, from }),
    ]
}

/// What one run observed.
#[derive(Default)]
struct Ledger {
    /// Per (sender, recipient): ids in send order.
    sent: BTreeMap<(usize, usize), Vec<MessageId>>,
    /// Per (sender, recipient): ids in the order acknowledging reads returned them.
    received: BTreeMap<(usize, usize), Vec<MessageId>>,
}

async fn read(
    rt: &Runtime,
    pids: &[Pid; 3],
    reader: usize,
    limit: usize,
    from: Option<usize>,
    ledger: &mut Ledger,
) -> usize {
    let filter = MessageFilter { sender: from.map(|f| Sender::Process(pids[f])), ..MessageFilter::default() };
    let query = MailboxQuery { filter, include_acked: false, limit };
    let read = match rt.call_as(pids[reader], Call::Read { query, ack: true }).await {
        Ok(CallOk::Read(r)) => r,
        other => panic!("read as {reader} answered {other:?}"),
    };
    let returned: Vec<MessageId> = read.messages.iter().map(|m| m.message_id).collect();
    assert_eq!(read.acked_message_ids, returned, "every returned message was unread and is now acknowledged");
    assert!(returned.len() <= limit);
    for m in &read.messages {
        assert!(!m.acked, "an acknowledging default read returns only unread messages");
        assert_eq!(m.recipient, pids[reader]);
        let Sender::Process(sender) = m.sender else { panic!("unexpected sender {:?}", m.sender) };
        let s = pids.iter().position(|p| *p == sender).expect("a known sender");
        if let Some(f) = from {
            assert_eq!(s, f, "the sender filter holds");
        }
        ledger.received.entry((s, reader)).or_default().push(m.message_id);
    }
    returned.len()
}

async fn run(ops: Vec<Op>) {
    let rt = Runtime::in_memory(RuntimeOptions::new().image(puppet())).await.expect("runtime");
    let parent = puppet_root(&rt).await;
    let pids = [parent, spawn(&rt, parent, "one").await, spawn(&rt, parent, "two").await];
    let mut ledger = Ledger::default();
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Send { from, to, interrupt } => {
                let request = SendRequest {
                    to: pids[to],
                    body: format!("step {i}"),
                    payload: None,
                    channel: None,
                    correlation_id: None,
                    reply_to: None,
                    kind: if interrupt { MessageKind::Interrupt } else { MessageKind::Normal },
                };
                let sent = match rt.call_as(pids[from], Call::Send(request)).await {
                    Ok(CallOk::Sent(s)) => s,
                    other => panic!("send {from} → {to} answered {other:?}"),
                };
                ledger.sent.entry((from, to)).or_default().push(sent.message_id);
            }
            Op::Read { reader, limit, from } => {
                read(&rt, &pids, reader, limit, from, &mut ledger).await;
            }
        }
    }
    // Drain every mailbox with default reads: whatever is left arrives now.
    for reader in 0..3 {
        while read(&rt, &pids, reader, 3, None, &mut ledger).await > 0 {}
        assert_eq!(rt.unread_count(pids[reader]).expect("unread"), 0);
    }
    rt.shutdown().await.expect("shutdown");

    let pairs: BTreeSet<(usize, usize)> = ledger.sent.keys().chain(ledger.received.keys()).copied().collect();
    for pair in pairs {
        let sent = ledger.sent.get(&pair).cloned().unwrap_or_default();
        let received = ledger.received.get(&pair).cloned().unwrap_or_default();
        assert!(allowed(pair.0, pair.1), "a message crossed a forbidden relation {pair:?}");
        // Equal sequences: each message exactly once, in send order.
        assert_eq!(received, sent, "pair {pair:?}: delivered exactly once and in send order");
    }
}

proptest! {
    #![proptest_config(config())]

    /// Exactly-once, per-pair ordered delivery across acknowledging reads.
    #[test]
    fn every_message_is_read_exactly_once_in_send_order(ops in proptest::collection::vec(op(), 0..24)) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
        tokio.block_on(run(ops));
    }
}
