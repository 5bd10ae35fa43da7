//! The `brains` section: every brain has a kind and every field its kind needs, and no field
//! of another kind.

use super::super::brain_ref::{BrainBackend, BrainKind, BrainSpec, RawBrain};
use super::super::ids::BrainId;
use super::ids::Index;
use super::{Problems, required_text};
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::BRAIN_FIELD_BYTES_MAX;

pub(super) fn check_brains(raw: &[RawBrain], index: &Index<'_>, problems: &mut Problems) -> Vec<BrainSpec> {
    let mut out = Vec::new();
    for (brain, entry) in raw.iter().zip(&index.brains) {
        let before = problems.count();
        let backend = check_brain(brain, &entry.path, problems);
        if problems.count() != before {
            continue;
        }
        let (Some(id), Some(backend)) = (entry.id.as_deref(), backend) else { continue };
        let id = BrainId::parse(id).expect("the index validated this id");
        out.push(BrainSpec { id, backend });
    }
    out
}

fn check_brain(brain: &RawBrain, path: &str, problems: &mut Problems) -> Option<BrainBackend> {
    for (field, value) in [
        ("script", &brain.script),
        ("base_url", &brain.base_url),
        ("model", &brain.model),
        ("api_key_env", &brain.api_key_env),
    ] {
        if let Some(value) = value {
            problems.over_limit(
                &format!("{path}.{field}"),
                None,
                value.len(),
                BRAIN_FIELD_BYTES_MAX,
                "bytes",
            );
        }
    }
    let Some(kind) = brain.kind else {
        problems.push(
            format!("{path}.kind"),
            ProblemCode::MissingField,
            None,
            "this brain has no `kind`; write `scripted` (a named script), `openai` (an OpenAI-compatible \
             endpoint) or `anthropic` (the Anthropic Messages API)",
        );
        return None;
    };
    let http_fields: [(&str, bool); 13] = [
        ("base_url", brain.base_url.is_some()),
        ("model", brain.model.is_some()),
        ("api_key_env", brain.api_key_env.is_some()),
        ("timeout_ms", brain.timeout_ms.is_some()),
        ("connect_timeout_ms", brain.connect_timeout_ms.is_some()),
        ("max_tokens", brain.max_tokens.is_some()),
        ("temperature", brain.temperature.is_some()),
        ("top_p", brain.top_p.is_some()),
        ("stop", brain.stop.is_some()),
        ("retries", brain.retries.is_some()),
        ("headers", brain.headers.is_some()),
        ("stream", brain.stream.is_some()),
        ("prices", brain.prices.is_some()),
    ];
    let foreign: Vec<&str> = match kind {
        BrainKind::Scripted => http_fields.iter().filter(|(_, set)| *set).map(|(f, _)| *f).collect(),
        BrainKind::Openai | BrainKind::Anthropic => {
            if brain.script.is_some() {
                vec!["script"]
            } else {
                vec![]
            }
        }
    };
    for field in foreign {
        problems.push(
            format!("{path}.{field}"),
            ProblemCode::FieldNotForKind,
            None,
            format!("a brain of kind `{kind}` does not use `{field}`; remove it, or change the kind"),
        );
    }
    match kind {
        BrainKind::Scripted => {
            let script = required_text(
                brain.script.as_deref(),
                &format!("{path}.script"),
                None,
                "a scripted brain needs `script`, the name of the script it runs",
                problems,
            )?;
            Some(BrainBackend::Scripted { script: script.to_owned() })
        }
        BrainKind::Openai | BrainKind::Anthropic => {
            let base_url = http_base_url(brain.base_url.as_deref(), kind, path, problems);
            let model = required_text(
                brain.model.as_deref(),
                &format!("{path}.model"),
                None,
                &format!("a brain of kind `{kind}` needs `model`, the model name its endpoint serves"),
                problems,
            );
            let api_key_env = api_key_env(brain.api_key_env.as_deref(), kind, path, problems);
            let settings = super::brain_settings::check_settings(brain, kind, path, problems);
            let (base_url, model, api_key_env, settings) =
                (base_url?.to_owned(), model?.to_owned(), api_key_env?.to_owned(), settings?);
            Some(match kind {
                BrainKind::Anthropic => BrainBackend::Anthropic { base_url, model, api_key_env, settings },
                _ => BrainBackend::Openai { base_url, model, api_key_env, settings },
            })
        }
    }
}

fn http_base_url<'a>(
    value: Option<&'a str>,
    kind: BrainKind,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a str> {
    let example = match kind {
        BrainKind::Anthropic => "https://api.anthropic.com/v1",
        _ => "http://localhost:8080/v1",
    };
    let url = required_text(
        value,
        &format!("{path}.base_url"),
        None,
        &format!("a brain of kind `{kind}` needs `base_url`, e.g. `{example}`"),
        problems,
    )?;
    let host = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match host {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !url.chars().any(char::is_whitespace) => {
            Some(url)
        }
        _ => {
            problems.push(
                format!("{path}.base_url"),
                ProblemCode::InvalidBaseUrl,
                None,
                "`base_url` must be an http:// or https:// URL with a host, up to and including the API \
                 version, e.g. `http://localhost:8080/v1`",
            );
            None
        }
    }
}

/// The variable's name. The value is never quoted in a problem: a key pasted here by mistake
/// must not end up in a log.
fn api_key_env<'a>(
    value: Option<&'a str>,
    kind: BrainKind,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a str> {
    let name = required_text(
        value,
        &format!("{path}.api_key_env"),
        None,
        &format!(
            "a brain of kind `{kind}` needs `api_key_env`, the name of the environment variable that holds \
             its API key (a server without keys still gets one; it may be empty)"
        ),
        problems,
    )?;
    if is_env_var_name(name) {
        return Some(name);
    }
    problems.push(
        format!("{path}.api_key_env"),
        ProblemCode::InvalidEnvVarName,
        None,
        "`api_key_env` is the NAME of the environment variable that holds the key (letters, digits and \
         `_`, not starting with a digit, e.g. `OPENAI_API_KEY`), never the key itself; if a key was \
         pasted here, move it to that variable and rotate it",
    );
    None
}

pub(in crate::agent::config) fn is_env_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
