//! The conversation window through its public surface: fork isolation, the turn counter,
//! compaction edits, durable snapshots (counting what a fork writes), restore, and a model
//! check against a plain `Vec` over random edits across a tree of forks. The model check's
//! seed is fixed and printed; set `AGENT_WINDOW_SEED` to replay another.

mod seeded;

use agentvisor::agent::window::{
    CHUNK_ITEMS_MAX, ChunkId, ChunkStore, ChunkStoreError, MemoryChunkStore, RestoreError, WINDOW_ITEMS_MAX,
    Window, WindowError, WindowSnapshot,
};
use proptest::prelude::*;
use std::cell::Cell;

const C: usize = CHUNK_ITEMS_MAX;

fn window_of(items: impl IntoIterator<Item = u32>) -> Window<u32> {
    let mut window = Window::new();
    for item in items {
        window.push(item).expect("below the bound");
    }
    window
}

fn items(window: &Window<u32>) -> Vec<u32> {
    window.iter().copied().collect()
}

fn range(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

/// A store that counts what a snapshot asks of it: chunk puts, link puts (a link record
/// begins with `AVLK`, see `docs/windows.md`) and lookups, and keeps what each `put_all` call
/// held, as "chunk" and "link".
#[derive(Default)]
struct CountingStore {
    inner: MemoryChunkStore,
    puts: Cell<usize>,
    link_puts: Cell<usize>,
    lookups: Cell<usize>,
    put_alls: std::cell::RefCell<Vec<Vec<&'static str>>>,
}

impl CountingStore {
    /// Chunks put since the last call.
    fn take_puts(&self) -> usize {
        self.puts.replace(0)
    }

    /// Links put since the last call.
    fn take_link_puts(&self) -> usize {
        self.link_puts.replace(0)
    }

    /// `contains` calls since the last call.
    fn take_lookups(&self) -> usize {
        self.lookups.replace(0)
    }

    /// What each `put_all` since the last call held.
    fn take_put_alls(&self) -> Vec<Vec<&'static str>> {
        self.put_alls.take()
    }
}

fn is_link(bytes: &[u8]) -> bool {
    bytes.starts_with(b"AVLK")
}

impl ChunkStore for CountingStore {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        let counter = if is_link(&bytes) { &self.link_puts } else { &self.puts };
        counter.set(counter.get() + 1);
        self.inner.put(id, bytes)
    }
    fn put_all(&self, records: Vec<(ChunkId, Vec<u8>)>) -> Result<(), ChunkStoreError> {
        let kinds = records.iter().map(|(_, bytes)| if is_link(bytes) { "link" } else { "chunk" }).collect();
        self.put_alls.borrow_mut().push(kinds);
        records.into_iter().try_for_each(|(id, bytes)| self.put(id, bytes))
    }
    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        self.inner.get(id)
    }
    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        self.lookups.set(self.lookups.get() + 1);
        self.inner.contains(id)
    }
}

/// A store that has lost one record, or whose reads of one record flip a byte: what a damaged
/// disk returns.
struct DamagedStore<'a> {
    inner: &'a MemoryChunkStore,
    lost: Option<ChunkId>,
    flipped: Option<ChunkId>,
}

impl ChunkStore for DamagedStore<'_> {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        self.inner.put(id, bytes)
    }
    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        if self.lost == Some(*id) {
            return Ok(None);
        }
        Ok(self.inner.get(id)?.map(|mut bytes| {
            if self.flipped == Some(*id) {
                let last = bytes.len() - 1;
                bytes[last] ^= 1;
            }
            bytes
        }))
    }
    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        Ok(self.lost != Some(*id) && self.inner.contains(id)?)
    }
}

#[test]
fn reads_in_push_order_across_chunks() {
    let n = 5 * C + 7;
    let window = window_of(range(n).into_iter().map(|i| i * 3));
    assert_eq!(window.len(), n);
    assert_eq!(window.chunk_count(), 5);
    assert_eq!(window.iter().len(), n);
    for i in 0..n {
        assert_eq!(window.get(i), Some(&(i as u32 * 3)), "index {i}");
    }
    assert_eq!(window.get(n), None);
    assert_eq!(items(&window), range(n).into_iter().map(|i| i * 3).collect::<Vec<_>>());
    assert!(Window::<u32>::new().is_empty());
    assert_eq!(Window::<u32>::new().get(0), None);
}

#[test]
fn a_fork_does_not_see_the_originals_appends() {
    // Fork points inside a tail, just before a seal, and on a chunk boundary.
    for n in [0, 5, C - 1, C, 3 * C + 9] {
        let mut original = window_of(range(n));
        let fork = original.fork();
        for i in 0..(2 * C) as u32 {
            original.push(1_000_000 + i).expect("push");
        }
        assert_eq!(items(&fork), range(n), "fork at {n}");
        assert_eq!(fork.len(), n);
        assert_eq!(original.len(), n + 2 * C);
        assert_eq!(&items(&original)[..n], &range(n)[..]);
    }
}

#[test]
fn the_original_does_not_see_a_forks_appends() {
    for n in [0, 5, C - 1, C, 3 * C + 9] {
        let original = window_of(range(n));
        let mut fork = original.fork();
        for i in 0..(2 * C) as u32 {
            fork.push(2_000_000 + i).expect("push");
        }
        assert_eq!(items(&original), range(n), "fork at {n}");
        assert_eq!(fork.len(), n + 2 * C);
        assert_eq!(fork.get(n), Some(&2_000_000));
    }
}

#[test]
fn forks_of_forks_diverge_independently() {
    let mut a = window_of(range(C + 3));
    let mut b = a.fork();
    let mut c = b.fork();
    a.push(1).expect("push");
    b.push(2).expect("push");
    c.truncate_front(C).expect("truncate");
    c.push(3).expect("push");
    assert_eq!(a.get(C + 3), Some(&1));
    assert_eq!(b.get(C + 3), Some(&2));
    assert_eq!(items(&c), vec![C as u32, C as u32 + 1, C as u32 + 2, 3]);
    assert_eq!(a.len(), C + 4);
    assert_eq!(b.len(), C + 4);
}

#[test]
fn a_fork_carries_the_turn_counter_and_then_counts_its_own() {
    let mut original = window_of(range(10));
    assert_eq!(original.turn(), 0);
    assert_eq!(original.next_turn(), 1);
    assert_eq!(original.next_turn(), 2);
    let mut fork = original.fork();
    assert_eq!(fork.turn(), 2, "carried, not restarted");
    assert_eq!(fork.next_turn(), 3);
    assert_eq!(original.turn(), 2, "the fork's turns are its own");
    assert_eq!(original.next_turn(), 3, "both copies name the same turns");
    assert_eq!(original.clone().turn(), 3, "clone is fork");
}

#[test]
fn replace_prefix_puts_the_summary_first_and_keeps_the_rest() {
    let len = 4 * C + 10;
    let all = range(len);
    // In the first chunk, on a boundary, mid-chunk, in the tail, everything, nothing.
    for n in [0, 1, C, C + 5, 4 * C, 4 * C + 3, len] {
        let mut window = window_of(all.clone());
        window.next_turn();
        let fork = window.fork();
        window.replace_prefix(n, 777).expect("in range");
        let mut expected = vec![777];
        expected.extend_from_slice(&all[n..]);
        assert_eq!(items(&window), expected, "replace_prefix({n})");
        assert_eq!(window.len(), expected.len());
        for (i, item) in expected.iter().enumerate() {
            assert_eq!(window.get(i), Some(item));
        }
        assert_eq!(window.turn(), 1, "compaction keeps the turn");
        assert_eq!(items(&fork), all, "a fork keeps its window");
        // Still a working window: pushes land after the kept items.
        window.push(888).expect("push");
        assert_eq!(window.get(expected.len()), Some(&888));
    }
}

#[test]
fn replace_prefix_that_fills_the_tail_seals_it() {
    let mut window = window_of(range(C - 1));
    window.replace_prefix(0, 9).expect("in range");
    assert_eq!(window.len(), C);
    assert_eq!(window.chunk_count(), 1);
    assert_eq!(window.get(0), Some(&9));
    assert_eq!(window.get(C - 1), Some(&(C as u32 - 2)));
}

#[test]
fn truncate_front_drops_the_oldest() {
    let len = 3 * C + 20;
    let all = range(len);
    for n in [0, 1, C - 1, C, 2 * C + 1, 3 * C, 3 * C + 19, len] {
        let mut window = window_of(all.clone());
        let fork = window.fork();
        window.truncate_front(n).expect("in range");
        assert_eq!(items(&window), &all[n..], "truncate_front({n})");
        assert_eq!(window.get(0), all.get(n));
        assert_eq!(items(&fork), all);
    }
}

#[test]
fn a_cut_past_the_end_is_refused_and_changes_nothing() {
    let mut window = window_of(range(C + 2));
    let before = items(&window);
    assert_eq!(
        window.truncate_front(C + 3),
        Err(WindowError::PrefixTooLong { requested: C + 3, len: C + 2 })
    );
    assert_eq!(
        window.replace_prefix(C + 3, 1),
        Err(WindowError::PrefixTooLong { requested: C + 3, len: C + 2 })
    );
    assert_eq!(items(&window), before);
}

/// A snapshot hands the store everything it lacks in one call, oldest first, each chunk
/// before the link that names it, so that a durable store commits a snapshot once.
#[test]
fn a_snapshot_puts_what_the_store_lacks_in_one_call() {
    let store = CountingStore::default();
    let mut window = window_of(range(3 * C + 5));
    let first = window.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_put_alls(), vec![vec!["chunk", "link", "chunk", "link", "chunk", "link"]]);
    window.snapshot(&store).expect("snapshot");
    assert!(store.take_put_alls().is_empty(), "an unchanged window asks for nothing to be stored");
    for i in 0..C as u32 {
        window.push(i).expect("push");
    }
    let second = window.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_put_alls(), vec![vec!["chunk", "link"]]);
    assert_eq!(Window::restore(second, &store.inner).expect("restore"), window);
    assert_eq!(first.chunk_count(), 3);
}

#[test]
fn compaction_makes_one_new_chunk_and_shares_the_rest() {
    let store = CountingStore::default();
    let mut window = window_of(range(10 * C + 5));
    window.snapshot(&store).expect("snapshot");
    assert_eq!((store.take_puts(), store.take_link_puts()), (10, 10));
    window.replace_prefix(3 * C + 7, 0).expect("in range");
    let snapshot = window.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_puts(), 1, "only the cut chunk, with the summary in front, is new");
    // A link names the one before it, so every link after a new first chunk is new.
    assert_eq!(store.take_link_puts(), 7);
    assert_eq!(snapshot.chunk_count(), 7);
    window.truncate_front(1).expect("in range");
    window.snapshot(&store).expect("snapshot");
    assert_eq!((store.take_puts(), store.take_link_puts()), (1, 7));
    // The new first chunk holds C - 7 items now; cutting all of them lands on a boundary.
    window.truncate_front(C - 7).expect("onto a chunk boundary");
    let snapshot = window.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_puts(), 0, "a cut on a boundary makes no chunk");
    assert_eq!(store.take_link_puts(), 6);
    assert_eq!(Window::restore(snapshot, &store.inner).expect("restore"), window);
}

#[test]
fn a_snapshot_after_a_fork_writes_o1_new_chunks() {
    let store = CountingStore::default();
    let mut original = window_of(range(1_000 * C + 17));
    let first = original.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_puts(), 1_000, "the first snapshot writes every chunk");
    assert_eq!(store.take_link_puts(), 1_000, "and the link naming each");
    store.take_lookups();
    assert_eq!(first.chunk_count(), 1_000);
    assert!(first.chunk_ids.is_empty(), "the record names the list by its head");
    assert_eq!(first.tail, range(1_000 * C + 17)[1_000 * C..]);
    assert!(first.encode().expect("encode").len() < 300, "the record does not grow with the window");

    let mut fork = original.fork();
    fork.push(42).expect("the fork's opening note");
    let forked = fork.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_puts() + store.take_link_puts(), 0, "a fork shares every chunk and link");
    assert_eq!(store.take_lookups(), 1, "the head link is stored: nothing before it is asked about");
    assert_eq!((forked.head, forked.chunk_count()), (first.head, 1_000));
    assert_eq!(forked.tail.len(), 18);

    // Both go on; each seals its own chunk and writes only that and its link.
    for i in 0..C as u32 {
        fork.push(i).expect("push");
        original.push(i + 5).expect("push");
    }
    let forked = fork.snapshot(&store).expect("snapshot");
    assert_eq!((store.take_puts(), store.take_link_puts()), (1, 1));
    assert_eq!(store.take_lookups(), 3, "the new link, the one before it, the new chunk");
    let continued = original.snapshot(&store).expect("snapshot");
    assert_eq!((store.take_puts(), store.take_link_puts()), (1, 1));
    assert_ne!(forked.head, continued.head);
    // Unchanged windows write nothing.
    original.snapshot(&store).expect("snapshot");
    fork.snapshot(&store).expect("snapshot");
    assert_eq!(store.take_puts() + store.take_link_puts(), 0);
    assert_eq!(Window::restore(forked, &store.inner).expect("restore"), fork);
    assert_eq!(Window::restore(continued, &store.inner).expect("restore"), original);
}

#[test]
fn restore_round_trips_and_the_restored_window_works() {
    let store = MemoryChunkStore::new();
    for n in [0, 1, C - 1, C, 7 * C + 33] {
        let mut window = window_of(range(n).into_iter().map(|i| i.wrapping_mul(2_654_435_761)));
        window.next_turn();
        window.next_turn();
        let snapshot = window.snapshot(&store).expect("snapshot");
        let bytes = snapshot.encode().expect("encode");
        let decoded = WindowSnapshot::<u32>::decode(&bytes).expect("decode");
        assert_eq!(decoded, snapshot);
        let mut restored = Window::restore(decoded, &store).expect("restore");
        assert_eq!(restored, window, "{n} items");
        assert_eq!(restored.turn(), 2);
        assert_eq!(restored.chunk_count(), window.chunk_count());
        restored.push(5).expect("push");
        assert_eq!(restored.len(), n + 1);
        assert_eq!(window.len(), n);
    }
}

#[test]
fn restore_refuses_missing_corrupt_and_malformed_input() {
    let store = MemoryChunkStore::new();
    let window = window_of(range(2 * C + 1));
    let snapshot = window.snapshot(&store).expect("snapshot");

    let head = snapshot.head.expect("two chunks are sealed");
    let first_chunk = window.sealed_chunks().expect("ids")[0].id();
    let damaged =
        |lost: Option<ChunkId>, flipped: Option<ChunkId>| DamagedStore { inner: &store, lost, flipped };

    let missing = Window::<u32>::restore(snapshot.clone(), &MemoryChunkStore::new());
    assert_eq!(missing, Err(RestoreError::MissingLink { id: head }));
    assert_eq!(snapshot.check_stored(&MemoryChunkStore::new()), Err(RestoreError::MissingLink { id: head }));
    assert_eq!(snapshot.check_stored(&store), Ok(()));
    let missing = Window::<u32>::restore(snapshot.clone(), &damaged(Some(first_chunk), None));
    assert_eq!(missing, Err(RestoreError::MissingChunk { id: first_chunk }));

    for (flipped, link) in [(head, true), (first_chunk, false)] {
        match Window::<u32>::restore(snapshot.clone(), &damaged(None, Some(flipped))) {
            Err(RestoreError::CorruptLink { id, actual }) if link => {
                assert_eq!((id == flipped, actual == id), (true, false))
            }
            Err(RestoreError::CorruptChunk { id, actual }) if !link => {
                assert_eq!((id == flipped, actual == id), (true, false))
            }
            other => panic!("expected a corrupt record, got {other:?}"),
        }
    }

    // The count must match the list the head names, one way or the other.
    for (chunks, linked) in [(1, 2), (3, 2)] {
        let miscounted = WindowSnapshot { chunks, ..snapshot.clone() };
        assert_eq!(
            Window::restore(miscounted, &store),
            Err(RestoreError::ChunkCount { counted: chunks, linked })
        );
    }
    // A head that names a chunk, not a link.
    let not_a_link = WindowSnapshot { head: Some(first_chunk), chunks: 1, ..snapshot.clone() };
    assert!(matches!(Window::restore(not_a_link, &store), Err(RestoreError::LinkDecode { .. })));
    // A record naming its chunks both ways is refused rather than guessed at.
    let both = WindowSnapshot { chunk_ids: vec![first_chunk], ..snapshot.clone() };
    assert!(matches!(Window::restore(both, &store), Err(RestoreError::SnapshotDecode { .. })));

    let long_tail = WindowSnapshot { tail: range(C), ..WindowSnapshot::empty(0) };
    assert_eq!(Window::restore(long_tail, &store), Err(RestoreError::TailItems { items: C }));

    // A chunk of the wrong item type is a decode error, not a panic.
    let wrong_type = WindowSnapshot::<String> {
        head: snapshot.head,
        chunks: snapshot.chunks,
        chunk_ids: vec![],
        tail: vec![],
        turn: 0,
    };
    assert!(matches!(Window::restore(wrong_type, &store), Err(RestoreError::ChunkDecode { .. })));

    let mut bytes = snapshot.encode().expect("encode");
    assert!(matches!(WindowSnapshot::<u32>::decode(&bytes[..3]), Err(RestoreError::SnapshotDecode { .. })));
    bytes.push(0);
    assert!(matches!(WindowSnapshot::<u32>::decode(&bytes), Err(RestoreError::SnapshotDecode { .. })));
    bytes[0] = 9;
    assert!(matches!(WindowSnapshot::<u32>::decode(&bytes), Err(RestoreError::TooNew { found: 9, .. })));
}

/// A store whose puts fail once `budget` of them have succeeded: a disk that fills midway
/// through a snapshot.
struct FillingStore<'a> {
    inner: &'a MemoryChunkStore,
    budget: Cell<usize>,
}

impl ChunkStore for FillingStore<'_> {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        let Some(left) = self.budget.get().checked_sub(1) else {
            return Err(ChunkStoreError::Backend { message: "disk full".into() });
        };
        self.budget.set(left);
        self.inner.put(id, bytes)
    }
    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        self.inner.get(id)
    }
    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        self.inner.contains(id)
    }
}

/// A snapshot cut short by a failed put reports the failure, leaves the store holding whole
/// lists only (every link it holds restores), and the next snapshot puts the rest; in every
/// case the window restores from the store alone.
#[test]
fn a_snapshot_cut_short_leaves_whole_lists_and_the_next_one_finishes() {
    let window = window_of(range(9 * C + 3));
    for budget in 0..18 {
        let store = MemoryChunkStore::new();
        let filling = FillingStore { inner: &store, budget: Cell::new(budget) };
        assert!(window.snapshot(&filling).is_err(), "{budget} puts are fewer than the 18 needed");
        assert_eq!(store.len(), budget, "what was put before the failure stays");
        // Chunk and link alternate, oldest first: the links stored are the first budget / 2.
        let stored_links = budget / 2;
        // Ids are content addresses: the record of the stored part, made against any store,
        // names what this store holds.
        let partial = window_of(range(stored_links * C));
        let snapshot = partial.snapshot(&MemoryChunkStore::new()).expect("snapshot of the stored part");
        if stored_links > 0 {
            assert_eq!(snapshot.check_stored(&store), Ok(()), "budget {budget}");
            assert_eq!(Window::restore(snapshot, &store).expect("restore"), partial);
        }
        let finished = window.snapshot(&store).expect("the next snapshot finishes");
        assert_eq!(store.len(), 18);
        assert_eq!(Window::restore(finished, &store).expect("restore"), window);
    }
}

/// A window restored from one store and snapshotted into another writes every chunk and link
/// there (the links it knows are not stored in the second), and restores from it alone.
#[test]
fn a_restored_window_snapshots_whole_into_another_store() {
    let first = MemoryChunkStore::new();
    let window = window_of(range(6 * C + 10));
    let restored = Window::restore(window.snapshot(&first).expect("snapshot"), &first).expect("restore");
    let second = CountingStore::default();
    let snapshot = restored.snapshot(&second).expect("snapshot");
    assert_eq!((second.take_puts(), second.take_link_puts()), (6, 6));
    assert_eq!(Window::restore(snapshot, &second.inner).expect("restore"), window);
}

/// A version 2 record listed every chunk id. It still restores, and the next snapshot of the
/// restored window writes the links (and no chunk again) and names them by head.
#[test]
fn a_record_listing_every_chunk_still_restores() {
    let store = CountingStore::default();
    let window = window_of(range(5 * C + 9));
    let ids: Vec<String> =
        window.sealed_chunks().expect("ids").iter().map(|c| format!("\"{}\"", c.id())).collect();
    // The chunks alone, as a version 2 build stored them (chunk bytes have not changed).
    let scratch = MemoryChunkStore::new();
    window.snapshot(&scratch).expect("snapshot");
    for chunk in window.sealed_chunks().expect("ids") {
        let bytes = scratch.get(&chunk.id()).expect("get").expect("stored");
        store.put(chunk.id(), bytes).expect("put");
    }
    assert_eq!(store.take_puts(), 5);
    store.take_link_puts();
    let tail: Vec<String> = window.tail().iter().map(u32::to_string).collect();
    let json = format!(r#"{{"chunk_ids":[{}],"tail":[{}],"turn":4}}"#, ids.join(","), tail.join(","));
    let mut bytes = vec![2u8];
    bytes.extend_from_slice(json.as_bytes());
    let old = WindowSnapshot::<u32>::decode(&bytes).expect("a version 2 record decodes");
    assert_eq!((old.head, old.chunk_count()), (None, 5));
    assert_eq!(old.check_stored(&store.inner), Ok(()));
    let restored = Window::restore(old, &store.inner).expect("restore");
    assert_eq!(items(&restored), items(&window));
    assert_eq!(restored.turn(), 4);
    let new = restored.snapshot(&store).expect("snapshot");
    assert_eq!((store.take_puts(), store.take_link_puts()), (0, 5));
    assert!(new.head.is_some() && new.chunk_ids.is_empty());
    assert_eq!(Window::restore(new, &store.inner).expect("restore"), restored);
}

#[test]
fn a_full_window_refuses_a_push_and_drops_without_recursion() {
    let mut window = window_of(range(WINDOW_ITEMS_MAX));
    assert_eq!(window.push(0), Err(WindowError::Full { len: WINDOW_ITEMS_MAX }));
    assert_eq!(window.len(), WINDOW_ITEMS_MAX);
    assert_eq!(window.get(WINDOW_ITEMS_MAX - 1), Some(&(WINDOW_ITEMS_MAX as u32 - 1)));
    let fork = window.fork();
    window.truncate_front(1).expect("in range");
    window.push(0).expect("room again");
    assert_eq!(fork.chunk_count(), WINDOW_ITEMS_MAX / C);
    // 16 384 chunk nodes each, dropped on a small stack: a window's drop does not grow the
    // stack with its length.
    std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || {
            drop(fork);
            drop(window);
        })
        .expect("spawn")
        .join()
        .expect("dropped without overflowing the stack");
}

// The model check.

#[derive(Clone, Debug)]
enum Op {
    Push { window: usize, item: u32 },
    PushMany { window: usize, count: usize },
    Fork { window: usize },
    NextTurn { window: usize },
    ReplacePrefix { window: usize, fraction: u8, summary: u32 },
    TruncateFront { window: usize, fraction: u8 },
    SnapshotRestore { window: usize },
    Drop { window: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let w = any::<usize>();
    prop_oneof![
        6 => (w, any::<u32>()).prop_map(|(window, item)| Op::Push { window, item }),
        3 => (w, 0..3 * C).prop_map(|(window, count)| Op::PushMany { window, count }),
        3 => w.prop_map(|window| Op::Fork { window }),
        1 => w.prop_map(|window| Op::NextTurn { window }),
        2 => (w, any::<u8>(), any::<u32>())
            .prop_map(|(window, fraction, summary)| Op::ReplacePrefix { window, fraction, summary }),
        2 => (w, any::<u8>()).prop_map(|(window, fraction)| Op::TruncateFront { window, fraction }),
        2 => w.prop_map(|window| Op::SnapshotRestore { window }),
        1 => w.prop_map(|window| Op::Drop { window }),
    ]
}

/// Windows alive at once in one case: enough for a tree several forks deep.
const FORKS_MAX: usize = 12;

struct Model {
    window: Window<u32>,
    items: Vec<u32>,
    turn: u64,
}

fn check(model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(model.window.len(), model.items.len());
    prop_assert_eq!(model.window.turn(), model.turn);
    prop_assert!(model.window.iter().eq(model.items.iter()));
    prop_assert_eq!(model.window.iter().len(), model.items.len());
    let len = model.items.len();
    for i in [0, 1, len / 3, len / 2, len.saturating_sub(C), len.saturating_sub(1), len] {
        prop_assert_eq!(model.window.get(i), model.items.get(i));
    }
    Ok(())
}

fn run_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let store = MemoryChunkStore::new();
    let mut next_item = 1_000_000u32;
    let mut models = vec![Model { window: Window::new(), items: Vec::new(), turn: 0 }];
    for op in ops {
        let len = models.len();
        match op {
            Op::Push { window, item } => {
                let m = &mut models[window % len];
                m.window.push(item).expect("below the bound");
                m.items.push(item);
            }
            Op::PushMany { window, count } => {
                let m = &mut models[window % len];
                for _ in 0..count {
                    next_item += 1;
                    m.window.push(next_item).expect("below the bound");
                    m.items.push(next_item);
                }
            }
            Op::Fork { window } => {
                if len < FORKS_MAX {
                    let m = &models[window % len];
                    let fork = Model { window: m.window.fork(), items: m.items.clone(), turn: m.turn };
                    models.push(fork);
                }
            }
            Op::NextTurn { window } => {
                let m = &mut models[window % len];
                m.turn += 1;
                prop_assert_eq!(m.window.next_turn(), m.turn);
            }
            Op::ReplacePrefix { window, fraction, summary } => {
                let m = &mut models[window % len];
                let n = m.items.len() * usize::from(fraction) / 255;
                m.window.replace_prefix(n, summary).expect("in range");
                m.items.splice(..n, [summary]);
            }
            Op::TruncateFront { window, fraction } => {
                let m = &mut models[window % len];
                let n = m.items.len() * usize::from(fraction) / 255;
                m.window.truncate_front(n).expect("in range");
                m.items.drain(..n);
            }
            Op::SnapshotRestore { window } => {
                let m = &mut models[window % len];
                let bytes = m.window.snapshot(&store).expect("snapshot").encode().expect("encode");
                let snapshot = WindowSnapshot::decode(&bytes).expect("decode");
                m.window = Window::restore(snapshot, &store).expect("restore");
            }
            Op::Drop { window } => {
                if len > 1 {
                    models.swap_remove(window % len);
                }
            }
        }
        // Every window in the tree, not only the one edited: isolation across forks.
        for m in &models {
            check(m)?;
        }
    }
    Ok(())
}

#[test]
fn a_window_tree_behaves_like_vecs_under_random_edits() {
    let seed = seeded::seed("agent_window", "AGENT_WINDOW_SEED", 0x000c_4a7f_0b5e);
    let mut runner = seeded::runner_from(seed, 256);
    runner
        .run(&prop::collection::vec(op(), 1..120), run_model)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

/// An edit of a message window for the running-total check.
#[derive(Clone, Debug)]
enum TokenOp {
    Push(usize),
    Assistant(usize),
    Fork,
    Truncate(usize),
    ReplacePrefix(usize),
    ReplaceRange(usize, usize),
}

fn token_op() -> impl Strategy<Value = TokenOp> {
    prop_oneof![
        8 => (0usize..400).prop_map(TokenOp::Push),
        2 => (0usize..100).prop_map(TokenOp::Assistant),
        1 => Just(TokenOp::Fork),
        1 => (0usize..200).prop_map(TokenOp::Truncate),
        1 => (0usize..200).prop_map(TokenOp::ReplacePrefix),
        1 => (0usize..200, 0usize..200).prop_map(|(a, b)| TokenOp::ReplaceRange(a.min(b), a.max(b))),
    ]
}

/// After every edit, of the window or of a fork of it, a window's token estimate (its running
/// total, kept per sealed chunk) is the sum of its messages' estimates read one by one; and
/// its messages read newest first, and the tail since the last assistant message read that
/// way, are what a pass from the oldest gives.
fn run_tokens(ops: Vec<TokenOp>) -> Result<(), TestCaseError> {
    use agentvisor::agent::brain::tokens::{message_tokens, window_tokens};
    use agentvisor::agent::brain::{AssistantMessage, Message, WindowView, tail_since_assistant};
    let summed = |w: &Window<Message>| w.iter().map(message_tokens).sum::<u64>();
    let tail_from_the_oldest = |w: &Window<Message>| {
        let last =
            w.iter().enumerate().filter(|(_, m)| matches!(m, Message::Assistant(_))).map(|(i, _)| i).last();
        w.iter().skip(last.map_or(0, |i| i + 1)).cloned().collect::<Vec<_>>()
    };
    let mut windows: Vec<Window<Message>> = vec![Window::new()];
    for (i, op) in ops.into_iter().enumerate() {
        let at = i % windows.len();
        let window = &mut windows[at];
        let len = window.len();
        match op {
            TokenOp::Push(n) => window.push(Message::note("x".repeat(n))).expect("below the bound"),
            TokenOp::Assistant(n) => window
                .push(Message::Assistant(AssistantMessage {
                    text: Some("y".repeat(n)),
                    tool_calls: Vec::new(),
                }))
                .expect("below the bound"),
            TokenOp::Fork => {
                let fork = window.fork();
                windows.push(fork);
            }
            TokenOp::Truncate(n) => window.truncate_front(n.min(len)).expect("in bounds"),
            TokenOp::ReplacePrefix(n) if n <= len && n > 0 => {
                window.replace_prefix(n, Message::note("summary")).expect("in bounds")
            }
            TokenOp::ReplaceRange(a, b) if b <= len && a < b => {
                window.replace_range(a, b, Message::note("archived")).expect("in bounds")
            }
            _ => {}
        }
        for w in &windows {
            prop_assert_eq!(window_tokens(w), summed(w));
            let newest_first: Vec<&Message> = w.newest_first().collect();
            let mut oldest_first: Vec<&Message> = w.iter().collect();
            oldest_first.reverse();
            prop_assert_eq!(newest_first, oldest_first);
            let tail: Vec<Message> = tail_since_assistant(w).into_iter().cloned().collect();
            prop_assert_eq!(tail, tail_from_the_oldest(w));
        }
    }
    Ok(())
}

#[test]
fn a_windows_token_estimate_is_the_sum_of_its_messages_under_random_edits() {
    let seed = seeded::seed("agent_window_tokens", "AGENT_WINDOW_TOKENS_SEED", 0x7031_2e55);
    let mut runner = seeded::runner_from(seed, 128);
    runner
        .run(&prop::collection::vec(token_op(), 1..300), run_tokens)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

/// A chunk id's text (Display and JSON) is its bytes as 64 lowercase hex digits, and reads
/// back as the same id.
#[test]
fn a_chunk_ids_text_is_its_bytes_in_hex_and_reads_back() {
    let seed = seeded::seed("agent_window_chunk_id", "AGENT_WINDOW_CHUNK_ID_SEED", 0x1d5e_ed01);
    let mut runner = seeded::runner_from(seed, 256);
    runner
        .run(&prop::array::uniform32(any::<u8>()), |bytes| {
            let id = ChunkId::from_bytes(bytes);
            let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(id.to_string(), expected.clone());
            prop_assert_eq!(
                serde_json::to_value(id).expect("json"),
                serde_json::Value::String(expected.clone())
            );
            prop_assert_eq!(ChunkId::parse_hex(&expected), Some(id));
            prop_assert_eq!(format!("{id:?}"), format!("ChunkId({}…)", &expected[..16]));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

#[test]
fn a_window_holds_the_snapshot_taken_of_it_until_it_changes() {
    let store = MemoryChunkStore::new();
    let mut window = window_of(range(3 * C + 5));
    assert!(!window.holds_snapshot(&WindowSnapshot::empty(0)), "not an empty window");
    let snapshot = window.snapshot(&store).expect("snapshot");
    assert!(window.holds_snapshot(&snapshot));
    assert!(window.fork().holds_snapshot(&snapshot), "a fork shares the head link");
    assert!(Window::restore(snapshot.clone(), &store).expect("restore").holds_snapshot(&snapshot));
    let mut pushed = window.fork();
    pushed.push(1).expect("below the bound");
    assert!(!pushed.holds_snapshot(&snapshot), "another tail");
    let mut sealed = window.fork();
    for item in 0..C as u32 {
        sealed.push(item).expect("below the bound");
    }
    assert!(!sealed.holds_snapshot(&snapshot), "another chunk");
    window.next_turn();
    assert!(!window.holds_snapshot(&snapshot), "another turn");
    assert!(window_of([]).holds_snapshot(&WindowSnapshot::empty(0)));
}
