//! Links: the list of a window's sealed chunks, stored content-addressed like the chunks.
//!
//! A link names one sealed chunk and the link before it, so the newest link names a whole
//! list of chunks and a snapshot names only that one (its head). Links are stored in the same
//! [`ChunkStore`](super::ChunkStore) as the chunks, under the BLAKE3 hash of their bytes:
//!
//! ```text
//! link bytes = "AVLK" ++ u8 LINK_FORMAT_VERSION (1) ++ chunk id (32 bytes)
//!              ++ the previous link's id (32 bytes; absent on the first chunk's link)
//! ```
//!
//! The four letters keep a link from ever reading as a chunk (whose bytes begin with its
//! format version, one byte below 128). A link is put only after its chunk and the link
//! before it, so a store holding a link holds the whole list it names: a snapshot stops at
//! the first link the store has, which after the first snapshot is the head of the last one.

use super::error::RestoreError;
use super::id::ChunkId;

/// The link format version this build writes.
pub const LINK_FORMAT_VERSION: u8 = 1;

const MAGIC: &[u8; 4] = b"AVLK";
const HEADER: usize = MAGIC.len() + 1;
const ID: usize = 32;

/// The stored bytes of the link naming `chunk` after `prev`.
pub(super) fn encode(chunk: ChunkId, prev: Option<ChunkId>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + 2 * ID);
    bytes.extend_from_slice(MAGIC);
    bytes.push(LINK_FORMAT_VERSION);
    bytes.extend_from_slice(chunk.as_bytes());
    if let Some(prev) = prev {
        bytes.extend_from_slice(prev.as_bytes());
    }
    bytes
}

/// The chunk and the previous link a link read back under `id` names. The caller has checked
/// the bytes against `id`.
pub(super) fn decode(id: ChunkId, bytes: &[u8]) -> Result<(ChunkId, Option<ChunkId>), RestoreError> {
    let refuse = |message: String| RestoreError::LinkDecode { id, message };
    let Some(version) = bytes.strip_prefix(MAGIC).and_then(|rest| rest.first()) else {
        return Err(refuse("not a link record".into()));
    };
    if *version > LINK_FORMAT_VERSION {
        return Err(RestoreError::TooNew {
            what: "link",
            found: u16::from(*version),
            supported: u16::from(LINK_FORMAT_VERSION),
        });
    }
    let body = &bytes[HEADER..];
    let (chunk, prev) = match body.len() {
        ID => (body, None),
        len if len == 2 * ID => (&body[..ID], Some(&body[ID..])),
        len => return Err(refuse(format!("{len} bytes after the header, not {ID} or {}", 2 * ID))),
    };
    let id_of = |raw: &[u8]| -> Result<ChunkId, RestoreError> {
        let raw: [u8; ID] = raw.try_into().map_err(|_| refuse("a short id".into()))?;
        Ok(ChunkId::from_bytes(raw))
    };
    Ok((id_of(chunk)?, prev.map(id_of).transpose()?))
}
