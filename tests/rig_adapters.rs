//! The seat adapters and the command wrapper, driven against fake `claude` and `codex`
//! executables: each fake logs its working directory and argv, then behaves as `FAKE_MODE`
//! says (success, unknown source, failure, hang, malformed output, …).
//!
//! No test sleeps: a hang is cut by the wrapper's timeout, which these tests set small, and
//! that cut is the behaviour under test.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use agentvisor::rig::adapter::{
    AdapterError, ClaudeCodeAdapter, CodexAdapter, CommandError, SeatAdapter, SeatCommand, SeatLaunch, Step,
    TerminalAdapter, run,
};
use agentvisor::rig::{Member, NativeId, RigId, SeatRuntime};
use serde_json::json;

/// A source id the fakes treat as an existing conversation (they accept any id; `unknown`
/// mode is what makes one unknown).
const SOURCE: &str = "0b0165d7-cb4d-4650-90de-15c0a1ede9e6";
/// The thread id the fake `codex` reports for a new thread.
const CODEX_NEW: &str = "019a0000-0000-7000-8000-00000000c0de";
/// The bound for commands expected to finish: generous, only there so a broken fake cannot
/// hang the suite.
const FINISH_BOUND: Duration = Duration::from_secs(30);
/// The bound for commands expected to hang.
const HANG_BOUND: Duration = Duration::from_millis(500);
const PROMPT: &str = "review the diff";

const FAKE_CLAUDE: &str = r#"#!/bin/sh
# A fake `claude`: logs where and how it was called, then acts as $FAKE_MODE says.
{
  printf 'pwd=%s\n' "$(pwd)"
  for arg in "$@"; do printf 'arg=%s\n' "$arg"; done
} > "$FAKE_LOG"
sid=""; src=""; prev=""
for arg in "$@"; do
  case "$prev" in
    --session-id) sid="$arg" ;;
    --resume) src="$arg" ;;
  esac
  prev="$arg"
done
ok='{"type":"result","subtype":"success","is_error":false,"result":"ready","session_id":"%s"}\n'
case "$FAKE_MODE" in
  success) printf "$ok" "$sid" ;;
  other_id) printf "$ok" "claude-chose-this-id" ;;
  own) printf '{"type":"result","subtype":"success","is_error":false,"result":"again","session_id":"%s","usage":{"input_tokens":7,"output_tokens":3},"total_cost_usd":0.0042}\n' "$src" ;;
  source_id) printf "$ok" "$src" ;;
  success_exit_1) printf "$ok" "$sid"; exit 1 ;;
  unknown) printf 'No conversation found with session ID: %s\n' "$src" >&2; exit 1 ;;
  unknown_json)
    printf '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: %s"],"session_id":"%s"}\n' "$src" "$sid"
    exit 1 ;;
  error_result)
    echo 'max turns reached' >&2
    printf '{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"%s"}\n' "$sid" ;;
  fail) echo 'boom: API overloaded' >&2; exit 2 ;;
  hang) echo 'loading source conversation' >&2; echo $$ > "$FAKE_PID"; exec sleep 30 ;;
  malformed) echo 'this is not json' ;;
  *) echo "unknown FAKE_MODE $FAKE_MODE" >&2; exit 99 ;;
esac
"#;

const FAKE_CODEX: &str = r#"#!/bin/sh
# A fake `codex`: logs where and how it was called, then acts as $FAKE_MODE says.
{
  printf 'pwd=%s\n' "$(pwd)"
  for arg in "$@"; do printf 'arg=%s\n' "$arg"; done
} > "$FAKE_LOG"
src=""
if [ "$1" = exec ] && [ "$2" = fork ]; then src="$3"; fi
if [ "$1" = exec ] && [ "$2" = resume ]; then src="$3"; fi
new='019a0000-0000-7000-8000-00000000c0de'
case "$FAKE_MODE" in
  success)
    printf '{"type":"thread.started","thread_id":"%s"}\n' "$new"
    printf '{"type":"turn.started"}\n'
    printf '{"type":"thread.started","thread_id":"not-the-first-one"}\n'
    printf '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ready"}}\n'
    printf '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}\n' ;;
  unknown) printf 'Error: thread %s not found\n' "$src" >&2; exit 1 ;;
  fail) echo 'error: stream disconnected' >&2; exit 1 ;;
  turn_failed)
    printf '{"type":"thread.started","thread_id":"%s"}\n' "$new"
    printf '{"type":"turn.failed","error":{"message":"usage limit reached"}}\n' ;;
  hang) echo 'reading thread' >&2; echo $$ > "$FAKE_PID"; exec sleep 30 ;;
  malformed) echo 'not json at all' ;;
  no_thread) printf '{"type":"turn.started"}\n' ;;
  source_id) printf '{"type":"thread.started","thread_id":"%s"}\n' "$src" ;;
  own)
    printf '{"type":"thread.started","thread_id":"%s"}\n' "$src"
    printf '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2}}\n' ;;
  *) echo "unknown FAKE_MODE $FAKE_MODE" >&2; exit 99 ;;
esac
"#;

/// The directory holding the fake executables, written once per test process. Every test
/// calls this before it spawns anything, so no child is forked while a fake is open for
/// writing (which would make executing it fail with "text file busy").
fn fakes() -> &'static Path {
    static FAKES: OnceLock<PathBuf> = OnceLock::new();
    FAKES.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rig_adapters_fakes");
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

/// One test's files: the seat's working directory, the argv log and the pid file.
struct Seat {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    log: PathBuf,
    pid: PathBuf,
}

impl Seat {
    fn new() -> Seat {
        fakes();
        let dir = tempfile::tempdir().expect("a temp dir");
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).expect("the seat's directory");
        let cwd = cwd.canonicalize().expect("canonical cwd");
        Seat { log: dir.path().join("argv.log"), pid: dir.path().join("fake.pid"), cwd, _dir: dir }
    }

    fn launch(&self, runtime: &str, mode: &str, timeout: Duration) -> SeatLaunch {
        let member: Member = serde_json::from_value(json!({
            "id": "reviewer-2",
            "runtime": runtime,
            "agent_ref": null,
            "profile": "reviewer",
            "cwd": "work",
            "prompt": PROMPT,
            "session_source": null,
        }))
        .expect("a member");
        SeatLaunch {
            rig: serde_json::from_value::<RigId>(json!("review-rig")).expect("a rig id"),
            member,
            cwd: self.cwd.clone(),
            prompt: PROMPT.to_owned(),
            timeout,
            env: vec![
                ("FAKE_MODE".to_owned(), mode.to_owned()),
                ("FAKE_LOG".to_owned(), self.log.display().to_string()),
                ("FAKE_PID".to_owned(), self.pid.display().to_string()),
            ],
            program: None,
            flags: Vec::new(),
        }
    }

    /// The fake's logged working directory and argv.
    fn called(&self) -> (String, Vec<String>) {
        let log = std::fs::read_to_string(&self.log).expect("the fake logged its call");
        let mut pwd = String::new();
        let mut args = Vec::new();
        for line in log.lines() {
            if let Some(dir) = line.strip_prefix("pwd=") {
                pwd = dir.to_owned();
            } else if let Some(arg) = line.strip_prefix("arg=") {
                args.push(arg.to_owned());
            }
        }
        (pwd, args)
    }

    /// Asserts the fake that hung wrote its pid, and that no process has it any more.
    fn assert_hung_fake_is_gone(&self) {
        let pid = std::fs::read_to_string(&self.pid).expect("the hung fake wrote its pid");
        let alive = std::process::Command::new("sh")
            .args(["-c", &format!("kill -0 {}", pid.trim())])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run kill -0");
        assert!(!alive.success(), "the hung fake (pid {}) still runs", pid.trim());
    }
}

fn source() -> NativeId {
    NativeId::from_token(SOURCE).expect("a source id")
}

fn claude() -> ClaudeCodeAdapter {
    ClaudeCodeAdapter::new(fakes().join("claude").display().to_string())
}

fn codex() -> CodexAdapter {
    CodexAdapter::new(fakes().join("codex").display().to_string())
}

fn assert_honest(text: &str) {
    let lower = text.to_lowercase();
    for word in ["resum", "restor", "snapshot"] {
        assert!(!lower.contains(word), "{word:?} in {text:?}");
    }
}

// ---- Restores and profile settings ----

#[tokio::test]
async fn a_claude_restore_continues_the_seats_own_session_with_its_profiles_flags() {
    let seat = Seat::new();
    let mut launch = seat.launch("claude-code", "own", FINISH_BOUND);
    launch.flags = vec!["--model".into(), "opus".into(), "--max-turns".into(), "2".into()];
    let own = NativeId::from_token("0199aaaa-own-session").expect("a token");
    let realized = claude().restore(&launch, &own).await.expect("the seat's own session continues");
    assert_eq!(realized.token, own);
    let (_, args) = seat.called();
    assert_eq!(
        args,
        [
            "-p",
            "--output-format",
            "json",
            "--model",
            "opus",
            "--max-turns",
            "2",
            "--resume",
            own.as_str(),
            "--",
            PROMPT
        ]
    );
    let usage = realized.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.cost_micros), (7, 3, Some(4200)));

    let seat = Seat::new();
    let refused = claude()
        .restore(&seat.launch("claude-code", "other_id", FINISH_BOUND), &own)
        .await
        .expect_err("another session is not the seat's");
    assert_eq!((refused.code(), refused.step().as_str()), ("token_changed", "restore_command"));
}

#[tokio::test]
async fn a_codex_restore_resumes_the_seats_own_thread_with_its_profiles_flags() {
    let seat = Seat::new();
    let mut launch = seat.launch("codex", "own", FINISH_BOUND);
    launch.flags = vec!["--sandbox".into(), "read-only".into()];
    let own = NativeId::from_token(CODEX_NEW).expect("a token");
    let realized = codex().restore(&launch, &own).await.expect("the seat's own thread continues");
    assert_eq!(realized.token, own);
    let (_, args) = seat.called();
    assert_eq!(args, ["exec", "resume", CODEX_NEW, "--json", "--sandbox", "read-only", "--", PROMPT]);
    let usage = realized.usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.cached_tokens, usage.output_tokens, usage.cost_micros),
        (10, 4, 2, None)
    );
}

#[tokio::test]
async fn a_profiles_program_and_flags_replace_the_defaults_on_a_fresh_start() {
    let seat = Seat::new();
    let mut launch = seat.launch("codex", "success", FINISH_BOUND);
    launch.program = Some(fakes().join("codex").display().to_string());
    launch.flags = vec!["--model".into(), "gpt-5".into()];
    let realized =
        CodexAdapter::new("no-such-codex-program").start(&launch).await.expect("the profile's program runs");
    let (_, args) = seat.called();
    assert_eq!(args, ["exec", "--json", "--model", "gpt-5", "--", PROMPT]);
    assert_eq!(realized.usage.map(|u| u.input_tokens), Some(10));
}

// ---- Claude Code ----

#[tokio::test]
async fn claude_fork_runs_the_fork_command_and_returns_the_new_session() {
    let seat = Seat::new();
    let realized = claude()
        .fork(&seat.launch("claude-code", "success", FINISH_BOUND), &source())
        .await
        .expect("the fork is realized");

    let (pwd, args) = seat.called();
    assert_eq!(Path::new(&pwd), seat.cwd);
    let new = realized.token.as_str().to_owned();
    assert_eq!(
        args,
        [
            "-p",
            "--output-format",
            "json",
            "--resume",
            SOURCE,
            "--fork-session",
            "--session-id",
            &new,
            "--",
            PROMPT
        ]
    );
    assert_ne!(realized.token, source());
    assert!(uuid::Uuid::parse_str(&new).is_ok(), "{new} is a uuid");
    assert_eq!(realized.detail["session_id_matches_request"], json!(true));
    assert_eq!(realized.detail["result"]["subtype"], json!("success"));
    let summary = realized.detail["summary"].as_str().expect("a summary");
    assert!(summary.starts_with(&format!("forked from source session {SOURCE}")));
    assert_honest(summary);
}

#[tokio::test]
async fn claude_start_runs_a_fresh_session_with_a_chosen_id() {
    let seat = Seat::new();
    let realized =
        claude().start(&seat.launch("claude-code", "success", FINISH_BOUND)).await.expect("the seat starts");
    let (_, args) = seat.called();
    let new = realized.token.as_str();
    assert_eq!(args, ["-p", "--output-format", "json", "--session-id", new, "--", PROMPT]);
    assert!(!args.iter().any(|arg| arg == "--fork-session"));
}

#[tokio::test]
async fn claude_reporting_another_session_id_is_recorded_and_said() {
    let seat = Seat::new();
    let realized = claude()
        .fork(&seat.launch("claude-code", "other_id", FINISH_BOUND), &source())
        .await
        .expect("the fork is realized");
    assert_eq!(realized.token.as_str(), "claude-chose-this-id");
    assert_eq!(realized.detail["session_id_matches_request"], json!(false));
    let (_, args) = seat.called();
    let requested = &args[args.iter().position(|a| a == "--session-id").expect("--session-id") + 1];
    assert_eq!(realized.detail["requested_session_id"], json!(requested));
    let note = realized.detail["note"].as_str().expect("a note");
    assert!(note.contains("claude-chose-this-id") && note.contains(requested.as_str()));
}

#[tokio::test]
async fn claude_unknown_source_fails_at_resolve_naming_runtime_and_id() {
    for mode in ["unknown", "unknown_json"] {
        let seat = Seat::new();
        let error = claude()
            .fork(&seat.launch("claude-code", mode, FINISH_BOUND), &source())
            .await
            .expect_err("an unknown source is refused");
        assert_eq!(error.step(), Step::Resolve, "{mode}: {error}");
        assert_eq!(error.code(), "source_not_found");
        let message = error.to_string();
        assert!(message.contains("claude-code") && message.contains(SOURCE), "{message}");
        assert!(message.contains("no fresh seat was launched"), "{message}");
        assert_honest(&message);
    }
}

#[tokio::test]
async fn claude_failure_keeps_stderr_at_fork_command() {
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "fail", FINISH_BOUND), &source())
        .await
        .expect_err("a failing command fails");
    assert_eq!(error.step(), Step::ForkCommand);
    assert_eq!(error.code(), "command_failed");
    assert_eq!(error.stderr(), Some("boom: API overloaded\n"));
    assert!(matches!(error, AdapterError::Command { status: 2, .. }));
    assert_honest(&error.to_string());
}

#[tokio::test]
async fn claude_outcome_is_read_from_the_result_not_the_exit_code() {
    // Exit 0 with an error result is a failure, with the result's account kept.
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "error_result", FINISH_BOUND), &source())
        .await
        .expect_err("an error result fails");
    assert_eq!(error.step(), Step::ForkCommand);
    assert_eq!(error.reported(), Some("error_max_turns"));
    assert_eq!(error.stderr(), Some("max turns reached\n"));

    // A success result with a non-zero exit is not trusted either.
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "success_exit_1", FINISH_BOUND), &source())
        .await
        .expect_err("a non-zero exit fails");
    assert_eq!(error.code(), "command_failed");
}

#[tokio::test]
async fn claude_malformed_output_keeps_an_excerpt() {
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "malformed", FINISH_BOUND), &source())
        .await
        .expect_err("unreadable output fails");
    assert_eq!(error.step(), Step::MalformedOutput);
    match error {
        AdapterError::MalformedOutput { excerpt, .. } => assert_eq!(excerpt, "this is not json\n"),
        other => panic!("expected malformed output, got {other:?}"),
    }
}

#[tokio::test]
async fn claude_returning_the_source_id_is_never_a_new_seat() {
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "source_id", FINISH_BOUND), &source())
        .await
        .expect_err("the source's own id is refused");
    assert_eq!(error.code(), "source_token_returned");
    assert_eq!(error.step(), Step::ForkCommand);
}

#[tokio::test]
async fn claude_hang_is_killed_at_the_timeout_keeping_stderr() {
    let seat = Seat::new();
    let error = claude()
        .fork(&seat.launch("claude-code", "hang", HANG_BOUND), &source())
        .await
        .expect_err("a hang times out");
    assert_eq!(error.step(), Step::Timeout);
    assert_eq!(error.code(), "timed_out");
    assert_eq!(error.stderr(), Some("loading source conversation\n"));
    seat.assert_hung_fake_is_gone();
}

#[tokio::test]
async fn claude_default_program_is_found_on_the_seat_path() {
    let seat = Seat::new();
    let mut launch = seat.launch("claude-code", "success", FINISH_BOUND);
    let path = format!("{}:{}", fakes().display(), std::env::var("PATH").unwrap_or_default());
    launch.env.push(("PATH".to_owned(), path));
    let adapter = ClaudeCodeAdapter::default();
    assert_eq!(adapter.program, "claude");
    let realized = adapter.start(&launch).await.expect("the fake on PATH runs");
    assert_ne!(realized.token, source());
}

#[tokio::test]
async fn a_missing_runtime_program_is_named() {
    let seat = Seat::new();
    let adapter = ClaudeCodeAdapter::new("/nonexistent/bin/claude");
    let error = adapter
        .fork(&seat.launch("claude-code", "success", FINISH_BOUND), &source())
        .await
        .expect_err("no program, no seat");
    assert_eq!(error.code(), "runtime_not_found");
    assert_eq!(error.step(), Step::ForkCommand);
    assert!(error.to_string().contains("/nonexistent/bin/claude"));
}

// ---- Codex ----

#[tokio::test]
async fn codex_fork_runs_exec_fork_and_reads_the_first_thread_started() {
    let seat = Seat::new();
    let realized = codex()
        .fork(&seat.launch("codex", "success", FINISH_BOUND), &source())
        .await
        .expect("the fork is realized");
    let (pwd, args) = seat.called();
    assert_eq!(Path::new(&pwd), seat.cwd);
    assert_eq!(args, ["exec", "fork", SOURCE, "--json", "--", PROMPT]);
    assert_eq!(realized.token.as_str(), CODEX_NEW);
    assert_ne!(realized.token, source());
    assert_eq!(realized.detail["events"], json!(5));
    assert_eq!(realized.detail["last_event"]["type"], json!("turn.completed"));
    let summary = realized.detail["summary"].as_str().expect("a summary");
    assert!(summary.starts_with(&format!("forked from source session {SOURCE}")));
    assert_honest(summary);
}

#[tokio::test]
async fn codex_start_runs_exec_without_a_source() {
    let seat = Seat::new();
    let realized =
        codex().start(&seat.launch("codex", "success", FINISH_BOUND)).await.expect("the seat starts");
    let (_, args) = seat.called();
    assert_eq!(args, ["exec", "--json", "--", PROMPT]);
    assert_eq!(realized.token.as_str(), CODEX_NEW);
}

#[tokio::test]
async fn codex_unknown_source_fails_at_resolve() {
    let seat = Seat::new();
    let error = codex()
        .fork(&seat.launch("codex", "unknown", FINISH_BOUND), &source())
        .await
        .expect_err("an unknown source is refused");
    assert_eq!(error.step(), Step::Resolve);
    let message = error.to_string();
    assert!(message.contains("codex") && message.contains(SOURCE), "{message}");
    assert!(message.contains("no fresh seat was launched"), "{message}");
    assert_eq!(error.stderr(), Some(format!("Error: thread {SOURCE} not found\n").as_str()));
}

#[tokio::test]
async fn codex_failures_keep_what_the_runtime_said() {
    let seat = Seat::new();
    let error = codex()
        .fork(&seat.launch("codex", "fail", FINISH_BOUND), &source())
        .await
        .expect_err("a failing command fails");
    assert_eq!(error.step(), Step::ForkCommand);
    assert_eq!(error.stderr(), Some("error: stream disconnected\n"));

    let seat = Seat::new();
    let error = codex()
        .start(&seat.launch("codex", "turn_failed", FINISH_BOUND))
        .await
        .expect_err("a failed turn fails, even with exit status 0");
    assert_eq!(error.step(), Step::StartCommand);
    assert_eq!(error.reported(), Some("usage limit reached"));
}

#[tokio::test]
async fn codex_unreadable_events_are_malformed_output() {
    for mode in ["malformed", "no_thread"] {
        let seat = Seat::new();
        let error = codex()
            .fork(&seat.launch("codex", mode, FINISH_BOUND), &source())
            .await
            .expect_err("unreadable output fails");
        assert_eq!(error.step(), Step::MalformedOutput, "{mode}: {error}");
        assert_eq!(error.code(), "malformed_output");
    }
}

#[tokio::test]
async fn codex_returning_the_source_id_is_never_a_new_seat() {
    let seat = Seat::new();
    let error = codex()
        .fork(&seat.launch("codex", "source_id", FINISH_BOUND), &source())
        .await
        .expect_err("the source's own id is refused");
    assert_eq!(error.code(), "source_token_returned");
}

#[tokio::test]
async fn codex_hang_is_killed_at_the_timeout_keeping_stderr() {
    let seat = Seat::new();
    let error = codex()
        .fork(&seat.launch("codex", "hang", HANG_BOUND), &source())
        .await
        .expect_err("a hang times out");
    assert_eq!(error.step(), Step::Timeout);
    assert_eq!(error.stderr(), Some("reading thread\n"));
    assert_honest(&error.to_string());
    seat.assert_hung_fake_is_gone();
}

// ---- Terminal ----

#[tokio::test]
async fn terminal_start_records_a_seat_without_a_conversation() {
    let seat = Seat::new();
    let adapter = TerminalAdapter;
    assert_eq!(adapter.runtime(), SeatRuntime::Terminal);
    let realized = adapter
        .start(&seat.launch("terminal", "success", FINISH_BOUND))
        .await
        .expect("a terminal seat is recorded");
    assert_eq!(realized.token.as_str(), "terminal:review-rig.reviewer-2");
    assert_eq!(realized.detail["conversation"], json!(null));
    assert!(!seat.log.exists(), "no command ran");
}

#[tokio::test]
async fn terminal_fork_is_refused_as_an_unsupported_source() {
    let seat = Seat::new();
    let error = TerminalAdapter
        .fork(&seat.launch("terminal", "success", FINISH_BOUND), &source())
        .await
        .expect_err("a terminal has no conversation to fork");
    assert_eq!(error.step(), Step::UnsupportedSource);
    assert_eq!(error.code(), "unsupported_source");
    assert_honest(&error.to_string());
}

// ---- The command wrapper ----

fn sh(script: &str, cwd: &Path, timeout: Duration) -> SeatCommand {
    SeatCommand {
        program: "sh".to_owned(),
        args: vec!["-c".to_owned(), script.to_owned()],
        cwd: cwd.to_path_buf(),
        env: vec![("SEAT_VAR".to_owned(), "from the seat".to_owned())],
        timeout,
    }
}

#[tokio::test]
async fn run_sets_cwd_and_env_and_keeps_the_inherited_environment() {
    let seat = Seat::new();
    let output = run(&sh(
        r#"printf '%s|%s|' "$SEAT_VAR" "$(pwd)"; test -n "$PATH" && echo path; echo err >&2; exit 3"#,
        &seat.cwd,
        FINISH_BOUND,
    ))
    .await
    .expect("the command runs");
    assert_eq!(output.stdout, format!("from the seat|{}|path\n", seat.cwd.display()));
    assert_eq!(output.stderr, "err\n");
    assert_eq!(output.status, 3);
    assert!(!output.succeeded());
}

#[tokio::test]
async fn run_reports_a_signal_as_128_plus_its_number() {
    let seat = Seat::new();
    let output = run(&sh("kill -TERM $$", &seat.cwd, FINISH_BOUND)).await.expect("the command runs");
    assert_eq!(output.status, 128 + 15);
}

#[tokio::test]
async fn run_cuts_output_past_the_limit_with_a_marker() {
    let seat = Seat::new();
    let limit = agentvisor::rig::adapter::limits::OUTPUT_BYTES_MAX;
    let script = format!("head -c {} /dev/zero", limit + 10);
    let output = run(&sh(&script, &seat.cwd, FINISH_BOUND)).await.expect("the command runs");
    assert!(output.stdout.starts_with('\0'));
    assert!(output.stdout.ends_with(&format!("\n[output cut: 10 more bytes past the {limit}-byte limit]")));
}

#[tokio::test]
async fn run_refuses_what_it_cannot_start() {
    let seat = Seat::new();
    let missing = run(&SeatCommand {
        program: "agentvisor-no-such-program".to_owned(),
        ..sh("true", &seat.cwd, FINISH_BOUND)
    })
    .await;
    assert!(matches!(missing, Err(CommandError::NotFound { .. })), "{missing:?}");

    let no_dir = run(&sh("true", &seat.cwd.join("absent"), FINISH_BOUND)).await;
    assert!(matches!(no_dir, Err(CommandError::CwdMissing { .. })), "{no_dir:?}");

    let long = "x".repeat(agentvisor::rig::adapter::limits::ARGUMENT_BYTES_MAX + 1);
    let too_long = run(&sh(&long, &seat.cwd, FINISH_BOUND)).await;
    assert!(matches!(too_long, Err(CommandError::ArgumentTooLong { index: 1, .. })), "{too_long:?}");
}

#[tokio::test]
async fn run_bounds_a_grandchild_holding_the_pipes_open() {
    // The shell exits at once, but the background `sleep` keeps stdout and stderr open: the
    // command is not finished until its timeout, and the drain after the kill is bounded too.
    let seat = Seat::new();
    let script = format!("echo early >&2; sleep 30 & echo $! > '{}'; exit 0", seat.pid.display());
    let error = run(&sh(&script, &seat.cwd, HANG_BOUND))
        .await
        .expect_err("the open pipes hold the command to its timeout");
    // The grandchild is ours to clean up: the wrapper kills only its own child.
    let pid = std::fs::read_to_string(&seat.pid).expect("the grandchild's pid");
    let _ = std::process::Command::new("sh").args(["-c", &format!("kill {}", pid.trim())]).status();
    match error {
        CommandError::TimedOut { stderr_so_far, .. } => assert_eq!(stderr_so_far, "early\n"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}
