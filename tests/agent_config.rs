//! Agent configuration through the public API: the example files, every launch refusal with its
//! code and path, the one-pass report, YAML and TOML agreeing, and parse errors.

mod seeded;

use agentvisor::agent::config::{
    Capability, CompactionStrategy, LoadError, MemoryScope, ParseError, Problem, ProblemCode, Target, check,
    load_path, load_toml, load_yaml, parse_toml, parse_yaml,
};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/agents").join(name)
}

/// One brain (`b`) and whatever the test adds.
const BRAIN: &str = "brains:\n  - {id: b, kind: scripted, script: s}\n";

/// The problems of a YAML configuration, which must parse but fail the check.
fn problems(yaml: &str) -> Vec<Problem> {
    let raw = parse_yaml(yaml).unwrap_or_else(|e| panic!("the test config must parse: {e}\n{yaml}"));
    match check(&raw) {
        Ok(_) => panic!("expected a launch refusal for:\n{yaml}"),
        Err(report) => report.problems().to_vec(),
    }
}

fn summary(problems: &[Problem]) -> Vec<(String, &'static str, Option<Capability>)> {
    problems.iter().map(|p| (p.path.clone(), p.code.as_str(), p.capability)).collect()
}

// ---------------------------------------------------------------------------------------------
// The example files.

#[test]
fn the_team_example_loads_the_same_from_yaml_and_toml() {
    let yaml = load_path(example("team.yaml")).expect("team.yaml passes the launch check");
    let toml = load_path(example("team.toml")).expect("team.toml passes the launch check");
    assert_eq!(yaml, toml);
}

#[test]
fn the_check_says_what_scope_each_profiles_memories_have() {
    let yaml = format!(
        "{BRAIN}profiles:\n  - {{id: keeper, brain: b, window_tokens: 9, capabilities: {{memories: {{scope: shared}}}}}}\n  \
         - {{id: loner, brain: b, window_tokens: 9, capabilities: {{memories: {{scope: isolated}}}}}}\n  \
         - {{id: plain, brain: b, window_tokens: 9}}\n"
    );
    let config = load_yaml(&yaml).expect("passes the launch check");
    let scopes: Vec<(&str, MemoryScope)> = config.memory_scopes().map(|(id, s)| (id.as_str(), s)).collect();
    assert_eq!(scopes, [("keeper", MemoryScope::Shared), ("loner", MemoryScope::Isolated)]);

    // A scope left out is refused with every scope's meaning, shared as the profile's instance.
    let refused = problems(&format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 9, capabilities: {{memories: {{enabled: true}}}}}}\n"
    ));
    assert_eq!(refused.len(), 1, "{refused:?}");
    for scope in MemoryScope::ALL {
        assert!(refused[0].message.contains(scope.meaning()), "{}", refused[0].message);
        assert!(refused[0].message.contains(&format!("`{}`", scope.as_str())), "{}", refused[0].message);
    }
    assert!(MemoryScope::Shared.meaning().contains("one instance bound to the profile"));
}

#[test]
fn the_team_example_reads_as_written() {
    let config = load_path(example("team.yaml")).expect("team.yaml passes the launch check");
    let lead = config.profile("lead").expect("lead is declared");
    assert_eq!(lead.brain().as_str(), "local");
    assert_eq!(lead.window_tokens().get(), 32768);
    assert_eq!(
        lead.roster(),
        [config.target("researcher").expect("declared"), config.target("review").expect("declared")]
    );
    assert!(matches!(lead.roster_target("review"), Some(Target::Machine(_))));
    assert_eq!(lead.roster_target("writer"), None);
    let held: Vec<&str> = lead.capabilities().iter().map(Capability::as_str).collect();
    assert_eq!(
        held,
        ["history", "tasks", "notebook", "memories", "program_library", "subagents", "exec", "fork"]
    );
    assert_eq!(lead.capabilities().memories().map(|m| m.scope()), Some(MemoryScope::Shared));
    let library = lead.capabilities().program_library().expect("the lead keeps programs");
    assert_eq!((library.retention_entries().get(), library.id_length()), (64, 6));
    assert_eq!(
        lead.compaction().strategy(),
        &CompactionStrategy::Summarize {
            summarizer: config.brain("long-context").expect("declared").id().clone()
        }
    );

    // A summarizer left out is the profile's own brain; the defaults apply.
    let researcher = config.profile("researcher").expect("declared");
    assert!(matches!(researcher.compaction().strategy(),
        CompactionStrategy::Summarize { summarizer } if summarizer.as_str() == "long-context"));
    assert_eq!(researcher.compaction().trigger_percent(), 90);
    assert_eq!(config.profile("publisher").expect("declared").compaction().trigger_percent(), 80);

    let review = config.machine("review").expect("declared");
    assert_eq!(review.entry().profile().as_str(), "writer");
    assert!(review.allows("check", "publish"));
    assert!(!review.allows("draft", "publish"));
    assert_eq!(review.next_states("publish").count(), 0);
    let entered = config.first_profile(&config.target("review").expect("declared")).expect("resolves");
    assert_eq!(entered.id().as_str(), "writer");
    let states: Vec<&str> = config.states_running("checker").map(|(_, s)| s.id().as_str()).collect();
    assert_eq!(states, ["check"]);
    assert!(config.profile("writer").expect("declared").capabilities().contains(Capability::TransitionState));
}

#[test]
fn the_broken_example_names_every_problem_in_one_report() {
    let Err(LoadError::Check(report)) = load_path(example("broken.yaml")) else {
        panic!("broken.yaml must be refused by the launch check");
    };
    let exec = Some(Capability::Exec);
    let expected = [
        ("brains.cloud.base_url", "invalid_base_url", None),
        ("brains.cloud.model", "missing_field", None),
        ("brains.cloud.api_key_env", "invalid_env_var_name", None),
        ("profiles.planner.brain", "unknown_brain", None),
        ("profiles.planner.window_tokens", "window_zero", None),
        ("profiles.planner.capabilities.exec", "exec_empty_roster", exec),
        ("profiles.planner.capabilities.fork", "fork_without_subagents", Some(Capability::Fork)),
        ("profiles.reviewer.roster[1]", "unknown_roster_id", None),
        ("profiles.reviewer.capabilities.memories.scope", "missing_field", Some(Capability::Memories)),
        (
            "profiles.reviewer.capabilities.program_library.id_length",
            "program_id_length_out_of_range",
            Some(Capability::ProgramLibrary),
        ),
        ("profiles.reviewer.capabilities.exec", "exec_in_machine_state", exec),
        ("machines.review.states.done.profile", "unknown_state_profile", None),
        ("machines.review.entry", "unknown_entry_state", None),
    ];
    let expected: Vec<_> = expected.into_iter().map(|(p, c, cap)| (p.to_owned(), c, cap)).collect();
    assert_eq!(summary(report.problems()), expected);
    // Displayed one problem per line, each with its path and code.
    let text = report.to_string();
    assert_eq!(text.lines().count(), expected.len());
    for (line, (path, code, _)) in text.lines().zip(&expected) {
        assert!(line.starts_with(&format!("{path}: ")) && line.contains(code), "{line}");
    }
}

// ---------------------------------------------------------------------------------------------
// Every refusal, with its code and path.

/// A case: the configuration (after [`BRAIN`]), and the one problem it must produce.
struct Refusal {
    yaml: &'static str,
    path: &'static str,
    code: ProblemCode,
    capability: Option<Capability>,
}

const fn refusal(
    yaml: &'static str,
    path: &'static str,
    code: ProblemCode,
    capability: Option<Capability>,
) -> Refusal {
    Refusal { yaml, path, code, capability }
}

use Capability as C;
use ProblemCode as P;

const REFUSALS: &[Refusal] = &[
    // External profiles.
    refusal(
        "profiles:\n  - {id: a, runtime: claude-code}\nmachines:\n  - {id: m, entry: s, states: [{id: s, profile: a}]}\n",
        "profiles.a",
        P::ExternalInMachine,
        None,
    ),
    // The process skill.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {child_processes: {child_agent: nobody}}}\n",
        "profiles.a.capabilities.child_processes.child_agent",
        P::UnknownChildAgent,
        Some(C::ChildProcesses),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {child_processes: {child_agent: a, tools: [wait_child_process, process_exit]}}}\n",
        "profiles.a.capabilities.child_processes.tools[1]",
        P::UnknownChildProcessTool,
        Some(C::ChildProcesses),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {child_processes: true}}\n",
        "profiles.a.capabilities.child_processes.child_agent",
        P::MissingField,
        Some(C::ChildProcesses),
    ),
    // The seed's three.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {exec: true}}\n",
        "profiles.a.capabilities.exec",
        P::ExecEmptyRoster,
        Some(C::Exec),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {fork: true}}\n",
        "profiles.a.capabilities.fork",
        P::ForkWithoutSubagents,
        Some(C::Fork),
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10, roster: [a], capabilities: {exec: true}}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}]}
",
        "profiles.a.capabilities.exec",
        P::ExecInMachineState,
        Some(C::Exec),
    ),
    // transition_state.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {transition_state: true}}\n",
        "profiles.a.capabilities.transition_state",
        P::TransitionStateOutsideMachine,
        Some(C::TransitionState),
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}, {id: t, profile: a}], transitions: [{from: s, to: t}]}
",
        "profiles.a.capabilities.transition_state",
        P::TransitionStateMissing,
        Some(C::TransitionState),
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10, capabilities: {transition_state: true}}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}]}
",
        "profiles.a.capabilities.transition_state",
        P::TransitionStateWithoutTransitions,
        Some(C::TransitionState),
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10, capabilities: {transition_state: true}}
  - {id: boss, brain: b, window_tokens: 10, roster: [a], capabilities: {subagents: true}}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}], transitions: [{from: s, to: s}]}
",
        "profiles.boss.roster[0]",
        P::RosterNamesStateProfile,
        Some(C::TransitionState),
    ),
    // Rosters.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, roster: [a, ghost], capabilities: {exec: true}}\n",
        "profiles.a.roster[1]",
        P::UnknownRosterId,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, roster: [a, a], capabilities: {exec: true}}\n",
        "profiles.a.roster[1]",
        P::DuplicateRosterId,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, roster: [a], capabilities: {tasks: true}}\n",
        "profiles.a.roster",
        P::RosterUnused,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {subagents: true}}\n",
        "profiles.a.capabilities.subagents",
        P::SubagentsEmptyRoster,
        Some(C::Subagents),
    ),
    // Brains, windows, prompts.
    refusal(
        "profiles:\n  - {id: a, brain: nope, window_tokens: 10}\n",
        "profiles.a.brain",
        P::UnknownBrain,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, compaction: {summarizer: nope}}\n",
        "profiles.a.compaction.summarizer",
        P::UnknownBrain,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 0}\n",
        "profiles.a.window_tokens",
        P::WindowZero,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 99999999999}\n",
        "profiles.a.window_tokens",
        P::WindowTooLarge,
        None,
    ),
    refusal("profiles:\n  - {id: a, brain: b}\n", "profiles.a.window_tokens", P::MissingField, None),
    refusal("profiles:\n  - {id: a, window_tokens: 10}\n", "profiles.a.brain", P::MissingField, None),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, system_prompt: 'I am {{name}}'}\n",
        "profiles.a.system_prompt",
        P::PromptTemplateInvalid,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, compaction: {strategy: truncate, summarizer: b}}\n",
        "profiles.a.compaction.summarizer",
        P::SummarizerWithoutSummarize,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, compaction: {trigger_percent: 101}}\n",
        "profiles.a.compaction.trigger_percent",
        P::CompactionTriggerOutOfRange,
        None,
    ),
    // Capability settings.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {history: false}}\n",
        "profiles.a.capabilities.history",
        P::HistoryDisabled,
        Some(C::History),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {memories: {enabled: true}}}\n",
        "profiles.a.capabilities.memories.scope",
        P::MissingField,
        Some(C::Memories),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {program_library: {id_length: 0}}}\n",
        "profiles.a.capabilities.program_library.id_length",
        P::ProgramIdLengthOutOfRange,
        Some(C::ProgramLibrary),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {program_library: {id_length: 17}}}\n",
        "profiles.a.capabilities.program_library.id_length",
        P::ProgramIdLengthOutOfRange,
        Some(C::ProgramLibrary),
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, capabilities: {program_library: {retention_entries: 0}}}\n",
        "profiles.a.capabilities.program_library.retention_entries",
        P::ProgramRetentionOutOfRange,
        Some(C::ProgramLibrary),
    ),
    // Ids.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\n  - {id: a, brain: b, window_tokens: 10}\n",
        "profiles[1].id",
        P::DuplicateId,
        None,
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10}
machines:
  - {id: a, entry: s, states: [{id: s, profile: a}]}
",
        "machines[0].id",
        P::DuplicateId,
        None,
    ),
    refusal("profiles:\n  - {id: a.b, brain: b, window_tokens: 10}\n", "profiles[0].id", P::InvalidId, None),
    refusal("profiles:\n  - {brain: b, window_tokens: 10}\n", "profiles[0].id", P::MissingField, None),
    refusal("profiles: []\n", "profiles", P::NoProfiles, None),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, description: ''}\n  - {id: a, brain: b, window_tokens: 10}\n",
        "profiles[1].id",
        P::DuplicateId,
        None,
    ),
    // Brain declarations.
    refusal(
        "  - {id: c, kind: scripted, script: s, model: m}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.model",
        P::FieldNotForKind,
        None,
    ),
    refusal(
        "  - {id: c, kind: openai, base_url: 'ftp://x', model: m, api_key_env: K}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.base_url",
        P::InvalidBaseUrl,
        None,
    ),
    refusal(
        "  - {id: c, kind: openai, base_url: 'http://x', model: m, api_key_env: 'sk-123'}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.api_key_env",
        P::InvalidEnvVarName,
        None,
    ),
    refusal(
        "  - {id: c, script: s}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.kind",
        P::MissingField,
        None,
    ),
    refusal(
        "  - {id: b, kind: scripted, script: t}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains[1].id",
        P::DuplicateId,
        None,
    ),
    refusal(
        "  - {id: c, kind: openai, base_url: 'http://x/v1', model: m, api_key_env: K, temperature: 2.5}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.temperature",
        P::SettingOutOfRange,
        None,
    ),
    refusal(
        "  - {id: c, kind: anthropic, base_url: 'https://x/v1', model: m, api_key_env: K, headers: {x-api-key: secret}}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.headers.x-api-key",
        P::InvalidHeader,
        None,
    ),
    refusal(
        "  - {id: c, kind: anthropic, base_url: 'https://x/v1', model: m, api_key_env: K, prices: {input: '3.00', output: '$15'}}\nprofiles:\n  - {id: a, brain: b, window_tokens: 10}\n",
        "brains.c.prices.output",
        P::InvalidMoney,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, budget: {turns: 0}}\n",
        "profiles.a.budget.turns",
        P::BudgetOutOfRange,
        None,
    ),
    // Machines.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\nmachines:\n  - {id: m, entry: s}\n",
        "machines.m.states",
        P::MachineEmpty,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\nmachines:\n  - {id: m, entry: x, states: [{id: s, profile: a}]}\n",
        "machines.m.entry",
        P::UnknownEntryState,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\nmachines:\n  - {id: m, states: [{id: s, profile: a}]}\n",
        "machines.m.entry",
        P::MissingField,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\nmachines:\n  - {id: m, entry: s, states: [{id: s, profile: z}]}\n",
        "machines.m.states.s.profile",
        P::UnknownStateProfile,
        None,
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10, capabilities: {transition_state: true}}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}], transitions: [{from: s, to: nowhere}]}
",
        "machines.m.transitions[0].to",
        P::UnknownTransitionState,
        None,
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10, capabilities: {transition_state: true}}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}], transitions: [{from: s, to: s}, {from: s, to: s}]}
",
        "machines.m.transitions[1]",
        P::DuplicateTransition,
        None,
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}, {id: lost, profile: a}]}
",
        "machines.m.states.lost",
        P::UnreachableState,
        None,
    ),
    refusal(
        "profiles:
  - {id: a, brain: b, window_tokens: 10}
machines:
  - {id: m, entry: s, states: [{id: s, profile: a}, {id: s, profile: a}]}
",
        "machines.m.states[1].id",
        P::DuplicateId,
        None,
    ),
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10, description: '{{long}}'}\n",
        "profiles.a.description",
        P::LimitExceeded,
        None,
    ), // The telemetry section.
    refusal(
        "profiles:\n  - {id: a, brain: b, window_tokens: 10}\ntelemetry: {redact: [abc]}\n",
        "telemetry.redact[0]",
        P::RedactLiteralTooShort,
        None,
    ),
];

#[test]
fn every_refusal_names_its_code_path_and_capability() {
    for case in REFUSALS {
        let long = "x".repeat(2000);
        let yaml = format!("{BRAIN}{}", case.yaml).replace("{{long}}", &long);
        let found = problems(&yaml);
        let expected = vec![(case.path.to_owned(), case.code.as_str(), case.capability)];
        assert_eq!(summary(&found), expected, "for:\n{yaml}");
        let message = &found[0].message;
        assert!(message.len() > 20 && !message.ends_with('.'), "a sentence that says what to do: {message}");
    }
}

#[test]
fn every_problem_code_has_a_refusal_test() {
    let tested: BTreeSet<ProblemCode> = REFUSALS.iter().map(|r| r.code).collect();
    let untested: Vec<&str> =
        ProblemCode::ALL.iter().filter(|c| !tested.contains(c)).map(|c| c.as_str()).collect();
    assert!(untested.is_empty(), "codes without a refusal test: {untested:?}");
}

#[test]
fn every_problem_code_is_documented() {
    let docs = include_str!("../docs/agent-config.md");
    for code in ProblemCode::ALL {
        assert!(docs.contains(&format!("`{}`", code.as_str())), "docs/agent-config.md lacks `{code}`");
    }
}

#[test]
fn a_roster_refusal_lists_the_ids_that_are_defined() {
    let yaml = format!(
        "{BRAIN}profiles:
  - {{id: lead, brain: b, window_tokens: 10, roster: [ghost], capabilities: {{exec: true}}}}
  - {{id: helper, brain: b, window_tokens: 10}}
machines:
  - {{id: flow, entry: s, states: [{{id: s, profile: helper}}]}}
"
    );
    let found = problems(&yaml);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("`flow`, `helper`, `lead`"), "{}", found[0].message);
    // The empty-roster refusal lists them too.
    let found = problems(&format!(
        "{BRAIN}profiles:\n  - {{id: lead, brain: b, window_tokens: 10, capabilities: {{exec: true}}}}\n"
    ));
    assert!(found[0].message.contains("(defined: `lead`)"), "{}", found[0].message);
}

#[test]
fn an_api_key_pasted_into_api_key_env_is_never_repeated() {
    let secret = "sk-proj-0123456789abcdefSECRET";
    let yaml = format!(
        "brains:\n  - {{id: c, kind: openai, base_url: 'http://x/v1', model: m, api_key_env: '{secret}'}}\n\
         profiles:\n  - {{id: a, brain: c, window_tokens: 10}}\n"
    );
    let found = problems(&yaml);
    assert_eq!(found.len(), 1);
    let Err(e) = load_yaml(&yaml) else { panic!("refused") };
    assert!(!e.to_string().contains(secret));
}

#[test]
fn disabled_capabilities_need_no_settings_but_written_values_are_still_checked() {
    let ok = format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 10, capabilities: \
         {{memories: {{enabled: false}}, exec: false, fork: false, history: true}}}}\n"
    );
    let config = load_yaml(&ok).expect("nothing enabled needs anything");
    let held: Vec<Capability> = config.profile("a").expect("declared").capabilities().iter().collect();
    assert_eq!(held, [Capability::History]);
    let found = problems(&format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 10, capabilities: \
         {{program_library: {{enabled: false, retention_entries: 100000}}}}}}\n"
    ));
    assert_eq!(found[0].code, ProblemCode::ProgramRetentionOutOfRange);
}

#[test]
fn fork_with_subagents_needs_no_roster() {
    let yaml = format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 10, capabilities: {{subagents: true, fork: true}}}}\n"
    );
    let config = load_yaml(&yaml).expect("fork collects its copies through subagents");
    assert!(config.profile("a").expect("declared").roster().is_empty());
}

// ---------------------------------------------------------------------------------------------
// One pass: a configuration with N distinct problems reports all N.

/// Profiles that each carry exactly one problem, independent of each other.
const DEFECTS: &[(&str, ProblemCode)] = &[
    ("brain: b, window_tokens: 0", ProblemCode::WindowZero),
    ("brain: b", ProblemCode::MissingField),
    ("brain: nope, window_tokens: 10", ProblemCode::UnknownBrain),
    ("brain: b, window_tokens: 10, capabilities: {exec: true}", ProblemCode::ExecEmptyRoster),
    ("brain: b, window_tokens: 10, capabilities: {fork: true}", ProblemCode::ForkWithoutSubagents),
    ("brain: b, window_tokens: 10, capabilities: {subagents: true}", ProblemCode::SubagentsEmptyRoster),
    (
        "brain: b, window_tokens: 10, capabilities: {transition_state: true}",
        ProblemCode::TransitionStateOutsideMachine,
    ),
    ("brain: b, window_tokens: 10, capabilities: {memories: true}", ProblemCode::MissingField),
    ("brain: b, window_tokens: 10, capabilities: {history: false}", ProblemCode::HistoryDisabled),
    (
        "brain: b, window_tokens: 10, capabilities: {program_library: {id_length: 1}}",
        ProblemCode::ProgramIdLengthOutOfRange,
    ),
    (
        "brain: b, window_tokens: 10, roster: [ghost], capabilities: {exec: true}",
        ProblemCode::UnknownRosterId,
    ),
    ("brain: b, window_tokens: 10, roster: [p0], capabilities: {tasks: true}", ProblemCode::RosterUnused),
    ("brain: b, window_tokens: 10, system_prompt: '{{'", ProblemCode::PromptTemplateInvalid),
    (
        "brain: b, window_tokens: 10, compaction: {trigger_percent: 0}",
        ProblemCode::CompactionTriggerOutOfRange,
    ),
    (
        "brain: b, window_tokens: 10, compaction: {strategy: truncate, summarizer: b}",
        ProblemCode::SummarizerWithoutSummarize,
    ),
];

#[test]
fn a_configuration_with_n_problems_reports_all_n() {
    let mut runner = seeded::runner("agent_config", "AGENT_CONFIG_SEED", 0xa9e7_c0f1, 128);
    // A valid first profile, then any selection of defective ones, in any order.
    let strategy =
        prop::sample::subsequence((0..DEFECTS.len()).collect::<Vec<_>>(), 1..=DEFECTS.len()).prop_shuffle();
    runner
        .run(&strategy, |picked| {
            let mut yaml = format!("{BRAIN}profiles:\n  - {{id: p0, brain: b, window_tokens: 10}}\n");
            for (n, d) in picked.iter().enumerate() {
                yaml.push_str(&format!("  - {{id: d{n}, {}}}\n", DEFECTS[*d].0));
            }
            let found = problems(&yaml);
            let codes: Vec<ProblemCode> = found.iter().map(|p| p.code).collect();
            let expected: Vec<ProblemCode> = picked.iter().map(|d| DEFECTS[*d].1).collect();
            prop_assert_eq!(codes, expected);
            for (n, problem) in found.iter().enumerate() {
                prop_assert!(problem.path.starts_with(&format!("profiles.d{n}.")), "{}", problem.path);
            }
            Ok(())
        })
        .expect("every problem is reported, each once, in file order");
}

// ---------------------------------------------------------------------------------------------
// YAML and TOML, parse errors, files.

#[test]
fn yaml_and_toml_refuse_alike() {
    let yaml = problems(
        "profiles:\n  - {id: a, brain: b, window_tokens: 0, capabilities: {fork: true, memories: {scope: read-only}}}\n",
    );
    let toml = parse_toml(
        "[[profiles]]\nid = \"a\"\nbrain = \"b\"\nwindow_tokens = 0\n\
         [profiles.capabilities]\nfork = true\nmemories = { scope = \"read-only\" }\n",
    )
    .expect("parses");
    let Err(report) = check(&toml) else { panic!("refused") };
    assert_eq!(report.problems(), yaml.as_slice());
    assert_eq!(summary(&yaml).len(), 3);
}

#[test]
fn toml_loads_like_yaml() {
    let yaml = load_yaml(&format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 9, capabilities: {{memories: {{scope: isolated}}}}}}\n"
    ))
    .expect("valid");
    let toml = load_toml(
        "[[brains]]\nid = \"b\"\nkind = \"scripted\"\nscript = \"s\"\n\
         [[profiles]]\nid = \"a\"\nbrain = \"b\"\nwindow_tokens = 9\n\
         [profiles.capabilities.memories]\nscope = \"isolated\"\n",
    )
    .expect("valid");
    assert_eq!(yaml, toml);
}

#[test]
fn unknown_fields_and_wrong_types_are_parse_errors_that_name_the_field() {
    let cases = [
        "profiles:\n  - {id: a, brian: b}\n",
        "profiles:\n  - {id: a, capabilities: {teleport: true}}\n",
        "profiles:\n  - {id: a, capabilities: {exec: {enabled: true, roster: [x]}}}\n",
        "profiles:\n  - {id: a, window_tokens: -1}\n",
        "brains:\n  - {id: a, kind: gemini}\n",
        "agents: []\n",
    ];
    for text in cases {
        let Err(ParseError::Syntax { message, .. }) = parse_yaml(text) else {
            panic!("must not parse: {text}");
        };
        assert!(!message.is_empty());
    }
    let Err(ParseError::Syntax { message, .. }) = parse_toml("[[profiles]]\nid = \"a\"\nbrian = \"b\"\n")
    else {
        panic!("an unknown TOML field must not parse");
    };
    assert!(message.contains("brian"), "{message}");
}

#[test]
fn yaml_is_read_as_yaml_1_2_without_duplicate_keys() {
    // `yes` is a string in YAML 1.2 (and in TOML there is no such boolean).
    assert!(parse_yaml("profiles:\n  - {id: a, capabilities: {exec: yes}}\n").is_err());
    assert!(parse_yaml("profiles:\n  - id: a\n    id: b\n").is_err());
}

#[test]
fn files_are_refused_by_extension_and_size() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let odd = dir.path().join("team.json");
    std::fs::write(&odd, "{}").expect("write");
    assert!(matches!(load_path(&odd), Err(LoadError::UnknownFormat { .. })));
    let missing = dir.path().join("none.yaml");
    assert!(matches!(load_path(&missing), Err(LoadError::Read { .. })));
    let huge = dir.path().join("huge.yaml");
    let limit = agentvisor::agent::limits::CONFIG_BYTES_MAX;
    std::fs::write(&huge, "#".repeat(limit + 10)).expect("write");
    assert!(matches!(load_path(&huge), Err(LoadError::Parse(ParseError::TooLarge { .. }))));
}

#[test]
fn http_brain_settings_and_budgets_are_checked_and_kept() {
    let config = load_yaml(
        "brains:
  - id: claude
    kind: anthropic
    base_url: https://api.anthropic.com/v1
    model: claude-sonnet-4-5
    api_key_env: ANTHROPIC_API_KEY
    timeout_ms: 120000
    max_tokens: 2048
    temperature: 0.5
    stop: [END]
    retries: 2
    headers: {x-team: research}
    stream: false
    prices: {input: '3.00', output: '15.00', cache_read: '0.30', cache_write: '3.75'}
profiles:
  - id: a
    brain: claude
    window_tokens: 100000
    budget: {tokens: 50000, cost_usd: '0.50', turns: 20, tool_calls: 100}
    guards: {malformed_turns: 2, repeated_calls: 4}
",
    )
    .expect("valid");
    let brain = config.brain("claude").expect("declared");
    let agentvisor::agent::config::BrainBackend::Anthropic { settings, .. } = brain.backend() else {
        panic!("{brain:?}")
    };
    let settings = settings.model_settings();
    assert_eq!(settings.timeout, std::time::Duration::from_secs(120));
    assert_eq!(
        (settings.max_tokens, settings.temperature, settings.retry.retries),
        (Some(2048), Some(0.5), 2)
    );
    assert!(!settings.stream);
    let prices = settings.prices.expect("priced");
    assert_eq!(
        (prices.input, prices.output, prices.cache_read, prices.cache_write),
        (3_000_000, 15_000_000, 300_000, 3_750_000)
    );
    let profile = config.profile("a").expect("declared");
    let budget = profile.budget();
    assert_eq!(budget.kernel.cost_micros, Some(500_000), "dollars read exactly into micro-dollars");
    assert_eq!(
        (budget.kernel.tokens, budget.turns, budget.kernel.tool_calls),
        (Some(50_000), Some(20), Some(100))
    );
    assert_eq!((profile.guards().malformed_turns, profile.guards().repeated_calls), (2, 4));

    let found = problems(&format!(
        "{BRAIN}  - {{id: o, kind: openai, base_url: 'http://x/v1', model: m, api_key_env: K, top_p: 0, stop: [a, b, c, d, e], retries: 11, timeout_ms: 0, headers: {{x-token: \"bad\\nvalue-secret\"}}}}
  - {{id: s, kind: scripted, script: s, temperature: 0.2}}
profiles:
  - {{id: a, brain: b, window_tokens: 10, budget: {{cost_usd: '0.1234567'}}, guards: {{repeated_calls: 0}}}}
"
    ));
    let got: Vec<(String, &str)> = found.iter().map(|p| (p.path.clone(), p.code.as_str())).collect();
    assert_eq!(
        got,
        [
            ("brains.o.timeout_ms".to_string(), "setting_out_of_range"),
            ("brains.o.retries".to_string(), "setting_out_of_range"),
            ("brains.o.top_p".to_string(), "setting_out_of_range"),
            ("brains.o.stop".to_string(), "limit_exceeded"),
            ("brains.o.headers.x-token".to_string(), "invalid_header"),
            ("brains.s.temperature".to_string(), "field_not_for_kind"),
            ("profiles.a.budget.cost_usd".to_string(), "invalid_money"),
            ("profiles.a.guards.repeated_calls".to_string(), "budget_out_of_range"),
        ]
    );
    assert!(found.iter().all(|p| !p.message.contains("secret")), "header values are never repeated");
}

#[test]
fn the_anthropic_example_passes_the_launch_check() {
    let config = load_path(example("anthropic.yaml")).expect("anthropic.yaml passes the launch check");
    assert_eq!(config.brain("claude").map(|b| b.kind().as_str()), Some("anthropic"));
    assert_eq!(config.profile("writer").and_then(|p| p.budget().kernel.cost_micros), Some(500_000));
}

#[test]
fn a_profile_declares_its_restart_policy_and_its_supervision() {
    use agentvisor::actors::kernel::restart::{RestartPolicy, Strategy, Supervision};
    let yaml = format!(
        "{BRAIN}profiles:\n  - id: lead\n    brain: b\n    window_tokens: 1000\n    \
         supervision: {{strategy: one_for_all, intensity: 3, period_ms: 60000}}\n  \
         - {{id: worker, brain: b, window_tokens: 1000, restart: transient}}\n  \
         - {{id: plain, brain: b, window_tokens: 1000, supervision: {{}}}}\n"
    );
    let checked = check(&parse_yaml(&yaml).expect("parses")).expect("passes the launch check");
    let lead = checked.profile("lead").expect("lead");
    assert_eq!(lead.restart(), RestartPolicy::Temporary, "the default");
    assert_eq!(
        lead.supervision(),
        Some(Supervision { strategy: Strategy::OneForAll, intensity: 3, period_ms: 60_000 })
    );
    assert_eq!(checked.profile("worker").expect("worker").restart(), RestartPolicy::Transient);
    assert_eq!(
        checked.profile("plain").expect("plain").supervision(),
        Some(Supervision::DEFAULT),
        "OTP's defaults"
    );
    let unknown = format!(
        "{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 1000, supervision: {{strategy: one_for_one, burst: 2}}}}\n"
    );
    let error = parse_yaml(&unknown).expect_err("an unknown supervision field is refused").to_string();
    assert!(error.contains("burst"), "{error}");
    let policy =
        format!("{BRAIN}profiles:\n  - {{id: a, brain: b, window_tokens: 1000, restart: sometimes}}\n");
    assert!(parse_yaml(&policy).is_err(), "an unknown restart policy is refused");
}

#[test]
fn parser_refusals_speak_of_the_file_not_of_rust_types() {
    let refusals = [
        parse_yaml("profiles:\n  - just a string\n")
            .map(|_| ())
            .expect_err("not a configuration")
            .to_string(),
        parse_toml("profiles = [\"just a string\"]\n")
            .map(|_| ())
            .expect_err("not a configuration")
            .to_string(),
    ];
    assert!(refusals[1].contains("expected a mapping of fields"), "{}", refusals[1]);
    for said in refusals {
        assert!(!said.contains("struct") && !said.contains("Raw"), "a Rust name leaked: {said}");
    }
}

#[test]
fn a_check_with_one_problem_says_one_problem() {
    let yaml = format!("{BRAIN}profiles:\n  - {{id: solo, brain: missing, window_tokens: 32000}}\n");
    let error = load_yaml(&yaml).expect_err("an unknown brain");
    let LoadError::Check(report) = &error else { panic!("the check refuses it: {error}") };
    assert_eq!(report.problems().len(), 1, "{error}");
    assert!(error.to_string().contains("(1 problem)"), "{error}");
}

#[test]
fn every_field_problem_is_reported_at_once_with_its_path_in_plain_words() {
    let yaml = "brains:\n  - {id: b, kind: gemini}\nprofiles:\n  - {id: a, window_tokens: -1, roster: 3, capabilities: {code: {fuel: x, memory: 1}}}\n  - {id: c, brian: b}\n  - just a string\nagents: []\n";
    let Err(ParseError::Syntax { message, .. }) = parse_yaml(yaml) else {
        panic!("must not parse: {yaml}");
    };
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 8, "one line per problem: {message}");
    // Entries in order; the fields of one entry in the order they are read.
    for starts in [
        "brains[0].kind: ",
        "profiles[0].window_tokens: invalid value: integer `-1`, expected a whole number, 0 or more",
        "profiles[0].roster: invalid type: integer `3`",
        "profiles[0].capabilities.code.fuel: invalid type: string \"x\"",
        "profiles[0].capabilities.code.memory: unknown field `memory`",
        "profiles[1].brian: unknown field `brian`",
        "profiles[2]: invalid type: string \"just a string\", expected a mapping of fields",
        "unknown field `agents`, expected one of `brains`, `profiles`",
    ] {
        assert!(lines.iter().any(|l| l.starts_with(starts)), "no line starts with {starts:?}: {message}");
    }
    assert!(lines[0].starts_with("brains[0]") && lines[6].starts_with("profiles[2]"), "{message}");
    for word in ["struct", "Raw", "u64", "u32", "enum "] {
        assert!(!message.contains(word), "{word:?} leaked: {message}");
    }

    let toml =
        "[[profiles]]\nid = \"a\"\nwindow_tokens = \"many\"\n\n[[profiles]]\nid = \"c\"\nbrian = \"b\"\n";
    let Err(ParseError::Syntax { message, .. }) = parse_toml(toml) else {
        panic!("must not parse: {toml}");
    };
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 2, "one line per problem: {message}");
    assert!(lines[0].starts_with("profiles[0].window_tokens: invalid type: string \"many\""), "{message}");
    assert!(lines[1].starts_with("profiles[1].brian: unknown field `brian`"), "{message}");
}
