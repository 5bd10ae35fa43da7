//! `agentvisor mcp --http`: streamable HTTP on loopback, driven by rmcp's HTTP client.

mod mcp_support;

use mcp_support::{http, http_server, install_tls, mcp_command, stdio, within};
use serde_json::{Value, json};

#[tokio::test]
async fn http_serves_the_kernel_tools_and_survives_a_client_disconnect() {
    install_tls();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = http_server(dir.path(), &["--grant", "process:spawn=x"]).await;
    assert!(server.banner.contains("owning"), "{}", server.banner);
    let first = http(&server.url, &server.pid).await;
    let listed = within("tools/list", first.service.list_all_tools()).await.expect("tools/list");
    let expected = agentvisor::tools::tool_schemas();
    assert_eq!(listed.len(), expected.len());
    for (tool, schema) in listed.iter().zip(&expected) {
        assert_eq!(tool.name, schema.name);
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            schema.parameters,
            "{}'s schema",
            schema.name
        );
    }
    let child = first.ok("spawn_child_process", json!({"goal": "a child over HTTP"})).await["pid"]
        .as_str()
        .expect("pid")
        .to_string();
    // A blocking wait, then the client goes away without a word.
    let wait = first.spawn_call("wait_child_process", json!({"child_pid": child}));
    let progress = first.next_progress().await;
    assert!(progress.message.as_deref().unwrap_or("").contains("waiting_event"), "{progress:?}");
    wait.abort();
    drop(first);
    // The server survives; a new client continues as the same process. The process is still
    // blocked on its saved wait, so the kernel refuses other calls, and a wait rejoins it.
    let second = http(&server.url, &server.pid).await;
    assert_eq!(second.refused("list_child_processes", json!({})).await, "not_running");
    let rejoined = second.spawn_call("wait_child_process", json!({"child_pid": child}));
    let held = second.next_progress().await;
    assert!(held.message.as_deref().unwrap_or("").contains("runs once that completes"), "{held:?}");
    // A stdio session attaches to the HTTP owner through its control socket, as the child.
    let as_child = stdio(dir.path(), &["--as", &child]).await;
    assert!(as_child.banner.contains("attached to the owner"), "{}", as_child.banner);
    as_child.ok("process_exit", json!({"payload": "done"})).await;
    let (answer, is_error) = within("the rejoined wait", rejoined).await.expect("task");
    assert!(!is_error, "{answer}");
    assert_eq!(answer["status"], "exited");
    let children = second.ok("list_child_processes", json!({"include_terminal": true})).await;
    assert_eq!(children["children"][0]["pid"], json!(child));
    as_child.close().await;
    drop(second);
    server.terminate().await;
    assert!(!dir.path().join("control.sock").exists(), "a clean exit removes the control socket");
}

#[tokio::test]
async fn http_refuses_an_address_that_is_not_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    for addr in ["0.0.0.0:0", "192.0.2.7:8080", "[::]:0", "not an address"] {
        let out =
            within("mcp --http", mcp_command(dir.path(), &["--http", addr]).output()).await.expect("run");
        assert_eq!(out.status.code(), Some(2), "{addr}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("only a loopback address is served"), "{addr}: {stderr}");
    }
    assert!(!dir.path().join("agentvisor.db").exists(), "a refused address opens nothing");
}
