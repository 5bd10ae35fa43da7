//! Running rigs through `RigRunner`, as an embedder would: the example rig on an in-memory
//! runtime, a seat store that cannot write a token, unresolvable sources, external seats on
//! fake `claude` and `codex` executables, restoring from the SQLite seat store, expansion, and
//! the wording every outcome uses, and a seat forked from a seat of the same run sharing its
//! window.
//!
//! The fakes pick their behaviour from the name of the directory they run in (the member's
//! `cwd`), so one rig can hold a seat per behaviour. No test sleeps: a hang is cut by the
//! runner's command timeout, which the one test of it sets small; that cut is the behaviour
//! under test.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agentvisor::actors::Status;
use agentvisor::actors::runtime::{Runtime, RuntimeOptions};
use agentvisor::actors::store::ProcessQuery;
use agentvisor::agent::telemetry::Telemetry;
use agentvisor::agent::window::{ChunkId, ChunkStore, ChunkStoreError, MemoryChunkStore};
use agentvisor::rig::adapter::{ClaudeCodeAdapter, CodexAdapter, TerminalAdapter};
use agentvisor::rig::run::{Adapters, RigHosts, RigRunner, SeatOutcome};
use agentvisor::rig::store::{
    FailingSeatStore, MemorySeatStore, SeatOperation, SeatRecord, SeatStatus, SeatStore, SqliteSeatStore,
};
use agentvisor::rig::{Member, MemberId, RigId, RigSpec, check_expansion, parse_expansion, parse_rig};

/// A source id the fakes treat as an existing conversation.
const SOURCE: &str = "0b0165d7-cb4d-4650-90de-15c0a1ede9e6";
/// The thread id the fake `codex` reports for a new thread.
const CODEX_NEW: &str = "019a0000-0000-7000-8000-00000000c0de";
/// The bound for commands expected to finish: generous, only there so a broken fake cannot
/// hang the suite.
const FINISH_BOUND: Duration = Duration::from_secs(30);
/// The bound for the command expected to hang.
const HANG_BOUND: Duration = Duration::from_millis(500);
/// The words no outcome, record or error may use about a seat.
const DISHONEST: [&str; 3] = ["resumed", "restored", "snapshot"];

const FAKE_CLAUDE: &str = r#"#!/bin/sh
# A fake `claude`: acts as the name of its working directory says.
mode=$(basename "$(pwd)")
sid=""; src=""; prev=""
for arg in "$@"; do
  case "$prev" in
    --session-id) sid="$arg" ;;
    --resume) src="$arg" ;;
  esac
  prev="$arg"
done
case "$mode" in
  success) printf '{"type":"result","subtype":"success","is_error":false,"result":"ready","session_id":"%s"}\n' "$sid" ;;
  unknown) printf 'No conversation found with session ID: %s\n' "$src" >&2; exit 1 ;;
  fail) echo 'boom: API overloaded' >&2; exit 2 ;;
  hang) echo 'loading source conversation' >&2; exec sleep 30 ;;
  malformed) echo 'this is not json' ;;
  *) echo "unknown mode $mode" >&2; exit 99 ;;
esac
"#;

const FAKE_CODEX: &str = r#"#!/bin/sh
# A fake `codex`: acts as the name of its working directory says.
mode=$(basename "$(pwd)")
# A fork reports CODEX_NEW; a fresh thread another id.
new='019a0000-0000-7000-8000-00000000c0df'
if [ "$2" = fork ]; then new='019a0000-0000-7000-8000-00000000c0de'; fi
case "$mode" in
  success)
    printf '{"type":"thread.started","thread_id":"%s"}\n' "$new"
    printf '{"type":"turn.started"}\n'
    printf '{"type":"thread.started","thread_id":"not-the-first-one"}\n'
    printf '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}\n' ;;
  fail) echo 'error: stream disconnected' >&2; exit 1 ;;
  malformed) echo 'not json at all' ;;
  *) echo "unknown mode $mode" >&2; exit 99 ;;
esac
"#;

/// The directory holding the fake executables, written once per test process. Every test
/// calls this before it spawns anything, so no child is forked while a fake is open for
/// writing (which would make executing it fail with "text file busy").
fn fakes() -> &'static Path {
    static FAKES: OnceLock<PathBuf> = OnceLock::new();
    FAKES.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rig_run_fakes");
        std::fs::create_dir_all(&dir).expect("create the fakes directory");
        for (name, text) in [("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX)] {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write a fake");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("make a fake executable");
        }
        dir
    })
}

fn adapters(timeout: Duration) -> Adapters {
    Adapters {
        claude: Arc::new(ClaudeCodeAdapter::new(fakes().join("claude").display().to_string())),
        codex: Arc::new(CodexAdapter::new(fakes().join("codex").display().to_string())),
        terminal: Arc::new(TerminalAdapter),
        timeout,
    }
}

/// The repository's example rigs directory, the base of `examples/rigs/swarm.yaml`.
fn example_base() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("rigs")
}

fn example_spec() -> RigSpec {
    let text = std::fs::read_to_string(example_base().join("swarm.yaml")).expect("read the example rig");
    parse_rig(&text).expect("the example rig is valid")
}

/// A temp directory holding a one-profile agent configuration (`solo.yaml`, profile `solo`,
/// which finishes on its first turn) with its scripts beside it, and a working directory per
/// fake behaviour.
fn solo_dir() -> tempfile::TempDir {
    fakes();
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(
        dir.path().join("solo.yaml"),
        "brains:\n  - {id: solo-brain, kind: scripted, script: solo}\nprofiles:\n  - id: solo\n    \
         description: Finishes at once.\n    brain: solo-brain\n    window_tokens: 16000\n",
    )
    .expect("write the agent configuration");
    std::fs::write(
        dir.path().join("solo-scripts.json"),
        r#"{"solo": {"turns": [{"tool_calls": [{"name": "finish", "arguments": {"result": "solo done"}}]}]}}"#,
    )
    .expect("write the scripts");
    for mode in ["success", "unknown", "fail", "hang", "malformed"] {
        std::fs::create_dir(dir.path().join(mode)).expect("a working directory");
    }
    dir
}

/// A runner for `spec` on a fresh in-memory runtime.
async fn runner(
    spec: &RigSpec,
    base: &Path,
    store: Arc<dyn SeatStore>,
    adapters: Adapters,
) -> (RigRunner, Arc<Runtime>) {
    runner_with(spec, base, store, adapters, &Telemetry::new()).await
}

/// [`runner`], with its agents' events going to `telemetry`.
async fn runner_with(
    spec: &RigSpec,
    base: &Path,
    store: Arc<dyn SeatStore>,
    adapters: Adapters,
    telemetry: &Telemetry,
) -> (RigRunner, Arc<Runtime>) {
    fakes();
    let hosts = RigHosts::load(spec, base, Arc::new(MemoryChunkStore::new()), telemetry)
        .expect("the rig's agent configurations load");
    let rt = Arc::new(Runtime::in_memory(hosts.register(RuntimeOptions::new())).await.expect("a runtime"));
    let runner = RigRunner::new(Arc::clone(&rt), hosts, store, adapters, base.to_path_buf());
    (runner, rt)
}

fn member_id(id: &str) -> MemberId {
    serde_json::from_value(serde_json::json!(id)).expect("a member id")
}

fn outcome<'a>(outcomes: &'a [SeatOutcome], member: &str) -> &'a SeatOutcome {
    outcomes
        .iter()
        .find(|o| o.member == member)
        .unwrap_or_else(|| panic!("no outcome for {member}: {outcomes:?}"))
}

fn record(store: &dyn SeatStore, rig: &RigId, member: &str) -> SeatRecord {
    store.seat(rig, &member_id(member)).expect("read the seat").expect("the seat exists")
}

/// Every root process the runtime has, terminal ones included.
fn roots(rt: &Runtime) -> Vec<agentvisor::actors::kernel::process::ProcessRow> {
    rt.processes(ProcessQuery { roots_only: true, include_terminal: true, ..ProcessQuery::default() })
        .expect("list processes")
}

fn assert_honest(text: &str) {
    let lower = text.to_lowercase();
    for word in DISHONEST {
        assert!(!lower.contains(word), "{word:?} in {text:?}");
    }
}

#[tokio::test]
async fn the_example_rig_forks_a_new_seat_from_the_lead_with_tokens_of_its_own() {
    let spec = example_spec();
    let store = Arc::new(MemorySeatStore::new());
    let (runner, rt) = runner(&spec, &example_base(), store.clone(), adapters(FINISH_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "examples/rigs/swarm.yaml").await.expect("the rig runs");
    assert_eq!(rig.as_str(), "swarm");

    let lead = outcome(&outcomes, "lead");
    let second = outcome(&outcomes, "second-opinion");
    for o in [lead, second] {
        assert_eq!(o.status, SeatStatus::Realized, "{o:?}");
        assert_eq!(o.process_status.as_deref(), Some("exited"), "{o:?}");
    }
    assert!(lead.result.as_ref().is_some_and(|r| r.to_string().contains("report published")), "{lead:?}");
    // The reviewer's first turn expects the lead's conversation; it exits only if it saw it.
    assert!(
        second.result.as_ref().is_some_and(|r| r.to_string().contains("review: the report reads well")),
        "{second:?}"
    );

    let lead_record = record(store.as_ref(), &rig, "lead");
    let second_record = record(store.as_ref(), &rig, "second-opinion");
    let lead_token = lead_record.token.clone().expect("the lead has a token");
    let second_token = second_record.token.clone().expect("the fork has a token");
    assert_ne!(lead_token, second_token, "each seat has its own token");
    assert_eq!(lead_record.source, None);
    assert_eq!(second_record.source.as_ref().map(|s| s.as_str()), Some("seat:lead"));
    assert_ne!(second_record.source.as_ref(), Some(&second_token));
    assert_eq!(lead.token.as_deref(), Some(lead_token.as_str()));
    assert_eq!(second.token.as_deref(), Some(second_token.as_str()));
    // The tokens are new: neither is a process id of the runtime (the source is a process).
    for token in [&lead_token, &second_token] {
        assert!(roots(&rt).iter().all(|row| row.pid.to_string() != token.as_str()), "{token}");
    }
    assert_ne!(lead_record.pid, second_record.pid, "the fork is a process of its own");
    let second_pid = second_record.pid.clone().expect("the fork's process");
    let row = rt.process(second_pid.parse().expect("a pid")).expect("read").expect("the fork's row");
    assert_eq!(row.status, Status::Exited);
    assert_eq!(second.origin(), "forked from source session seat:lead");
}

#[tokio::test]
async fn a_native_seat_whose_token_cannot_be_written_is_not_launched() {
    let dir = solo_dir();
    let spec =
        parse_rig("id: r\nmembers:\n  - {id: solo, runtime: native, agent_ref: solo.yaml, profile: solo}\n")
            .expect("spec");
    let store = Arc::new(FailingSeatStore::new(MemorySeatStore::new(), SeatOperation::Realize));
    let telemetry = Telemetry::new();
    let (runner, rt) =
        runner_with(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND), &telemetry).await;
    let (rig, outcomes) = runner.run(&spec, "r.yaml").await.expect("the rig runs");
    // The seat's process was launched held: it never became an agent, let alone took a turn.
    assert_eq!(telemetry.records(), Vec::new(), "a seat whose token is not durable did no work");

    let solo = outcome(&outcomes, "solo");
    assert_eq!(solo.status, SeatStatus::Failed, "{solo:?}");
    assert_eq!(solo.failed_step.as_deref(), Some("persist"), "{solo:?}");
    assert_eq!(solo.token, None);
    let seat = record(store.inner(), &rig, "solo");
    assert_eq!(seat.status, SeatStatus::Failed, "{seat:?}");
    assert_eq!(seat.token, None);
    assert_eq!(seat.failed_step.as_deref(), Some("persist"));
    assert!(store.injected_count() >= 1);
    for row in roots(&rt) {
        assert!(row.status.is_terminal(), "{row:?}");
        assert_ne!(row.status, Status::Exited, "the process ran to its end: {row:?}");
    }
}

#[tokio::test]
async fn an_external_seat_whose_token_cannot_be_written_is_not_launched() {
    let dir = solo_dir();
    let spec = parse_rig(&format!(
        "id: r\nmembers:\n  - id: fork\n    runtime: claude-code\n    cwd: success\n    session_source:\n      \
         mode: fork\n      ref: {{kind: native_id, value: {SOURCE}}}\n"
    ))
    .expect("spec");
    let store = Arc::new(FailingSeatStore::new(MemorySeatStore::new(), SeatOperation::Realize));
    let (runner, _rt) = runner(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "r.yaml").await.expect("the rig runs");

    let fork = outcome(&outcomes, "fork");
    assert_eq!(fork.status, SeatStatus::Failed, "{fork:?}");
    assert_eq!(fork.failed_step.as_deref(), Some("persist"), "{fork:?}");
    assert_eq!(fork.token, None);
    // The session the runtime created is reported by its token, after the bounded retries.
    let created = fork.unrecorded_token.clone().expect("the created session's token is reported");
    assert_ne!(created, SOURCE);
    let error = fork.error.clone().unwrap_or_default();
    assert!(error.contains(&created) && error.contains("5 tries"), "{error}");
    assert_eq!(store.injected_count(), 5, "the realize was tried within its bound");
    let seat = record(store.inner(), &rig, "fork");
    assert_eq!(seat.status, SeatStatus::Failed, "{seat:?}");
    assert_eq!(seat.token, None);
    assert_eq!(seat.source.as_ref().map(|s| s.as_str()), Some(SOURCE));
}

#[tokio::test]
async fn an_unresolvable_native_source_fails_at_resolve_and_launches_nothing_in_its_place() {
    let dir = solo_dir();
    let spec = parse_rig(
        "id: r\nmembers:\n  - {id: solo, runtime: native, agent_ref: solo.yaml, profile: solo}\n  - id: ghost\n    \
         runtime: native\n    agent_ref: solo.yaml\n    profile: solo\n    session_source:\n      mode: fork\n      \
         ref: {kind: native_id, value: 01a22a00-0000-7000-8000-000000000000}\n  - id: orphan\n    runtime: native\n    \
         agent_ref: solo.yaml\n    profile: solo\n    session_source:\n      mode: fork\n      \
         ref: {kind: native_id, value: 'seat:nobody'}\n",
    )
    .expect("spec");
    let store = Arc::new(MemorySeatStore::new());
    let (runner, rt) = runner(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "r.yaml").await.expect("the rig runs");

    for (member, id) in [("ghost", "01a22a00-0000-7000-8000-000000000000"), ("orphan", "seat:nobody")] {
        let o = outcome(&outcomes, member);
        assert_eq!(o.status, SeatStatus::Failed, "{o:?}");
        assert_eq!(o.failed_step.as_deref(), Some("resolve"), "{o:?}");
        let error = o.error.clone().unwrap_or_default();
        assert!(error.contains("native") && error.contains(id), "{error}");
        assert!(error.contains("no seat was launched in its place"), "{error}");
        assert_eq!(o.pid, None);
        let seat = record(store.as_ref(), &rig, member);
        assert_eq!((seat.status, seat.token.clone(), seat.pid.clone()), (SeatStatus::Failed, None, None));
        assert_eq!(seat.failed_step.as_deref(), Some("resolve"));
    }
    let solo = outcome(&outcomes, "solo");
    assert_eq!(solo.status, SeatStatus::Realized, "{solo:?}");
    assert_eq!(solo.process_status.as_deref(), Some("exited"));
    let roots = roots(&rt);
    assert_eq!(roots.len(), 1, "only the solo seat has a process: {roots:?}");
    assert_eq!(Some(roots[0].pid.to_string()), solo.pid);
}

/// Members on external runtimes, one per fake behaviour (the seat's `cwd` names it), as
/// YAML list items: `(id, runtime, cwd, forked from SOURCE)`.
fn external_members(members: &[(&str, &str, &str, bool)]) -> String {
    let mut text = String::new();
    for (id, runtime, cwd, fork) in members {
        text.push_str(&format!("  - id: {id}\n    runtime: {runtime}\n    cwd: {cwd}\n"));
        if *fork {
            text.push_str(&format!(
                "    session_source:\n      mode: fork\n      ref: {{kind: native_id, value: {SOURCE}}}\n"
            ));
        }
    }
    text
}

fn external_spec(members: &[(&str, &str, &str, bool)]) -> RigSpec {
    parse_rig(&format!("id: ext\nmembers:\n{}", external_members(members))).expect("spec")
}

#[tokio::test]
async fn external_seats_realize_with_new_tokens_or_fail_at_the_step_that_failed() {
    let dir = solo_dir();
    let spec = external_spec(&[
        ("claude-ok", "claude-code", "success", true),
        ("claude-unknown", "claude-code", "unknown", true),
        ("claude-fail", "claude-code", "fail", true),
        ("claude-malformed", "claude-code", "malformed", true),
        ("codex-ok", "codex", "success", true),
        ("codex-fresh", "codex", "success", false),
        ("codex-malformed", "codex", "malformed", true),
    ]);
    let store = Arc::new(MemorySeatStore::new());
    let (runner, _rt) = runner(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "ext.yaml").await.expect("the rig runs");
    let seat = |member: &str| record(store.as_ref(), &rig, member);

    let claude = seat("claude-ok");
    assert_eq!(claude.status, SeatStatus::Realized, "{claude:?}");
    let token = claude.token.clone().expect("a token");
    assert_ne!(token.as_str(), SOURCE);
    assert_eq!(claude.source.as_ref().map(|s| s.as_str()), Some(SOURCE));
    let claude_outcome = outcome(&outcomes, "claude-ok");
    assert_eq!(claude_outcome.token.as_deref(), Some(token.as_str()));
    // The token is the new session id the runner asked for and claude reported.
    let detail = claude_outcome.result.clone().expect("what claude reported");
    assert_eq!(detail["requested_session_id"].as_str(), Some(token.as_str()), "{detail}");
    assert_eq!(detail["session_id_matches_request"], serde_json::json!(true));

    let codex = seat("codex-ok");
    assert_eq!(codex.status, SeatStatus::Realized, "{codex:?}");
    assert_eq!(codex.token.as_ref().map(|t| t.as_str()), Some(CODEX_NEW), "the first thread.started");
    let fresh = seat("codex-fresh");
    assert_eq!(fresh.status, SeatStatus::Realized, "{fresh:?}");
    assert_eq!(fresh.source, None);
    assert!(fresh.token.as_ref().is_some_and(|t| t.as_str() != CODEX_NEW), "{fresh:?}");

    for (member, step) in [
        ("claude-unknown", "resolve"),
        ("claude-fail", "fork_command"),
        ("claude-malformed", "malformed_output"),
        ("codex-malformed", "malformed_output"),
    ] {
        let failed = seat(member);
        assert_eq!(failed.status, SeatStatus::Failed, "{failed:?}");
        assert_eq!(failed.failed_step.as_deref(), Some(step), "{member}: {failed:?}");
        assert_eq!(failed.token, None, "{member}: no token is persisted");
        assert_eq!(outcome(&outcomes, member).token, None);
    }
    let unknown = seat("claude-unknown");
    let error = unknown.error.clone().unwrap_or_default();
    assert!(error.contains("claude-code") && error.contains(SOURCE), "{error}");
    assert!(
        seat("claude-fail").stderr.as_deref().is_some_and(|s| s.contains("boom: API overloaded")),
        "{:?}",
        seat("claude-fail")
    );
}

#[tokio::test]
async fn an_external_fork_that_hangs_fails_at_timeout_with_no_token() {
    let dir = solo_dir();
    let spec = external_spec(&[("claude-hang", "claude-code", "hang", true)]);
    let store = Arc::new(MemorySeatStore::new());
    let (runner, _rt) = runner(&spec, dir.path(), store.clone(), adapters(HANG_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "ext.yaml").await.expect("the rig runs");
    let hang = record(store.as_ref(), &rig, "claude-hang");
    assert_eq!(hang.status, SeatStatus::Failed, "{hang:?}");
    assert_eq!(hang.failed_step.as_deref(), Some("timeout"));
    assert_eq!(hang.token, None);
    assert!(hang.stderr.as_deref().is_some_and(|s| s.contains("loading source conversation")), "{hang:?}");
    assert_eq!(outcome(&outcomes, "claude-hang").failed_step.as_deref(), Some("timeout"));
}

#[tokio::test]
async fn a_later_run_starts_a_new_rig_and_leaves_the_first_rigs_seats_as_they_were() {
    let spec = example_spec();
    let state = tempfile::tempdir().expect("a temp dir");
    let path = state.path().join("rigs.sqlite");
    let store: Arc<dyn SeatStore> = Arc::new(SqliteSeatStore::open(&path).expect("open the seat store"));
    let (runner, _rt) = runner(&spec, &example_base(), Arc::clone(&store), adapters(FINISH_BOUND)).await;
    let (first, _) = runner.run(&spec, "examples/rigs/swarm.yaml").await.expect("the first run");
    let before = store.seats(&first).expect("read the seats");

    let reopened = SqliteSeatStore::open(&path).expect("reopen the seat store");
    let after_reopen = reopened.seats(&first).expect("read the seats");
    assert_eq!(after_reopen, before, "the file holds what the run wrote");
    assert!(
        after_reopen.iter().all(|s| s.status == SeatStatus::Realized && s.token.is_some()),
        "{after_reopen:?}"
    );
    // A realized seat is final: it is never resolved (and so never forked) again.
    let refused = reopened.resolve(&first, &member_id("second-opinion")).expect_err("realized is final");
    assert_eq!(refused.code(), "illegal_transition");

    let (second, outcomes) = runner.run(&spec, "examples/rigs/swarm.yaml").await.expect("the second run");
    assert_eq!(second.as_str(), "swarm-2");
    assert!(outcomes.iter().all(|o| o.status == SeatStatus::Realized), "{outcomes:?}");
    let second_seats = reopened.seats(&second).expect("read the seats");
    for seat in &second_seats {
        let token = seat.token.clone().expect("a token");
        assert!(before.iter().all(|old| old.token.as_ref() != Some(&token)), "{token} is reused");
    }
    assert_eq!(reopened.seats(&first).expect("read the seats"), before, "the first rig is untouched");
}

#[tokio::test]
async fn an_expansion_adds_a_seat_forked_from_the_rigs_finished_lead() {
    let spec = example_spec();
    let store = Arc::new(MemorySeatStore::new());
    let (runner, rt) = runner(&spec, &example_base(), store.clone(), adapters(FINISH_BOUND)).await;
    let (first, _) = runner.run(&spec, "examples/rigs/swarm.yaml").await.expect("the first run");
    // A second rig of the same spec on the same runner: `seat:lead` in an expansion of the
    // first rig still names the first rig's lead.
    let (second, _) = runner.run(&spec, "examples/rigs/swarm.yaml").await.expect("the second run");
    assert_ne!(first, second);

    let payload = "members:\n  - id: third-opinion\n    runtime: native\n    agent_ref: ../agents/swarm.yaml\n    \
                   profile: reviewer\n    prompt: Review it again.\n    session_source:\n      mode: fork\n      \
                   ref: {kind: native_id, value: 'seat:lead'}\n";
    let current = RigSpec::of_members(
        first.clone(),
        store.seats(&first).expect("seats").iter().map(|s| s.member().expect("member")).collect(),
    );
    let members = parse_expansion(payload, &current).expect("the expansion is valid");
    let outcomes = runner.expand(&first, &members).await.expect("the expansion runs");
    let third = outcome(&outcomes, "third-opinion");
    assert_eq!(third.status, SeatStatus::Realized, "{third:?}");
    assert_eq!(third.process_status.as_deref(), Some("exited"), "{third:?}");

    let seats = store.seats(&first).expect("seats");
    let tokens: Vec<_> = seats.iter().filter_map(|s| s.token.clone()).collect();
    assert_eq!(tokens.len(), 3, "{seats:?}");
    assert!(
        tokens.iter().enumerate().all(|(i, t)| !tokens[..i].contains(t)),
        "tokens are distinct: {tokens:?}"
    );
    // It forked the first rig's lead, not the second's.
    let lead_pid = record(store.as_ref(), &first, "lead").pid.expect("the lead's pid");
    let other_lead_pid = record(store.as_ref(), &second, "lead").pid.expect("the other lead's pid");
    let third_pid = third.pid.clone().expect("a pid");
    let goal = rt.process(third_pid.parse().expect("a pid")).expect("read").expect("its row").goal;
    assert!(
        goal.contains(&lead_pid) && !goal.contains(&other_lead_pid),
        "{goal}: the first rig's lead is {lead_pid}, the second's {other_lead_pid}"
    );

    // A member id the rig has is refused before anything is declared.
    let duplicate = "members:\n  - {id: lead, runtime: terminal}\n";
    let current = RigSpec::of_members(
        first.clone(),
        store.seats(&first).expect("seats").iter().map(|s| s.member().expect("member")).collect(),
    );
    let report = parse_expansion(duplicate, &current).expect_err("a duplicate id is refused");
    assert!(report.to_string().contains("duplicate_id"), "{report}");
    let again: Vec<Member> = vec![current.members[0].clone()];
    let report = check_expansion(&current, again).expect_err("a duplicate id is refused");
    assert!(report.to_string().contains("duplicate_id"), "{report}");
    assert_eq!(store.seats(&first).expect("seats").len(), 3, "nothing was declared");
}

#[tokio::test]
async fn no_outcome_record_or_error_says_resumed_restored_or_snapshot() {
    let dir = solo_dir();
    let spec = parse_rig(&format!(
        "id: words\nmembers:\n  - {{id: solo, runtime: native, agent_ref: solo.yaml, profile: solo}}\n  - id: again\n    \
         runtime: native\n    agent_ref: solo.yaml\n    profile: solo\n    session_source:\n      mode: fork\n      \
         ref: {{kind: native_id, value: 'seat:solo'}}\n  - id: ghost\n    runtime: native\n    agent_ref: solo.yaml\n    \
         profile: solo\n    session_source:\n      mode: fork\n      ref: {{kind: native_id, value: 'seat:nobody'}}\n  \
         - {{id: shell, runtime: terminal}}\n{}",
        external_members(&[
            ("claude-ok", "claude-code", "success", true),
            ("claude-unknown", "claude-code", "unknown", true),
            ("claude-fail", "claude-code", "fail", true),
            ("claude-malformed", "claude-code", "malformed", true),
            ("codex-fail", "codex", "fail", true),
            ("codex-malformed", "codex", "malformed", true),
        ])
    ))
    .expect("spec");
    let store = Arc::new(MemorySeatStore::new());
    let (runner, _rt) = runner(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND)).await;
    let (rig, outcomes) = runner.run(&spec, "words.yaml").await.expect("the rig runs");
    assert_eq!(outcomes.len(), spec.members.len());
    assert!(outcomes.iter().any(|o| o.status == SeatStatus::Failed));
    assert!(outcomes.iter().any(|o| o.status == SeatStatus::Realized && o.source.is_some()));
    for o in &outcomes {
        assert_honest(&o.origin());
        assert_honest(&serde_json::to_string(o).expect("encode"));
    }
    assert_eq!(outcome(&outcomes, "again").origin(), "forked from source session seat:solo");
    assert_eq!(outcome(&outcomes, "solo").origin(), "fresh session");
    for seat in store.seats(&rig).expect("seats") {
        assert_honest(seat.error.as_deref().unwrap_or_default());
    }
}

#[tokio::test]
async fn a_delegates_to_edge_lets_the_from_seat_message_the_to_seat_and_says_so() {
    use agentvisor::actors::kernel::capability::Rights;
    use agentvisor::actors::kernel::mailbox::{MailboxQuery, mailbox_resource};
    let dir = solo_dir();
    // The lead waits for the rig to tell it whom it may message, then finishes. Its receive
    // counts acknowledged messages too: the note may reach its window first, before the call.
    std::fs::write(
        dir.path().join("lead.yaml"),
        "brains:\n  - {id: lead-brain, kind: scripted, script: lead}\nprofiles:\n  - id: lead\n    \
         description: Waits for its delegate.\n    brain: lead-brain\n    window_tokens: 16000\n    \
         capabilities: {child_processes: {child_agent: lead}}\n",
    )
    .expect("write the lead's configuration");
    std::fs::write(
        dir.path().join("lead-scripts.json"),
        r#"{"lead": {"turns": [
            {"tool_calls": [{"name": "receive_process_messages", "arguments": {"block": true, "channel": "rig.delegates_to", "include_acked": true}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"result": "told"}}]}
        ]}}"#,
    )
    .expect("write the lead's scripts");
    let spec = parse_rig(
        "id: d\nmembers:\n  - {id: lead, runtime: native, agent_ref: lead.yaml, profile: lead}\n  \
         - {id: helper, runtime: native, agent_ref: solo.yaml, profile: solo}\n\
         edges:\n  - {kind: delegates_to, from: lead, to: helper}\n",
    )
    .expect("spec");
    let store = Arc::new(MemorySeatStore::new());
    let (runner, rt) = runner(&spec, dir.path(), store.clone(), adapters(FINISH_BOUND)).await;
    let (_rig, outcomes) = runner.run(&spec, "d.yaml").await.expect("the rig runs");
    let lead = outcome(&outcomes, "lead");
    assert_eq!(lead.process_status.as_deref(), Some("exited"), "{lead:?}");
    let lead_pid = lead.pid.clone().expect("a pid").parse().expect("a pid");
    let helper_pid = outcome(&outcomes, "helper").pid.clone().expect("a pid").parse().expect("a pid");

    let grants = rt.grants_of(lead_pid).expect("grants");
    assert!(
        grants.iter().any(|g| g.resource == mailbox_resource(helper_pid) && g.rights.contains(Rights::WRITE)),
        "{grants:?}"
    );
    let theirs = rt.grants_of(helper_pid).expect("grants");
    assert!(
        !theirs.iter().any(|g| g.resource.starts_with("mailbox:")),
        "the edge has a direction: {theirs:?}"
    );
    let query = MailboxQuery { filter: Default::default(), include_acked: true, limit: 100 };
    let told = rt.read_mailbox(lead_pid, &query).expect("mailbox");
    let note = told.messages.iter().find(|m| m.channel.as_deref() == Some("rig.delegates_to")).expect("told");
    assert_eq!(
        note.payload.as_ref().map(|p| p["pid"].clone()),
        Some(serde_json::json!(helper_pid.to_string()))
    );
    assert!(note.body.contains("helper"), "{}", note.body);
}

/// A chunk store that counts the chunks and links read back from it.
struct CountingChunks {
    inner: MemoryChunkStore,
    gets: std::sync::atomic::AtomicUsize,
}

impl ChunkStore for CountingChunks {
    fn put(&self, id: ChunkId, bytes: Vec<u8>) -> Result<(), ChunkStoreError> {
        self.inner.put(id, bytes)
    }

    fn get(&self, id: &ChunkId) -> Result<Option<Vec<u8>>, ChunkStoreError> {
        self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get(id)
    }

    fn contains(&self, id: &ChunkId) -> Result<bool, ChunkStoreError> {
        self.inner.contains(id)
    }
}

#[tokio::test]
async fn a_seat_forked_from_a_seat_of_the_same_run_shares_its_window_and_reads_no_chunk() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(
        dir.path().join("talk.yaml"),
        "brains:\n  - {id: t, kind: scripted, script: talker}\n  - {id: f, kind: scripted, script: forker}\n\
         profiles:\n  - id: talker\n    description: Talks.\n    brain: t\n    window_tokens: 1000000\n    \
         capabilities: {notebook: true}\n  - id: forker\n    description: Starts from the talk.\n    brain: f\n    \
         window_tokens: 1000000\n",
    )
    .expect("write the agent configuration");
    // Four turns of forty calls: the talk seals chunks, so a restore would read them back.
    let talk: Vec<_> = (0..4)
        .map(|t| {
            let calls: Vec<_> = (0..40)
                .map(|i| serde_json::json!({"name": "write_note", "arguments": {"page": "p", "text": format!("{t}.{i}")}}))
                .collect();
            serde_json::json!({"tool_calls": calls})
        })
        .chain([serde_json::json!({"tool_calls": [{"name": "finish", "arguments": {"result": "talked"}}]})])
        .collect();
    let scripts = serde_json::json!({
        "talker": {"turns": talk},
        "forker": {"turns": [{"expect": {"tool_results_contain": ["your session ends"]},
                              "tool_calls": [{"name": "finish", "arguments": {"result": "forked"}}]}]},
    });
    std::fs::write(dir.path().join("talk-scripts.json"), scripts.to_string()).expect("write the scripts");
    let spec = parse_rig(
        "id: r\nmembers:\n  - {id: talker, runtime: native, agent_ref: talk.yaml, profile: talker}\n  - id: forker\n    \
         runtime: native\n    agent_ref: talk.yaml\n    profile: forker\n    session_source:\n      mode: fork\n      \
         ref: {kind: native_id, value: 'seat:talker'}\n",
    )
    .expect("spec");
    let chunks = Arc::new(CountingChunks { inner: MemoryChunkStore::new(), gets: Default::default() });
    let hosts = RigHosts::load(&spec, dir.path(), chunks.clone(), &Telemetry::new())
        .expect("the configuration loads");
    let rt = Arc::new(Runtime::in_memory(hosts.register(RuntimeOptions::new())).await.expect("a runtime"));
    let store = Arc::new(MemorySeatStore::new());
    let runner =
        RigRunner::new(Arc::clone(&rt), hosts, store, adapters(FINISH_BOUND), dir.path().to_path_buf());
    let (_, outcomes) = runner.run(&spec, "talk.yaml").await.expect("the rig runs");

    for member in ["talker", "forker"] {
        assert_eq!(outcome(&outcomes, member).process_status.as_deref(), Some("exited"), "{outcomes:?}");
    }
    assert_eq!(outcome(&outcomes, "forker").origin(), "forked from source session seat:talker");
    assert_eq!(
        chunks.gets.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the fork started from the talker's window in memory, not from the chunk store"
    );
}
