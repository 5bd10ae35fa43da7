//! Ids of brains, profiles, machines and states: short words a model can say.

use crate::agent::limits::ID_BYTES_MAX;
use std::borrow::Borrow;
use std::fmt;

/// Why a text is not an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The text is empty.
    #[error("an id cannot be empty")]
    Empty,
    /// The text is longer than [`ID_BYTES_MAX`].
    #[error("an id is at most {ID_BYTES_MAX} bytes")]
    TooLong,
    /// The text has a character outside `A-Z a-z 0-9 _ -`, or starts with `_` or `-`.
    #[error("an id is ASCII letters, digits, `_` and `-`, starting with a letter or digit")]
    Syntax,
}

/// Checks the id syntax: 1 to [`ID_BYTES_MAX`] bytes of ASCII letters, digits, `_` and `-`,
/// starting with a letter or digit. Ids appear in dotted problem paths
/// (`profiles.planner.roster[0]`), so they hold no dot.
pub(crate) fn validate(text: &str) -> Result<(), IdError> {
    let first = text.bytes().next().ok_or(IdError::Empty)?;
    if text.len() > ID_BYTES_MAX {
        return Err(IdError::TooLong);
    }
    let body_ok = text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !first.is_ascii_alphanumeric() || !body_ok {
        return Err(IdError::Syntax);
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Parses an id, checking its syntax (see [`IdError`]).
            pub fn parse(text: &str) -> Result<Self, IdError> {
                validate(text)?;
                Ok(Self(text.to_owned()))
            }

            /// The id as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// The id of a brain declared in the `brains` section.
    BrainId
);
id_type!(
    /// The id of an agent profile.
    ProfileId
);
id_type!(
    /// The id of a declared state machine. Machines share one namespace with profiles, since a
    /// roster names either.
    MachineId
);
id_type!(
    /// The id of a state within one machine.
    StateId
);

/// What a delegation roster names: a profile, or a machine (entered at its entry state).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Run this profile.
    Profile(ProfileId),
    /// Enter this machine at its entry state.
    Machine(MachineId),
}

impl Target {
    /// The id as written on the roster.
    pub fn as_str(&self) -> &str {
        match self {
            Target::Profile(id) => id.as_str(),
            Target::Machine(id) => id.as_str(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
