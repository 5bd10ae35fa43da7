//! Fork of a conversation window against a naive deep clone of the same messages
//! (`Vec<BenchMessage>::clone`), in the same run, at 10, 1 000 and 100 000 messages of about
//! 200 bytes; and what a snapshot after a fork writes, printed as numbers before the timings.
//!
//! `cargo bench --bench window_fork -- --noplot`

use agentvisor::agent::window::{ChunkId, ChunkStore, ChunkStoreError, MemoryChunkStore, Window};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const SIZES: [usize; 3] = [10, 1_000, 100_000];

/// A message shaped like a conversation message: a role, a turn and a ~200-byte body.
#[derive(Clone, Serialize, Deserialize)]
struct BenchMessage {
    role: Role,
    turn: u64,
    body: String,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
enum Role {
    User,
    Assistant,
    Tool,
}

fn message(i: usize) -> BenchMessage {
    let role = [Role::User, Role::Assistant, Role::Tool][i % 3];
    let body = format!("message {i:>8}: {}", "lorem ipsum dolor sit amet ".repeat(7));
    BenchMessage { role, turn: (i / 3) as u64, body }
}

fn messages(n: usize) -> Vec<BenchMessage> {
    (0..n).map(message).collect()
}

fn window(messages: &[BenchMessage]) -> Window<BenchMessage> {
    let mut window = Window::new();
    for m in messages {
        window.push(m.clone()).expect("below the window bound");
    }
    window
}

/// Counts what is written through it.
#[derive(Default)]
struct CountingStore {
    inner: MemoryChunkStore,
    puts: AtomicUsize,
    bytes: AtomicUsize,
}

impl CountingStore {
    fn take(&self) -> (usize, usize) {
        (self.puts.swap(0, Ordering::Relaxed), self.bytes.swap(0, Ordering::Relaxed))
    }
}

impl ChunkStore for CountingStore {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        self.puts.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes.len(), Ordering::Relaxed);
        self.inner.put(id, bytes)
    }
    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        self.inner.get(id)
    }
    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        self.inner.contains(id)
    }
}

/// Bytes written by the first snapshot of a window and by the snapshot of a fork of it that
/// pushed one opening note: chunk puts and the encoded snapshot record.
fn report_snapshot_bytes() {
    println!("window_fork/snapshot_after_fork: bytes written (messages of ~{} bytes)", message(0).body.len());
    for n in SIZES {
        let store = CountingStore::default();
        let original = window(&messages(n));
        let first = original.snapshot(&store).expect("snapshot");
        let first_record = first.encode().expect("encode").len();
        let (first_puts, first_bytes) = store.take();
        let mut fork = original.fork();
        fork.push(message(n)).expect("the opening note");
        let forked = fork.snapshot(&store).expect("snapshot");
        let record = forked.encode().expect("encode").len();
        let (puts, bytes) = store.take();
        println!(
            "  {n:>7} messages: first snapshot {first_puts} records / {first_bytes} B \
             + record {first_record} B; after fork {puts} records / {bytes} B + record {record} B \
             ({} chunks named by one head link, tail of {})",
            forked.chunk_count(),
            forked.tail.len(),
        );
    }
}

fn bench(c: &mut Criterion) {
    report_snapshot_bytes();
    let mut group = c.benchmark_group("window_fork");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for n in SIZES {
        let messages = messages(n);
        let window = window(&messages);
        let note = message(n);
        group.bench_with_input(BenchmarkId::new("fork", n), &window, |b, w| b.iter(|| black_box(w).fork()));
        group.bench_with_input(BenchmarkId::new("fork_then_push", n), &window, |b, w| {
            b.iter(|| {
                let mut fork = black_box(w).fork();
                fork.push(note.clone()).expect("below the window bound");
                fork
            })
        });
        group.bench_with_input(BenchmarkId::new("naive_clone", n), &messages, |b, m| {
            b.iter(|| black_box(m).clone())
        });
        let store = MemoryChunkStore::new();
        window.snapshot(&store).expect("snapshot");
        group.bench_with_input(BenchmarkId::new("fork_push_snapshot", n), &window, |b, w| {
            b.iter(|| {
                let mut fork = black_box(w).fork();
                fork.push(note.clone()).expect("below the window bound");
                fork.snapshot(&store).expect("snapshot")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
