//! Reading a spec's YAML into the raw types, and turning the parser's refusals into problems:
//! a YAML fault stops the parser and is reported alone; a field of the wrong type or one the
//! format does not have is reported with every other such field of the spec.
//!
//! YAML is read as YAML 1.2 (`yes`/`no` are strings), duplicate keys are refused, and aliases
//! are expanded within serde-saphyr's default budget, as for agent configurations.

use super::report::{RigProblem, RigProblemCode};
use super::text::{clean, location};
use crate::rig::limits::RIG_SPEC_BYTES_MAX;
use serde::Deserialize;
use serde_path_to_error::{Path, Segment, Track};

/// The most field problems one read reports.
const FIELD_PROBLEMS_MAX: usize = 64;

/// Deserializes `text` into `T`, or its problems: the first with its line and column, then
/// every other field problem of the spec, each with its path.
pub(crate) fn read<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, Vec<RigProblem>> {
    read_spanned(text).map_err(|refused| {
        let field_level = refused.field_level;
        let mut problems = vec![refused.problem];
        if field_level {
            more_problems::<T>(text, &mut problems);
        }
        problems
    })
}

/// Why a streaming read stopped.
struct Stopped {
    /// The problem, with its line and column.
    problem: RigProblem,
    /// Whether it is a field's, so the rest of the spec can still be read.
    field_level: bool,
    /// The parser's path to it.
    path: Option<Path>,
}

/// The streaming read, with spans: `T`, or why it stopped.
fn read_spanned<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, Box<Stopped>> {
    if text.len() > RIG_SPEC_BYTES_MAX {
        return Err(Box::new(Stopped {
            problem: RigProblem {
                member: None,
                path: String::new(),
                line: None,
                column: None,
                code: RigProblemCode::LimitExceeded,
                message: format!(
                    "the spec is {} bytes, over the limit of {RIG_SPEC_BYTES_MAX}; a rig spec is a page of YAML, \
                 so check the path",
                    text.len()
                ),
            },
            field_level: false,
            path: None,
        }));
    }
    let options = serde_saphyr::options! { strict_booleans: true };
    let mut track = Track::new();
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        T::deserialize(serde_path_to_error::Deserializer::new(de, &mut track))
    });
    result.map_err(|e| {
        let path = track.path();
        let problem = refusal(&e, &path);
        let field_level = matches!(
            e.without_snippet(),
            serde_saphyr::Error::SerdeUnknownField { .. } | serde_saphyr::Error::SerdeInvalidType { .. }
        ) || problem.code == RigProblemCode::UnknownField;
        Box::new(Stopped { problem, field_level, path: Some(path) })
    })
}

/// Every field problem after the first: the spec read as plain data, each faulty field set
/// aside in turn and the rest written back (as JSON, which is YAML) and read again the same way (so a value is
/// read exactly as in the spec). Lines and columns are the first problem's only, since the
/// text read again is not the spec's; the paths name the rest.
fn more_problems<T: for<'de> Deserialize<'de>>(text: &str, problems: &mut Vec<RigProblem>) {
    let options = serde_saphyr::options! { strict_booleans: true };
    let Ok(mut value) = serde_saphyr::from_str_with_options::<serde_json::Value>(text, options) else {
        return;
    };
    for _ in 0..FIELD_PROBLEMS_MAX {
        // JSON is YAML 1.2: the data written back reads as the spec's own scalars did.
        let Ok(again) = serde_json::to_string(&value) else {
            return;
        };
        let Err(stopped) = read_spanned::<T>(&again) else {
            return;
        };
        let Stopped { mut problem, field_level, path } = *stopped;
        if !problems.iter().any(|p| p.path == problem.path) {
            (problem.line, problem.column) = (None, None);
            problems.push(problem);
        }
        let Some(path) = path.filter(|_| field_level) else {
            return;
        };
        if !crate::agent::config::take_out(&mut value, &written_path(&path)) {
            return;
        }
    }
}

/// The parser's path as the spec writes it: the `value` step each `Spanned` adds dropped.
fn written_path(path: &Path) -> Vec<&Segment> {
    let mut out = Vec::new();
    let mut segments = path.iter().peekable();
    while let Some(segment) = segments.next() {
        out.push(segment);
        if matches!(segments.peek(), Some(Segment::Map { key }) if key == "value") {
            segments.next();
        }
    }
    out
}

fn refusal(error: &serde_saphyr::Error, path: &Path) -> RigProblem {
    let error = error.without_snippet();
    let code = match error {
        serde_saphyr::Error::SerdeUnknownField { .. } => RigProblemCode::UnknownField,
        serde_saphyr::Error::DuplicateMappingKey { .. } => RigProblemCode::DuplicateKey,
        _ => RigProblemCode::InvalidYaml,
    };
    let said = serde_saphyr::MessageFormatter::format_message(&serde_saphyr::UserMessageFormatter, error);
    let what_to_do = match code {
        RigProblemCode::UnknownField => "; remove it or fix its spelling (docs/rigs.md lists every field)",
        RigProblemCode::DuplicateKey => "; keep one of them",
        _ => "",
    };
    let (line, column) = location(error.location().as_ref());
    RigProblem {
        member: None,
        path: spec_path(path),
        line,
        column,
        code,
        message: format!("{}{what_to_do}", clean(&crate::agent::config::plain_words(&said))),
    }
}

/// The parser's path in the spec's notation: `members[1].session_source.ref.kind`,
/// `pods[1].members[0].session_source.ref.kind`, `pods[0].edges[2].to`. Every raw field and
/// entry is a `Spanned`, whose own `value` step follows it and is dropped here, at any depth.
fn spec_path(path: &Path) -> String {
    let mut out = String::new();
    let mut segments = path.iter().peekable();
    while let Some(segment) = segments.next() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&clean(key));
            }
            Segment::Unknown => continue,
        }
        if matches!(segments.peek(), Some(Segment::Map { key }) if key == "value") {
            segments.next();
        }
    }
    out
}
