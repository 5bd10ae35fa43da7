//! The memories module: texts under keys. How memories are shared with forks (their scope)
//! is the turn loop's business; this is only the contents.

use super::error::{ModuleError, check_len, check_name};
use super::limits::{MEMORIES_MAX, MEMORY_TEXT_BYTES_MAX, MODULE_TEXT_BYTES_MAX, NAME_BYTES_MAX};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Texts under keys, listed in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memories {
    entries: BTreeMap<String, String>,
}

impl Memories {
    /// No memories.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `text` under `key`, replacing what was there; returns whether it replaced
    /// something. Refuses an empty or overlong key, an overlong text, a new key past
    /// [`MEMORIES_MAX`] and memories past [`MODULE_TEXT_BYTES_MAX`].
    pub fn remember(&mut self, key: String, text: String) -> Result<bool, ModuleError> {
        check_name("memory key", &key, NAME_BYTES_MAX)?;
        check_len("memory text", &text, MEMORY_TEXT_BYTES_MAX)?;
        let old = self.entries.get(&key);
        if old.is_none() && self.entries.len() >= MEMORIES_MAX {
            return Err(ModuleError::TooMany { what: "memories", max: MEMORIES_MAX });
        }
        let old_bytes = old.map_or(0, |t| key.len() + t.len());
        let total = self.text_bytes() - old_bytes + key.len() + text.len();
        if total > MODULE_TEXT_BYTES_MAX {
            return Err(ModuleError::TooLarge { what: "memories", bytes: total, max: MODULE_TEXT_BYTES_MAX });
        }
        Ok(self.entries.insert(key, text).is_some())
    }

    /// The text under a key.
    pub fn recall(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Removes a key; returns whether it was there.
    pub fn forget(&mut self, key: &str) -> bool {
        self.entries.remove(key).is_some()
    }

    /// Every memory, key and text, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(key, text)| (key.as_str(), text.as_str()))
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn text_bytes(&self) -> usize {
        self.entries.iter().map(|(key, text)| key.len() + text.len()).sum()
    }
}
