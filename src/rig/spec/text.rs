//! Small helpers for the texts a report quotes and the places it names.

use serde_saphyr::Location;

/// The longest excerpt of a written value a message quotes, in bytes.
const EXCERPT_BYTES_MAX: usize = 64;

/// A text fit for one line of a report: control characters (line breaks included) escaped.
pub(crate) fn clean(text: &str) -> String {
    if text.chars().any(char::is_control) {
        text.chars()
            .flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] })
            .collect()
    } else {
        text.to_owned()
    }
}

/// A written value as a message quotes it: cleaned, and cut at [`EXCERPT_BYTES_MAX`] bytes.
pub(crate) fn excerpt(text: &str) -> String {
    bounded(text, EXCERPT_BYTES_MAX)
}

/// A text fit for one line of a report, cleaned and cut at `bytes_max` bytes (marked `…`).
pub(crate) fn bounded(text: &str, bytes_max: usize) -> String {
    let kept = crate::actors::text::prefix(text, bytes_max);
    if kept.len() == text.len() { clean(text) } else { format!("{}…", clean(kept)) }
}

/// A location's line and column, if it is known (serde-saphyr uses line 0 for unknown).
pub(crate) fn location(at: Option<&Location>) -> (Option<usize>, Option<usize>) {
    match at {
        Some(at) if at.line() > 0 => {
            (usize::try_from(at.line()).ok(), usize::try_from(at.column()).ok().filter(|c| *c > 0))
        }
        _ => (None, None),
    }
}
