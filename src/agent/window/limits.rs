//! The bounds of a conversation window, each with the reason for its value.

/// Items in one sealed chunk, and one more than the owned tail can hold.
///
/// This one number sets three costs, and 64 keeps all three small:
/// - a fork shares its tail until the first push on either copy, which then copies at most
///   `CHUNK_ITEMS_MAX - 1` items;
/// - a snapshot carries the tail inline, so a snapshot after every turn rewrites at most that
///   many messages;
/// - a snapshot lists one 32-byte chunk id per sealed chunk, half a byte per message, which is
///   well under 1% of a window of ~200-byte messages.
///
/// Chunks are sealed full; only compaction makes a shorter one (its new first chunk), so every
/// chunk holds between 1 and this many items.
pub const CHUNK_ITEMS_MAX: usize = 64;

/// Most items one window holds; a push past it is refused and the window must be compacted.
///
/// A million-token model window of one-token messages is the absurd upper end of a real
/// conversation, and 2^20 items sits just above it. It bounds the sealed-chunk list at 16 384
/// chunks: the work of a restore, the id list of a snapshot (512 KiB at the bound) and the
/// depth of the chunk list a drop walks.
pub const WINDOW_ITEMS_MAX: usize = 1 << 20;
