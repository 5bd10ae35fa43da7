//! Shared rendering helpers for command output.
