//! The scenario runner.
