//! Lexical path resolution for working directories and inherited paths.
//!
//! Paths are resolved against the parent's cwd at launch without touching the filesystem:
//! `.` and `..` are folded, and a path that climbs above `/` is invalid rather than clamped.

use crate::limits;

/// Why a path is refused.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum PathError {
    /// Empty path.
    #[error("the path is empty")]
    Empty,
    /// Longer than the limit.
    #[error("the path is longer than {max} bytes", max = limits::PATH_BYTES_MAX)]
    TooLong,
    /// Contains a NUL byte.
    #[error("the path {path:?} contains a NUL byte")]
    Nul {
        /// The path as given.
        path: String,
    },
    /// Climbs above the filesystem root.
    #[error("the path {path:?} climbs above / when resolved against {base:?}")]
    EscapesRoot {
        /// The path as given.
        path: String,
        /// The directory it was resolved against.
        base: String,
    },
    /// The base directory is not absolute.
    #[error("the base directory {base:?} is not absolute")]
    RelativeBase {
        /// The base as given.
        base: String,
    },
}

/// Resolves `path` against the absolute directory `base`, lexically.
pub fn resolve(base: &str, path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.len() > limits::PATH_BYTES_MAX || base.len() > limits::PATH_BYTES_MAX {
        return Err(PathError::TooLong);
    }
    if path.contains('\0') {
        return Err(PathError::Nul { path: path.to_string() });
    }
    if !base.starts_with('/') {
        return Err(PathError::RelativeBase { base: base.to_string() });
    }
    let mut parts: Vec<&str> = Vec::new();
    let start = if path.starts_with('/') { path } else { base };
    let rest = if path.starts_with('/') { "" } else { path };
    for seg in start.split('/').chain(rest.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::EscapesRoot { path: path.to_string(), base: base.to_string() });
                }
            }
            s => parts.push(s),
        }
    }
    let joined = format!("/{}", parts.join("/"));
    if joined.len() > limits::PATH_BYTES_MAX {
        return Err(PathError::TooLong);
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_against_base() {
        assert_eq!(resolve("/work/a", "b/c").as_deref(), Ok("/work/a/b/c"));
        assert_eq!(resolve("/work/a", "../b").as_deref(), Ok("/work/b"));
        assert_eq!(resolve("/work/a", "/abs/./x/").as_deref(), Ok("/abs/x"));
        assert_eq!(resolve("/", ".").as_deref(), Ok("/"));
    }

    #[test]
    fn refuses_escape_empty_and_nul() {
        assert!(matches!(resolve("/a", "../../x"), Err(PathError::EscapesRoot { .. })));
        assert_eq!(resolve("/a", ""), Err(PathError::Empty));
        assert!(matches!(resolve("/a", "x\0y"), Err(PathError::Nul { .. })));
        assert!(matches!(resolve("rel", "x"), Err(PathError::RelativeBase { .. })));
    }
}
