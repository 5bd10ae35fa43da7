//! Rig specs from YAML: a valid spec, every refused session source with its code and message,
//! several problems at once with their lines, ids, unknown fields, YAML faults, and expansions.

use agentvisor::rig::{
    Member, RigProblem, RigProblemCode, RigSpecReport, SeatRuntime, SessionSource, check_expansion,
    parse_expansion, parse_members, parse_rig,
};

const VALID: &str = r#"id: review-rig
members:
  - id: reviewer-2
    runtime: claude-code        # native | claude-code | codex | terminal
    agent_ref: specs/agents/reviewer.yaml
    profile: reviewer
    cwd: .
    prompt: "Review the open pull request."
    session_source:
      mode: fork
      ref:
        kind: native_id
        value: "0b0165d7-cb4d-4650-90de-15c0a1ede9e6"
  - id: planner
    runtime: native
    agent_ref: agents.yaml
    profile: planner
  - id: shell
    runtime: terminal
    cwd: work
"#;

fn refused(text: &str) -> RigSpecReport {
    match parse_rig(text) {
        Ok(rig) => panic!("expected problems, the spec passed: {rig:?}"),
        Err(report) => report,
    }
}

/// A one-member claude-code rig whose session source is `source`, indented under the member.
fn with_source(source: &str) -> String {
    format!("id: r\nmembers:\n  - id: seat\n    runtime: claude-code\n    session_source:\n{source}")
}

fn only(report: &RigSpecReport) -> &RigProblem {
    assert_eq!(report.problems.len(), 1, "{report}");
    &report.problems[0]
}

#[test]
fn a_valid_spec_parses_into_checked_types() {
    let rig = parse_rig(VALID).expect("valid");
    assert_eq!(rig.id.as_str(), "review-rig");
    let ids: Vec<&str> = rig.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["reviewer-2", "planner", "shell"]);
    let reviewer = &rig.members[0];
    assert_eq!(reviewer.runtime, SeatRuntime::ClaudeCode);
    assert_eq!(reviewer.agent_ref.as_deref(), Some("specs/agents/reviewer.yaml"));
    assert_eq!(reviewer.profile.as_deref(), Some("reviewer"));
    assert_eq!(reviewer.prompt.as_deref(), Some("Review the open pull request."));
    match &reviewer.session_source {
        Some(SessionSource::Fork { native_id }) => {
            assert_eq!(native_id.as_str(), "0b0165d7-cb4d-4650-90de-15c0a1ede9e6")
        }
        other => panic!("expected a fork, got {other:?}"),
    }
    // `cwd` defaults to the spec's directory.
    assert_eq!(rig.members[1].cwd, ".");
    assert_eq!(rig.members[1].runtime, SeatRuntime::Native);
    assert_eq!(rig.members[2].cwd, "work");
    assert_eq!(rig.members[2].session_source, None);

    // The checked spec survives a round trip through its serde form, and parsing is stable.
    let json = serde_json::to_string(&rig).expect("serialize");
    assert_eq!(serde_json::from_str::<agentvisor::rig::RigSpec>(&json).expect("deserialize"), rig);
    assert_eq!(parse_rig(VALID).expect("valid"), rig);
}

#[test]
fn every_refused_ref_kind_has_its_own_code_and_message() {
    let only_native = "not accepted in v1; native_id only: name the source conversation by its native id (a \
                       Claude Code session id, a Codex thread id, or an agentvisor session id)";
    let cases = [
        ("artifact_path", RigProblemCode::DeferredRefKind, format!("`artifact_path` is deferred: {only_native}")),
        (
            "name",
            RigProblemCode::WeakerRefKind,
            format!(
                "`name` is a weaker reference than a native id: a name can be ambiguous and can move to another \
                 conversation; {only_native}"
            ),
        ),
        (
            "last",
            RigProblemCode::WeakerRefKind,
            format!(
                "`last` is a weaker reference than a native id: \"the last session\" moves as soon as another one \
                 starts; {only_native}"
            ),
        ),
        (
            "artifact_set",
            RigProblemCode::WrongModeRefKind,
            "`artifact_set` describes an artifact-backed rebuild (the seat continuity and handover surface), not \
             a native fork; fork takes `kind: native_id` only"
                .to_owned(),
        ),
        (
            "session_file",
            RigProblemCode::UnknownRefKind,
            "`session_file` is not a reference kind; fork takes `kind: native_id` only".to_owned(),
        ),
    ];
    for (kind, code, message) in cases {
        let text =
            with_source(&format!("      mode: fork\n      ref:\n        kind: {kind}\n        value: x\n"));
        let report = refused(&text);
        let problem = only(&report);
        assert_eq!(problem.code(), code, "{kind}");
        assert_eq!(problem.message, message, "{kind}");
        assert_eq!(problem.path, "members[0].session_source.ref.kind");
        assert_eq!(problem.member.as_deref(), Some("seat"));
        assert_eq!((problem.line, problem.column), (Some(8), Some(15)), "{kind}");
    }
    let codes: Vec<&str> = [
        RigProblemCode::DeferredRefKind,
        RigProblemCode::WeakerRefKind,
        RigProblemCode::WrongModeRefKind,
        RigProblemCode::UnknownRefKind,
    ]
    .iter()
    .map(|c| c.as_str())
    .collect();
    assert_eq!(codes, ["deferred_ref_kind", "weaker_ref_kind", "wrong_mode_ref_kind", "unknown_ref_kind"]);
}

#[test]
fn every_mode_but_fork_is_refused_naming_its_surface() {
    for (mode, says) in [
        ("rebuild", "`rebuild` is artifact-backed mental-model rebuild, a separate surface"),
        ("resume", "`resume` continues an existing managed seat (restore), but a rig member is a new seat"),
        ("restore", "`restore` continues an existing managed seat (restore)"),
        ("fresh", "a fresh seat needs no session source, so remove `session_source`"),
        ("clone", "`clone` is not a session source mode"),
    ] {
        let text = with_source(&format!("      mode: {mode}\n      ref: {{kind: native_id, value: abc}}\n"));
        let report = refused(&text);
        let problem = only(&report);
        assert_eq!(problem.code(), RigProblemCode::UnsupportedMode, "{mode}");
        assert_eq!(problem.code().as_str(), "unsupported_mode");
        assert!(problem.message.starts_with(says), "{mode}: {}", problem.message);
        assert!(problem.message.contains("v1 supports only `mode: fork`"), "{}", problem.message);
        assert_eq!(problem.line, Some(6));
    }
}

#[test]
fn a_terminal_member_takes_no_session_source() {
    let text = "id: r\nmembers:\n  - id: shell\n    runtime: terminal\n    session_source:\n      mode: fork\n      \
                ref: {kind: native_id, value: abc}\n";
    let report = refused(text);
    let problem = only(&report);
    assert_eq!(problem.code().as_str(), "terminal_session_source");
    assert_eq!(problem.path, "members[0].session_source");
    assert_eq!(problem.line, Some(6));
    assert_eq!(
        problem.message,
        "a `terminal` member has no conversation to fork from, so it takes no `session_source`; remove it, or \
         run the seat on `native`, `claude-code` or `codex`"
    );
    // Even a session source that would be refused anyway is refused for the terminal alone.
    let report =
        refused("id: r\nmembers:\n  - {id: t, runtime: terminal, session_source: {mode: rebuild}}\n");
    assert_eq!(report.codes().collect::<Vec<_>>(), [RigProblemCode::TerminalSessionSource]);
}

#[test]
fn a_native_id_needs_a_value() {
    for source in [
        "      mode: fork\n      ref:\n        kind: native_id\n",
        "      mode: fork\n      ref:\n        kind: native_id\n        value: \"\"\n",
        "      mode: fork\n      ref:\n        kind: native_id\n        value:\n",
    ] {
        let report = refused(&with_source(source));
        let problem = only(&report);
        assert_eq!(problem.code().as_str(), "missing_ref_value", "{source}");
        assert_eq!(problem.path, "members[0].session_source.ref.value");
        assert!(problem.message.starts_with("`kind: native_id` needs a `value`"), "{}", problem.message);
        assert!(problem.line.is_some());
    }
    let report = refused(&with_source("      mode: fork\n      ref: {kind: native_id, value: \"--help\"}\n"));
    assert_eq!(only(&report).code().as_str(), "invalid_ref_value");
}

#[test]
fn a_session_source_without_mode_or_ref_is_reported() {
    let report = refused(&with_source("      ref: {kind: native_id, value: abc}\n"));
    assert_eq!(only(&report).path, "members[0].session_source.mode");
    let report = refused(&with_source("      mode: fork\n"));
    assert_eq!(only(&report).path, "members[0].session_source.ref");
    assert_eq!(only(&report).code(), RigProblemCode::MissingField);
}

#[test]
fn several_problems_are_reported_together_with_their_lines() {
    let text = "\
id: bad rig
members:
  - id: ok
    runtime: codex
  - id: reviewer-2
    runtime: claude-code
    session_source:
      mode: fork
      ref:
        kind: last
  - id: planner
    runtime: native
  - runtime: zsh
    cwd: \"\"
";
    let report = refused(text);
    let got: Vec<(&str, Option<usize>, &str)> =
        report.problems.iter().map(|p| (p.path.as_str(), p.line, p.code().as_str())).collect();
    assert_eq!(
        got,
        [
            ("id", Some(1), "invalid_id"),
            ("members[3].id", Some(13), "missing_field"),
            ("members[1].session_source.ref.kind", Some(10), "weaker_ref_kind"),
            ("members[2].agent_ref", Some(11), "missing_field"),
            ("members[2].profile", Some(11), "missing_field"),
            ("members[3].runtime", Some(13), "unknown_runtime"),
            ("members[3].cwd", Some(14), "empty_field"),
        ]
    );
    let lines: Vec<String> = report.to_string().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), report.problems.len());
    assert_eq!(
        lines[2],
        "line 10: members[1] (reviewer-2) session_source.ref.kind: `last` is a weaker reference than a native \
         id: \"the last session\" moves as soon as another one starts; not accepted in v1; native_id only: name \
         the source conversation by its native id (a Claude Code session id, a Codex thread id, or an \
         agentvisor session id) (weaker_ref_kind)"
    );
    assert!(lines[0].starts_with("line 1: id: `bad rig` is not a valid rig id"), "{}", lines[0]);
    assert!(lines[5].starts_with("line 13: members[3].runtime: `zsh` is not a runtime"), "{}", lines[5]);
}

#[test]
fn duplicate_member_ids_are_refused_on_their_second_use() {
    let text = "id: r\nmembers:\n  - {id: a, runtime: codex}\n  - {id: b, runtime: codex}\n  - {id: a, runtime: codex}\n";
    let report = refused(text);
    let problem = only(&report);
    assert_eq!(problem.code().as_str(), "duplicate_id");
    assert_eq!(problem.path, "members[2].id");
    assert_eq!(problem.line, Some(5));
    assert_eq!(problem.message, "`a` is already the id of members[0]; member ids are unique, so rename one");
}

#[test]
fn ids_follow_the_id_syntax() {
    let long = "x".repeat(65);
    let text = format!(
        "id: \"\"\nmembers:\n  - {{id: \"a/b\", runtime: codex}}\n  - {{id: {long}, runtime: codex}}\n  - {{id: v1.2_x-y, runtime: codex}}\n"
    );
    let report = refused(&text);
    let got: Vec<(&str, &str)> =
        report.problems.iter().map(|p| (p.path.as_str(), p.code().as_str())).collect();
    assert_eq!(
        got,
        [("id", "missing_field"), ("members[0].id", "invalid_id"), ("members[1].id", "invalid_id")]
    );
}

#[test]
fn an_unknown_field_is_refused_with_its_line() {
    let text = "id: r\nmembers:\n  - id: a\n    runtime: codex\n    sesion_source: {}\n";
    let report = refused(text);
    let problem = only(&report);
    assert_eq!(problem.code().as_str(), "unknown_field");
    assert_eq!(problem.path, "members[0].sesion_source");
    assert_eq!((problem.line, problem.column), (Some(5), Some(5)));
    assert!(problem.message.contains("unknown field `sesion_source`"), "{}", problem.message);
    let report =
        refused(&with_source("      mode: fork\n      ref: {kind: native_id, value: a, extra: 1}\n"));
    assert_eq!(only(&report).path, "members[0].session_source.ref.extra");
}

#[test]
fn every_field_problem_of_a_spec_is_reported_with_its_path() {
    let text = "id: r\nowner: me\nmembers:\n  - id: a\n    runtime: codex\n    sesion_source: {}\n  - id: b\n    runtime: [native]\n    promt: hi\n";
    let report = refused(text);
    let got: Vec<(&str, &str)> =
        report.problems.iter().map(|p| (p.path.as_str(), p.code().as_str())).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], ("owner", "unknown_field"));
    assert_eq!(report.problems[0].line, Some(2));
    for expected in [
        ("members[0].sesion_source", "unknown_field"),
        ("members[1].runtime", "invalid_yaml"),
        ("members[1].promt", "unknown_field"),
    ] {
        assert!(got.contains(&expected), "{expected:?} missing from {got:?}");
    }
    for problem in &report.problems {
        assert!(
            !problem.message.contains("Raw") && !problem.message.contains("struct"),
            "{}",
            problem.message
        );
    }
}

#[test]
fn a_yaml_syntax_error_is_one_problem_with_its_line() {
    let report = refused("id: r\nmembers: [\n  {id: a\n");
    let problem = only(&report);
    assert_eq!(problem.code().as_str(), "invalid_yaml");
    assert!(problem.line.is_some(), "{problem:?}");
    assert!(!problem.message.contains('\n'));
    let report = refused("id: r\nmembers:\n  - id: a\n    runtime: [codex]\n");
    let problem = only(&report);
    assert_eq!(
        (problem.code().as_str(), problem.path.as_str(), problem.line),
        ("invalid_yaml", "members[0].runtime", Some(4))
    );
    let report = refused("id: r\nid: s\nmembers: []\n");
    assert_eq!(only(&report).code().as_str(), "duplicate_key");
    assert_eq!(only(&report).line, Some(2));
}

#[test]
fn a_rig_needs_members_within_the_limit() {
    for text in ["id: r\n", "id: r\nmembers: []\n", "id: r\nmembers:\n"] {
        assert_eq!(refused(text).codes().collect::<Vec<_>>(), [RigProblemCode::NoMembers], "{text}");
    }
    let members: String = (0..=agentvisor::rig::limits::MEMBERS_MAX)
        .map(|i| format!("  - {{id: m{i}, runtime: terminal}}\n"))
        .collect();
    let report = refused(&format!("id: r\nmembers:\n{members}"));
    assert_eq!(only(&report).code().as_str(), "limit_exceeded");
    let huge = format!("id: r\n# {}\n", "x".repeat(agentvisor::rig::limits::RIG_SPEC_BYTES_MAX));
    assert_eq!(only(&refused(&huge)).code().as_str(), "limit_exceeded");
}

#[test]
fn every_code_is_distinct_snake_case() {
    let mut seen = std::collections::BTreeSet::new();
    for code in RigProblemCode::ALL {
        let text = code.as_str();
        assert!(text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{text}");
        assert!(seen.insert(text), "{text} twice");
    }
}

#[test]
fn expansion_members_parse_and_refuse_ids_the_rig_has() {
    let rig = parse_rig(VALID).expect("valid");
    let payload = "members:\n  - id: reviewer-3\n    runtime: codex\n    session_source:\n      mode: fork\n      \
                   ref: {kind: native_id, value: thread-1}\n  - id: planner\n    runtime: codex\n";
    let members: Vec<Member> = parse_members(payload).expect("valid on their own");
    assert_eq!(members.len(), 2);
    let report = check_expansion(&rig, members.clone()).expect_err("planner is taken");
    let problem = only(&report);
    assert_eq!((problem.path.as_str(), problem.code().as_str()), ("members[1].id", "duplicate_id"));
    assert_eq!(problem.member.as_deref(), Some("planner"));
    assert!(check_expansion(&rig, members[..1].to_vec()).is_ok());

    // With the payload's lines.
    let report = parse_expansion(payload, &rig).expect_err("planner is taken");
    let problem = only(&report);
    assert_eq!(problem.line, Some(7));
    assert_eq!(
        problem.message,
        "`planner` is already a member of the rig `review-rig`; member ids are unique, so choose another"
    );

    // The same rules as in a spec.
    let report = parse_members("members:\n  - {id: x, runtime: terminal, session_source: {mode: fork}}\n  - {id: x, runtime: codex}\n")
        .expect_err("two problems");
    assert_eq!(
        report.codes().collect::<Vec<_>>(),
        [RigProblemCode::DuplicateId, RigProblemCode::TerminalSessionSource]
    );
    assert_eq!(only(&parse_members("members: []\n").expect_err("none")).code().as_str(), "no_members");
    assert_eq!(
        only(&parse_members("id: r\nmembers: []\n").expect_err("no id here")).code().as_str(),
        "unknown_field"
    );
}
