//! OpenRig-shaped rig specs: pods, pod and cross-pod edges, qualified member ids, the terminal
//! sentinel, `agent_ref` prefixes, restore policies; every new problem with its code and path,
//! mixed shapes, and the agent configuration checks of `load_rig` and `rig validate`.

use agentvisor::rig::{
    Edge, EdgeKind, RestorePolicy, RigProblemCode, RigSpecReport, SeatRuntime, SessionSource, load_rig,
    parse_rig,
};
use std::path::Path;
use std::process::Command;

const VALID: &str = r#"name: review-rig
version: 0.1
summary: Builders and reviewers of one pull request.
pods:
  - id: build
    label: Builders
    members:
      - id: lead
        runtime: native
        agent_ref: local:agents/team.yaml
        profile: lead
        prompt: Plan the work.
        restore_policy: resume_if_possible
      - id: shell
        runtime: terminal
        agent_ref: builtin:terminal
        profile: none
        cwd: work
        restore_policy: relaunch_fresh
    edges:
      - {kind: can_observe, from: lead, to: shell}
  - id: review
    members:
      - id: alice
        runtime: claude-code
        agent_ref: path:/opt/agents/review.yaml
        profile: reviewer
        session_source:
          mode: fork
          ref: {kind: native_id, value: "0b0165d7-cb4d-4650-90de-15c0a1ede9e6"}
        restore_policy: checkpoint_only
      - id: bob
        runtime: native
        agent_ref: local:agents/team.yaml
        profile: lead
        session_source: {mode: fork, ref: {kind: native_id, value: "seat:build.lead"}}
    edges:
      - {kind: collaborates_with, from: alice, to: bob}
      - {kind: spawned_by, from: bob, to: build.lead}
edges:
  - {kind: delegates_to, from: build.lead, to: review.alice}
  - {kind: escalates_to, from: review.bob, to: build.lead}
"#;

fn refused(text: &str) -> RigSpecReport {
    match parse_rig(text) {
        Ok(rig) => panic!("expected problems, the spec passed: {rig:?}"),
        Err(report) => report,
    }
}

fn edge(kind: EdgeKind, from: &str, to: &str) -> (EdgeKind, String, String) {
    (kind, from.to_owned(), to.to_owned())
}

fn edges(list: &[Edge]) -> Vec<(EdgeKind, String, String)> {
    list.iter().map(|e| (e.kind, e.from.as_str().to_owned(), e.to.as_str().to_owned())).collect()
}

/// Every problem as (path, code).
fn problems(report: &RigSpecReport) -> Vec<(String, &'static str)> {
    report.problems.iter().map(|p| (p.path.clone(), p.code().as_str())).collect()
}

#[test]
fn an_openrig_spec_parses_into_checked_types() {
    let rig = parse_rig(VALID).expect("valid");
    assert_eq!(rig.id.as_str(), "review-rig");
    assert_eq!(rig.name.as_deref(), Some("review-rig"));
    assert_eq!(rig.version.as_deref(), Some("0.1"));
    assert_eq!(rig.summary.as_deref(), Some("Builders and reviewers of one pull request."));
    let pods: Vec<(&str, Option<&str>)> =
        rig.pods.iter().map(|p| (p.id.as_str(), p.label.as_deref())).collect();
    assert_eq!(pods, [("build", Some("Builders")), ("review", None)]);

    let ids: Vec<&str> = rig.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["build.lead", "build.shell", "review.alice", "review.bob"]);
    let review: Vec<&str> = rig.pod_members("review").map(|m| m.id.as_str()).collect();
    assert_eq!(review, ["review.alice", "review.bob"]);

    let [lead, shell, alice, bob] = &rig.members[..] else { panic!("four members") };
    // `local:` is relative to the spec's directory and `path:` absolute; the prefix is removed.
    assert_eq!(lead.agent_ref.as_deref(), Some("agents/team.yaml"));
    assert_eq!(alice.agent_ref.as_deref(), Some("/opt/agents/review.yaml"));
    assert_eq!(
        Path::new("/specs").join(alice.agent_ref.as_deref().expect("a path")),
        Path::new("/opt/agents/review.yaml")
    );
    assert_eq!((lead.runtime, lead.profile.as_deref()), (SeatRuntime::Native, Some("lead")));
    assert_eq!(lead.restore_policy, Some(RestorePolicy::ResumeIfPossible));
    // The terminal sentinel checks into a terminal member with no agent and no profile.
    assert_eq!(shell.runtime, SeatRuntime::Terminal);
    assert_eq!((shell.agent_ref.as_deref(), shell.profile.as_deref()), (None, None));
    assert_eq!((shell.cwd.as_str(), shell.restore_policy), ("work", Some(RestorePolicy::RelaunchFresh)));
    assert_eq!(alice.restore_policy, Some(RestorePolicy::CheckpointOnly));
    assert_eq!(bob.restore_policy, None);
    match (&alice.session_source, &bob.session_source) {
        (Some(SessionSource::Fork { native_id: a }), Some(SessionSource::Fork { native_id: b })) => {
            assert_eq!(a.as_str(), "0b0165d7-cb4d-4650-90de-15c0a1ede9e6");
            assert_eq!(b.as_str(), "seat:build.lead");
        }
        other => panic!("expected two forks, got {other:?}"),
    }

    // Pods' edges first, qualified, then the top-level ones, in file order.
    assert_eq!(
        edges(&rig.edges),
        [
            edge(EdgeKind::CanObserve, "build.lead", "build.shell"),
            edge(EdgeKind::CollaboratesWith, "review.alice", "review.bob"),
            edge(EdgeKind::SpawnedBy, "review.bob", "build.lead"),
            edge(EdgeKind::DelegatesTo, "build.lead", "review.alice"),
            edge(EdgeKind::EscalatesTo, "review.bob", "build.lead"),
        ]
    );

    // The checked spec survives a round trip through its serde form, and parsing is stable.
    let json = serde_json::to_string(&rig).expect("serialize");
    assert_eq!(serde_json::from_str::<agentvisor::rig::RigSpec>(&json).expect("deserialize"), rig);
    assert_eq!(parse_rig(VALID).expect("valid"), rig);
}

#[test]
fn a_version_is_text_even_when_written_as_a_number() {
    for (written, read) in
        [("1", "1"), ("0.1", "0.1"), ("1.10", "1.10"), ("\"2\"", "2"), ("v2-beta", "v2-beta")]
    {
        let text = format!(
            "name: r\nversion: {written}\npods:\n  - id: p\n    members: [{{id: a, runtime: codex}}]\n"
        );
        let rig = parse_rig(&text).unwrap_or_else(|report| panic!("{written}: {report}"));
        assert_eq!(rig.version.as_deref(), Some(read), "{written}");
    }
    for missing in ["", "version:\n", "version: \"\"\n"] {
        let text = format!("name: r\n{missing}pods:\n  - id: p\n    members: [{{id: a, runtime: codex}}]\n");
        assert_eq!(problems(&refused(&text)), [("version".to_owned(), "missing_field")], "{missing:?}");
    }
}

#[test]
fn flat_specs_keep_their_shape_and_may_have_edges() {
    let rig = parse_rig(
        "id: r\nmembers:\n  - {id: a.x, runtime: codex, agent_ref: agents.yaml, restore_policy: relaunch_fresh}\n  \
         - {id: b, runtime: terminal}\n  - {id: c, runtime: terminal, agent_ref: builtin:terminal, profile: \
         none}\nedges:\n  - {kind: can_observe, from: a.x, to: b}\n",
    )
    .expect("valid");
    assert_eq!((rig.name.as_deref(), rig.version.as_deref(), rig.pods.len()), (None, None, 0));
    assert_eq!(rig.members[0].agent_ref.as_deref(), Some("agents.yaml"));
    assert_eq!(rig.members[0].restore_policy, Some(RestorePolicy::RelaunchFresh));
    assert_eq!((rig.members[2].agent_ref.as_deref(), rig.members[2].profile.as_deref()), (None, None));
    assert_eq!(edges(&rig.edges), [edge(EdgeKind::CanObserve, "a.x", "b")]);
    // A flat spec's JSON is what it was before pods and edges existed.
    let plain = parse_rig("id: r\nmembers:\n  - {id: a, runtime: codex}\n").expect("valid");
    assert_eq!(
        serde_json::to_string(&plain).expect("json"),
        r#"{"id":"r","members":[{"id":"a","runtime":"codex","agent_ref":null,"profile":null,"cwd":".","prompt":null,"session_source":null}]}"#
    );
}

#[test]
fn every_new_problem_is_reported_at_once_with_its_path() {
    let text = r#"name: bad rig
version: 1
pods:
  - id: build
    members:
      - id: lead
        runtime: native
        agent_ref: agents.yaml
        profile: lead
      - id: lead
        runtime: codex
      - id: a.b
        runtime: codex
      - id: shell
        runtime: terminal
      - id: t2
        runtime: codex
        profile: none
      - id: loc
        runtime: native
        agent_ref: local:/etc/agents.yaml
        profile: lead
        restore_policy: forever
      - id: abs
        runtime: native
        agent_ref: path:agents.yaml
        profile: lead
      - id: t3
        runtime: terminal
        agent_ref: builtin:shell
        profile: none
    edges:
      - {kind: bosses, from: lead, to: shell}
      - {kind: can_observe, from: lead, to: ghost}
      - {kind: can_observe, from: lead, to: build.lead}
      - {kind: can_observe, to: shell}
  - id: build
    members:
      - {id: x, runtime: codex}
  - id: re.view
    label: Reviewers
    members:
      - {id: y, runtime: codex}
  - id: empty
edges:
  - {kind: delegates_to, from: lead, to: build.shell}
  - {kind: delegates_to, from: build.shell, to: other.y}
"#;
    let report = refused(text);
    let expected = [
        ("name", "invalid_id"),
        ("pods[1].id", "duplicate_id"),
        ("pods[2].id", "invalid_id"),
        ("pods[0].members[1].id", "duplicate_id"),
        ("pods[0].members[2].id", "invalid_id"),
        ("pods[0].members[0].agent_ref", "invalid_agent_ref"),
        ("pods[0].members[3].agent_ref", "incomplete_terminal_sentinel"),
        ("pods[0].members[4].runtime", "incomplete_terminal_sentinel"),
        ("pods[0].members[5].agent_ref", "invalid_agent_ref"),
        ("pods[0].members[5].restore_policy", "unknown_restore_policy"),
        ("pods[0].members[6].agent_ref", "invalid_agent_ref"),
        ("pods[0].members[7].agent_ref", "invalid_agent_ref"),
        ("pods[3].members", "no_members"),
        ("pods[0].edges[0].kind", "unknown_edge_kind"),
        ("pods[0].edges[1].to", "unknown_edge_member"),
        ("pods[0].edges[2].to", "self_edge"),
        ("pods[0].edges[3].from", "missing_field"),
        ("edges[0].from", "unknown_edge_member"),
        ("edges[1].to", "unknown_edge_member"),
    ];
    let expected: Vec<(String, &str)> = expected.iter().map(|(p, c)| ((*p).to_owned(), *c)).collect();
    assert_eq!(problems(&report), expected, "{report}");

    let message = |path: &str| {
        report.problems.iter().find(|p| p.path == path).map(|p| p.message.clone()).expect("a problem there")
    };
    assert!(
        message("pods[0].members[2].id").contains("qualified as `pod.member`"),
        "{}",
        message("pods[0].members[2].id")
    );
    assert!(
        message("pods[0].members[0].agent_ref").contains("`local:agents.yaml`"),
        "{}",
        message("pods[0].members[0].agent_ref")
    );
    assert!(message("pods[0].members[5].agent_ref").contains("`path:/etc/agents.yaml`"));
    assert!(message("pods[0].members[6].agent_ref").contains("`local:agents.yaml`"));
    assert!(
        message("pods[0].members[3].agent_ref")
            .contains("lacks `agent_ref: builtin:terminal` and `profile: none`"),
        "{}",
        message("pods[0].members[3].agent_ref")
    );
    assert!(
        message("pods[0].members[4].runtime")
            .contains("lacks `runtime: terminal` and `agent_ref: builtin:terminal`")
    );
    assert!(message("pods[0].members[1].id").contains("pods[0].members[0]"));
    assert!(message("edges[0].from").contains("not qualified"), "{}", message("edges[0].from"));
    assert!(message("edges[0].from").contains("`build.lead`"), "{}", message("edges[0].from"));
    assert!(message("pods[0].edges[0].kind").contains("`delegates_to`, `spawned_by`, `can_observe`"));

    // Pod members are named by their qualified id in the report's lines.
    let lines: Vec<String> = report.to_string().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), report.problems.len());
    let line = lines.iter().find(|l| l.contains("restore_policy")).expect("the restore policy's line");
    assert!(
        line.starts_with(
            "line 23: pods[0].members[5] (build.loc) restore_policy: `forever` is not a restore policy"
        ),
        "{line}"
    );
    let line = lines.iter().find(|l| l.contains("pods[0].edges[2]")).expect("the self edge's line");
    assert!(line.starts_with("line 35: pods[0].edges[2].to: "), "{line}");
}

#[test]
fn every_session_source_refusal_has_its_pod_member_path() {
    let cases = [
        (
            "runtime: codex",
            "{mode: rebuild, ref: {kind: native_id, value: a}}",
            "session_source.mode",
            "unsupported_mode",
        ),
        (
            "runtime: codex",
            "{mode: fork, ref: {kind: artifact_path, value: a}}",
            "session_source.ref.kind",
            "deferred_ref_kind",
        ),
        ("runtime: codex", "{mode: fork, ref: {kind: last}}", "session_source.ref.kind", "weaker_ref_kind"),
        (
            "runtime: codex",
            "{mode: fork, ref: {kind: artifact_set}}",
            "session_source.ref.kind",
            "wrong_mode_ref_kind",
        ),
        (
            "runtime: codex",
            "{mode: fork, ref: {kind: session_file}}",
            "session_source.ref.kind",
            "unknown_ref_kind",
        ),
        (
            "runtime: codex",
            "{mode: fork, ref: {kind: native_id}}",
            "session_source.ref.value",
            "missing_ref_value",
        ),
        (
            "{runtime: terminal, agent_ref: 'builtin:terminal', profile: none}",
            "{mode: fork, ref: {kind: native_id, value: a}}",
            "session_source",
            "terminal_session_source",
        ),
    ];
    for (runtime, source, field, code) in cases {
        let member = if runtime.starts_with('{') {
            let fields = runtime.trim_matches(|c| c == '{' || c == '}');
            format!("{{id: alice, {fields}, session_source: {source}}}")
        } else {
            format!("{{id: alice, {runtime}, session_source: {source}}}")
        };
        let text = format!(
            "name: r\nversion: 1\npods:\n  - id: build\n    members: [{{id: lead, runtime: codex}}]\n  - id: review\n    \
             members:\n      - {member}\n"
        );
        let report = refused(&text);
        assert_eq!(problems(&report), [(format!("pods[1].members[0].{field}"), code)], "{text}");
        let problem = &report.problems[0];
        assert_eq!(problem.member.as_deref(), Some("review.alice"));
        assert_eq!(problem.line, Some(8));
        assert!(
            problem.to_string().starts_with(&format!("line 8: pods[1].members[0] (review.alice) {field}: ")),
            "{problem}"
        );
    }
    // `seat:` names a pod member by its qualified id.
    let rig = parse_rig(VALID).expect("valid");
    assert!(rig.members.iter().any(|m| m.id.as_str() == "build.lead"));
}

#[test]
fn a_spec_is_written_in_one_shape() {
    let report = refused(
        "id: r\nname: r\nversion: 1\nmembers:\n  - {id: a, runtime: codex}\npods:\n  - id: p\n    members: [{id: b, \
         runtime: codex}]\n",
    );
    assert_eq!(
        problems(&report),
        [("id".to_owned(), "mixed_shapes"), ("members".to_owned(), "mixed_shapes")],
        "{report}"
    );
    assert!(report.problems[1].message.contains("put the members in a pod"), "{report}");
    assert_eq!(report.problems[1].line, Some(5));

    let report = refused("id: r\nversion: 1\nsummary: s\nmembers:\n  - {id: a, runtime: codex}\n");
    assert_eq!(
        problems(&report),
        [("version".to_owned(), "mixed_shapes"), ("summary".to_owned(), "mixed_shapes")]
    );

    // `name` without pods is an OpenRig spec whose pods are still to be written.
    let report = refused("name: r\nversion: 1\n");
    assert_eq!(problems(&report), [("pods".to_owned(), "no_members")]);
    // In a flat spec, a bare `agent_ref` is a path; in an OpenRig one it needs a prefix.
    let report = refused(
        "name: r\nversion: 1\npods:\n  - id: p\n    members: [{id: a, runtime: codex, agent_ref: a.yaml}]\n",
    );
    assert_eq!(problems(&report), [("pods[0].members[0].agent_ref".to_owned(), "invalid_agent_ref")]);
    assert!(report.problems[0].message.contains("a bare path is the flat shape's"), "{report}");
    // A terminal member of an OpenRig spec writes the whole sentinel; a flat one may leave it out.
    let report =
        refused("name: r\nversion: 1\npods:\n  - id: p\n    members: [{id: a, runtime: terminal}]\n");
    assert_eq!(
        problems(&report),
        [("pods[0].members[0].agent_ref".to_owned(), "incomplete_terminal_sentinel")]
    );
    assert!(parse_rig("id: r\nmembers: [{id: a, runtime: terminal}]\n").is_ok());
    let report = refused("id: r\nmembers: [{id: a, runtime: terminal, agent_ref: 'builtin:terminal'}]\n");
    assert_eq!(problems(&report), [("members[0].profile".to_owned(), "incomplete_terminal_sentinel")]);
    let report =
        refused("id: r\nmembers: [{id: a, runtime: native, agent_ref: 'builtin:terminal', profile: none}]\n");
    assert_eq!(problems(&report), [("members[0].runtime".to_owned(), "incomplete_terminal_sentinel")]);
    // Flat edges name members as written.
    let report = refused(
        "id: r\nmembers: [{id: a, runtime: codex}]\nedges:\n  - {kind: can_observe, from: a, to: b}\n",
    );
    assert_eq!(problems(&report), [("edges[0].to".to_owned(), "unknown_edge_member")]);
}

#[test]
fn unknown_fields_are_refused_at_their_place_in_a_pod() {
    let report = refused(
        "name: r\nversion: 1\npods:\n  - id: p\n    members:\n      - id: a\n        runtime: codex\n        sesion_source: {}\n",
    );
    assert_eq!(problems(&report), [("pods[0].members[0].sesion_source".to_owned(), "unknown_field")]);
    assert_eq!((report.problems[0].line, report.problems[0].column), (Some(8), Some(9)));
    let report = refused("name: r\nversion: 1\npods:\n  - id: p\n    colour: red\n");
    assert_eq!(problems(&report), [("pods[0].colour".to_owned(), "unknown_field")]);
    let report = refused(
        "name: r\nversion: 1\npods:\n  - id: p\n    members: [{id: a, runtime: codex}]\n    edges:\n      - {kind: can_observe, from: a, to: a, weight: 2}\n",
    );
    assert_eq!(problems(&report), [("pods[0].edges[0].weight".to_owned(), "unknown_field")]);
    let report = refused("name: r\nversion: [1]\npods: []\n");
    assert_eq!(problems(&report), [("version".to_owned(), "invalid_yaml")]);
    let report = refused("name: r\nversion: 1\npods:\n  - id: p\n    members: [{id: a, runtime: [codex]}]\n");
    assert_eq!(problems(&report), [("pods[0].members[0].runtime".to_owned(), "invalid_yaml")]);
}

#[test]
fn every_code_is_listed_in_the_docs_in_order() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rigs.md")).expect("docs");
    let mut last = 0;
    for code in RigProblemCode::ALL {
        let row = format!("\n| `{}` |", code.as_str());
        let at = docs.find(&row).unwrap_or_else(|| panic!("docs/rigs.md has no row for `{code}`"));
        assert!(at > last, "`{code}` is listed out of the order of RigProblemCode::ALL");
        last = at;
    }
}

/// A configuration with a native profile `lead`, a Claude Code profile `reviewer`, a Codex
/// profile `coder` and a machine `desk`.
const AGENTS: &str = "brains:\n  - {id: b, kind: scripted, script: s}\nprofiles:\n  - {id: lead, brain: b, window_tokens: \
                      4096}\n  - id: reviewer\n    runtime: claude-code\n    cli: {model: sonnet, permission_mode: plan}\n  \
                      - id: coder\n    runtime: codex\n    cli: {sandbox: read-only}\nmachines:\n  - {id: desk, \
                      entry: s, states: [{id: s, profile: lead}]}\n";

#[test]
fn load_rig_checks_each_members_profile_against_its_configuration() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("agents.yaml"), AGENTS).expect("write");
    std::fs::write(
        work.path().join("broken.yaml"),
        "profiles:\n  - {id: lead, brain: nowhere, window_tokens: 4096}\n",
    )
    .expect("write");
    let absolute = work.path().join("agents.yaml");
    let absolute = absolute.to_str().expect("utf-8");
    let spec = format!(
        "name: r\nversion: 1\npods:\n  - id: p\n    members:\n      - {{id: lead, runtime: native, agent_ref: \
         'local:agents.yaml', profile: lead}}\n      - {{id: rev, runtime: claude-code, agent_ref: 'path:{absolute}', \
         profile: reviewer}}\n      - {{id: cod, runtime: codex, agent_ref: 'local:agents.yaml', profile: coder}}\n      \
         - {{id: desk, runtime: native, agent_ref: 'local:agents.yaml', profile: desk}}\n      \
         - {{id: shell, runtime: terminal, agent_ref: 'builtin:terminal', profile: none}}\n"
    );
    let good = work.path().join("good.yaml");
    std::fs::write(&good, &spec).expect("write");
    let rig = load_rig(&good).expect("valid");
    assert_eq!(rig.members[1].agent_ref.as_deref(), Some(absolute));
    assert_eq!(rig.members.len(), 5);

    let bad = work.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "name: r\nversion: 1\npods:\n  - id: p\n    members:\n      - {id: a, runtime: codex, agent_ref: \
         'local:agents.yaml', profile: reviewer}\n      - {id: b, runtime: native, agent_ref: 'local:agents.yaml', \
         profile: reviewer}\n      - {id: c, runtime: claude-code, agent_ref: 'local:agents.yaml', profile: lead}\n      \
         - {id: d, runtime: native, agent_ref: 'local:agents.yaml', profile: ghost}\n      - {id: e, runtime: native, \
         agent_ref: 'local:missing.yaml', profile: lead}\n      - {id: f, runtime: native, agent_ref: \
         'local:broken.yaml', profile: lead}\n      - {id: g, runtime: codex, restore_policy: never}\n      - {id: h, \
         runtime: codex, agent_ref: 'local:agents.yaml', profile: desk}\n",
    )
    .expect("write");
    let report = match load_rig(&bad) {
        Err(agentvisor::rig::LoadRigError::Invalid { report, .. }) => report,
        other => panic!("expected problems, got {other:?}"),
    };
    let expected = [
        ("pods[0].members[0].profile", "profile_runtime_mismatch"),
        ("pods[0].members[1].profile", "profile_runtime_mismatch"),
        ("pods[0].members[2].profile", "profile_runtime_mismatch"),
        ("pods[0].members[3].profile", "unknown_profile"),
        ("pods[0].members[4].agent_ref", "agent_config_invalid"),
        ("pods[0].members[5].agent_ref", "agent_config_invalid"),
        ("pods[0].members[6].restore_policy", "unknown_restore_policy"),
        ("pods[0].members[7].profile", "profile_runtime_mismatch"),
    ];
    let expected: Vec<(String, &str)> = expected.iter().map(|(p, c)| ((*p).to_owned(), *c)).collect();
    assert_eq!(problems(&report), expected, "{report}");
    let messages: Vec<&str> = report.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages[0].contains("`reviewer` is a `claude-code` profile") && messages[0].contains("`coder`"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("external `claude-code` profile") && messages[1].contains("`lead`"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].contains("`lead` is a native profile of `agents.yaml`")
            && messages[2].contains("`reviewer`"),
        "{}",
        messages[2]
    );
    assert!(
        messages[3].contains("`ghost` is not a profile or machine")
            && messages[3]
                .contains("profiles: `lead`; external profiles: `coder` (codex), `reviewer` (claude-code)"),
        "{}",
        messages[3]
    );
    assert!(
        messages[4].contains("failed to read") && messages[4].contains("missing.yaml"),
        "{}",
        messages[4]
    );
    assert!(messages[5].contains("nowhere"), "{}", messages[5]);
    assert!(
        messages[7].contains("`desk` is a machine (which runs native profiles) of `agents.yaml`")
            && messages[7].contains("its `codex` profiles: `coder`"),
        "{}",
        messages[7]
    );
    for problem in &report.problems {
        assert!(!problem.message.contains('\n'), "{problem}");
        assert!(problem.message.len() < 1024, "{problem}");
    }
    // Without the spec's directory, `parse_rig` reads no configuration.
    let text = std::fs::read_to_string(&bad).expect("read");
    assert_eq!(
        problems(&refused(&text)),
        [("pods[0].members[6].restore_policy".to_owned(), "unknown_restore_policy")]
    );
}

#[test]
fn the_example_rig_loads_with_its_configuration() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rigs/swarm.yaml");
    let rig = load_rig(&spec).expect("the example rig and its configuration are valid");
    assert_eq!(rig.members.len(), 2);
}

#[test]
fn rig_validate_reports_an_openrig_spec() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("agents.yaml"), AGENTS).expect("write");
    let good = work.path().join("rig.yaml");
    std::fs::write(
        &good,
        "name: review-rig\nversion: 1\npods:\n  - id: build\n    members:\n      - {id: lead, runtime: native, \
         agent_ref: 'local:agents.yaml', profile: lead}\n      - {id: shell, runtime: terminal, agent_ref: \
         'builtin:terminal', profile: none}\n  - id: review\n    members:\n      - {id: alice, runtime: claude-code, \
         agent_ref: 'local:agents.yaml', profile: reviewer}\nedges:\n  - {kind: delegates_to, from: build.lead, to: \
         review.alice}\n",
    )
    .expect("write");
    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_agentvisor"))
            .arg("--state")
            .arg(work.path().join("state"))
            .args(["rig", "validate"])
            .arg(path)
            .output()
            .expect("the binary runs")
    };
    let out = run(&good);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rig review-rig: 3 members valid\n");

    let bad = work.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "name: review-rig\nversion: 1\npods:\n  - id: review\n    members:\n      - id: alice\n        runtime: codex\n        \
         agent_ref: 'local:agents.yaml'\n        profile: reviewer\nedges:\n  - {kind: delegates_to, from: alice, to: \
         review.alice}\n",
    )
    .expect("write");
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(lines[0].ends_with("bad.yaml: 2 problems"), "{stderr}");
    assert!(
        lines[1].starts_with(
            "line 9: pods[0].members[0] (review.alice) profile: `reviewer` is a `claude-code` profile"
        ),
        "{stderr}"
    );
    assert!(lines[1].ends_with("(profile_runtime_mismatch)"), "{stderr}");
    assert!(lines[2].starts_with("line 11: edges[0].from: `alice` is not qualified"), "{stderr}");
    assert!(lines[2].ends_with("(unknown_edge_member)"), "{stderr}");
}
