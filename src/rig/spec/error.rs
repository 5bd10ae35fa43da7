//! Why a rig spec file cannot be loaded.

use super::report::RigSpecReport;
use std::path::PathBuf;

/// Why [`load_rig`](super::load_rig) produced no rig spec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadRigError {
    /// The file could not be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file was read, and the spec in it has problems.
    #[error("{} is not a valid rig spec ({}):\n{report}", path.display(), crate::agent::config::problem_count(report.problems.len()))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem found.
        report: RigSpecReport,
    },
}
