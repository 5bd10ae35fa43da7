//! Opaque payloads: postcard inside a versioned envelope.
//!
//! Wire form: `postcard(EnvelopeV1 { version: 1, kind, body })`. The version is checked on
//! read; a newer version is refused, never guessed at.

use serde::{Deserialize, Serialize};

/// The envelope format version this build writes.
pub const ENVELOPE_VERSION: u16 = 1;

/// What an envelope's body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PayloadKind {
    /// UTF-8 JSON text (result payloads, tool-visible data).
    Json,
    /// Program-defined bytes (checkpoints).
    Bytes,
}

/// A payload with its format version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Format version; [`ENVELOPE_VERSION`] when written by this build.
    pub version: u16,
    /// What the body holds.
    pub kind: PayloadKind,
    /// The payload.
    pub body: Vec<u8>,
}

/// Why an envelope cannot be read.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not a postcard envelope.
    #[error("failed to decode a payload envelope: {0}")]
    Decode(String),
    /// Written by a newer build.
    #[error("payload envelope version {found} is newer than {supported}")]
    TooNew {
        /// The version found.
        found: u16,
        /// The newest this build reads.
        supported: u16,
    },
    /// The body is not what its kind says.
    #[error("payload body is not valid {kind:?}: {message}")]
    Body {
        /// The declared kind.
        kind: PayloadKind,
        /// What is wrong.
        message: String,
    },
}

impl Envelope {
    /// Wraps a JSON value.
    pub fn json(value: &serde_json::Value) -> Envelope {
        Envelope { version: ENVELOPE_VERSION, kind: PayloadKind::Json, body: value.to_string().into_bytes() }
    }

    /// Wraps program bytes.
    pub fn bytes(body: Vec<u8>) -> Envelope {
        Envelope { version: ENVELOPE_VERSION, kind: PayloadKind::Bytes, body }
    }

    /// The JSON value of a `Json` envelope.
    pub fn to_json(&self) -> Result<serde_json::Value, EnvelopeError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| EnvelopeError::Body { kind: self.kind, message: e.to_string() })
    }

    /// Encodes for storage.
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("encoding a struct of integers and bytes cannot fail")
    }

    /// Decodes from storage, refusing versions newer than this build writes.
    pub fn decode(bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
        let env: Envelope = postcard::from_bytes(bytes).map_err(|e| EnvelopeError::Decode(e.to_string()))?;
        if env.version > ENVELOPE_VERSION {
            return Err(EnvelopeError::TooNew { found: env.version, supported: ENVELOPE_VERSION });
        }
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_newer_versions() {
        let env = Envelope::json(&serde_json::json!({"words": 3}));
        let back = Envelope::decode(&env.encode()).expect("decodes");
        assert_eq!(back, env);
        assert_eq!(back.to_json().expect("json"), serde_json::json!({"words": 3}));
        let newer = Envelope { version: ENVELOPE_VERSION + 1, ..env };
        assert!(matches!(Envelope::decode(&newer.encode()), Err(EnvelopeError::TooNew { .. })));
    }
}
