//! Brains as the configuration declares them: an id and what produces the turns. Profiles and
//! compaction summarizers refer to a brain by its id.
//!
//! This is the declaration only. Building a running brain from it (finding the named script,
//! reading the API key from its environment variable) happens when an agent starts, not in
//! the launch check, which reads nothing but the configuration.

use super::ids::BrainId;
use crate::agent::brain::{ModelSettings, Prices};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// The kinds of brain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrainKind {
    /// `scripted`: a deterministic, named script (tests, examples, the demo).
    Scripted,
    /// `openai`: an OpenAI-compatible HTTP chat endpoint (any local or hosted server).
    Openai,
    /// `anthropic`: the Anthropic Messages API.
    Anthropic,
}

impl BrainKind {
    /// The kind as written.
    pub fn as_str(self) -> &'static str {
        match self {
            BrainKind::Scripted => "scripted",
            BrainKind::Openai => "openai",
            BrainKind::Anthropic => "anthropic",
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
    /// HTTP kinds: the bound on one request in milliseconds (default 300 000).
    pub timeout_ms: Option<u64>,
    /// HTTP kinds: the bound on connecting in milliseconds (default 10 000).
    pub connect_timeout_ms: Option<u64>,
    /// HTTP kinds: the answer's token limit (default: the server's; 4096 for `anthropic`).
    pub max_tokens: Option<u64>,
    /// HTTP kinds: sampling temperature (0 to 2 for `openai`, 0 to 1 for `anthropic`).
    pub temperature: Option<RawFloat>,
    /// HTTP kinds: nucleus sampling mass, above 0 and at most 1.
    pub top_p: Option<RawFloat>,
    /// HTTP kinds: stop sequences (at most 4 for `openai`, 16 for `anthropic`).
    pub stop: Option<Vec<String>>,
    /// HTTP kinds: retries after a failed attempt (default 4, at most 10).
    pub retries: Option<u64>,
    /// HTTP kinds: extra request headers, name to value.
    pub headers: Option<BTreeMap<String, String>>,
    /// HTTP kinds: stream answers as server-sent events (default true).
    pub stream: Option<bool>,
    /// HTTP kinds: token prices in dollars per million tokens, as decimal strings.
    pub prices: Option<RawPrices>,
}

/// A number as written (temperature, top_p). Compared by its bits, so that configurations
/// compare equal when written alike.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(transparent)]
pub struct RawFloat(pub f64);

impl PartialEq for RawFloat {
    fn eq(&self, other: &RawFloat) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for RawFloat {}

/// A brain's `prices` table as written: dollars per million tokens, decimal strings read
/// exactly (`"3.00"`), never floats.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrices {
    /// Plain input tokens (required).
    pub input: Option<String>,
    /// Output tokens (required).
    pub output: Option<String>,
    /// Input tokens read from the prompt cache (default: the input price).
    pub cache_read: Option<String>,
    /// Input tokens written to the prompt cache (default: the input price).
    pub cache_write: Option<String>,
}

/// A checked HTTP brain's settings: every value within its bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSettings {
    pub(super) timeout_ms: Option<u64>,
    pub(super) connect_timeout_ms: Option<u64>,
    pub(super) max_tokens: Option<u32>,
    pub(super) temperature: Option<RawFloat>,
    pub(super) top_p: Option<RawFloat>,
    pub(super) stop: Vec<String>,
    pub(super) retries: Option<u32>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) stream: Option<bool>,
    pub(super) prices: Option<Prices>,
}

impl HttpSettings {
    /// The brain settings these amount to, defaults filled in (streaming on unless the
    /// configuration turned it off).
    pub fn model_settings(&self) -> ModelSettings {
        let mut settings = ModelSettings::default();
        if let Some(ms) = self.timeout_ms {
            settings.timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.connect_timeout_ms {
            settings.connect_timeout = Duration::from_millis(ms);
        }
        settings.max_tokens = self.max_tokens;
        settings.temperature = self.temperature.map(|t| t.0);
        settings.top_p = self.top_p.map(|t| t.0);
        settings.stop = self.stop.clone();
        if let Some(retries) = self.retries {
            settings.retry.retries = retries;
        }
        settings.headers = self.headers.clone();
        settings.stream = self.stream.unwrap_or(true);
        settings.prices = self.prices;
        settings
    }
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

    /// The model it asks: the model name of an HTTP brain, the script's name of a scripted
    /// one (what a `model_request` span reports as `gen_ai.request.model`).
    pub fn model(&self) -> &str {
        match &self.backend {
            BrainBackend::Scripted { script } => script,
            BrainBackend::Openai { model, .. } | BrainBackend::Anthropic { model, .. } => model,
        }
    }

    /// The name of the environment variable that holds its API key, for an HTTP brain.
    pub fn api_key_env(&self) -> Option<&str> {
        match &self.backend {
            BrainBackend::Scripted { .. } => None,
            BrainBackend::Openai { api_key_env, .. } | BrainBackend::Anthropic { api_key_env, .. } => {
                Some(api_key_env)
            }
        }
    }

    /// The brain's kind.
    pub fn kind(&self) -> BrainKind {
        match self.backend {
            BrainBackend::Scripted { .. } => BrainKind::Scripted,
            BrainBackend::Openai { .. } => BrainKind::Openai,
            BrainBackend::Anthropic { .. } => BrainKind::Anthropic,
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
        /// Bounds, sampling, headers, retries, streaming, prices.
        settings: HttpSettings,
    },
    /// The Anthropic Messages API.
    Anthropic {
        /// `http://…` or `https://…`, up to the version (`https://api.anthropic.com/v1`).
        base_url: String,
        /// The model name (non-empty).
        model: String,
        /// The name of the environment variable holding the API key.
        api_key_env: String,
        /// Bounds, sampling, headers, retries, streaming, prices.
        settings: HttpSettings,
    },
}
