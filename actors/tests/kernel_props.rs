//! Property tests of the pure kernel: delegation never grows rights, revocation reaches exactly
//! the derived grants, budgets are conserved, the transition function keeps its invariants, and
//! lexical path resolution is canonical.
//!
//! Every property runs 256 cases from a fixed, printed seed with ChaCha, so a run is
//! reproducible; set `KERNEL_PROPS_SEED=<n>` to explore another seed. On failure proptest prints
//! the minimal case it shrank to (and no failure file is written).

mod seeded;

use agentvisor_actors::kernel::budget::{Account, Budget, ChildShare, Dimension, Usage};
use agentvisor_actors::kernel::capability::{
    self, CapabilityError, CapabilityRequest, ConstraintValue, Constraints, Grant, Rights,
    constraints_loosen, derive, find_delegation_source, resource_covers, revocation_closure,
};
use agentvisor_actors::kernel::ids::{CountingIds, Epoch, GrantId, IdSource, ImageId, Oid, Pid};
use agentvisor_actors::kernel::path;
use agentvisor_actors::kernel::process::{Event, ProcessRow, TransitionError};
use agentvisor_actors::kernel::status::{FailureKind, PauseReason, Sender, SignalKind, Status, WaitState};
use agentvisor_actors::store::{Change, MemoryStore, Store};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::Config;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::task::{Context, Poll, Waker};
use uuid::Uuid;

const DEFAULT_SEED: u64 = 0x0a9e_47e1_5012_0002;

fn config() -> Config {
    seeded::config("kernel_props", "KERNEL_PROPS_SEED", DEFAULT_SEED, 256)
}

// ---- capabilities --------------------------------------------------------------------------

const RESOURCES: [&str; 7] =
    ["process:spawn", "provider:openai", "human", "fs:/", "fs:/data", "fs:/data/a", "fs:/other"];
/// Suffixes a request may put after an `fs:` resource it bases itself on; the `..` ones try to
/// climb out of the held path.
const FS_SUFFIXES: [&str; 7] = ["", "/a", "/a/b", "/..", "/../etc", "/a/../../etc", "/./a"];
const KEYS: [&str; 3] = ["max_calls", "models", "path_prefix"];
const MODELS: [&str; 3] = ["a", "b", "c"];
const PREFIXES: [&str; 4] = ["/", "/d", "/d/e", "/x"];

fn rights() -> impl Strategy<Value = Rights> {
    (1u8..32).prop_map(Rights::from_bits_truncate)
}

fn constraint_value() -> impl Strategy<Value = ConstraintValue> {
    prop_oneof![
        (0u64..20).prop_map(ConstraintValue::Max),
        prop::collection::btree_set(prop::sample::select(MODELS.to_vec()), 0..=3)
            .prop_map(|s| ConstraintValue::OneOf(s.into_iter().map(String::from).collect())),
        prop::sample::select(PREFIXES.to_vec()).prop_map(|p| ConstraintValue::Prefix(p.into())),
    ]
}

fn constraints() -> impl Strategy<Value = Constraints> {
    prop::collection::btree_map(
        prop::sample::select(KEYS.to_vec()).prop_map(String::from),
        constraint_value(),
        0..=2,
    )
}

/// A host-made grant as generated: resource, rights, constraints, delegable, live.
#[derive(Clone, Debug)]
struct HostGrant {
    resource: &'static str,
    rights: Rights,
    constraints: Constraints,
    delegable: bool,
    live: bool,
}

fn host_grant() -> impl Strategy<Value = HostGrant> {
    (
        prop::sample::select(RESOURCES.to_vec()),
        rights(),
        constraints(),
        any::<bool>(),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(resource, rights, constraints, delegable, live)| HostGrant {
            resource,
            rights,
            constraints,
            delegable,
            live,
        })
}

/// What to do to one constraint of the grant a request is based on.
#[derive(Clone, Copy, Debug)]
enum ConstraintOp {
    Keep,
    Tighten,
    Loosen,
    Drop,
}

/// One delegation request, described relative to a grant held by the delegating process.
#[derive(Clone, Debug)]
struct RequestPlan {
    /// Which held grant the request is modelled on.
    base: Index,
    /// A resource to ask for instead of the base's, if any.
    other_resource: Option<&'static str>,
    /// For an `fs:` base, a suffix appended to its path.
    fs_suffix: &'static str,
    /// Raw rights; intersected with the base's unless `widen`.
    rights: Rights,
    widen: bool,
    /// One op per constraint of the base, in key order (missing entries mean keep).
    ops: Vec<ConstraintOp>,
    /// A new constraint to add.
    extra: Option<(&'static str, ConstraintValue)>,
    delegable: bool,
}

fn constraint_op() -> impl Strategy<Value = ConstraintOp> {
    prop_oneof![
        4 => Just(ConstraintOp::Keep),
        3 => Just(ConstraintOp::Tighten),
        1 => Just(ConstraintOp::Loosen),
        1 => Just(ConstraintOp::Drop),
    ]
}

fn request_plan() -> impl Strategy<Value = RequestPlan> {
    (
        any::<Index>(),
        prop::option::weighted(0.15, prop::sample::select(RESOURCES.to_vec())),
        prop::sample::select(FS_SUFFIXES.to_vec()),
        rights(),
        prop::bool::weighted(0.2),
        prop::collection::vec(constraint_op(), 0..=3),
        prop::option::weighted(0.2, (prop::sample::select(KEYS.to_vec()), constraint_value())),
        any::<bool>(),
    )
        .prop_map(|(base, other_resource, fs_suffix, rights, widen, ops, extra, delegable)| {
            RequestPlan { base, other_resource, fs_suffix, rights, widen, ops, extra, delegable }
        })
}

/// One level of a delegation chain: mutations of the holder's grants, then requests.
#[derive(Clone, Debug)]
struct Level {
    /// Revoke one held grant first.
    revoke: Option<Index>,
    /// Make one held grant non-delegable first (as a host-issued non-delegable grant would be).
    undelegable: Option<Index>,
    requests: Vec<RequestPlan>,
}

fn level() -> impl Strategy<Value = Level> {
    (
        prop::option::weighted(0.2, any::<Index>()),
        prop::option::weighted(0.2, any::<Index>()),
        prop::collection::vec(request_plan(), 1..=4),
    )
        .prop_map(|(revoke, undelegable, requests)| Level { revoke, undelegable, requests })
}

fn tighten(v: &ConstraintValue) -> ConstraintValue {
    match v {
        ConstraintValue::Max(n) => ConstraintValue::Max(n / 2),
        ConstraintValue::OneOf(s) => ConstraintValue::OneOf(s.iter().skip(1).cloned().collect()),
        ConstraintValue::Prefix(p) => ConstraintValue::Prefix(format!("{}/t", p.trim_end_matches('/'))),
    }
}

fn loosen(v: &ConstraintValue) -> ConstraintValue {
    match v {
        ConstraintValue::Max(n) => ConstraintValue::Max(n + 1),
        ConstraintValue::OneOf(s) => {
            let mut s = s.clone();
            s.insert("zz".into());
            ConstraintValue::OneOf(s)
        }
        ConstraintValue::Prefix(p) => {
            ConstraintValue::Prefix(p.chars().take(p.len().saturating_sub(1)).collect::<String>() + "?")
        }
    }
}

fn make_request(plan: &RequestPlan, held: &[Grant]) -> CapabilityRequest {
    let base = plan.base.get(held);
    let resource = match plan.other_resource {
        Some(r) => r.to_string(),
        None if base.resource.starts_with("fs:") => {
            format!("{}{}", base.resource.trim_end_matches('/'), plan.fs_suffix)
        }
        None => base.resource.clone(),
    };
    let resource = if resource == "fs:" { "fs:/".to_string() } else { resource };
    let rights = if plan.widen { plan.rights } else { plan.rights & base.rights };
    let rights = if rights.is_empty() { base.rights } else { rights };
    let mut constraints = Constraints::new();
    for (i, (key, value)) in base.constraints.iter().enumerate() {
        match plan.ops.get(i).copied().unwrap_or(ConstraintOp::Keep) {
            ConstraintOp::Keep => {
                constraints.insert(key.clone(), value.clone());
            }
            ConstraintOp::Tighten => {
                constraints.insert(key.clone(), tighten(value));
            }
            ConstraintOp::Loosen => {
                constraints.insert(key.clone(), loosen(value));
            }
            ConstraintOp::Drop => {}
        }
    }
    if let Some((key, value)) = &plan.extra {
        constraints.entry((*key).to_string()).or_insert_with(|| value.clone());
    }
    CapabilityRequest { resource, rights, constraints, delegable: plan.delegable }
}

/// Whether `grant` may serve as the source of `request` by the delegation rule, checked
/// directly from the rule's sentences (live AND delegable, covering resource, rights only
/// shrink, constraints only tighten).
fn eligible(grant: &Grant, request: &CapabilityRequest) -> bool {
    grant.live
        && grant.delegable
        && resource_covers(&grant.resource, &request.resource)
        && grant.rights.contains(request.rights)
        && constraints_loosen(&request.constraints, &grant.constraints).is_none()
}

/// The filesystem path an `fs:` resource names once `.` and `..` are folded, if it is one.
fn fs_path(resource: &str) -> Option<Result<String, path::PathError>> {
    resource.strip_prefix("fs:").map(|p| path::resolve("/", p))
}

/// Whether the path `inner` is `outer` or below it, both already resolved.
fn path_within(inner: &str, outer: &str) -> bool {
    outer == "/" || inner == outer || inner.strip_prefix(outer).is_some_and(|rest| rest.starts_with('/'))
}

/// Checks that `child` is no stronger than `ancestor` in every respect.
fn assert_attenuates(child: &Grant, ancestor: &Grant) -> Result<(), TestCaseError> {
    prop_assert!(
        ancestor.rights.contains(child.rights),
        "rights grew: {} derived (via {:?}) from {}",
        child.rights,
        child.derived_from,
        ancestor.rights
    );
    prop_assert_eq!(
        constraints_loosen(&child.constraints, &ancestor.constraints),
        None,
        "constraints loosened: {:?} under {:?}",
        &child.constraints,
        &ancestor.constraints
    );
    prop_assert!(
        resource_covers(&ancestor.resource, &child.resource),
        "{} not covered by {}",
        child.resource,
        ancestor.resource
    );
    if let (Some(c), Some(a)) = (fs_path(&child.resource), fs_path(&ancestor.resource)) {
        // A held path covers a request only if the request names a path at or below it once
        // `..` is folded: `fs:/data/../etc` is /etc, not something under /data.
        let a = a.expect("ancestor fs paths in this test are canonical");
        match c {
            Ok(c) => prop_assert!(
                path_within(&c, &a),
                "{} (= {c}) escapes {} (= {a})",
                child.resource,
                ancestor.resource
            ),
            Err(e) => prop_assert!(false, "{} was delegated but names no path: {e}", child.resource),
        }
    }
    if child.delegable {
        prop_assert!(ancestor.delegable, "a delegable grant derived from a non-delegable one");
    }
    Ok(())
}

fn poll_now<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory store answers every commit at once"),
    }
}

// ---- budgets -------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum BudgetOp {
    Launch { parent: Index, explicit: Option<Budget> },
    Charge { node: Index, usage: Usage },
    End { node: Index },
}

fn opt(max: u64) -> impl Strategy<Value = Option<u64>> {
    prop::option::weighted(0.7, 0..=max)
}

fn root_budget() -> impl Strategy<Value = Budget> {
    (opt(1000), opt(1000), opt(1000), opt(10_000), opt(8)).prop_map(
        |(tokens, cost_micros, tool_calls, wall_time_ms, live_children)| Budget {
            tokens,
            cost_micros,
            tool_calls,
            wall_time_ms,
            live_children,
        },
    )
}

fn explicit_budget() -> impl Strategy<Value = Budget> {
    let dim = |max: u64| prop::option::weighted(0.4, 0..=max);
    (dim(700), dim(700), dim(700), dim(8000), dim(5)).prop_map(
        |(tokens, cost_micros, tool_calls, wall_time_ms, live_children)| Budget {
            tokens,
            cost_micros,
            tool_calls,
            wall_time_ms,
            live_children,
        },
    )
}

fn budget_op() -> impl Strategy<Value = BudgetOp> {
    prop_oneof![
        3 => (any::<Index>(), prop::option::weighted(0.6, explicit_budget()))
            .prop_map(|(parent, explicit)| BudgetOp::Launch { parent, explicit }),
        4 => (any::<Index>(), 0u64..300, 0u64..300, 0u64..4)
            .prop_map(|(node, tokens, cost_micros, tool_calls)| BudgetOp::Charge {
                node,
                usage: Usage { tokens, cost_micros, tool_calls, wall_time_ms: 0 },
            }),
        1 => any::<Index>().prop_map(|node| BudgetOp::End { node }),
    ]
}

#[derive(Clone, Debug)]
struct Node {
    account: Account,
    parent: Option<usize>,
    live: bool,
}

fn children_of(nodes: &[Node], i: usize) -> impl Iterator<Item = usize> + '_ {
    nodes.iter().enumerate().filter(move |(_, n)| n.parent == Some(i)).map(|(j, _)| j)
}

/// Ends `i` the way the runtime does: its live children first (deepest first), each settled
/// into its parent, then `i` itself.
fn end_subtree(nodes: &mut Vec<Node>, i: usize) {
    let live_children: Vec<usize> = children_of(nodes, i).filter(|&j| nodes[j].live).collect();
    for j in live_children {
        end_subtree(nodes, j);
    }
    nodes[i].live = false;
    if let Some(p) = nodes[i].parent {
        let (limit, spent) = (nodes[i].account.limit, nodes[i].account.total_spent());
        nodes[p].account.settle_child(&limit, &spent);
    }
}

fn subtree_self_spent(nodes: &[Node], i: usize, d: Dimension) -> u128 {
    u128::from(nodes[i].account.self_spent.get(d))
        + children_of(nodes, i).map(|j| subtree_self_spent(nodes, j, d)).sum::<u128>()
}

fn check_budget_invariants(nodes: &[Node]) -> Result<(), TestCaseError> {
    for (i, node) in nodes.iter().enumerate() {
        let a = &node.account;
        for d in Usage::ADDITIVE {
            if let Some(limit) = a.limit.get(d) {
                let committed = u128::from(a.self_spent.get(d))
                    + u128::from(a.children_spent.get(d))
                    + u128::from(a.children_reserved.get(d).unwrap_or(0));
                prop_assert!(
                    committed <= u128::from(limit),
                    "node {i}: {d} spent+reserved {committed} beyond its limit {limit}: {a:?}"
                );
                let subtree = subtree_self_spent(nodes, i, d);
                prop_assert!(
                    subtree <= u128::from(limit),
                    "node {i}: its subtree spent {subtree} {d} of {limit}"
                );
            }
            if node.live {
                // The reservation is exactly the live children's limits; what terminal children
                // spent is exactly charged (the account is derivable from the rows).
                let reserved: u128 = children_of(nodes, i)
                    .filter(|&j| nodes[j].live)
                    .map(|j| u128::from(nodes[j].account.limit.get(d).unwrap_or(0)))
                    .sum();
                if a.limit.get(d).is_some() {
                    prop_assert_eq!(
                        u128::from(a.children_reserved.get(d).unwrap_or(0)),
                        reserved,
                        "node {} {}",
                        i,
                        d
                    );
                }
                let spent: u128 = children_of(nodes, i)
                    .filter(|&j| !nodes[j].live)
                    .map(|j| u128::from(nodes[j].account.total_spent().get(d)))
                    .sum();
                prop_assert_eq!(u128::from(a.children_spent.get(d)), spent, "node {} {}", i, d);
            }
        }
        if let Some(limit) = a.limit.live_children {
            let reserved = a.children_reserved.live_children.unwrap_or(0);
            prop_assert!(reserved <= limit, "node {i}: live_children reserved {reserved} of {limit}");
        }
        if node.live {
            let mut rebuilt = *a;
            rebuilt.rebuild_children(children_of(nodes, i).map(|j| ChildShare {
                limit: nodes[j].account.limit,
                spent: nodes[j].account.total_spent(),
                terminal: !nodes[j].live,
            }));
            prop_assert_eq!(rebuilt.children_spent, a.children_spent, "node {}: rebuild differs", i);
            for d in Dimension::ALL {
                prop_assert_eq!(
                    rebuilt.children_reserved.get(d).unwrap_or(0),
                    a.children_reserved.get(d).unwrap_or(0),
                    "node {}: rebuilt {} reservation differs",
                    i,
                    d
                );
            }
        }
    }
    let root = &nodes[0].account;
    for d in Usage::ADDITIVE {
        if let Some(limit) = root.limit.get(d) {
            let total: u128 = nodes.iter().map(|n| u128::from(n.account.self_spent.get(d))).sum();
            prop_assert!(total <= u128::from(limit), "the tree spent {total} {d} of the root's {limit}");
        }
    }
    Ok(())
}

// ---- process rows --------------------------------------------------------------------------

fn pid_from(n: u128) -> Pid {
    Pid(Uuid::from_u128(n))
}

fn sender() -> impl Strategy<Value = Sender> {
    prop_oneof![
        Just(Sender::Host),
        Just(Sender::Runtime),
        (1u128..5).prop_map(|n| Sender::Process(pid_from(n)))
    ]
}

fn wait_state() -> impl Strategy<Value = WaitState> {
    prop_oneof![
        (1u128..5).prop_map(|n| WaitState::Child { child_pid: pid_from(n) }),
        "[a-z]{0,6}".prop_map(|filter| WaitState::Message { filter }),
        "[a-z]{1,6}".prop_map(|tool| WaitState::Tool { tool }),
        "[a-z ]{0,8}".prop_map(|prompt| WaitState::Human { prompt }),
    ]
}

fn pause_reason() -> impl Strategy<Value = PauseReason> {
    prop_oneof![
        (sender(), prop::option::of("[a-z]{0,6}"))
            .prop_map(|(sender, reason)| PauseReason::Signal { sender, reason }),
        (0u64..4).prop_map(|epoch| PauseReason::StaleExecution { epoch }),
        Just(PauseReason::Shutdown),
        Just(PauseReason::HostGate),
    ]
}

fn signal_kind() -> impl Strategy<Value = SignalKind> {
    prop::sample::select(vec![
        SignalKind::Pause,
        SignalKind::Resume,
        SignalKind::Cancel,
        SignalKind::Terminate,
    ])
}

fn failure_kind() -> impl Strategy<Value = FailureKind> {
    prop::sample::select(vec![
        FailureKind::Panic,
        FailureKind::BudgetExhausted,
        FailureKind::ResumeInterrupted,
        FailureKind::LaunchFailed,
        FailureKind::ProgramError,
        FailureKind::InvariantViolation,
    ])
}

fn event() -> impl Strategy<Value = Event> {
    let epoch = (0u64..4).prop_map(Epoch);
    prop_oneof![
        6 => epoch.clone().prop_map(|epoch| Event::Start { epoch }),
        6 => wait_state().prop_map(Event::BeginWait),
        5 => (epoch.clone(), any::<bool>()).prop_map(|(epoch, claim)| Event::WaitSatisfied { epoch, claim }),
        6 => pause_reason().prop_map(Event::Pause),
        6 => (epoch, any::<bool>()).prop_map(|(epoch, claim)| Event::Resume { epoch, claim }),
        3 => "[a-z]{0,6}".prop_map(|reason| Event::SetGate { reason }),
        3 => Just(Event::ClearGate),
        3 => Just(Event::Progress),
        4 => Just(Event::RecoverStale),
        1 => prop::option::of(1u128..9).prop_map(|o| Event::Exit { result_oid: o.map(|n| Oid(Uuid::from_u128(n))) }),
        1 => (failure_kind(), "[a-z ]{0,10}").prop_map(|(kind, message)| Event::Fail { kind, message }),
        2 => (signal_kind(), prop::option::of("[a-z]{0,6}"), sender())
            .prop_map(|(signal, reason, sender)| Event::Kill { signal, reason, sender }),
    ]
}

fn fresh_row(child: bool) -> ProcessRow {
    let (parent, depth) = if child { (Some(pid_from(1)), 3) } else { (None, 0) };
    ProcessRow::launched(
        pid_from(2),
        parent,
        depth,
        ImageId::from("img"),
        "/work".into(),
        "goal".into(),
        Budget { tokens: Some(10), ..Budget::UNLIMITED },
    )
}

// ---- paths ---------------------------------------------------------------------------------

fn segment(names: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        2 => Just(".".to_string()),
        2 => Just("..".to_string()),
        5 => names.prop_map(String::from),
    ]
}

fn path_text(names: &'static str) -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(segment(names), 0..8), any::<bool>()).prop_map(
        |(absolute, segs, trailing)| {
            let mut p = segs.join("/");
            if absolute {
                p.insert(0, '/');
            }
            if trailing {
                p.push('/');
            }
            p
        },
    )
}

fn base_dir(names: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec(segment(names), 0..6).prop_map(|segs| format!("/{}", segs.join("/")))
}

fn check_canonical(out: &str) -> Result<(), TestCaseError> {
    prop_assert!(out.starts_with('/'), "{out:?} is not absolute");
    prop_assert!(!out.contains("//"), "{out:?} has an empty segment");
    prop_assert!(out == "/" || !out.ends_with('/'), "{out:?} has a trailing slash");
    prop_assert!(!out.split('/').any(|s| s == ".." || s == "."), "{out:?} has a . or .. segment");
    let expected = Ok(out.to_string());
    prop_assert_eq!(&path::resolve("/", out), &expected, "not idempotent from /");
    prop_assert_eq!(&path::resolve(out, "."), &expected, "not idempotent against itself");
    prop_assert_eq!(
        &path::resolve("/elsewhere/deep", out),
        &expected,
        "an absolute result depends on the base"
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Random delegation chains: each level derives grants for the next from what it holds.
    /// Whatever is derived is no stronger than its source or any ancestor; a request is refused
    /// exactly when no held grant is eligible; a revoked or non-delegable grant is never a
    /// source.
    #[test]
    fn rights_never_grow_along_a_delegation_chain(
        roots in prop::collection::vec(host_grant(), 1..=4),
        levels in prop::collection::vec(level(), 1..=6),
    ) {
        let mut ids = CountingIds::new(1);
        let mut holder = ids.pid();
        let mut held: Vec<Grant> = roots
            .iter()
            .map(|g| Grant {
                id: ids.grant(),
                holder,
                resource: g.resource.to_string(),
                rights: g.rights,
                constraints: g.constraints.clone(),
                delegable: g.delegable,
                live: g.live,
                derived_from: None,
            })
            .collect();
        let mut all: HashMap<GrantId, Grant> = held.iter().map(|g| (g.id, g.clone())).collect();
        for level in &levels {
            if let Some(i) = level.revoke {
                let id = i.get(&held).id;
                for g in held.iter_mut().filter(|g| g.id == id) { g.live = false; }
            }
            if let Some(i) = level.undelegable {
                let id = i.get(&held).id;
                for g in held.iter_mut().filter(|g| g.id == id) { g.delegable = false; }
            }
            let child = ids.pid();
            let mut next = Vec::new();
            for plan in &level.requests {
                let request = make_request(plan, &held);
                let any_eligible = held.iter().any(|g| eligible(g, &request));
                match find_delegation_source(&held, &request) {
                    Ok(source) => {
                        prop_assert!(source.live, "a revoked grant was chosen as a source");
                        prop_assert!(source.delegable, "a non-delegable grant was chosen as a source");
                        prop_assert!(eligible(source, &request), "ineligible source {source:?} for {request:?}");
                        let derived = derive(source, &request, child, ids.grant());
                        prop_assert_eq!(derived.derived_from, Some(source.id));
                        prop_assert_eq!(derived.holder, child);
                        prop_assert!(derived.live);
                        prop_assert!(!derived.rights.is_empty());
                        // Against the source and then every ancestor up to the host.
                        assert_attenuates(&derived, source)?;
                        let mut up = source.derived_from;
                        while let Some(id) = up {
                            let ancestor = &all[&id];
                            assert_attenuates(&derived, ancestor)?;
                            up = ancestor.derived_from;
                        }
                        all.insert(derived.id, derived.clone());
                        next.push(derived);
                    }
                    Err(error) => {
                        prop_assert!(!any_eligible, "refused ({error}) although a held grant is eligible: {request:?} from {held:?}");
                        let covering: Vec<&Grant> =
                            held.iter().filter(|g| resource_covers(&g.resource, &request.resource)).collect();
                        match &error {
                            CapabilityError::NotHeld { .. } => prop_assert!(covering.is_empty()),
                            CapabilityError::Revoked { .. } => {
                                prop_assert!(!covering.is_empty() && covering.iter().all(|g| !g.live));
                            }
                            CapabilityError::NotDelegable { .. } => {
                                prop_assert!(covering.iter().any(|g| g.live));
                                prop_assert!(covering.iter().filter(|g| g.live).all(|g| !g.delegable));
                            }
                            _ => prop_assert!(covering.iter().any(|g| g.live && g.delegable)),
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            holder = child;
            held = next;
        }
        let _ = holder;
    }

    /// A grant whose covering grants are all revoked, or all live but non-delegable, never
    /// yields a grant, whatever is asked.
    #[test]
    fn revoked_or_non_delegable_sources_never_yield_a_grant(
        grants in prop::collection::vec(host_grant(), 1..=5),
        revoked in any::<bool>(),
        plan in request_plan(),
    ) {
        let mut ids = CountingIds::new(2);
        let holder = ids.pid();
        let held: Vec<Grant> = grants
            .iter()
            .map(|g| Grant {
                id: ids.grant(),
                holder,
                resource: g.resource.to_string(),
                rights: g.rights,
                constraints: g.constraints.clone(),
                // Every grant is unusable for delegation in one of the two ways.
                delegable: revoked && g.delegable,
                live: !revoked,
                derived_from: None,
            })
            .collect();
        let request = make_request(&plan, &held);
        let result = find_delegation_source(&held, &request);
        prop_assert!(result.is_err(), "{result:?}");
    }

    /// Revoking a random grant of a random derivation forest revokes exactly it and its
    /// descendants, in whatever order the grants are listed; the in-memory store's
    /// `RevokeGrant` revokes the same set and reports each once.
    #[test]
    fn revocation_closure_is_exactly_the_descendants(
        parents in prop::collection::vec(prop::option::weighted(0.75, any::<Index>()), 1..40),
        target in any::<Index>(),
        rotate in any::<Index>(),
        reverse in any::<bool>(),
    ) {
        let mut ids = CountingIds::new(3);
        let holder = ids.pid();
        let parent_of: Vec<Option<usize>> = parents
            .iter()
            .enumerate()
            .map(|(i, p)| if i == 0 { None } else { p.map(|ix| ix.index(i)) })
            .collect();
        let grants: Vec<Grant> = parent_of
            .iter()
            .map(|_| Grant {
                id: ids.grant(),
                holder,
                resource: "provider:openai".into(),
                rights: Rights::READ,
                constraints: Constraints::new(),
                delegable: true,
                live: true,
                derived_from: None,
            })
            .collect();
        let grants: Vec<Grant> = grants
            .iter()
            .enumerate()
            .map(|(i, g)| Grant { derived_from: parent_of[i].map(|p| grants[p].id), ..g.clone() })
            .collect();
        let root = target.index(grants.len());
        let expected: BTreeSet<GrantId> = (0..grants.len())
            .filter(|&i| {
                let mut cur = Some(i);
                while let Some(c) = cur {
                    if c == root { return true; }
                    cur = parent_of[c];
                }
                false
            })
            .map(|i| grants[i].id)
            .collect();
        let mut listed = grants.clone();
        let by = rotate.index(listed.len());
        listed.rotate_left(by);
        if reverse { listed.reverse(); }
        let closure = revocation_closure(&listed, grants[root].id);
        prop_assert_eq!(closure.first().copied(), Some(grants[root].id));
        let as_set: BTreeSet<GrantId> = closure.iter().copied().collect();
        prop_assert_eq!(as_set.len(), closure.len(), "duplicates in {:?}", closure);
        prop_assert_eq!(&as_set, &expected);

        let store = MemoryStore::new();
        poll_now(store.submit(grants.iter().cloned().map(Change::PutGrant).collect())).expect("put");
        let receipt = poll_now(store.submit(vec![Change::RevokeGrant(grants[root].id)])).expect("revoke");
        let revoked: BTreeSet<GrantId> = receipt.revoked.iter().map(|(g, _)| *g).collect();
        prop_assert_eq!(revoked.len(), receipt.revoked.len());
        prop_assert_eq!(&revoked, &expected);
        for g in store.grants_of(holder).expect("read") {
            prop_assert_eq!(g.live, !expected.contains(&g.id), "grant {:?}", g.id);
        }
    }

    /// Random trees of launches, charges and terminal settlements: no account ever has more
    /// spent and reserved than its limit in an additive dimension, the whole tree never spends
    /// more than the root was given, an explicit budget that does not fit is refused, an
    /// omitted one gets half of what remains, and ending everything leaves the root's account
    /// holding exactly what the tree spent.
    #[test]
    fn budgets_are_conserved_over_random_trees(
        root in root_budget(),
        ops in prop::collection::vec(budget_op(), 0..60),
    ) {
        let mut nodes = vec![Node { account: Account::new(root), parent: None, live: true }];
        for op in &ops {
            let live: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].live).collect();
            if live.is_empty() { break; }
            match op {
                BudgetOp::Launch { parent, explicit } => {
                    let p = *parent.get(&live);
                    let before = nodes[p].account;
                    let planned = before.plan_child(explicit.as_ref(), 0);
                    // What each dimension can give a child: live_children keeps one unit for
                    // the child itself.
                    let available = |d: Dimension| -> Option<Option<u64>> {
                        match (d, before.remaining(d, 0)) {
                            (Dimension::LiveChildren, Some(0)) => None,
                            (Dimension::LiveChildren, Some(r)) => Some(Some(r - 1)),
                            (_, r) => Some(r),
                        }
                    };
                    let fits = |d: Dimension| match (available(d), explicit.and_then(|b| b.get(d))) {
                        (None, _) => false,
                        (Some(Some(a)), Some(v)) => v <= a,
                        _ => true,
                    };
                    match planned {
                        Ok(child) => {
                            for d in Dimension::ALL {
                                prop_assert!(fits(d), "{d} planned although it does not fit");
                                let a = available(d).expect("fits");
                                match explicit.and_then(|b| b.get(d)) {
                                    Some(v) => prop_assert_eq!(child.get(d), Some(v), "explicit {} not kept", d),
                                    None => prop_assert_eq!(child.get(d), a.map(|a| a / 2), "omitted {} is not half the remaining", d),
                                }
                            }
                            nodes[p].account.reserve_child(&child);
                            nodes.push(Node { account: Account::new(child), parent: Some(p), live: true });
                        }
                        Err(e) => {
                            prop_assert!(!fits(e.dimension), "refused {} although it fits: {}", e.dimension, e);
                            prop_assert!(Dimension::ALL.iter().any(|&d| !fits(d)));
                            prop_assert_eq!(nodes[p].account, before);
                        }
                    }
                }
                BudgetOp::Charge { node, usage } => {
                    let n = *node.get(&live);
                    let before = nodes[n].account;
                    let over = Usage::ADDITIVE
                        .iter()
                        .any(|&d| usage.get(d) > 0 && before.remaining(d, 0).is_some_and(|r| usage.get(d) > r));
                    match nodes[n].account.charge(usage) {
                        Ok(()) => {
                            prop_assert!(!over, "charged {usage:?} past {before:?}");
                            for d in Usage::ADDITIVE {
                                prop_assert_eq!(nodes[n].account.self_spent.get(d), before.self_spent.get(d) + usage.get(d));
                            }
                        }
                        Err(_) => {
                            prop_assert!(over, "refused {usage:?} that fits {before:?}");
                            prop_assert_eq!(nodes[n].account, before, "a refused charge changed the account");
                        }
                    }
                }
                BudgetOp::End { node } => {
                    let n = *node.get(&live);
                    end_subtree(&mut nodes, n);
                }
            }
            check_budget_invariants(&nodes)?;
        }
        if nodes[0].live {
            end_subtree(&mut nodes, 0);
            check_budget_invariants(&nodes)?;
        }
        let total = nodes[0].account.total_spent();
        for d in Usage::ADDITIVE {
            let sum: u128 = nodes.iter().map(|n| u128::from(n.account.self_spent.get(d))).sum();
            prop_assert_eq!(u128::from(total.get(d)), sum, "the root's account lost or invented {} spending", d);
        }
    }

    /// Random event sequences: every accepted event bumps `state_generation` by exactly one and
    /// keeps `check()`; every refused one leaves the row untouched; a terminal row refuses
    /// everything; pause, resume and gates never touch the saved wait; identity never changes.
    #[test]
    fn transitions_bump_the_generation_by_one_and_keep_invariants(
        child in any::<bool>(),
        events in prop::collection::vec(event(), 0..48),
    ) {
        let mut row = fresh_row(child);
        prop_assert!(row.check().is_ok());
        for event in events {
            let before = row.clone();
            let result = row.apply(event.clone());
            if before.status.is_terminal() {
                prop_assert!(matches!(result, Err(TransitionError::Terminal { .. })), "{result:?}");
                prop_assert_eq!(&row, &before);
                continue;
            }
            match result {
                Ok(()) => {
                    prop_assert_eq!(row.state_generation, before.state_generation + 1, "{:?}", event);
                    prop_assert!(row.check().is_ok(), "{:?} after {:?}", row.check(), event);
                    prop_assert_eq!((row.pid, row.parent, row.depth), (before.pid, before.parent, before.depth));
                    prop_assert_eq!((&row.image, &row.cwd, &row.goal), (&before.image, &before.cwd, &before.goal));
                    prop_assert_eq!(row.account, before.account);
                    prop_assert!(row.started || !before.started, "started was unset");
                    match &event {
                        Event::Pause(_) | Event::Resume { .. } | Event::SetGate { .. } | Event::ClearGate | Event::Progress => {
                            prop_assert_eq!(&row.wait_state, &before.wait_state, "{:?} touched the wait", event);
                        }
                        Event::Kill { signal, .. } => {
                            prop_assert!(matches!(signal, SignalKind::Cancel | SignalKind::Terminate));
                            prop_assert_eq!(row.status, Status::Killed);
                        }
                        Event::Exit { .. } => prop_assert_eq!(before.status, Status::Running),
                        _ => {}
                    }
                    if let Event::Resume { .. } = event {
                        prop_assert!(before.host_gate.is_none(), "a gated row was resumed");
                    }
                    if row.status.is_terminal() {
                        prop_assert!(row.outcome.is_some());
                        prop_assert_eq!(&row.wait_state, &None);
                        prop_assert_eq!(row.epoch, None);
                        prop_assert_eq!(row.resume_claim, None);
                    }
                }
                Err(_) => {
                    prop_assert_eq!(&row, &before, "a refused {:?} changed the row", event);
                }
            }
        }
    }

    /// Successful resolutions are canonical: absolute, no empty, `.` or `..` segment, no
    /// trailing slash, and resolving them again (from anywhere) gives them back. A relative
    /// path resolves the same against a base as against that base's resolution.
    #[test]
    fn resolved_paths_are_canonical_and_idempotent(
        base in base_dir("[a-z.]{1,4}"),
        p in path_text("[a-z.]{1,4}"),
    ) {
        let resolved = path::resolve(&base, &p);
        if let Ok(out) = &resolved {
            check_canonical(out)?;
        }
        if let Ok(canonical_base) = path::resolve("/", &base) {
            // The error texts name the base as given, so compare results only.
            let again = path::resolve(&canonical_base, &p);
            prop_assert_eq!(resolved.as_ref().ok(), again.as_ref().ok());
        } else {
            prop_assert!(resolved.is_err() || p.starts_with('/'));
        }
    }

    /// With names that contain no dots, a resolved path has no `..` anywhere in its text.
    #[test]
    fn resolved_paths_never_contain_dot_dot(
        base in base_dir("[a-z]{1,3}"),
        p in path_text("[a-z]{1,3}"),
    ) {
        if let Ok(out) = path::resolve(&base, &p) {
            prop_assert!(!out.contains(".."), "{out:?}");
            check_canonical(&out)?;
        }
    }
}

/// The generators above are not vacuous: chains of length several with derived grants occur.
/// (A guard against a refactor that makes every request fail and every property trivially
/// true.)
#[test]
fn delegation_generator_reaches_deep_chains() {
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let mut deepest = 0;
    for _ in 0..64 {
        let tree = (prop::collection::vec(host_grant(), 1..=4), prop::collection::vec(level(), 1..=6))
            .new_tree(&mut runner)
            .expect("generate");
        let (roots, levels) = tree.current();
        let mut ids = CountingIds::new(9);
        let holder = ids.pid();
        let mut held: Vec<Grant> = roots
            .iter()
            .map(|g| {
                capability::host_grant(
                    &CapabilityRequest {
                        resource: g.resource.into(),
                        rights: g.rights,
                        constraints: g.constraints.clone(),
                        delegable: true,
                    },
                    holder,
                    ids.grant(),
                )
                .expect("valid")
            })
            .collect();
        let mut depth = 0;
        for level in &levels {
            let child = ids.pid();
            let next: Vec<Grant> = level
                .requests
                .iter()
                .filter_map(|plan| {
                    let request = make_request(plan, &held);
                    find_delegation_source(&held, &request)
                        .ok()
                        .map(|s| derive(s, &request, child, ids.grant()))
                })
                .collect();
            if next.is_empty() {
                break;
            }
            depth += 1;
            held = next;
        }
        deepest = deepest.max(depth);
    }
    assert!(deepest >= 3, "the delegation generator never got past depth {deepest}");
}
