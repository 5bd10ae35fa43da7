//! The notebook module: named pages of text.

use super::error::{ModuleError, check_name};
use super::limits::{MODULE_TEXT_BYTES_MAX, NAME_BYTES_MAX, NOTEBOOK_PAGE_BYTES_MAX, NOTEBOOK_PAGES_MAX};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Named pages of text, listed in name order. Writing a page creates it; a page is never
/// deleted, only rewritten.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notebook {
    pages: BTreeMap<String, String>,
}

impl Notebook {
    /// An empty notebook.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces a page's text, or appends to it when `append` is set (a page that does not
    /// exist yet starts empty either way). Returns the page's new length in bytes. Refuses
    /// an empty or overlong name, a page past [`NOTEBOOK_PAGE_BYTES_MAX`], a new page past
    /// [`NOTEBOOK_PAGES_MAX`] and a notebook past [`MODULE_TEXT_BYTES_MAX`].
    pub fn write(&mut self, page: String, text: String, append: bool) -> Result<usize, ModuleError> {
        check_name("page name", &page, NAME_BYTES_MAX)?;
        let old = self.pages.get(&page);
        if old.is_none() && self.pages.len() >= NOTEBOOK_PAGES_MAX {
            return Err(ModuleError::TooMany { what: "notebook", max: NOTEBOOK_PAGES_MAX });
        }
        let old_bytes = old.map_or(0, String::len);
        let new_bytes = if append { old_bytes + text.len() } else { text.len() };
        if new_bytes > NOTEBOOK_PAGE_BYTES_MAX {
            return Err(ModuleError::TooLarge {
                what: "page",
                bytes: new_bytes,
                max: NOTEBOOK_PAGE_BYTES_MAX,
            });
        }
        let total = self.text_bytes() - old_bytes + page.len() * usize::from(old.is_none()) + new_bytes;
        if total > MODULE_TEXT_BYTES_MAX {
            return Err(ModuleError::TooLarge { what: "notebook", bytes: total, max: MODULE_TEXT_BYTES_MAX });
        }
        let entry = self.pages.entry(page).or_default();
        if append {
            entry.push_str(&text);
        } else {
            *entry = text;
        }
        debug_assert_eq!(entry.len(), new_bytes);
        Ok(new_bytes)
    }

    /// A page's text.
    pub fn read(&self, page: &str) -> Option<&str> {
        self.pages.get(page).map(String::as_str)
    }

    /// Every page, name and text, in name order.
    pub fn pages(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pages.iter().map(|(name, text)| (name.as_str(), text.as_str()))
    }

    /// Whether the notebook has no page.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    fn text_bytes(&self) -> usize {
        self.pages.iter().map(|(name, text)| name.len() + text.len()).sum()
    }
}
