//! Brains as the configuration declares them: an id and what produces the turns. Profiles and
//! compaction summarizers refer to a brain by its id.
//!
//! This is the declaration only. Building a running brain from it (finding the named script,
//! reading the API key from its environment variable) happens when an agent starts, not in
//! the launch check, which reads nothing but the configuration.

use super::ids::BrainId;
use serde::Deserialize;
use std::fmt;

/// The kinds of brain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrainKind {
    /// `scripted`: a deterministic, named script (tests, examples, the demo).
    Scripted,
    /// `openai`: an OpenAI-compatible HTTP chat endpoint (any local or hosted server).
    Openai,
}

impl BrainKind {
    /// The kind as written.
    pub fn as_str(self) -> &'static str {
        match self {
            BrainKind::Scripted => "scripted",
            BrainKind::Openai => "openai",
        }
    }
}

impl fmt::Display for BrainKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the `brains` section as written. The fields of every kind sit side by side so
/// that the launch check can name every one that is missing or does not belong to the kind in
/// one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBrain {
    /// The id profiles refer to (required).
    pub id: Option<String>,
    /// `scripted` or `openai` (required).
    pub kind: Option<BrainKind>,
    /// `scripted` only: the name of the script to run (required for that kind).
    pub script: Option<String>,
    /// `openai` only: the endpoint's base URL, `http://` or `https://`, up to and including
    /// the API version (`http://localhost:8080/v1`) (required for that kind).
    pub base_url: Option<String>,
    /// `openai` only: the model name the endpoint serves (required for that kind).
    pub model: Option<String>,
    /// `openai` only: the NAME of the environment variable that holds the API key, never the
    /// key itself (required for that kind; a server without keys still gets a variable, which
    /// may be empty).
    pub api_key_env: Option<String>,
}

/// A checked brain declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrainSpec {
    pub(super) id: BrainId,
    pub(super) backend: BrainBackend,
}

impl BrainSpec {
    /// The brain's id.
    pub fn id(&self) -> &BrainId {
        &self.id
    }

    /// What produces the turns.
    pub fn backend(&self) -> &BrainBackend {
        &self.backend
    }

    /// The brain's kind.
    pub fn kind(&self) -> BrainKind {
        match self.backend {
            BrainBackend::Scripted { .. } => BrainKind::Scripted,
            BrainBackend::Openai { .. } => BrainKind::Openai,
        }
    }
}

/// What produces a brain's turns, with every field its kind needs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrainBackend {
    /// A deterministic script, by name.
    Scripted {
        /// The script's name (non-empty).
        script: String,
    },
    /// An OpenAI-compatible endpoint.
    Openai {
        /// `http://…` or `https://…`.
        base_url: String,
        /// The model name (non-empty).
        model: String,
        /// The name of the environment variable holding the API key: `[A-Za-z_][A-Za-z0-9_]*`.
        api_key_env: String,
    },
}
