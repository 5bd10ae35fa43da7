//! The control socket of a live owner: the typed client, host actions, blocking calls,
//! permissions, and a stale socket left by a killed owner; and, for a state kept in PostgreSQL,
//! the same host actions through the database.

mod mcp_support;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use agentvisor::actors::Pid;
use agentvisor::actors::kernel::status::SignalKind;
use agentvisor::actors::runtime::Runtime;
use agentvisor::control::{ControlClient, ControlError, socket_path};
use mcp_support::{http_server, within};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

async fn client(dir: &Path) -> ControlClient {
    within("connect", ControlClient::connect(dir)).await.expect("connect").expect("a live owner listens")
}

/// Runs `agentvisor --state STATE ARGS…`: whether it succeeded, its stdout and its stderr.
fn agentvisor(state: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .expect("run agentvisor");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pid(value: &Value) -> Pid {
    value["pid"].as_str().expect("pid").parse().expect("a pid")
}

#[tokio::test]
async fn the_owner_serves_tools_and_host_actions_on_an_owner_only_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = http_server(dir.path(), &["--grant", "process:spawn=x"]).await;
    let path = socket_path(dir.path());
    let mode = std::fs::metadata(&path).expect("the socket exists").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is owner-only");
    let c = client(dir.path()).await;
    let root: Pid = server.pid.parse().expect("pid");
    let tools = c.list_tools(root).await.expect("list_tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let schemas = agentvisor::tools::tool_schemas();
    let expected: Vec<&str> = schemas.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, expected);
    let spawned =
        c.call(root, "spawn_child_process", json!({"goal": "controlled"}), None).await.expect("call");
    let child = pid(&spawned);
    // Host actions on any process.
    let paused = c.signal(child, SignalKind::Pause, Some("look".into())).await.expect("pause");
    assert_eq!(paused["status"], "paused");
    let resumed = c.signal(child, SignalKind::Resume, None).await.expect("resume");
    assert_eq!(resumed["status"], "running");
    let gated = c.gate(child, "hold for review").await.expect("gate");
    assert_eq!(gated["host_gate"], "hold for review");
    let ungated = c.ungate(child).await.expect("ungate");
    assert_eq!(ungated["host_gate"], Value::Null);
    let resumed = c.signal(child, SignalKind::Resume, None).await.expect("resume after ungate");
    assert_eq!(resumed["status"], "running");
    // A blocking wait over the socket, answered when the child exits.
    let (sink, mut progress) = tokio::sync::mpsc::channel(16);
    let waiter = c.clone();
    let wait = tokio::spawn(async move {
        waiter.call(root, "wait_child_process", json!({"child_pid": child}), Some(&sink)).await
    });
    let note = within("progress over the socket", progress.recv()).await.expect("a progress line");
    assert!(note.message.contains("waiting_event"), "{note:?}");
    let exited = c.call(child, "process_exit", json!({"payload": 7}), None).await.expect("exit");
    assert_eq!(exited["status"], "exited");
    let waited = within("the wait", wait).await.expect("task").expect("wait");
    assert_eq!(waited["status"], "exited");
    // Revoking the root's spawn grant takes its authority away.
    let view = Runtime::open_read_only(dir.path(), Default::default()).expect("read-only view");
    let grant = view
        .grants_of(root)
        .expect("grants")
        .into_iter()
        .find(|g| g.resource == "process:spawn")
        .expect("a spawn grant");
    drop(view);
    let revoked = c.revoke(grant.id).await.expect("revoke");
    assert_eq!(revoked["revoked"][0]["holder"], json!(root));
    let refused =
        c.call(root, "spawn_child_process", json!({"goal": "no longer allowed"}), None).await.expect("call");
    assert!(refused.get("error").is_some(), "{refused}");
    // A refused host action is a typed error.
    match c.signal(child, SignalKind::Pause, None).await {
        Err(ControlError::Refused(e)) => assert!(!e.code.is_empty()),
        other => panic!("a signal to an ended process should be refused, got {other:?}"),
    }
    // A malformed request gets an error line; the connection keeps serving.
    let stream = tokio::net::UnixStream::connect(&path).await.expect("connect");
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"{\"op\":\"explode\"}\n").await.expect("write");
    let line = within("an error line", lines.next_line()).await.expect("read").expect("a line");
    let error: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(error["error"]["code"], "invalid_request", "{error}");
    write.write_all(format!("{{\"op\":\"process\",\"pid\":\"{root}\"}}\n").as_bytes()).await.expect("write");
    let line = within("a result line", lines.next_line()).await.expect("read").expect("a line");
    let row: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(row["result"]["pid"], json!(root), "{row}");
    server.terminate().await;
    assert!(!path.exists(), "a clean exit removes the socket");
    assert!(within("connect", ControlClient::connect(dir.path())).await.expect("connect").is_none());
}

#[tokio::test]
async fn a_killed_owners_stale_socket_is_replaced_and_as_continues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = http_server(dir.path(), &["--grant", "process:spawn=x"]).await;
    let root = server.pid.clone();
    let c = client(dir.path()).await;
    let child = pid(&c
        .call(root.parse().expect("pid"), "spawn_child_process", json!({"goal": "survive"}), None)
        .await
        .expect("spawn"));
    // The child's actor starts it right after the launch commits; kill the owner once it runs.
    within("the child's start", async {
        while c.process(child).await.expect("process").is_some_and(|row| row.status.to_string() == "runnable")
        {
            tokio::task::yield_now().await;
        }
    })
    .await;
    server.kill().await;
    let path = socket_path(dir.path());
    assert!(path.exists(), "SIGKILL leaves the socket file behind");
    assert!(
        within("connect", ControlClient::connect(dir.path())).await.expect("connect").is_none(),
        "a stale socket is not a live owner"
    );
    // A new owner, acting as the same root, recovers the directory and replaces the socket.
    let again = http_server(dir.path(), &["--as", &root]).await;
    assert!(again.banner.contains("owning"), "{}", again.banner);
    let c = client(dir.path()).await;
    let row = c.process(child).await.expect("process").expect("a row");
    assert_eq!(row.status.to_string(), "paused", "the lost execution was paused, not replayed");
    // Attaching a session to the host-driven child resumes it.
    let row = c.attach(child).await.expect("attach");
    assert_eq!(row.status.to_string(), "running");
    let exited = c.call(child, "process_exit", json!({}), None).await.expect("exit");
    assert_eq!(exited["status"], "exited");
    let listed = c
        .call(root.parse().expect("pid"), "list_child_processes", json!({"include_terminal": true}), None)
        .await
        .expect("list");
    assert_eq!(listed["children"][0]["status"], "exited");
    again.terminate().await;
}

/// Pauses `child` through `cli`, gates it, sees a resume refused, ungates and resumes it,
/// checking each step on the owner through `c`.
async fn pause_gate_and_resume(
    c: &ControlClient,
    child: Pid,
    cli: impl Fn(&[&str]) -> (bool, String, String),
) {
    let child_text = child.to_string();
    let (ok, stdout, stderr) = cli(&["signal", &child_text, "pause", "--reason", "look"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("through the live runtime") && stdout.contains("paused"), "{stdout}");
    assert_eq!(c.process(child).await.expect("process").expect("row").status.as_str(), "paused");
    let (ok, stdout, stderr) = cli(&["gate", &child_text, "--reason", "review"]);
    assert!(ok, "{stdout}{stderr}");
    let (ok, _, stderr) = cli(&["signal", &child_text, "resume"]);
    assert!(!ok, "a gated process does not resume");
    assert!(stderr.contains("refused"), "{stderr}");
    let (ok, stdout, stderr) = cli(&["ungate", &child_text]);
    assert!(ok, "{stdout}{stderr}");
    let (ok, stdout, stderr) = cli(&["signal", &child_text, "resume"]);
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(c.process(child).await.expect("process").expect("row").status.as_str(), "running");
}

/// `agentvisor signal`, `gate` and `ungate` beside a live owner go through its control socket:
/// never refused for the lock, never a second owner.
#[tokio::test]
async fn host_action_commands_reach_a_live_owner_through_its_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = http_server(dir.path(), &["--grant", "process:spawn=x"]).await;
    let c = client(dir.path()).await;
    let root: Pid = server.pid.parse().expect("pid");
    let spawned =
        c.call(root, "spawn_child_process", json!({"goal": "controlled"}), None).await.expect("call");
    let child = pid(&spawned);
    let cli = |args: &[&str]| agentvisor(dir.path(), args);
    pause_gate_and_resume(&c, child, cli).await;
    server.terminate().await;
}

/// With the state in PostgreSQL, the same host actions sent from another state directory
/// (another machine, as far as the owner can tell) reach the live owner through the database:
/// a request row and `NOTIFY` there, the answer written back.
#[tokio::test]
async fn with_postgres_host_actions_from_elsewhere_reach_the_owner_through_the_database() {
    let Some(url) = pg_server::fresh_database() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let server = http_server(dir.path(), &["--store", &url, "--grant", "process:spawn=x"]).await;
    let c = client(dir.path()).await;
    let root: Pid = server.pid.parse().expect("pid");
    let spawned =
        c.call(root, "spawn_child_process", json!({"goal": "controlled"}), None).await.expect("call");
    let child = pid(&spawned);
    let cli = |args: &[&str]| agentvisor(elsewhere.path(), &[&["--store", url.as_str()], args].concat());
    pause_gate_and_resume(&c, child, cli).await;
    // Nothing of the owner's was created in the other directory; every action went through
    // the database and was answered there.
    assert!(!agentvisor::control::socket_path(elsewhere.path()).exists());
    let (asked, answered) = std::thread::spawn({
        let url = url.clone();
        move || {
            let mut db = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            let row = db
                .query_one("SELECT count(*), count(answer) FROM host_requests", &[])
                .expect("the request table");
            (row.get::<_, i64>(0), row.get::<_, i64>(1))
        }
    })
    .join()
    .expect("count the requests");
    assert_eq!((asked, answered), (5, 5));
    server.terminate().await;
}
