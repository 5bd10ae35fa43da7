//! Durable mailboxes in the SQLite store: filtered reads against a full scan, and durable
//! sends through group commit against one commit per message.
//!
//! `mailbox_read`: one mailbox of 100,000 messages (bulk-loaded through the store), exactly 10
//! of them on the channel `rare`, spread through it. `filtered/channel` is `store.mailbox`
//! with that channel filter (unread only, a page of 20): the read `messages_channel` drives.
//! `full_scan/channel` is the baseline in the same run: every message of the recipient read
//! through the store and filtered in Rust with `MessageFilter::matches`, which is what a
//! store without the indexes would have to do. Both return the same page and count.
//!
//! `mailbox_send`: `PutMessage` change sets from N concurrent submitters (each awaits its
//! ticket, then sends the next), so about N commits are in flight; one iteration is one
//! message from each submitter (throughput N). `one_commit_per_message/N` is the baseline: a
//! plain rusqlite connection to a file with the store's schema and pragmas (WAL,
//! `synchronous=FULL`) doing BEGIN, one INSERT, COMMIT for each of N messages.

use agentvisor_actors::kernel::ids::{CountingIds, IdSource, Pid};
use agentvisor_actors::kernel::mailbox::{
    MailboxPage, MailboxQuery, Message, MessageFilter, MessageId, MessageKind,
};
use agentvisor_actors::kernel::status::Sender;
use agentvisor_actors::store::{Change, CommitTicket, SqliteStore, Store};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MAILBOX_SIZE: u64 = 100_000;
const RARE: u64 = 10;
const LOAD_CHANGE_SET: u64 = 4_000;
const SUBMITTERS: [usize; 3] = [1, 16, 256];

fn id(ids: &mut CountingIds) -> MessageId {
    MessageId(ids.oid().as_uuid())
}

/// A message of ordinary shape: a channel, a correlation id, a body of about 150 bytes, a
/// small payload on every fourth, one label.
fn message(
    ids: &mut CountingIds,
    recipient: Pid,
    sender: Sender,
    seq: u64,
    channel: Option<&str>,
) -> Message {
    Message {
        message_id: id(ids),
        recipient,
        sender,
        seq,
        kind: if seq.is_multiple_of(10) { MessageKind::Interrupt } else { MessageKind::Normal },
        channel: channel.map(str::to_string),
        correlation_id: Some(format!("job-{}", seq % 97)),
        reply_to: None,
        body: format!(
            "progress report {seq}: processed the next shard of the corpus; counts are in the payload, nothing failed so far."
        ),
        payload: seq
            .is_multiple_of(4)
            .then(|| serde_json::json!({"shard": seq, "words": seq * 31, "ok": true})),
        labels: vec!["team:a".to_string()],
        acked: false,
    }
}

/// Loads the mailbox through the store: change sets of `LOAD_CHANGE_SET` messages, all
/// submitted before any is awaited, so group commit packs them.
async fn bulk_load(store: &SqliteStore, me: Pid, senders: &[Sender]) {
    let channels = [Some("ops"), Some("chat"), Some("progress"), None];
    let mut ids = CountingIds::new(1);
    let every = MAILBOX_SIZE / RARE;
    let mut tickets: Vec<CommitTicket> = Vec::new();
    let mut changes = Vec::new();
    for seq in 1..=MAILBOX_SIZE {
        let k = usize::try_from(seq).expect("fits");
        let channel = if seq % every == every / 2 { Some("rare") } else { channels[k % channels.len()] };
        changes.push(Change::PutMessage(message(&mut ids, me, senders[k % senders.len()], seq, channel)));
        if changes.len() as u64 == LOAD_CHANGE_SET {
            tickets.push(store.submit(std::mem::take(&mut changes)));
        }
    }
    tickets.push(store.submit(changes));
    for ticket in tickets {
        ticket.await.expect("loads");
    }
}

fn rare_query() -> MailboxQuery {
    MailboxQuery {
        filter: MessageFilter { channel: Some("rare".to_string()), ..MessageFilter::default() },
        include_acked: false,
        limit: 20,
    }
}

/// The baseline: the whole mailbox read, then filtered and paged in Rust.
fn full_scan(store: &SqliteStore, me: Pid, query: &MailboxQuery) -> MailboxPage {
    let all = MailboxQuery { filter: MessageFilter::default(), include_acked: true, limit: usize::MAX };
    let everything = store.mailbox(me, &all).expect("reads");
    assert_eq!(everything.messages.len() as u64, MAILBOX_SIZE, "the scan reads every message");
    let mut page = MailboxPage::default();
    for m in everything.messages {
        if (query.include_acked || !m.acked) && query.filter.matches(&m) {
            page.matched += 1;
            if page.messages.len() < query.limit {
                page.messages.push(m);
            }
        }
    }
    page
}

fn mean_of(runs: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    start.elapsed() / runs
}

fn mailbox_read(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("agentvisor.db")).expect("opens");
    let mut ids = CountingIds::new(2);
    let (me, parent, child) = (ids.pid(), ids.pid(), ids.pid());
    let senders = [Sender::Process(parent), Sender::Process(child), Sender::Host];
    let loading = Instant::now();
    rt.block_on(bulk_load(&store, me, &senders));
    println!("loaded {MAILBOX_SIZE} messages through the store in {:.2?}", loading.elapsed());

    let query = rare_query();
    let filtered = store.mailbox(me, &query).expect("reads");
    assert_eq!((filtered.messages.len() as u64, filtered.matched), (RARE, RARE));
    assert_eq!(full_scan(&store, me, &query), filtered, "the baseline answers the same");
    let fast = mean_of(200, || drop(store.mailbox(me, &query).expect("reads")));
    let slow = mean_of(3, || drop(full_scan(&store, me, &query)));
    println!(
        "filtered read {fast:.2?}, full scan {slow:.2?}: {:.0}x faster",
        slow.as_secs_f64() / fast.as_secs_f64()
    );

    let mut group = c.benchmark_group("mailbox_read");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.bench_function(BenchmarkId::new("filtered", "channel"), |b| {
        b.iter(|| store.mailbox(me, &query).expect("reads"));
    });
    group.bench_function(BenchmarkId::new("full_scan", "channel"), |b| {
        b.iter(|| full_scan(&store, me, &query));
    });
    group.finish();
}

/// Sends `iters` messages from each of `n` concurrent submitters.
async fn send(store: &Arc<SqliteStore>, n: usize, iters: u64, seqs: &Arc<AtomicU64>) -> Duration {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let store = Arc::clone(store);
        let seqs = Arc::clone(seqs);
        let mut ids = CountingIds::new(seqs.fetch_add(1, Ordering::Relaxed));
        let (me, parent) = (ids.pid(), ids.pid());
        tasks.spawn(async move {
            for _ in 0..iters {
                let seq = seqs.fetch_add(1, Ordering::Relaxed);
                let m = message(&mut ids, parent, Sender::Process(me), seq, Some("ops"));
                store.submit(vec![Change::PutMessage(m)]).await.expect("commits");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("the submitter finished");
    }
    start.elapsed()
}

/// A plain connection to a file with the store's schema (made by opening a store on it once)
/// and the store's pragmas.
fn baseline_connection(path: &Path) -> rusqlite::Connection {
    drop(SqliteStore::open(path).expect("creates the schema"));
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).expect("sets WAL");
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "synchronous", "FULL").expect("sets synchronous");
    conn
}

/// Commits `n * iters` messages, one transaction each, encoding them as the store does.
fn one_commit_per_message(conn: &rusqlite::Connection, n: usize, iters: u64, seqs: &AtomicU64) -> Duration {
    let mut ids = CountingIds::new(seqs.fetch_add(1, Ordering::Relaxed));
    let (me, parent) = (ids.pid(), ids.pid());
    let total = n as u64 * iters;
    let messages: Vec<Message> = (0..total)
        .map(|_| {
            message(&mut ids, parent, Sender::Process(me), seqs.fetch_add(1, Ordering::Relaxed), Some("ops"))
        })
        .collect();
    let start = Instant::now();
    for m in messages {
        conn.execute_batch("BEGIN IMMEDIATE").expect("begins");
        conn.prepare_cached(
            "INSERT INTO messages (message_id, recipient, seq, sender_kind, sender_pid, kind, channel, \
             correlation_id, reply_to, body, payload, labels, acked) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )
        .expect("prepares")
        .execute(rusqlite::params![
            m.message_id.to_string(),
            m.recipient.to_string(),
            i64::try_from(m.seq).expect("small"),
            "process",
            me.to_string(),
            m.kind.as_str(),
            m.channel,
            m.correlation_id,
            m.reply_to.map(|r| r.to_string()),
            m.body,
            m.payload.as_ref().map(|p| serde_json::to_string(p).expect("encodes")),
            serde_json::to_string(&m.labels).expect("encodes"),
            m.acked,
        ])
        .expect("inserts");
        conn.execute_batch("COMMIT").expect("commits");
    }
    start.elapsed()
}

fn mailbox_send(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Arc::new(SqliteStore::open(&dir.path().join("agentvisor.db")).expect("opens"));
    let baseline = baseline_connection(&dir.path().join("baseline.db"));
    let seqs = Arc::new(AtomicU64::new(1));

    let mut group = c.benchmark_group("mailbox_send");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SUBMITTERS {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("group_commit", n), &n, |b, &n| {
            b.iter_custom(|iters| rt.block_on(send(&store, n, iters, &seqs)));
        });
        group.bench_with_input(BenchmarkId::new("one_commit_per_message", n), &n, |b, &n| {
            b.iter_custom(|iters| one_commit_per_message(&baseline, n, iters, &seqs));
        });
    }
    group.finish();
    println!("group commit transactions: {}", store.commits_so_far());
}

criterion_group!(benches, mailbox_read, mailbox_send);
criterion_main!(benches);
