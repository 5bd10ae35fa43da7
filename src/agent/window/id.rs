//! `ChunkId`: the content address of a sealed chunk.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The BLAKE3 hash of a sealed chunk's encoded bytes (the encoding is in the
/// [module docs](super)).
///
/// Content addressing, rather than an id drawn when a chunk is sealed, gives three things a
/// drawn id cannot: a read is checked against its id, so bytes that changed on disk are
/// reported instead of replayed as conversation; two writers of the same chunk write the same
/// record, so a put is idempotent; and sealing needs neither a clock nor randomness, so a
/// window stays a pure value. The cost is one hash per chunk, paid once at its first snapshot
/// and cached in the chunk, which every fork shares.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChunkId([u8; 32]);

impl ChunkId {
    /// The id of these encoded chunk bytes.
    pub fn of(bytes: &[u8]) -> ChunkId {
        ChunkId(*blake3::hash(bytes).as_bytes())
    }

    /// An id from its 32 raw bytes (as a store keeps it).
    pub const fn from_bytes(bytes: [u8; 32]) -> ChunkId {
        ChunkId(bytes)
    }

    /// The 32 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight bytes tell ids apart in any log a person reads; the full id is in Display.
        write!(f, "ChunkId(")?;
        for byte in &self.0[..8] {
            write!(f, "{byte:02x}")?;
        }
        write!(f, "…)")
    }
}
