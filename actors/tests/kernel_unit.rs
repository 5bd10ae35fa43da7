//! Targeted tests of the launch decision (`plan_launch`): one test per denial rule, with its
//! stable code, each checking that a denial issues no id; how relative paths resolve; how
//! budgets are reserved; and the exact status strings.

use agentvisor_actors::kernel::budget::{Budget, Dimension};
use agentvisor_actors::kernel::capability::{CapabilityRequest, ConstraintValue, Constraints, Grant, Rights};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, GrantId, IdSource, ImageId, Pid};
use agentvisor_actors::kernel::launch::{
    LaunchDenied, LaunchPlan, LaunchRequest, Parent, PathRequest, plan_launch,
};
use agentvisor_actors::kernel::process::{Event, ProcessRow};
use agentvisor_actors::kernel::status::Status;
use agentvisor_actors::limits;
use uuid::Uuid;

const SEED: u64 = 42;
const PARENT_CWD: &str = "/work/p";

fn parent_row(depth: u32, budget: Budget) -> ProcessRow {
    let parent = (depth > 0).then(|| Pid(Uuid::from_u128(7)));
    let mut row = ProcessRow::launched(
        Pid(Uuid::from_u128(1)),
        parent,
        depth,
        ImageId::from("base"),
        PARENT_CWD.into(),
        "parent goal".into(),
        budget,
    );
    row.apply(Event::Start { epoch: Epoch(1) }).expect("start");
    row
}

fn grant(n: u128, resource: &str, rights: Rights, delegable: bool, live: bool) -> Grant {
    Grant {
        id: GrantId(Uuid::from_u128(1000 + n)),
        holder: Pid(Uuid::from_u128(1)),
        resource: resource.into(),
        rights,
        constraints: Constraints::new(),
        delegable,
        live,
        derived_from: None,
    }
}

fn spawn_grant() -> Grant {
    grant(1, "process:spawn", Rights::EXECUTE, true, true)
}

/// The parent's usual grants: spawn, read+write on its cwd (delegable), a provider with a call
/// limit (delegable), a human channel (not delegable), a revoked provider, read on image `other`.
fn usual_grants() -> Vec<Grant> {
    let mut provider = grant(3, "provider:openai", Rights::EXECUTE | Rights::READ, true, true);
    provider.constraints.insert("max_calls".into(), ConstraintValue::Max(10));
    vec![
        spawn_grant(),
        grant(2, &format!("fs:{PARENT_CWD}"), Rights::READ | Rights::WRITE, true, true),
        provider,
        grant(4, "human", Rights::EXECUTE, false, true),
        grant(5, "provider:anthropic", Rights::EXECUTE, true, false),
        grant(6, "image:other", Rights::READ, false, true),
    ]
}

fn image_exists(id: &ImageId) -> bool {
    matches!(id.as_str(), "base" | "other" | "secret")
}

fn request(goal: &str) -> LaunchRequest {
    LaunchRequest { goal: goal.into(), ..LaunchRequest::default() }
}

fn cap(resource: &str, rights: Rights) -> CapabilityRequest {
    CapabilityRequest { resource: resource.into(), rights, constraints: Constraints::new(), delegable: false }
}

fn decide(
    row: &ProcessRow,
    grants: &[Grant],
    req: &LaunchRequest,
) -> (Result<LaunchPlan, LaunchDenied>, CountingIds) {
    let mut ids = CountingIds::new(SEED);
    let parent = Parent { row, grants, elapsed_ms: 0, children: 0 };
    let result = plan_launch(parent, req, &image_exists, &mut ids);
    (result, ids)
}

/// The first id a fresh source would issue.
fn first_pid() -> Pid {
    CountingIds::new(SEED).pid()
}

fn approve(row: &ProcessRow, grants: &[Grant], req: &LaunchRequest) -> LaunchPlan {
    let (result, _) = decide(row, grants, req);
    result.unwrap_or_else(|e| panic!("expected approval, got {} ({e})", e.code()))
}

/// Asserts a denial with `code` and that no id was taken from the id source.
fn deny(row: &ProcessRow, grants: &[Grant], req: &LaunchRequest, code: &str) -> LaunchDenied {
    let (result, mut ids) = decide(row, grants, req);
    let denied = match result {
        Ok(plan) => panic!("expected {code}, but the launch was approved: {plan:?}"),
        Err(denied) => denied,
    };
    assert_eq!(denied.code(), code, "{denied}");
    assert_eq!(ids.pid(), first_pid(), "a denied launch ({code}) consumed an id");
    assert!(!denied.to_string().is_empty());
    denied
}

#[test]
fn an_approved_launch_takes_the_first_ids_and_is_runnable() {
    let row = parent_row(0, Budget::UNLIMITED);
    let grants = usual_grants();
    let mut req = request("do it");
    req.inherit_capabilities = vec![cap("provider:openai", Rights::EXECUTE)];
    req.inherit_capabilities[0].constraints.insert("max_calls".into(), ConstraintValue::Max(3));
    let plan = approve(&row, &grants, &req);
    let mut fresh = CountingIds::new(SEED);
    assert_eq!(plan.child.pid, fresh.pid());
    assert_eq!(plan.grants.len(), 1);
    assert_eq!(plan.grants[0].id, fresh.grant());
    assert_eq!(plan.grants[0].derived_from, Some(grants[2].id));
    assert_eq!(plan.grants[0].holder, plan.child.pid);
    assert_eq!(plan.child.status, Status::Runnable);
    assert_eq!(plan.child.state_generation, 0);
    assert_eq!(plan.child.parent, Some(row.pid));
    assert_eq!(plan.child.depth, 1);
    assert_eq!(plan.child.image, ImageId::from("base"), "the image defaults to the parent's");
    assert_eq!(plan.child.cwd, PARENT_CWD, "the working directory defaults to the parent's");
    assert!(plan.child.check().is_ok());
}

#[test]
fn missing_spawn_capability() {
    let row = parent_row(0, Budget::UNLIMITED);
    let without: Vec<Grant> = usual_grants().into_iter().filter(|g| g.resource != "process:spawn").collect();
    deny(&row, &without, &request("g"), "missing_spawn_capability");

    // A revoked spawn grant, or one without execute, is no spawn authority either.
    let mut revoked = usual_grants();
    revoked[0].live = false;
    deny(&row, &revoked, &request("g"), "missing_spawn_capability");
    let mut read_only = usual_grants();
    read_only[0].rights = Rights::READ;
    deny(&row, &read_only, &request("g"), "missing_spawn_capability");

    // A non-delegable spawn grant still lets its holder spawn (delegation is not needed).
    let mut own = usual_grants();
    own[0].delegable = false;
    approve(&row, &own, &request("g"));
}

#[test]
fn capability_not_held() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("provider:mistral", Rights::EXECUTE)];
    let denied = deny(&row, &usual_grants(), &req, "capability_not_held");
    assert!(matches!(denied, LaunchDenied::Capability { index: 0, .. }), "{denied:?}");

    // An inherited path outside the parent's filesystem grant is not held either; the denial
    // names the resolved path.
    let mut req = request("g");
    req.inherit_paths = vec![PathRequest { path: "../q".into(), rights: Rights::READ, delegable: false }];
    let denied = deny(&row, &usual_grants(), &req, "capability_not_held");
    match denied {
        LaunchDenied::PathCapability { index, path, .. } => {
            assert_eq!((index, path.as_str()), (0, "/work/q"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn capability_revoked() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("provider:anthropic", Rights::EXECUTE)];
    deny(&row, &usual_grants(), &req, "capability_revoked");
}

#[test]
fn capability_not_delegable() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("human", Rights::EXECUTE)];
    deny(&row, &usual_grants(), &req, "capability_not_delegable");
    // Possession is not delegation authority, even for the spawn right itself.
    let mut grants = usual_grants();
    grants[0].delegable = false;
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("process:spawn", Rights::EXECUTE)];
    deny(&row, &grants, &req, "capability_not_delegable");
}

#[test]
fn rights_exceed() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("provider:openai", Rights::EXECUTE | Rights::WRITE)];
    req.inherit_capabilities[0].constraints.insert("max_calls".into(), ConstraintValue::Max(1));
    deny(&row, &usual_grants(), &req, "rights_exceed");
    let mut req = request("g");
    req.inherit_paths = vec![PathRequest { path: "data".into(), rights: Rights::DELETE, delegable: false }];
    deny(&row, &usual_grants(), &req, "rights_exceed");
}

#[test]
fn constraint_loosened() {
    let row = parent_row(0, Budget::UNLIMITED);
    // Dropping the parent's constraint loosens it.
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("provider:openai", Rights::EXECUTE)];
    deny(&row, &usual_grants(), &req, "constraint_loosened");
    // So does a larger bound, or a bound of another kind.
    for value in [ConstraintValue::Max(11), ConstraintValue::Prefix("/".into())] {
        let mut req = request("g");
        req.inherit_capabilities = vec![cap("provider:openai", Rights::EXECUTE)];
        req.inherit_capabilities[0].constraints.insert("max_calls".into(), value);
        let denied = deny(&row, &usual_grants(), &req, "constraint_loosened");
        assert!(denied.to_string().contains("max_calls"), "{denied}");
    }
    // The same bound, or a tighter one plus a new constraint, is fine.
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("provider:openai", Rights::EXECUTE)];
    req.inherit_capabilities[0].constraints.insert("max_calls".into(), ConstraintValue::Max(10));
    req.inherit_capabilities[0]
        .constraints
        .insert("models".into(), ConstraintValue::OneOf(["small".to_string()].into()));
    approve(&row, &usual_grants(), &req);
}

#[test]
fn unknown_image() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.image = Some(ImageId::from("nowhere"));
    deny(&row, &usual_grants(), &req, "unknown_image");
}

#[test]
fn image_read_denied() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.image = Some(ImageId::from("secret"));
    deny(&row, &usual_grants(), &req, "image_read_denied");
    // With a live read grant on it, another image is fine; a revoked one is not.
    req.image = Some(ImageId::from("other"));
    let plan = approve(&row, &usual_grants(), &req);
    assert_eq!(plan.child.image, ImageId::from("other"));
    let mut grants = usual_grants();
    grants[5].live = false;
    deny(&row, &grants, &req, "image_read_denied");
    // The parent's own image needs no read grant.
    req.image = Some(ImageId::from("base"));
    approve(&row, &grants, &req);
}

#[test]
fn invalid_path() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.working_directory = Some("../../..".into());
    let denied = deny(&row, &usual_grants(), &req, "invalid_path");
    assert!(denied.to_string().contains("working_directory"), "{denied}");
    for bad in ["", "a\0b", "../../../x"] {
        let mut req = request("g");
        req.inherit_paths = vec![PathRequest { path: bad.into(), rights: Rights::READ, delegable: false }];
        let denied = deny(&row, &usual_grants(), &req, "invalid_path");
        assert!(denied.to_string().contains("inherit_paths[0]"), "{denied}");
    }
    let mut req = request("g");
    req.working_directory = Some(format!("/{}", "x".repeat(limits::PATH_BYTES_MAX)));
    deny(&row, &usual_grants(), &req, "invalid_path");
}

#[test]
fn budget_exceeded() {
    let row = parent_row(0, Budget { tokens: Some(1000), live_children: Some(4), ..Budget::UNLIMITED });
    let mut req = request("g");
    req.resource_budget = Some(Budget { tokens: Some(1001), ..Budget::UNLIMITED });
    match deny(&row, &usual_grants(), &req, "budget_exceeded") {
        LaunchDenied::Budget(e) => {
            assert_eq!((e.dimension, e.requested, e.remaining), (Dimension::Tokens, 1001, 1000));
        }
        other => panic!("{other:?}"),
    }
    // The whole remaining amount fits exactly.
    req.resource_budget = Some(Budget { tokens: Some(1000), ..Budget::UNLIMITED });
    approve(&row, &usual_grants(), &req);
    // A parent with no live_children left cannot launch at all, even with no explicit budget.
    let full = parent_row(0, Budget { live_children: Some(0), ..Budget::UNLIMITED });
    deny(&full, &usual_grants(), &request("g"), "budget_exceeded");
    // A child asking for more live descendants than the parent has left besides itself.
    let mut req = request("g");
    req.resource_budget = Some(Budget { live_children: Some(4), ..Budget::UNLIMITED });
    deny(&row, &usual_grants(), &req, "budget_exceeded");
}

#[test]
fn depth_exceeded() {
    let row = parent_row(limits::DEPTH_MAX, Budget::UNLIMITED);
    match deny(&row, &usual_grants(), &request("g"), "depth_exceeded") {
        LaunchDenied::DepthExceeded { depth, max } => {
            assert_eq!((depth, max), (limits::DEPTH_MAX + 1, limits::DEPTH_MAX))
        }
        other => panic!("{other:?}"),
    }
    let row = parent_row(limits::DEPTH_MAX - 1, Budget::UNLIMITED);
    assert_eq!(approve(&row, &usual_grants(), &request("g")).child.depth, limits::DEPTH_MAX);
}

#[test]
fn invalid_goal() {
    let row = parent_row(0, Budget::UNLIMITED);
    for goal in [String::new(), "  \n\t".into(), "x".repeat(limits::GOAL_BYTES_MAX + 1)] {
        deny(&row, &usual_grants(), &request(&goal), "invalid_goal");
    }
    approve(&row, &usual_grants(), &request(&"x".repeat(limits::GOAL_BYTES_MAX)));
}

#[test]
fn the_other_rules_issue_no_id_either() {
    let mut row = parent_row(0, Budget::UNLIMITED);
    let (result, mut ids) = {
        let mut ids = CountingIds::new(SEED);
        let parent =
            Parent { row: &row, grants: &usual_grants(), elapsed_ms: 0, children: limits::CHILDREN_MAX };
        (plan_launch(parent, &request("g"), &image_exists, &mut ids), ids)
    };
    assert_eq!(result.expect_err("too many").code(), "too_many_children");
    assert_eq!(ids.pid(), first_pid());

    let mut req = request("g");
    req.inherit_capabilities = vec![cap("human", Rights::READ); limits::CAPABILITY_ENTRIES_MAX + 1];
    deny(&row, &usual_grants(), &req, "too_many_entries");

    row.apply(Event::Exit { result_oid: None }).expect("exit");
    deny(&row, &usual_grants(), &request("g"), "parent_not_live");
}

#[test]
fn a_later_denied_entry_issues_no_id_for_earlier_good_ones() {
    let row = parent_row(0, Budget::UNLIMITED);
    let mut req = request("g");
    req.inherit_paths = vec![PathRequest { path: "data".into(), rights: Rights::READ, delegable: false }];
    req.inherit_capabilities = vec![cap("process:spawn", Rights::EXECUTE), cap("human", Rights::EXECUTE)];
    let denied = deny(&row, &usual_grants(), &req, "capability_not_delegable");
    assert!(matches!(denied, LaunchDenied::Capability { index: 1, .. }), "{denied:?}");
}

/// `fs:/work/p/../../etc` is /etc: a grant on /work/p must not cover it. Found by the
/// delegation property in `kernel_props.rs` (a child was handed `fs:/..` from `fs:/`).
#[test]
fn a_capability_path_that_climbs_out_of_the_held_one_is_not_covered() {
    let row = parent_row(0, Budget::UNLIMITED);
    for resource in ["fs:/work/p/../../etc", "fs:/work/p/..", "fs:/work/p/./../q"] {
        let mut req = request("g");
        req.inherit_capabilities = vec![cap(resource, Rights::READ)];
        let (result, mut ids) = decide(&row, &usual_grants(), &req);
        match result {
            Ok(plan) => panic!(
                "{resource} was delegated from fs:{PARENT_CWD}: the child holds {:?}",
                plan.grants.iter().map(|g| &g.resource).collect::<Vec<_>>()
            ),
            Err(denied) => assert_eq!(denied.code(), "capability_not_held", "{resource}: {denied}"),
        }
        assert_eq!(ids.pid(), first_pid());
    }
    // A canonical path below the held one is still covered.
    let mut req = request("g");
    req.inherit_capabilities = vec![cap("fs:/work/p/data/x", Rights::READ)];
    approve(&row, &usual_grants(), &req);
}

#[test]
fn relative_inherited_paths_resolve_against_the_parent_cwd_even_with_another_working_directory() {
    let row = parent_row(0, Budget::UNLIMITED);
    let grants = usual_grants();
    for working_directory in [None, Some("sub/dir"), Some("/elsewhere"), Some("..")] {
        let mut req = request("g");
        req.working_directory = working_directory.map(String::from);
        req.inherit_paths = vec![
            PathRequest { path: "data/in".into(), rights: Rights::READ, delegable: false },
            PathRequest { path: "./out/".into(), rights: Rights::WRITE, delegable: true },
            PathRequest { path: "../p/x".into(), rights: Rights::READ, delegable: false },
            PathRequest { path: "/work/p/abs".into(), rights: Rights::READ, delegable: false },
        ];
        let plan = approve(&row, &grants, &req);
        let expected_cwd = match working_directory {
            None => "/work/p",
            Some("sub/dir") => "/work/p/sub/dir",
            Some("/elsewhere") => "/elsewhere",
            Some(_) => "/work",
        };
        assert_eq!(plan.child.cwd, expected_cwd, "working_directory {working_directory:?}");
        let resources: Vec<&str> = plan.grants.iter().map(|g| g.resource.as_str()).collect();
        assert_eq!(
            resources,
            ["fs:/work/p/data/in", "fs:/work/p/out", "fs:/work/p/x", "fs:/work/p/abs"],
            "working_directory {working_directory:?}"
        );
        assert!(plan.grants.iter().all(|g| g.derived_from == Some(grants[1].id)));
        assert_eq!(plan.grants[1].rights, Rights::WRITE);
        assert!(plan.grants[1].delegable);
    }
}

#[test]
fn an_omitted_budget_is_half_the_remaining_and_an_explicit_one_is_reserved() {
    let mut row = parent_row(
        0,
        Budget {
            tokens: Some(1000),
            cost_micros: Some(7),
            tool_calls: None,
            wall_time_ms: Some(60_000),
            live_children: Some(5),
        },
    );
    row.account
        .charge(&agentvisor_actors::kernel::budget::Usage { tokens: 200, ..Default::default() })
        .expect("charge");
    let plan = approve(&row, &usual_grants(), &request("g"));
    let child = plan.child.account.limit;
    assert_eq!(child.tokens, Some(400), "half of the 800 remaining, not a copy of the 1000");
    assert_eq!(child.cost_micros, Some(3), "rounded down");
    assert_eq!(child.tool_calls, None, "unlimited stays unlimited");
    assert_eq!(child.wall_time_ms, Some(30_000));
    assert_eq!(child.live_children, Some(2), "half of what is left besides the child itself");
    assert_eq!(plan.parent_account.children_reserved.tokens, Some(400));
    assert_eq!(plan.parent_account.children_reserved.live_children, Some(3));
    assert_eq!(plan.parent_account.remaining(Dimension::Tokens, 0), Some(400));
    assert_eq!(
        row.account.remaining(Dimension::Tokens, 0),
        Some(800),
        "planning does not change the parent's row"
    );

    let mut req = request("g");
    req.resource_budget = Some(Budget { tokens: Some(800), ..Budget::UNLIMITED });
    let plan = approve(&row, &usual_grants(), &req);
    assert_eq!(plan.child.account.limit.tokens, Some(800));
    assert_eq!(
        plan.child.account.limit.cost_micros,
        Some(3),
        "omitted dimensions of an explicit budget are attenuated"
    );
    assert_eq!(plan.parent_account.remaining(Dimension::Tokens, 0), Some(0));

    // Wall time is concurrent: a child's must fit the parent's remaining time but is not
    // subtracted from it.
    let mut req = request("g");
    req.resource_budget = Some(Budget { wall_time_ms: Some(50_001), ..Budget::UNLIMITED });
    let (result, _) = {
        let mut ids = CountingIds::new(SEED);
        let grants = usual_grants();
        let parent = Parent { row: &row, grants: &grants, elapsed_ms: 10_000, children: 0 };
        (plan_launch(parent, &req, &image_exists, &mut ids), ids)
    };
    assert_eq!(result.expect_err("wall time").code(), "budget_exceeded");
}

#[test]
fn status_strings_are_exactly_the_seven_lowercase_words() {
    let expected = ["runnable", "running", "waiting_event", "paused", "exited", "failed", "killed"];
    let strings: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(strings, expected);
    for status in Status::ALL {
        let text = status.as_str();
        assert_eq!(status.to_string(), text);
        assert_eq!(serde_json::to_value(status).expect("json"), serde_json::json!(text));
        assert_eq!(serde_json::from_value::<Status>(serde_json::json!(text)).expect("parse"), status);
        assert_eq!(Status::parse(text), Some(status));
        assert_eq!(status.is_terminal(), matches!(text, "exited" | "failed" | "killed"), "{text}");
    }
    for wrong in ["Running", "RUNNABLE", "waiting-event", "waitingEvent", "done", "exit", " paused", ""] {
        assert_eq!(Status::parse(wrong), None, "{wrong:?}");
        assert!(serde_json::from_value::<Status>(serde_json::json!(wrong)).is_err(), "{wrong:?}");
    }
}
