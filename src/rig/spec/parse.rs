//! The entry points: a rig spec or an expansion's members from YAML text, or a spec from a file.

use super::check::{ConfigBook, Joining, check_new_members, check_rig};
use super::error::LoadRigError;
use super::raw::{RawMembers, RawRig};
use super::report::RigSpecReport;
use super::yaml::read;
use crate::rig::limits::RIG_SPEC_BYTES_MAX;
use crate::rig::{Member, RigSpec};
use std::io::Read;
use std::path::Path;

fn report(problems: Vec<super::report::RigProblem>) -> RigSpecReport {
    debug_assert!(!problems.is_empty(), "a report names at least one problem");
    RigSpecReport { problems }
}

/// Parses and checks a rig spec, flat or OpenRig-shaped: a [`RigSpec`], or a report naming
/// every problem (a YAML fault stops the parser, so it is reported alone; fields of the wrong
/// type or unknown ones are all reported, each with its path).
///
/// The text alone says nothing of where the spec's agent configurations are, so they are not
/// read: [`load_rig`] checks them too.
pub fn parse_rig(text: &str) -> Result<RigSpec, RigSpecReport> {
    parse_rig_with(text, None)
}

fn parse_rig_with(text: &str, book: Option<&ConfigBook>) -> Result<RigSpec, RigSpecReport> {
    let raw: RawRig = read(text).map_err(report)?;
    check_rig(&raw, book).map_err(report)
}

/// Parses and checks the members of a `rig expand` payload (a document `members: [...]`, each
/// member in the rig spec's shape) on their own: ids well formed and unique among themselves.
/// [`check_expansion`](super::check_expansion) then checks them against the rig they join;
/// [`parse_expansion`] does both with the lines of the payload.
pub fn parse_members(text: &str) -> Result<Vec<Member>, RigSpecReport> {
    let raw: RawMembers = read(text).map_err(report)?;
    check_new_members(&raw.members, &Joining::new_rig()).map_err(report)
}

/// Parses and checks the members of a `rig expand` payload joining `rig`: as [`parse_members`],
/// and no member may take an id the rig already has, nor make it larger than
/// [`MEMBERS_MAX`](crate::rig::limits::MEMBERS_MAX).
pub fn parse_expansion(text: &str, rig: &RigSpec) -> Result<Vec<Member>, RigSpecReport> {
    let raw: RawMembers = read(text).map_err(report)?;
    let joining = Joining {
        rig: Some(rig.id.as_str()),
        taken: rig.members.iter().map(|member| member.id.as_str()).collect(),
    };
    check_new_members(&raw.members, &joining).map_err(report)
}

/// Reads, parses and checks a rig spec file, as [`parse_rig`] does, and in the same pass every
/// agent configuration its members name (relative to the file's directory): each must load and
/// pass its own check (`agent_config_invalid`), and each member's `profile` must be one of its
/// profiles or machines (`unknown_profile`), of the member's runtime (`profile_runtime_mismatch`).
pub fn load_rig(path: impl AsRef<Path>) -> Result<RigSpec, LoadRigError> {
    let path = path.as_ref();
    // Read one byte past the limit, so that a huge file (a log named by mistake) is refused by
    // the size check without being read whole.
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(RIG_SPEC_BYTES_MAX as u64 + 1).read_to_string(&mut text))
        .map_err(|source| LoadRigError::Read { path: path.to_owned(), source })?;
    let book = ConfigBook::new(path.parent().unwrap_or(Path::new("")));
    parse_rig_with(&text, Some(&book))
        .map_err(|report| LoadRigError::Invalid { path: path.to_owned(), report })
}
