//! The launch decision: given a parent and a request, either a complete plan (the child's row,
//! its grants, the parent's new account) or the one rule that denies it. A denial issues no pid.

use super::budget::{Account, Budget, BudgetExceeded};
use super::capability::{
    self, CapabilityError, CapabilityRequest, Constraints, Grant, Rights, find_delegation_source,
};
use super::ids::{IdSource, ImageId};
use super::path::{self, PathError};
use super::process::ProcessRow;
use super::status::Status;
use crate::limits;
use serde::{Deserialize, Serialize};

/// The resource whose live grant (with `execute`) lets a process launch children.
pub const SPAWN_RESOURCE: &str = "process:spawn";

/// The resource naming read authority on an image.
pub fn image_resource(image: &ImageId) -> String {
    format!("image:{}", image.as_str())
}

/// A path the child should inherit, as a filesystem grant derived from the parent's.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PathRequest {
    /// Absolute, or relative to the parent's cwd at launch.
    pub path: String,
    /// Rights on it (default: read).
    pub rights: Rights,
    /// Whether the child may delegate it further.
    pub delegable: bool,
}

/// What a launch asks for (spawn and fork share it).
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct LaunchRequest {
    /// The child's goal.
    pub goal: String,
    /// Its image; default the parent's.
    pub image: Option<ImageId>,
    /// Its working directory, relative to the parent's cwd; default the parent's cwd.
    pub working_directory: Option<String>,
    /// Capabilities to delegate.
    pub inherit_capabilities: Vec<CapabilityRequest>,
    /// Paths to delegate.
    pub inherit_paths: Vec<PathRequest>,
    /// An explicit budget; omitted dimensions are attenuated from the parent's remaining.
    pub resource_budget: Option<Budget>,
    /// A data-flow clearance for the child, no wider than the parent's; omitted, the parent's.
    pub clearance: Option<std::collections::BTreeSet<String>>,
    /// An idempotency key, unique per parent: a second launch with the same key launches
    /// nothing and answers the first launch's result (durably, so across a crash too).
    #[serde(default)]
    pub launch_key: Option<String>,
    /// When the child is restarted after it ends (default `temporary`: never).
    #[serde(default)]
    pub restart: super::restart::RestartPolicy,
    /// How the child supervises its own children; omitted, [`Supervision::DEFAULT`].
    ///
    /// [`Supervision::DEFAULT`]: super::restart::Supervision::DEFAULT
    #[serde(default)]
    pub supervision: Option<super::restart::Supervision>,
}

/// What the kernel knows of an image.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ImageInfo {
    /// Its id.
    pub id: ImageId,
    /// Capabilities its program needs. They declare needs and grant nothing.
    pub required_capabilities: Vec<String>,
}

/// The parent as the launch decision sees it.
#[derive(Clone, Copy, Debug)]
pub struct Parent<'a> {
    /// Its row.
    pub row: &'a ProcessRow,
    /// Its grants (live and revoked).
    pub grants: &'a [Grant],
    /// How long it has been running, for the wall-time dimension.
    pub elapsed_ms: u64,
    /// How many children it has had.
    pub children: usize,
}

/// A complete, approved launch.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LaunchPlan {
    /// The child's row, `runnable`.
    pub child: ProcessRow,
    /// The child's grants, each derived from a live delegable parent grant.
    pub grants: Vec<Grant>,
    /// The parent's account with the child's budget reserved.
    pub parent_account: Account,
}

/// The one rule that denied a launch.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum LaunchDenied {
    /// The parent holds no live `process:spawn` grant with `execute`.
    #[error("launch denied: the parent holds no live process:spawn capability with execute")]
    MissingSpawnCapability,
    /// A requested capability cannot be delegated.
    #[error("launch denied: inherit_capabilities[{index}]: {error}")]
    Capability {
        /// Which entry.
        index: usize,
        /// Why.
        error: CapabilityError,
    },
    /// A requested path cannot be delegated.
    #[error("launch denied: inherit_paths[{index}] {path:?}: {error}")]
    PathCapability {
        /// Which entry.
        index: usize,
        /// The resolved path.
        path: String,
        /// Why.
        error: CapabilityError,
    },
    /// A path is invalid.
    #[error("launch denied: invalid path in {field}: {error}")]
    InvalidPath {
        /// Which field.
        field: String,
        /// Why.
        error: PathError,
    },
    /// The image is not registered.
    #[error("launch denied: unknown image {:?}", crate::limits::excerpt(.image))]
    UnknownImage {
        /// The image asked for.
        image: String,
    },
    /// A different image needs read authority on it.
    #[error(
        "launch denied: image {:?} differs from the parent's and the parent holds no live read capability on image:{}",
        crate::limits::excerpt(.image),
        crate::limits::excerpt(.image)
    )]
    ImageReadDenied {
        /// The image asked for.
        image: String,
    },
    /// The explicit budget does not fit, or nothing remains to attenuate.
    #[error("launch denied: {0}")]
    Budget(BudgetExceeded),
    /// The child would be deeper than the limit.
    #[error("launch denied: depth {depth} exceeds the limit of {max}")]
    DepthExceeded {
        /// The child's depth.
        depth: u32,
        /// The limit.
        max: u32,
    },
    /// The parent has had too many children.
    #[error("launch denied: the parent already has {max} children")]
    TooManyChildren {
        /// The limit.
        max: usize,
    },
    /// The parent is not in a status that can launch.
    #[error("launch denied: the parent is {status}")]
    ParentNotLive {
        /// Its status.
        status: Status,
    },
    /// The goal is empty or too long.
    #[error("launch denied: the goal {reason}")]
    InvalidGoal {
        /// What is wrong.
        reason: String,
    },
    /// Too many entries in a list.
    #[error("launch denied: {field} has more than {max} entries")]
    TooManyEntries {
        /// Which list.
        field: String,
        /// The limit.
        max: usize,
    },
}

impl LaunchDenied {
    /// A stable machine code naming the rule.
    pub fn code(&self) -> &'static str {
        match self {
            LaunchDenied::MissingSpawnCapability => "missing_spawn_capability",
            LaunchDenied::Capability { error, .. } | LaunchDenied::PathCapability { error, .. } => {
                capability_code(error)
            }
            LaunchDenied::InvalidPath { .. } => "invalid_path",
            LaunchDenied::UnknownImage { .. } => "unknown_image",
            LaunchDenied::ImageReadDenied { .. } => "image_read_denied",
            LaunchDenied::Budget(_) => "budget_exceeded",
            LaunchDenied::DepthExceeded { .. } => "depth_exceeded",
            LaunchDenied::TooManyChildren { .. } => "too_many_children",
            LaunchDenied::ParentNotLive { .. } => "parent_not_live",
            LaunchDenied::InvalidGoal { .. } => "invalid_goal",
            LaunchDenied::TooManyEntries { .. } => "too_many_entries",
        }
    }
}

/// The stable code of a capability error.
pub fn capability_code(error: &CapabilityError) -> &'static str {
    match error {
        CapabilityError::EmptyRights => "empty_rights",
        CapabilityError::UnknownRight { .. } => "unknown_right",
        CapabilityError::InvalidResource { .. } => "invalid_resource",
        CapabilityError::NotHeld { .. } => "capability_not_held",
        CapabilityError::Revoked { .. } => "capability_revoked",
        CapabilityError::NotDelegable { .. } => "capability_not_delegable",
        CapabilityError::RightsExceed { .. } => "rights_exceed",
        CapabilityError::ConstraintLoosened { .. } => "constraint_loosened",
    }
}

/// Decides a launch. `image_exists` answers whether an image is registered. Ids for the child
/// and its grants come from `ids` only when the launch is approved.
pub fn plan_launch(
    parent: Parent<'_>,
    request: &LaunchRequest,
    image_exists: &dyn Fn(&ImageId) -> bool,
    ids: &mut dyn IdSource,
) -> Result<LaunchPlan, LaunchDenied> {
    let row = parent.row;
    if !matches!(row.status, Status::Running | Status::WaitingEvent | Status::Runnable) {
        return Err(LaunchDenied::ParentNotLive { status: row.status });
    }
    if request.goal.trim().is_empty() {
        return Err(LaunchDenied::InvalidGoal { reason: "is empty or only whitespace".into() });
    }
    if request.goal.len() > limits::GOAL_BYTES_MAX {
        return Err(LaunchDenied::InvalidGoal {
            reason: format!("is longer than {} bytes", limits::GOAL_BYTES_MAX),
        });
    }
    if request.inherit_capabilities.len() > limits::CAPABILITY_ENTRIES_MAX {
        return Err(LaunchDenied::TooManyEntries {
            field: "inherit_capabilities".into(),
            max: limits::CAPABILITY_ENTRIES_MAX,
        });
    }
    if request.inherit_paths.len() > limits::INHERITED_PATHS_MAX {
        return Err(LaunchDenied::TooManyEntries {
            field: "inherit_paths".into(),
            max: limits::INHERITED_PATHS_MAX,
        });
    }
    let depth = row.depth + 1;
    if depth > limits::DEPTH_MAX {
        return Err(LaunchDenied::DepthExceeded { depth, max: limits::DEPTH_MAX });
    }
    if parent.children >= limits::CHILDREN_MAX {
        return Err(LaunchDenied::TooManyChildren { max: limits::CHILDREN_MAX });
    }
    if !capability::holds(parent.grants, SPAWN_RESOURCE, Rights::EXECUTE) {
        return Err(LaunchDenied::MissingSpawnCapability);
    }

    let image = request.image.clone().unwrap_or_else(|| row.image.clone());
    if !image_exists(&image) {
        return Err(LaunchDenied::UnknownImage { image: image.0 });
    }
    if image != row.image && !capability::holds(parent.grants, &image_resource(&image), Rights::READ) {
        return Err(LaunchDenied::ImageReadDenied { image: image.0 });
    }

    let cwd = match &request.working_directory {
        Some(dir) => path::resolve(&row.cwd, dir)
            .map_err(|error| LaunchDenied::InvalidPath { field: "working_directory".into(), error })?,
        None => row.cwd.clone(),
    };

    // Resolve every path and capability against the parent before issuing any id.
    let mut sources: Vec<(&Grant, CapabilityRequest)> = Vec::new();
    for (index, req) in request.inherit_paths.iter().enumerate() {
        let resolved = path::resolve(&row.cwd, &req.path)
            .map_err(|error| LaunchDenied::InvalidPath { field: format!("inherit_paths[{index}]"), error })?;
        let cap = CapabilityRequest {
            resource: format!("fs:{resolved}"),
            rights: req.rights,
            constraints: Constraints::new(),
            delegable: req.delegable,
        };
        let source = find_delegation_source(parent.grants, &cap)
            .map_err(|error| LaunchDenied::PathCapability { index, path: resolved.clone(), error })?;
        sources.push((source, cap));
    }
    for (index, cap) in request.inherit_capabilities.iter().enumerate() {
        let source = find_delegation_source(parent.grants, cap)
            .map_err(|error| LaunchDenied::Capability { index, error })?;
        sources.push((source, cap.clone()));
    }

    let budget = row
        .account
        .plan_child(request.resource_budget.as_ref(), parent.elapsed_ms)
        .map_err(LaunchDenied::Budget)?;
    let mut parent_account = row.account;
    parent_account.reserve_child(&budget);

    let pid = ids.pid();
    let grants =
        sources.into_iter().map(|(source, cap)| capability::derive(source, &cap, pid, ids.grant())).collect();
    let mut child = ProcessRow::launched(pid, Some(row.pid), depth, image, cwd, request.goal.clone(), budget);
    let seq = u64::try_from(parent.children).unwrap_or(u64::MAX);
    child.restart = super::restart::RestartState::launched(request, seq, pid);
    Ok(LaunchPlan { child, grants, parent_account })
}
