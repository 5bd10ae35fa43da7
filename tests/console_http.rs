//! The console's JSON endpoints and its refusals, over HTTP: the snapshot and the process
//! view agree with `ps` and `inspect`, a read-only console refuses host actions, a token is
//! required when set, a non-loopback address needs `--allow-remote` and a token.

mod browser_support;
mod cli_support;

use browser_support::start_console;
use cli_support::{agentvisor, rows, text};
use serde_json::Value;

const RIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rigs/swarm.yaml");

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_endpoints_agree_with_the_command_line_views() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = agentvisor(&state, &["run", RIG]);
    assert!(out.status.success(), "run: {}", text(&out.stderr));
    let ps = rows(&state);
    let (_console, url) = start_console(&state, &[]);
    let http = client();

    let snapshot: Value =
        http.get(format!("{url}api/snapshot")).send().await.expect("get").json().await.expect("json");
    assert_eq!(snapshot["ready"], true);
    let processes = snapshot["processes"].as_array().expect("processes");
    assert_eq!(processes.len(), ps.len());
    for row in &ps {
        let p = processes.iter().find(|p| p["pid"] == row["pid"]).expect("every ps row is in the snapshot");
        assert_eq!(p["status"], row["status"]);
        assert_eq!(p["parent"], row["parent"]);
    }
    assert!(
        snapshot["machines"]["review"]["states"].as_array().is_some_and(|s| s.len() == 3),
        "{}",
        snapshot["machines"]
    );
    assert_eq!(snapshot["rigs"][0]["rig"]["id"], "swarm");

    let pid = ps[0]["pid"].as_str().expect("pid");
    let inspect = agentvisor(&state, &["inspect", pid, "--json"]);
    let inspect: Value = serde_json::from_slice(&inspect.stdout).expect("inspect json");
    let served: Value =
        http.get(format!("{url}api/process/{pid}")).send().await.expect("get").json().await.expect("json");
    assert_eq!(served, inspect, "the process endpoint is inspect --json");

    let lines: Value = http
        .get(format!("{url}api/conversation/{pid}"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let lines = lines.as_array().expect("records");
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|l| l["record"]["pid"] == pid && l["line"].as_u64().is_some()));

    let unknown = http.get(format!("{url}api/process/ffffffff")).send().await.expect("get");
    assert_eq!(unknown.status(), 404);

    let refused = http
        .post(format!("{url}api/control/{pid}"))
        .body(r#"{"action":"cancel"}"#)
        .send()
        .await
        .expect("post");
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "control_disabled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_action_from_the_console_is_refused_in_the_command_lines_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = agentvisor(&state, &["run", RIG]);
    assert!(out.status.success(), "run: {}", text(&out.stderr));
    let ps = rows(&state);
    let pid = ps[0]["pid"].as_str().expect("pid");
    let cli = agentvisor(&state, &["signal", pid, "pause"]);
    assert!(!cli.status.success(), "an exited process accepts no signal");
    let (_console, url) = start_console(&state, &["--control"]);
    let answer = client()
        .post(format!("{url}api/control/{pid}"))
        .body(r#"{"action":"pause"}"#)
        .send()
        .await
        .expect("post");
    assert_eq!(answer.status(), 409);
    let body: Value = answer.json().await.expect("json");
    assert_eq!(body["error"]["ok"], false);
    assert_eq!(body["error"]["stderr"].as_str().expect("stderr"), text(&cli.stderr).trim_end());
    assert!(body["error"]["stderr"].as_str().is_some_and(|e| e.contains("process_terminal")), "{body}");

    let unknown = client()
        .post(format!("{url}api/control/{pid}"))
        .body(r#"{"action":"explode"}"#)
        .send()
        .await
        .expect("post");
    assert_eq!(unknown.status(), 400);
    let body: Value = unknown.json().await.expect("json");
    assert_eq!(body["error"]["code"], "bad_request");
    assert_eq!(rows(&state), ps, "nothing changed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_is_required_when_set_and_remote_needs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    let (_console, url) = start_console(&state, &["--token", "s3cret"]);
    let http = client();
    assert_eq!(http.get(format!("{url}api/snapshot")).send().await.expect("get").status(), 401);
    let ok = http.get(format!("{url}api/snapshot?token=s3cret")).send().await.expect("get");
    assert_eq!(ok.status(), 200);
    let snapshot: Value = ok.json().await.expect("json");
    assert_eq!(snapshot["ready"], false, "an empty directory is not an error: {snapshot}");
    let bearer = http.get(format!("{url}api/console")).bearer_auth("s3cret").send().await.expect("get");
    assert_eq!(bearer.status(), 200);

    let remote = agentvisor(&state, &["console", "--listen", "0.0.0.0:0"]);
    assert!(!remote.status.success());
    assert!(text(&remote.stderr).contains("--allow-remote and --token"), "{}", text(&remote.stderr));
    let no_token = agentvisor(&state, &["console", "--listen", "0.0.0.0:0", "--allow-remote"]);
    assert!(!no_token.status.success());
    assert!(text(&no_token.stderr).contains("--allow-remote and --token"), "{}", text(&no_token.stderr));
}
