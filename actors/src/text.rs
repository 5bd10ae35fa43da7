//! Cutting text to a bound: the one place a byte or character bound meets UTF-8.
//!
//! Every bounded text in the workspace (a reason kept in an outcome, an excerpt quoted in an
//! error, a command's output kept in a seat record, an input quoted back to a caller) is cut
//! by these functions, so a cut never splits a character and never panics.

/// The longest prefix of `text` at most `max_bytes` bytes long that ends on a character
/// boundary (all of `text` when it fits).
pub fn prefix(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The longest suffix of `text` at most `max_bytes` bytes long that starts on a character
/// boundary (all of `text` when it fits).
pub fn suffix(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `text` cut to at most `max_bytes` bytes on a character boundary, followed by `…` when
/// something was cut.
pub fn excerpt(text: &str, max_bytes: usize) -> String {
    let kept = prefix(text, max_bytes);
    if kept.len() == text.len() { kept.to_string() } else { format!("{kept}…") }
}

/// The first `max_chars` characters of `text`, and the number of characters cut after them
/// (`None` when nothing was).
pub fn prefix_chars(text: &str, max_chars: usize) -> (&str, Option<usize>) {
    match text.char_indices().nth(max_chars) {
        None => (text, None),
        Some((end, _)) => (&text[..end], Some(text[end..].chars().count())),
    }
}

/// `text` in at most `max_chars` characters, the last of them `…` when something was cut (a
/// table cell, a one-line summary).
pub fn excerpt_chars(text: &str, max_chars: usize) -> String {
    match prefix_chars(text, max_chars) {
        (all, None) => all.to_string(),
        (_, Some(_)) => format!("{}…", prefix_chars(text, max_chars.saturating_sub(1)).0),
    }
}

#[cfg(test)]
mod tests {
    use super::{excerpt, excerpt_chars, prefix, prefix_chars, suffix};

    #[test]
    fn cuts_never_split_a_character() {
        // "é" is two bytes: a bound inside it moves to the boundary before (or after) it.
        assert_eq!(prefix("aéb", 2), "a");
        assert_eq!(prefix("aéb", 3), "aé");
        assert_eq!(prefix("abc", 8), "abc");
        assert_eq!(prefix("é", 0), "");
        assert_eq!(suffix("aéb", 2), "b");
        assert_eq!(suffix("aéb", 3), "éb");
        assert_eq!(suffix("abc", 8), "abc");
        assert_eq!(excerpt("abc", 8), "abc");
        assert_eq!(excerpt("aé", 2), "a…");
        assert_eq!(prefix_chars("aéb", 2), ("aé", Some(1)));
        assert_eq!(prefix_chars("aéb", 3), ("aéb", None));
        assert_eq!(excerpt_chars("aéb", 3), "aéb");
        assert_eq!(excerpt_chars("aébc", 3), "aé…");
    }

    #[test]
    fn every_bound_of_a_mixed_text_cuts_on_a_boundary() {
        let text = "a€b😀c";
        for max in 0..=text.len() + 1 {
            let p = prefix(text, max);
            let s = suffix(text, max);
            assert!(p.len() <= max && text.starts_with(p), "{max}: {p:?}");
            assert!(s.len() <= max && text.ends_with(s), "{max}: {s:?}");
        }
    }
}
