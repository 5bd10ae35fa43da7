//! `ChunkId`: the content address of a sealed chunk.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
///
/// Serialized as 64 lowercase hex digits in human-readable formats (JSON snapshot records and
/// module objects), as 32 raw bytes otherwise.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkId([u8; 32]);

impl Serialize for ChunkId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            let hex = self.hex();
            serializer.serialize_str(hex_str(&hex).map_err(serde::ser::Error::custom)?)
        } else {
            self.0.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for ChunkId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ChunkId, D::Error> {
        if !deserializer.is_human_readable() {
            return <[u8; 32]>::deserialize(deserializer).map(ChunkId);
        }
        let text = String::deserialize(deserializer)?;
        ChunkId::parse_hex(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a 64-digit hex chunk id")))
    }
}

impl ChunkId {
    /// The id of these encoded chunk bytes.
    pub fn of(bytes: &[u8]) -> ChunkId {
        ChunkId(*blake3::hash(bytes).as_bytes())
    }

    /// An id from its 32 raw bytes (as a store keeps it).
    pub const fn from_bytes(bytes: [u8; 32]) -> ChunkId {
        ChunkId(bytes)
    }

    /// An id from its 64 hex digits (either case); `None` if it is not one.
    pub fn parse_hex(text: &str) -> Option<ChunkId> {
        let digits = text.as_bytes();
        if digits.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, pair) in digits.chunks(2).enumerate() {
            let pair = std::str::from_utf8(pair).ok()?;
            bytes[i] = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(ChunkId(bytes))
    }

    /// The 32 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, by table: a checkpoint lists every chunk of a window,
    /// so this runs once per sealed chunk per turn, and `write!("{:02x}")` per byte was most
    /// of a long session's turn.
    fn hex(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out
    }
}

/// Hex digits as text (they are ASCII, so this does not fail).
fn hex_str(digits: &[u8]) -> Result<&str, std::str::Utf8Error> {
    std::str::from_utf8(digits)
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(hex_str(&self.hex()).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight bytes tell ids apart in any log a person reads; the full id is in Display.
        let hex = self.hex();
        write!(f, "ChunkId({}…)", hex_str(&hex[..16]).map_err(|_| fmt::Error)?)
    }
}
