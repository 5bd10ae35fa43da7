//! Loaded skill snapshots and how a launch projects them.
//!
//! - A spawn starts from the image's default skills; it copies no parent snapshot.
//! - A same-image fork keeps the parent's snapshot whole: the image offers the same tools.
//! - A cross-image fork keeps only the parent's skills whose allowed tools the child image
//!   offers, and reports each one it drops with the tools that were missing.
//! - A restricted fork takes no projection: it starts from the image defaults, as a spawn
//!   does, and reports every parent skill as dropped (`restricted_mode`).

use super::change::ObjectChange;
use super::error::ObjectError;
use super::model::{ForkMode, Skill};
use super::space::ObjectSpace;
use crate::kernel::ids::Pid;
use crate::limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What the kernel is told of the child's image for a launch.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ChildImage {
    /// Whether it is the parent's image.
    pub same_as_parent: bool,
    /// The tools it offers.
    pub tools: BTreeSet<String>,
    /// Its default skill snapshot (what a spawn or a restricted fork starts from).
    pub default_skills: Vec<Skill>,
}

/// Why a parent skill did not carry into a child.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The child image does not offer these tools the skill allows.
    ToolsNotOffered {
        /// The missing tools, sorted.
        tools: Vec<String>,
    },
    /// Restricted forks take no skill projection.
    RestrictedMode,
}

impl DropReason {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            DropReason::ToolsNotOffered { .. } => "tools_not_offered",
            DropReason::RestrictedMode => "restricted_mode",
        }
    }
}

/// A parent skill a launch dropped, and why.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DroppedSkill {
    /// The skill's name.
    pub name: String,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// The child's snapshot and what was dropped on the way.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SkillProjection {
    /// The child's loaded skill snapshot.
    pub skills: Vec<Skill>,
    /// Parent skills that did not carry, in the parent's order.
    pub dropped: Vec<DroppedSkill>,
}

/// Checks a snapshot: at most [`limits::SKILLS_MAX`] skills with distinct, non-empty names,
/// each allowing at most [`limits::SKILL_TOOLS_MAX`] tools with non-empty names.
pub fn check_skills(skills: &[Skill]) -> Result<(), ObjectError> {
    if skills.len() > limits::SKILLS_MAX {
        return Err(ObjectError::TooManyEntries { field: "skills".into(), max: limits::SKILLS_MAX });
    }
    let mut names = BTreeSet::new();
    for skill in skills {
        let invalid = |reason: String| ObjectError::InvalidSkill { name: skill.name.clone(), reason };
        if skill.name.trim().is_empty() || skill.name.len() > limits::SKILL_NAME_BYTES_MAX {
            return Err(invalid(format!("a name must be 1 to {} bytes", limits::SKILL_NAME_BYTES_MAX)));
        }
        if !names.insert(skill.name.as_str()) {
            return Err(invalid("the name appears twice in the snapshot".into()));
        }
        if skill.allowed_tools.len() > limits::SKILL_TOOLS_MAX {
            return Err(invalid(format!("it allows more than {} tools", limits::SKILL_TOOLS_MAX)));
        }
        if skill.allowed_tools.iter().any(|t| t.trim().is_empty() || t.len() > limits::SKILL_NAME_BYTES_MAX) {
            return Err(invalid(format!("a tool name must be 1 to {} bytes", limits::SKILL_NAME_BYTES_MAX)));
        }
    }
    Ok(())
}

/// The fork projection of `parent`'s snapshot onto `image` (see the module docs).
pub fn project_skills(parent: &[Skill], image: &ChildImage, mode: ForkMode) -> SkillProjection {
    if mode == ForkMode::Restricted {
        let dropped = parent
            .iter()
            .map(|s| DroppedSkill { name: s.name.clone(), reason: DropReason::RestrictedMode })
            .collect();
        return SkillProjection { skills: image.default_skills.clone(), dropped };
    }
    if image.same_as_parent {
        return SkillProjection { skills: parent.to_vec(), dropped: Vec::new() };
    }
    let mut projection = SkillProjection::default();
    for skill in parent {
        let missing: Vec<String> = skill.allowed_tools.difference(&image.tools).cloned().collect();
        if missing.is_empty() {
            projection.skills.push(skill.clone());
        } else {
            let reason = DropReason::ToolsNotOffered { tools: missing };
            projection.dropped.push(DroppedSkill { name: skill.name.clone(), reason });
        }
    }
    projection
}

impl ObjectSpace {
    /// Plans replacing a process's loaded skill snapshot (after it activates or unloads one).
    pub fn plan_load_skills(&self, pid: Pid, skills: Vec<Skill>) -> Result<Vec<ObjectChange>, ObjectError> {
        self.live_memory(pid)?;
        check_skills(&skills)?;
        Ok(vec![ObjectChange::PutSkills { pid, skills }])
    }
}
