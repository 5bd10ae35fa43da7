//! Capability grants and the delegation rule.
//!
//! A grant gives its holder rights on a resource (`process:spawn`, `fs:/data`,
//! `provider:openai`, `human`, `image:<id>`, …). Delegation derives a child grant from a
//! parent grant that is live AND delegable; the child's rights are a subset of the parent's and
//! its constraints are at least as tight. Possession without delegation authority is not enough.

use super::ids::{GrantId, Pid};
use crate::limits;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

bitflags::bitflags! {
    /// Rights on a resource. Never empty on a grant.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
    pub struct Rights: u8 {
        /// Read or observe.
        const READ = 1;
        /// Write or modify.
        const WRITE = 1 << 1;
        /// Run, call or use (e.g. `process:spawn`, a provider).
        const EXECUTE = 1 << 2;
        /// Create new things under the resource.
        const CREATE = 1 << 3;
        /// Delete things under the resource.
        const DELETE = 1 << 4;
    }
}

const RIGHT_NAMES: [(&str, Rights); 5] = [
    ("read", Rights::READ),
    ("write", Rights::WRITE),
    ("execute", Rights::EXECUTE),
    ("create", Rights::CREATE),
    ("delete", Rights::DELETE),
];

impl Rights {
    /// Parses a list of right names; refuses an empty list and unknown names.
    pub fn parse_names<S: AsRef<str>>(names: &[S]) -> Result<Rights, CapabilityError> {
        if names.is_empty() {
            return Err(CapabilityError::EmptyRights);
        }
        let mut rights = Rights::empty();
        for name in names {
            let name = name.as_ref();
            let found = RIGHT_NAMES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
            match found {
                Some(r) => rights |= r,
                None => return Err(CapabilityError::UnknownRight { name: name.to_string() }),
            }
        }
        Ok(rights)
    }

    /// The right names, in a fixed order.
    pub fn names(self) -> Vec<&'static str> {
        RIGHT_NAMES.iter().filter(|(_, r)| self.contains(*r)).map(|(n, _)| *n).collect()
    }
}

impl fmt::Display for Rights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

/// One constraint value. Each kind has its own tightening order.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConstraintValue {
    /// An upper bound (e.g. `max_calls`); tighter means smaller.
    Max(u64),
    /// An allow-list (e.g. `models`); tighter means a subset.
    OneOf(BTreeSet<String>),
    /// A prefix (e.g. `path_prefix`); tighter means a longer string starting with this one.
    Prefix(String),
}

impl ConstraintValue {
    /// Whether `self` is at least as tight as `looser`.
    pub fn is_within(&self, looser: &ConstraintValue) -> bool {
        match (self, looser) {
            (ConstraintValue::Max(a), ConstraintValue::Max(b)) => a <= b,
            (ConstraintValue::OneOf(a), ConstraintValue::OneOf(b)) => a.is_subset(b),
            (ConstraintValue::Prefix(a), ConstraintValue::Prefix(b)) => a.starts_with(b.as_str()),
            _ => false,
        }
    }
}

/// Named constraints on a grant. A derived grant must carry every constraint of its parent
/// grant, each at least as tight, and may add new ones.
pub type Constraints = BTreeMap<String, ConstraintValue>;

/// Whether `child` constraints are at least as tight as `parent` constraints.
/// Returns the first key that loosens, if any.
pub fn constraints_loosen(child: &Constraints, parent: &Constraints) -> Option<String> {
    parent.iter().find_map(|(key, pv)| match child.get(key) {
        Some(cv) if cv.is_within(pv) => None,
        _ => Some(key.clone()),
    })
}

/// A capability grant held by one process.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Grant {
    /// The grant's id.
    pub id: GrantId,
    /// The process holding it.
    pub holder: Pid,
    /// The resource, e.g. `process:spawn` or `fs:/data`.
    pub resource: String,
    /// Never empty.
    pub rights: Rights,
    /// Constraints; only ever tighter than the grant it derives from.
    pub constraints: Constraints,
    /// Whether the holder may derive grants from it for its children.
    pub delegable: bool,
    /// False once revoked; revoking revokes every grant derived from it.
    pub live: bool,
    /// The grant this one was derived from; `None` for grants made by the host.
    pub derived_from: Option<GrantId>,
}

/// A requested grant: what a launch asks to delegate, or what the host gives a root.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CapabilityRequest {
    /// The resource.
    pub resource: String,
    /// Non-empty rights.
    pub rights: Rights,
    /// Constraints, at least as tight as the parent grant's.
    pub constraints: Constraints,
    /// Whether the child may delegate it further.
    pub delegable: bool,
}

/// Why a grant cannot be made or delegated.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum CapabilityError {
    /// A grant must have at least one right.
    #[error("a capability needs at least one right")]
    EmptyRights,
    /// The right name is not one of read, write, execute, create, delete.
    #[error("unknown right {name:?}: rights are read, write, execute, create, delete")]
    UnknownRight {
        /// The unknown name.
        name: String,
    },
    /// The resource name is empty or too long.
    #[error("invalid resource {resource:?}: it must be 1 to {max} bytes", max = limits::RESOURCE_BYTES_MAX)]
    InvalidResource {
        /// The resource as given.
        resource: String,
    },
    /// The parent holds no grant covering the resource.
    #[error("the parent holds no capability on {resource:?}")]
    NotHeld {
        /// The resource requested.
        resource: String,
    },
    /// The parent's grant covering the resource has been revoked.
    #[error("the parent's capability on {resource:?} has been revoked")]
    Revoked {
        /// The resource requested.
        resource: String,
    },
    /// The parent's grant is live but not delegable.
    #[error("the parent holds {resource:?} but may not delegate it (the grant is not delegable)")]
    NotDelegable {
        /// The resource requested.
        resource: String,
    },
    /// The request asks for rights the parent's grant does not have.
    #[error("rights {requested} on {resource:?} exceed the parent's delegable rights {held}")]
    RightsExceed {
        /// The resource requested.
        resource: String,
        /// Rights requested.
        requested: String,
        /// Rights the best parent grant has.
        held: String,
    },
    /// The request drops or loosens a constraint of the parent's grant.
    #[error("constraint {key:?} on {resource:?} is missing or looser than the parent's")]
    ConstraintLoosened {
        /// The resource requested.
        resource: String,
        /// The constraint key.
        key: String,
    },
}

/// Whether a grant on `held` covers a request for `requested`: the same resource, or, for
/// filesystem resources (`fs:<absolute path>`), a path at or below the held path.
pub fn resource_covers(held: &str, requested: &str) -> bool {
    if held == requested {
        return true;
    }
    match (held.strip_prefix("fs:"), requested.strip_prefix("fs:")) {
        (Some(h), Some(r)) => {
            // `fs:/data/../etc` is /etc: a path with `.` or `..` segments is not lexically
            // below anything, so only an exact match covers it.
            if r.split('/').any(|seg| seg == "." || seg == "..") {
                return false;
            }
            let h = h.trim_end_matches('/');
            r.strip_prefix(h).is_some_and(|rest| rest.starts_with('/'))
        }
        _ => false,
    }
}

/// Checks a resource name.
pub fn check_resource(resource: &str) -> Result<(), CapabilityError> {
    if resource.is_empty() || resource.len() > limits::RESOURCE_BYTES_MAX {
        return Err(CapabilityError::InvalidResource { resource: resource.to_string() });
    }
    Ok(())
}

/// Finds the parent grant a request may be derived from, or the most specific reason none can.
///
/// Among grants covering the resource, a live, delegable one with enough rights and looser
/// constraints wins. If none qualifies, the error names the nearest miss in this order:
/// not held, revoked, not delegable, rights exceed, constraint loosened.
pub fn find_delegation_source<'g>(
    held: impl IntoIterator<Item = &'g Grant>,
    request: &CapabilityRequest,
) -> Result<&'g Grant, CapabilityError> {
    check_resource(&request.resource)?;
    if request.rights.is_empty() {
        return Err(CapabilityError::EmptyRights);
    }
    let covering: Vec<&Grant> =
        held.into_iter().filter(|g| resource_covers(&g.resource, &request.resource)).collect();
    let resource = request.resource.clone();
    if covering.is_empty() {
        return Err(CapabilityError::NotHeld { resource });
    }
    let live: Vec<&Grant> = covering.iter().copied().filter(|g| g.live).collect();
    if live.is_empty() {
        return Err(CapabilityError::Revoked { resource });
    }
    let delegable: Vec<&Grant> = live.iter().copied().filter(|g| g.delegable).collect();
    if delegable.is_empty() {
        return Err(CapabilityError::NotDelegable { resource });
    }
    let enough: Vec<&Grant> =
        delegable.iter().copied().filter(|g| g.rights.contains(request.rights)).collect();
    if enough.is_empty() {
        let held = delegable.iter().fold(Rights::empty(), |acc, g| acc | g.rights);
        return Err(CapabilityError::RightsExceed {
            resource,
            requested: request.rights.to_string(),
            held: held.to_string(),
        });
    }
    let mut first_loosened = None;
    for grant in &enough {
        match constraints_loosen(&request.constraints, &grant.constraints) {
            None => return Ok(grant),
            Some(key) => {
                first_loosened.get_or_insert(key);
            }
        }
    }
    Err(CapabilityError::ConstraintLoosened { resource, key: first_loosened.unwrap_or_default() })
}

/// Derives a child grant from `source` for `holder`.
pub fn derive(source: &Grant, request: &CapabilityRequest, holder: Pid, id: GrantId) -> Grant {
    Grant {
        id,
        holder,
        resource: request.resource.clone(),
        rights: request.rights & source.rights,
        constraints: request.constraints.clone(),
        delegable: request.delegable && source.delegable,
        live: true,
        derived_from: Some(source.id),
    }
}

/// A grant made by the host (no parent grant); the host is the root of all authority.
pub fn host_grant(request: &CapabilityRequest, holder: Pid, id: GrantId) -> Result<Grant, CapabilityError> {
    check_resource(&request.resource)?;
    if request.rights.is_empty() {
        return Err(CapabilityError::EmptyRights);
    }
    Ok(Grant {
        id,
        holder,
        resource: request.resource.clone(),
        rights: request.rights,
        constraints: request.constraints.clone(),
        delegable: request.delegable,
        live: true,
        derived_from: None,
    })
}

/// Every grant transitively derived from `root` (including `root`), given all grants, each
/// once. Revoking `root` revokes exactly this set, in one transaction. Terminates even if the
/// derivation links were to form a cycle.
pub fn revocation_closure(all: &[Grant], root: GrantId) -> Vec<GrantId> {
    let mut out = vec![root];
    let mut seen: std::collections::HashSet<GrantId> = std::iter::once(root).collect();
    let mut i = 0;
    while i < out.len() {
        let current = out[i];
        for g in all.iter().filter(|g| g.derived_from == Some(current)) {
            if seen.insert(g.id) {
                out.push(g.id);
            }
        }
        i += 1;
    }
    out
}

/// Whether `holder_grants` hold a live grant with `rights` on `resource` (no delegation needed).
pub fn holds(holder_grants: &[Grant], resource: &str, rights: Rights) -> bool {
    holder_grants
        .iter()
        .any(|g| g.live && g.rights.contains(rights) && resource_covers(&g.resource, resource))
}
