//! Identifier newtypes. Each id kind has its own type so that a pid can never be passed where
//! a grant id is expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $label:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// The id as a UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", $label, self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdParseError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim())
                    .map($name)
                    .map_err(|_| IdParseError { kind: $label, text: s.to_string() })
            }
        }
    };
}

uuid_id!(
    /// A process id: a UUID v7, so ids sort by creation time.
    Pid,
    "pid"
);
uuid_id!(
    /// A capability grant id.
    GrantId,
    "grant"
);
uuid_id!(
    /// An object id.
    Oid,
    "oid"
);

/// A string that does not parse as the id it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {text:?}: expected a UUID")]
pub struct IdParseError {
    /// Which id kind was expected.
    pub kind: &'static str,
    /// The text that was given.
    pub text: String,
}

/// A runtime epoch: increases by one each time a runtime takes ownership of a state directory.
/// A `running` row owned by an older epoch is a stale execution.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Epoch(pub u64);

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The id of an image: what a process executes, with its defaults.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ImageId(pub String);

impl ImageId {
    /// The image id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ImageId {
    fn from(s: &str) -> Self {
        ImageId(s.to_string())
    }
}

/// Where fresh ids come from. The kernel never invents ids itself (that would need a clock or
/// randomness); the runtime supplies UUID v7 ids, tests supply deterministic ones.
pub trait IdSource {
    /// A fresh, never-before-issued process id.
    fn pid(&mut self) -> Pid;
    /// A fresh grant id.
    fn grant(&mut self) -> GrantId;
    /// A fresh object id.
    fn oid(&mut self) -> Oid;
}

/// Deterministic ids counting up from a seed; for tests and property tests.
#[derive(Debug, Clone)]
pub struct CountingIds {
    next: u128,
}

impl CountingIds {
    /// Ids starting just after `seed`.
    pub fn new(seed: u64) -> Self {
        CountingIds { next: (u128::from(seed) << 64) + 1 }
    }
    fn take(&mut self) -> Uuid {
        let id = Uuid::from_u128(self.next);
        self.next += 1;
        id
    }
}

impl IdSource for CountingIds {
    fn pid(&mut self) -> Pid {
        Pid(self.take())
    }
    fn grant(&mut self) -> GrantId {
        GrantId(self.take())
    }
    fn oid(&mut self) -> Oid {
        Oid(self.take())
    }
}
