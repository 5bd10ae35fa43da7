//! The telemetry's bounds, each with why.

/// Records [`Telemetry::records`](super::Telemetry::records) keeps in memory; older ones are
/// dropped, newest kept. The copy is for tests and `inspect`; the JSONL file has everything.
/// Most records are a few hundred bytes; [`RECORDS_BYTES_MAX`] bounds the ones that are not.
pub const RECORDS_MAX: usize = 100_000;

/// Bytes of JSON the records kept in memory may add up to; older ones are dropped first. A
/// turn's record carries its text and every call's arguments and answer (each up to
/// [`EVENT_FIELD_CHARS_MAX`](crate::agent::limits::EVENT_FIELD_CHARS_MAX) characters), so
/// 100 000 of them could be gigabytes; 64 MiB keeps thousands of ordinary turns.
pub const RECORDS_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Hand-overs the telemetry's writer thread may fall behind by before `emit` waits for it: a
/// hand-over is one record, or an incarnation's start with the `context_chunk` records it
/// states (a fork of a 100,000-message conversation states its window in about 1,600 records,
/// handed over at once). The writer serialises every record one after another, as `emit` once
/// did under its lock; the bound keeps a swarm that emits faster than that from growing the
/// queue without end. The queue's slots are allocated when the telemetry is made (some 100
/// KiB).
pub const WRITER_QUEUE_MAX: usize = 4096;

/// Records a subscriber may fall behind by before it misses some (it then receives
/// `RecvError::Lagged` with the count). Emitting never waits for a subscriber, so a slow
/// observer cannot stall an agent; 4096 covers a burst of a whole tree's turns.
pub const BROADCAST_CAPACITY: usize = 4096;

/// Longest line [`read_jsonl`](super::read_jsonl) accepts, in bytes. An opening re-states a
/// goal and a rendered prompt, both bounded far below this; a longer line is not one this
/// build wrote, and the bound keeps a wrong file from being read whole into one string.
pub const EVENT_LINE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Chunk ids the telemetry remembers as stated (`context_chunk`) on live streams, all streams
/// together: 32 bytes each plus the set's overhead, so a few tens of MiB at the bound, which a
/// tree of agents holding windows of a million messages each reaches only after some hundreds
/// of them. Past it every stream's memory is dropped and a chunk is stated once more.
pub const STATED_CHUNKS_MAX: usize = 1 << 18;
