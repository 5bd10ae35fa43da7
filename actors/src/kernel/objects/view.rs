//! Launch views: what memory a new process starts with.
//!
//! Planning is two steps so that a denial takes no id: `plan_*_view` checks everything and
//! returns a [`ViewApproval`]; [`ObjectSpace::materialize_view`] then takes the child's pid
//! (from the approved launch) and the goal's OID and returns the changes. Both run against the
//! same state, in one turn of the parent's actor.

use super::change::ObjectChange;
use super::error::ObjectError;
use super::flow::{self, first_uncleared};
use super::model::{ForkMode, Handle, ObjectKind, ObjectMeta, ObjectRights, Owner, Skill};
use super::skills::{self, ChildImage, DroppedSkill, SkillProjection};
use super::space::ObjectSpace;
use crate::kernel::ids::{IdSource, Oid, Pid};
use crate::limits;
use std::collections::BTreeSet;

/// The name a process's goal is bound to in its namespace.
pub const GOAL_NAME: &str = "goal";

/// Which parent objects a fork selects.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum RootSelection {
    /// `root_oids` omitted, `include_parent_roots` true or omitted: every live parent root.
    #[default]
    AllParentRoots,
    /// `root_oids` omitted, `include_parent_roots=false`: none (goal only).
    NoParentRoots,
    /// `root_oids` given: exactly these, even when empty.
    Exact(Vec<Oid>),
}

impl RootSelection {
    /// From the tool arguments. Supplying `root_oids` (even `[]`) is an exact replacement, so
    /// `include_parent_roots` is then ignored; omitted, it defaults to true.
    pub fn from_args(root_oids: Option<Vec<Oid>>, include_parent_roots: Option<bool>) -> Self {
        match (root_oids, include_parent_roots) {
            (Some(oids), _) => RootSelection::Exact(oids),
            (None, Some(false)) => RootSelection::NoParentRoots,
            (None, _) => RootSelection::AllParentRoots,
        }
    }
}

/// A root process launched by the host.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RootViewRequest {
    /// Its clearance; `None` is cleared for everything.
    pub clearance: Option<BTreeSet<String>>,
    /// Labels the host puts on its goal (and so its starting context).
    pub goal_labels: BTreeSet<String>,
    /// The image's default skills.
    pub default_skills: Vec<Skill>,
}

/// `spawn_child_process`: a fresh namespace and a goal-only view.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SpawnViewRequest {
    /// The parent.
    pub parent: Pid,
    /// A narrower clearance for the child; `None` keeps the parent's.
    pub clearance: Option<BTreeSet<String>>,
    /// The child image's default skills: a spawn starts from these.
    pub default_skills: Vec<Skill>,
}

/// `fork_child_process`: an attenuated view of selected parent objects.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ForkViewRequest {
    /// The parent.
    pub parent: Pid,
    /// How the selected objects are shared.
    pub mode: ForkMode,
    /// Which parent objects.
    pub roots: RootSelection,
    /// A narrower clearance for the child; `None` keeps the parent's.
    pub clearance: Option<BTreeSet<String>>,
    /// The child's image.
    pub image: ChildImage,
}

/// One object a fork puts in the child's view.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Inherited {
    /// The object (the same OID the parent holds: nothing is copied).
    pub oid: Oid,
    /// The child's rights.
    pub rights: ObjectRights,
    /// Whether the child's handle is a speculative (ephemeral) view.
    pub ephemeral: bool,
    /// The parent's name for it, carried into the child's namespace if free.
    pub name: Option<String>,
}

/// An approved view, not yet given ids. Only the planners make one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ViewApproval {
    parent: Option<Pid>,
    clearance: Option<BTreeSet<String>>,
    goal_labels: BTreeSet<String>,
    inherited: Vec<Inherited>,
    released_roots: Vec<Oid>,
    skills: SkillProjection,
}

impl ViewApproval {
    /// The objects the child inherits, in selection order.
    pub fn inherited(&self) -> &[Inherited] {
        &self.inherited
    }
    /// The child's clearance.
    pub fn clearance(&self) -> Option<&BTreeSet<String>> {
        self.clearance.as_ref()
    }
    /// Parent skills that will not carry into the child.
    pub fn dropped_skills(&self) -> &[DroppedSkill] {
        &self.skills.dropped
    }
}

/// A materialized view: what the launch result reports, and what to commit with it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ViewPlan {
    /// The child.
    pub child: Pid,
    /// Its goal object, always its own root.
    pub goal: Oid,
    /// Every root: the goal first, then the inherited objects in selection order.
    pub roots: Vec<Oid>,
    /// Parent roots an all-roots fork passed over because they were already released.
    pub released_roots: Vec<Oid>,
    /// The child's loaded skill snapshot.
    pub skills: Vec<Skill>,
    /// Parent skills that did not carry, and why.
    pub dropped_skills: Vec<DroppedSkill>,
    /// What to commit, in one transaction with the launch.
    pub changes: Vec<ObjectChange>,
}

impl ObjectSpace {
    /// Plans a root process's view: a goal carrying `goal_labels`, the image's default skills.
    pub fn plan_root_view(&self, request: &RootViewRequest) -> Result<ViewApproval, ObjectError> {
        let clearance = flow::child_clearance(None, request.clearance.as_ref())?;
        flow::check_labels("goal_labels", &request.goal_labels)?;
        if let Some(label) = first_uncleared(clearance.as_ref(), &request.goal_labels) {
            return Err(ObjectError::RootGoalNotCleared { label: label.clone() });
        }
        skills::check_skills(&request.default_skills)?;
        let skills = SkillProjection { skills: request.default_skills.clone(), dropped: Vec::new() };
        Ok(ViewApproval {
            parent: None,
            clearance,
            goal_labels: request.goal_labels.clone(),
            inherited: Vec::new(),
            released_roots: Vec::new(),
            skills,
        })
    }

    /// Plans a spawn's view: the goal is the only root, the namespace holds only the goal, no
    /// parent skill snapshot (the image defaults). The goal carries the parent's context.
    pub fn plan_spawn_view(&self, request: &SpawnViewRequest) -> Result<ViewApproval, ObjectError> {
        let (clearance, goal_labels) = self.launch_flow(request.parent, request.clearance.as_ref())?;
        skills::check_skills(&request.default_skills)?;
        let skills = SkillProjection { skills: request.default_skills.clone(), dropped: Vec::new() };
        Ok(ViewApproval {
            parent: Some(request.parent),
            clearance,
            goal_labels,
            inherited: Vec::new(),
            released_roots: Vec::new(),
            skills,
        })
    }

    /// Plans a fork's view. The selected objects are shared by OID with the mode's rights (see
    /// [`ForkMode::child_rights`]); the parent must hold every right the mode needs
    /// ([`ForkMode::required`]); the child must be cleared for every label. The goal is always
    /// its own root. Skills are projected by [`skills::project_skills`].
    pub fn plan_fork_view(&self, request: &ForkViewRequest) -> Result<ViewApproval, ObjectError> {
        let parent = request.parent;
        let (clearance, goal_labels) = self.launch_flow(parent, request.clearance.as_ref())?;
        let memory = self.live_memory(parent)?;
        let mut released_roots = Vec::new();
        let selected: Vec<Oid> = match &request.roots {
            RootSelection::NoParentRoots => Vec::new(),
            RootSelection::AllParentRoots => {
                let (live, released): (Vec<Oid>, Vec<Oid>) =
                    memory.roots.iter().partition(|oid| self.objects.get(oid).is_some_and(|o| !o.released));
                released_roots = released;
                live
            }
            RootSelection::Exact(oids) => {
                if oids.len() > limits::ROOT_OIDS_MAX {
                    return Err(ObjectError::TooManyEntries {
                        field: "root_oids".into(),
                        max: limits::ROOT_OIDS_MAX,
                    });
                }
                let mut seen = BTreeSet::new();
                oids.iter().copied().filter(|oid| seen.insert(*oid)).collect()
            }
        };

        let mut inherited = Vec::with_capacity(selected.len());
        for oid in selected {
            let object = self.live_object(oid)?;
            let handle = self.handle(parent, oid);
            let held = handle.map_or(ObjectRights::empty(), |h| h.rights);
            if let Some(right) = held.first_missing(request.mode.required()) {
                return Err(ObjectError::MissingRight { holder: parent, oid, right, held });
            }
            // A speculative view stays one all the way down: attenuation never loosens.
            let ephemeral = request.mode.ephemeral() || handle.is_some_and(|h| h.ephemeral);
            let rights = if ephemeral { ObjectRights::READ } else { request.mode.child_rights(held) };
            if let Some(label) = first_uncleared(clearance.as_ref(), &object.labels) {
                return Err(ObjectError::ChildFlowDenied { oid: Some(oid), label: label.clone() });
            }
            let name = self.names_of(parent, oid).next().cloned();
            inherited.push(Inherited { oid, rights, ephemeral, name });
        }

        skills::check_skills(&request.image.default_skills)?;
        let skills = skills::project_skills(&memory.skills, &request.image, request.mode);
        Ok(ViewApproval { parent: Some(parent), clearance, goal_labels, inherited, released_roots, skills })
    }

    /// The child's clearance and goal labels (the parent's context), refused if the child
    /// would not be cleared for its own goal.
    fn launch_flow(
        &self,
        parent: Pid,
        requested: Option<&BTreeSet<String>>,
    ) -> Result<(Option<BTreeSet<String>>, BTreeSet<String>), ObjectError> {
        let memory = self.live_memory(parent)?;
        let clearance = flow::child_clearance(memory.clearance.as_ref(), requested)?;
        if let Some(label) = first_uncleared(clearance.as_ref(), &memory.context) {
            return Err(ObjectError::ChildFlowDenied { oid: None, label: label.clone() });
        }
        Ok((clearance, memory.context.clone()))
    }

    /// Gives an approved view its ids and returns the changes. `child` is the approved
    /// launch's pid; the goal's OID comes from `ids`.
    pub fn materialize_view(
        &self,
        approval: ViewApproval,
        child: Pid,
        ids: &mut dyn IdSource,
    ) -> Result<ViewPlan, ObjectError> {
        if self.processes.contains_key(&child) {
            return Err(ObjectError::ProcessExists { pid: child });
        }
        if let Some(parent) = approval.parent {
            self.live_memory(parent)?;
        }
        let goal = ids.oid();
        let goal_meta = ObjectMeta {
            oid: goal,
            owner: Owner::Process(child),
            kind: ObjectKind::Goal,
            labels: approval.goal_labels.clone(),
            ephemeral: false,
            released: false,
        };
        let mut changes = vec![
            ObjectChange::PutProcess { pid: child, goal, clearance: approval.clearance },
            ObjectChange::PutObject(goal_meta),
            ObjectChange::PutHandle(Handle {
                holder: child,
                oid: goal,
                rights: ObjectRights::ALL,
                ephemeral: false,
            }),
            ObjectChange::PutRoot { pid: child, oid: goal },
            ObjectChange::PutName { pid: child, name: GOAL_NAME.into(), oid: goal },
            ObjectChange::SetContext { pid: child, labels: approval.goal_labels },
            ObjectChange::PutSkills { pid: child, skills: approval.skills.skills.clone() },
        ];
        let mut roots = vec![goal];
        let mut bound: BTreeSet<String> = std::iter::once(GOAL_NAME.to_string()).collect();
        for item in approval.inherited {
            let handle =
                Handle { holder: child, oid: item.oid, rights: item.rights, ephemeral: item.ephemeral };
            changes.push(ObjectChange::PutHandle(handle));
            changes.push(ObjectChange::PutRoot { pid: child, oid: item.oid });
            if let Some(name) = item.name.filter(|n| bound.insert(n.clone())) {
                changes.push(ObjectChange::PutName { pid: child, name, oid: item.oid });
            }
            roots.push(item.oid);
        }
        Ok(ViewPlan {
            child,
            goal,
            roots,
            released_roots: approval.released_roots,
            skills: approval.skills.skills,
            dropped_skills: approval.skills.dropped,
            changes,
        })
    }
}
