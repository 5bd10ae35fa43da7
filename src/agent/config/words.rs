//! Parser refusals in the words of the person who writes the file: no Rust type names, no
//! debug output, and counts that agree with their noun. The agent configuration and the rig
//! spec readers both say their parser's refusals through here.

/// Rewrites a YAML or TOML parser's message: `expected struct AgentArgs` becomes `expected a
/// mapping of fields`, `expected enum Kind` becomes `expected one of the allowed values`, and
/// a breached alias budget (`budget breached: AliasAnchorRatio { aliases: 120, anchors: 4 }`)
/// is said as the limit it is, with what to do.
pub fn plain_words(message: &str) -> String {
    let mut out = replace_type_names(message, "expected struct ", "expected a mapping of fields");
    out = replace_type_names(&out, "expected enum ", "expected one of the allowed values");
    for (names, words) in NUMBER_WORDS {
        for name in names {
            out = replace_word(&out, &format!("expected {name}"), words);
        }
    }
    match out.find("budget breached: ") {
        Some(at) => {
            let (head, tail) = out.split_at(at);
            let breach = &tail["budget breached: ".len()..];
            format!("{head}{}", budget_words(breach))
        }
        None => out,
    }
}

/// Rust's number types as a person who writes the file says them.
const NUMBER_WORDS: [(&[&str], &str); 3] = [
    (&["u8", "u16", "u32", "u64", "u128", "usize"], "expected a whole number, 0 or more"),
    (&["i8", "i16", "i32", "i64", "i128", "isize"], "expected a whole number"),
    (&["f32", "f64"], "expected a number"),
];

/// Replaces every `needle` that is a whole word (not followed by a letter, digit or `_`) with
/// `words`.
fn replace_word(message: &str, needle: &str, words: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(needle) {
        let after = &rest[at + needle.len()..];
        let whole = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if whole { words } else { needle });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `1 problem`, `3 problems`.
pub fn problem_count(count: usize) -> String {
    if count == 1 { "1 problem".to_owned() } else { format!("{count} problems") }
}

/// Replaces `prefix` followed by a type name with `words`.
fn replace_type_names(message: &str, prefix: &str, words: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        let name_len =
            after.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(after.len());
        if name_len == 0 {
            out.push_str(prefix);
        } else {
            out.push_str(words);
        }
        rest = &after[name_len..];
    }
    out.push_str(rest);
    out
}

/// `AliasAnchorRatio { aliases: 120, anchors: 4 } …` as the limit it names.
fn budget_words(breach: &str) -> String {
    let name_len = breach.find(|c: char| !c.is_alphanumeric()).unwrap_or(breach.len());
    let (name, rest) = breach.split_at(name_len);
    let (figures, after) = match rest.trim_start().strip_prefix('{').and_then(|r| r.split_once('}')) {
        Some((inside, after)) => (Some(inside.trim().replace(": ", " ")), after),
        None => (None, rest),
    };
    let mut said = format!("the document is over the YAML reader's limit on {}", spaced_lower(name));
    if let Some(figures) = figures.filter(|f| !f.is_empty()) {
        said.push_str(&format!(" ({figures})"));
    }
    said.push_str(if name.contains("Alias") || name.contains("Anchor") {
        "; aliases and anchors are expanded within a fixed budget, so write the repeated values out \
         or use fewer aliases"
    } else {
        "; a document is read within a fixed budget, so make it smaller or less deeply nested"
    });
    said.push_str(after);
    said
}

/// `AliasAnchorRatio` → `alias anchor ratio`.
fn spaced_lower(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_become_words() {
        assert_eq!(
            plain_words("profiles[0]: invalid type: string \"x\", expected struct AgentArgs at line 2"),
            "profiles[0]: invalid type: string \"x\", expected a mapping of fields at line 2"
        );
        assert_eq!(plain_words("expected enum BrainKind"), "expected one of the allowed values");
        assert_eq!(plain_words("expected struct "), "expected struct ");
    }

    #[test]
    fn a_budget_breach_is_said_as_a_limit() {
        let said = plain_words("budget breached: AliasAnchorRatio { aliases: 120, anchors: 4 } at line 3");
        assert_eq!(
            said,
            "the document is over the YAML reader's limit on alias anchor ratio (aliases 120, anchors 4); \
             aliases and anchors are expanded within a fixed budget, so write the repeated values out or \
             use fewer aliases at line 3"
        );
        assert!(!said.contains('{'));
        let depth = plain_words("budget breached: Depth { depth: 3000 }");
        assert!(depth.contains("limit on depth (depth 3000)") && !depth.contains("aliases"), "{depth}");
    }

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(problem_count(1), "1 problem");
        assert_eq!(problem_count(0), "0 problems");
        assert_eq!(problem_count(7), "7 problems");
    }
}
