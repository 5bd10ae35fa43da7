//! `agentvisor mcp` over stdio, driven by a real MCP client (rmcp) against the real binary.

mod mcp_support;

use mcp_support::{mcp_command, stdio, within};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SPAWN: &[&str] = &["--grant", "process:spawn=x"];

#[tokio::test]
async fn tools_list_is_exactly_the_kernel_tool_surface() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = stdio(dir.path(), &[]).await;
    let listed = within("tools/list", session.service.list_all_tools()).await.expect("tools/list");
    let expected = agentvisor::tools::tool_schemas();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    let expected_names: Vec<&str> = expected.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, expected_names);
    for (tool, schema) in listed.iter().zip(&expected) {
        assert_eq!(
            tool.description.as_deref(),
            Some(schema.description.as_str()),
            "{}'s description",
            schema.name
        );
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            schema.parameters,
            "{}'s input schema",
            schema.name
        );
    }
    session.close().await;
}

#[tokio::test]
async fn every_kernel_tool_answers_with_its_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = stdio(dir.path(), &["--grant", "process:spawn=x", "--goal", "exercise every tool"]).await;
    let spawned = s.ok("spawn_child_process", json!({"goal": "a spawned child"})).await;
    let child = spawned["pid"].as_str().expect("a child pid").to_string();
    assert_eq!(spawned["status"], "runnable");
    let forked = s.ok("fork_child_process", json!({"goal": "a forked child", "root_oids": []})).await;
    let fork = forked["pid"].as_str().expect("a fork pid").to_string();
    let listed = s.ok("list_child_processes", json!({})).await;
    let pids: BTreeSet<&str> =
        listed["children"].as_array().expect("children").iter().filter_map(|c| c["pid"].as_str()).collect();
    assert_eq!(pids, [child.as_str(), fork.as_str()].into_iter().collect());
    let waited = s.ok("wait_child_process", json!({"child_pid": child, "block": false})).await;
    assert_eq!(waited["ready"], false);
    let killed = s
        .ok(
            "signal_child_process",
            json!({"child_pid": fork, "signal": "terminate", "reason": "done with it"}),
        )
        .await;
    assert_eq!(killed["status"], "killed");
    let merged = s.ok("merge_child_memory", json!({"child_pid": fork})).await;
    assert!(merged.get("merged_oids").is_some(), "{merged}");
    let created = s.ok("create_object", json!({"name": "notes", "payload": {"n": 1}})).await;
    assert!(created.get("oid").is_some(), "{created}");
    let read = s.ok("read_object", json!({"name": "notes"})).await;
    assert_eq!(read["payload"], json!({"n": 1}));
    s.ok("write_object", json!({"name": "notes", "payload": {"n": 2}})).await;
    assert_eq!(s.ok("read_object", json!({"name": "notes"})).await["payload"], json!({"n": 2}));
    let objects = s.ok("list_objects", json!({})).await;
    assert!(objects.to_string().contains("notes"), "{objects}");
    s.ok("checkpoint_object", json!({"name": "notes"})).await;
    s.ok("delegate_object", json!({"name": "notes", "to": child, "rights": ["read"]})).await;
    s.ok("load_skills", json!({"skills": [{"name": "children", "allowed_tools": ["list_child_processes"]}]}))
        .await;
    let sent =
        s.ok("send_process_message", json!({"to": s.pid, "body": "a note to self", "channel": "self"})).await;
    let message_id = sent["message_id"].as_str().expect("a message id").to_string();
    let read = s.ok("read_process_messages", json!({"channel": "self", "ack": false})).await;
    assert!(read.to_string().contains(&message_id), "{read}");
    let received = s.ok("receive_process_messages", json!({"channel": "self", "block": false})).await;
    assert!(received.to_string().contains(&message_id), "{received}");
    let exited = s.ok("process_exit", json!({"payload": {"done": true}})).await;
    assert_eq!(exited["status"], "exited");
    // The process has ended: a later call answers the kernel's refusal.
    let code = s.refused("list_child_processes", json!({})).await;
    assert!(!code.is_empty());
    s.close().await;
}

#[tokio::test]
async fn a_refused_call_is_an_error_result_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = stdio(dir.path(), &[]).await; // no process:spawn grant
    let code = s.refused("spawn_child_process", json!({"goal": "not allowed"})).await;
    assert!(code.contains("spawn") || code.contains("capability"), "unexpected refusal code {code}");
    assert_eq!(s.refused("no_such_tool", json!({})).await, "unknown_tool");
    assert_eq!(s.refused("wait_child_process", json!({"child_pid": "x"})).await, "invalid_arguments");
    let listed = s.ok("list_child_processes", json!({"include_terminal": true})).await;
    assert_eq!(listed["children"], json!([]));
    s.close().await;
}

/// The first session owns the directory; the second attaches through its control socket as
/// the child, and ends it while the first blocks on a wait for it.
#[tokio::test]
async fn a_blocking_wait_answers_when_the_child_exits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = stdio(dir.path(), SPAWN).await;
    assert!(parent.banner.contains("owning"), "{}", parent.banner);
    let child = parent.ok("spawn_child_process", json!({"goal": "exit when told"})).await["pid"]
        .as_str()
        .expect("pid")
        .to_string();
    let child_session = stdio(dir.path(), &["--as", &child]).await;
    assert!(child_session.banner.contains("attached to the owner"), "{}", child_session.banner);
    assert_eq!(child_session.pid, child);
    let wait = parent.spawn_call("wait_child_process", json!({"child_pid": child}));
    // The parent reports that it suspended before the child is told to end.
    let progress = parent.next_progress().await;
    assert!(progress.message.as_deref().unwrap_or("").contains("waiting_event"), "{progress:?}");
    assert!(!wait.is_finished());
    child_session.ok("process_exit", json!({"payload": {"answer": 42}})).await;
    let (answer, is_error) = within("the wait's answer", wait).await.expect("the wait task");
    assert!(!is_error, "{answer}");
    assert_eq!(answer["ready"], true);
    assert_eq!(answer["status"], "exited");
    assert_eq!(answer["suspended"], true);
    let oid = answer["result_oid"].as_str().expect("a result oid");
    assert_eq!(parent.ok("read_object", json!({"oid": oid})).await["payload"], json!({"answer": 42}));
    child_session.close().await;
    parent.close().await;
}

/// A client that goes away mid-wait leaves the wait as the kernel keeps it; a new session
/// `--as` the waiter, after the child ends, gets the answer by waiting again.
#[tokio::test]
async fn a_disconnect_mid_wait_leaves_the_saved_wait_and_as_continues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = stdio(dir.path(), SPAWN).await;
    let parent_pid = parent.pid.clone();
    let child = parent.ok("spawn_child_process", json!({"goal": "outlive a disconnect"})).await["pid"]
        .as_str()
        .expect("pid")
        .to_string();
    let wait = parent.spawn_call("wait_child_process", json!({"child_pid": child}));
    parent.next_progress().await; // suspended
    parent.close().await; // stdin closes: the owner shuts down cleanly
    let _ = wait.await;
    // Read the rows the closed owner left.
    let rt = agentvisor::actors::runtime::Runtime::open_read_only(dir.path(), Default::default())
        .expect("read-only view");
    let row = |pid: &str| rt.process(pid.parse().expect("pid")).expect("read").expect("row");
    assert_eq!(row(&parent_pid).status.to_string(), "waiting_event");
    assert!(row(&parent_pid).wait_state.is_some());
    drop(rt);
    // Reconnect as the parent (it owns the directory now), and as the child (attached).
    let parent = stdio(dir.path(), &["--as", &parent_pid]).await;
    assert!(parent.banner.contains("owning"), "{}", parent.banner);
    let child_session = stdio(dir.path(), &["--as", &child]).await;
    // The parent's call is held while its saved wait is pending.
    let again = parent.spawn_call("wait_child_process", json!({"child_pid": child}));
    let held = parent.next_progress().await;
    assert!(held.message.as_deref().unwrap_or("").contains("runs once that completes"), "{held:?}");
    // The child was paused by the shutdown; attaching resumed it, so it can exit.
    child_session.ok("process_exit", json!({"payload": "after the reconnect"})).await;
    let (answer, is_error) = within("the second wait", again).await.expect("task");
    assert!(!is_error, "{answer}");
    assert_eq!(answer["status"], "exited");
    assert_eq!(answer["ready"], true);
    parent.ok("list_child_processes", json!({})).await;
    child_session.close().await;
    parent.close().await;
}

#[tokio::test]
async fn as_refuses_unknown_and_terminal_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = stdio(dir.path(), &[]).await;
    let pid = s.pid.clone();
    s.ok("process_exit", json!({})).await;
    s.close().await;
    for (pid, expect) in
        [(pid.as_str(), "process_terminal"), ("01a23356-5d48-7057-bda6-ffdfae73a2d1", "unknown_process")]
    {
        let out = within("mcp --as", mcp_command(dir.path(), &["--as", pid]).stdin(Stdio::null()).output())
            .await
            .expect("run");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expect), "{stderr}");
    }
    let out = within("mcp --as x", mcp_command(dir.path(), &["--as", "x"]).output()).await.expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out =
        within("mcp --as with --goal", mcp_command(dir.path(), &["--as", &pid, "--goal", "g"]).output())
            .await
            .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn as_is_refused_to_a_user_who_does_not_own_the_state_directory() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let s = stdio(dir.path(), &[]).await;
    let pid = s.pid.clone();
    s.close().await;
    let me = std::fs::metadata(dir.path()).expect("meta").uid();
    // Hand the directory to another user (possible when the tests run as root), or take
    // one that belongs to another user already.
    let other = me + 4242;
    if std::os::unix::fs::chown(dir.path(), Some(other), None).is_err() {
        eprintln!("cannot chown the state directory as uid {me}: the check is exercised with root only");
        return;
    }
    let out = within("mcp --as", mcp_command(dir.path(), &["--as", &pid]).stdin(Stdio::null()).output())
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("only the user who owns a state directory"), "{stderr}");
    std::os::unix::fs::chown(dir.path(), Some(me), None).expect("chown back");
}

/// Raw bytes on stdin: a line that is not JSON gets a JSON-RPC parse error, JSON of the
/// wrong shape an invalid-request error, and the server keeps serving.
#[tokio::test]
async fn malformed_json_rpc_gets_an_error_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mcp_command(dir.path(), &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = async |line: &str| {
        stdin.write_all(format!("{line}\n").as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
    };
    send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await;
    let mut next = async || -> Value {
        let line = within("a line on stdout", stdout.next_line())
            .await
            .expect("read")
            .expect("the server closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    };
    assert_eq!(next().await["id"], 1);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    send("{this is not json").await;
    let error = next().await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    send("\u{1}\u{2}garbage\u{ff}").await;
    assert_eq!(next().await["error"]["code"], -32700);
    send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"not an object"}"#).await;
    let error = next().await;
    assert!(error.get("error").is_some(), "{error}");
    send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#).await;
    let listed = next().await;
    assert_eq!(listed["id"], 8, "{listed}");
    assert_eq!(
        listed["result"]["tools"].as_array().map(Vec::len),
        Some(agentvisor::tools::tool_schemas().len())
    );
    send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_child_processes","arguments":{"include_terminal":true}}}"#).await;
    let answer = next().await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["structuredContent"]["children"], json!([]), "nothing changed: {answer}");
    drop(stdin);
    let status = within("the server's exit after stdin closes", child.wait()).await.expect("wait");
    assert!(status.success(), "{status}");
}
