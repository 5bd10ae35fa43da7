//! Several `agentvisor node` processes on one PostgreSQL store: one owns it and runs the tree,
//! the others stand by; when the owner is SIGKILLed a survivor claims the store and finishes
//! the tree with nothing replayed, an owner that was frozen while another claimed the store is
//! fenced when it wakes, a node standing by claims at once when the owner stops cleanly, and a
//! console in a directory of its own follows the tree through the database's commit
//! notifications. Nodes on different shards of one database serve at once: trees go to the
//! least-loaded, host actions reach the node holding the process, a blocking receive made
//! through the database is woken by a send made through it, and a shard whose owner was
//! SIGKILLed is claimed by the node standing by for it, or by a node taking over.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

mod browser_support;
mod cli_support;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use cli_support::text;

/// How long a line the test waits for may take before the test fails (a bound on a hang,
/// never a way to synchronise).
const LINE_BOUND: Duration = Duration::from_secs(120);

/// A running `agentvisor` command whose stdout and stderr lines are read as they come.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// `agentvisor --state STATE --store URL ARGS…`.
    fn start(state: &Path, url: &str, args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
            .arg("--state")
            .arg(state)
            .args(["--store", url])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let (send, lines) = channel();
        let outputs: [Box<dyn Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped stdout")),
            Box::new(child.stderr.take().expect("piped stderr")),
        ];
        for output in outputs {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    if send.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        Running { child, lines, seen: Vec::new() }
    }

    /// Reads lines until one contains `needle`; fails, with everything read, if the command
    /// ends first.
    fn wait_for(&mut self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(LINE_BOUND) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no line with {needle:?} came: {:#?}", self.seen),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the command ended without a line with {needle:?}: {:#?}", self.seen)
                }
            }
        }
    }

    /// Waits for the command's end; its exit code and every line it wrote.
    fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().expect("reap");
        self.seen.extend(self.lines.iter());
        (status.code(), self.seen.join("\n"))
    }

    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill {signal} failed");
    }
}

/// `agentvisor node` named `name` with a lease of `lease_ms`, plus `extra` options.
fn node(work: &Path, url: &str, name: &str, lease_ms: u64, extra: &[&str]) -> Running {
    let lease = lease_ms.to_string();
    let mut args = vec!["--node", name, "--lease-ms", &lease];
    args.extend_from_slice(extra);
    args.push("node");
    Running::start(&work.join(format!("state-{name}")), url, &args)
}

const FOLDERS: usize = 4;
const FILES: usize = 5;
const PROCESSES: usize = 1 + FOLDERS + FOLDERS * FILES;

/// The seed (`AGENTVISOR_TEST_SEED`, else `default`) and the `--fault` that freezes node a's
/// store after a number of commits it chooses, printed so that a failure can be replayed.
fn freezing_fault(default: u64) -> (u64, String) {
    let seed: u64 =
        std::env::var("AGENTVISOR_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let commits = 3 + seed % 8;
    eprintln!("seed {seed:#x}: node a freezes after {commits} commits (AGENTVISOR_TEST_SEED replays)");
    (seed, format!("freeze-after:{commits}"))
}

#[test]
fn the_survivor_of_two_nodes_finishes_a_tree_whose_owner_was_sigkilled_mid_work() {
    let Some(url) = pg_server::fresh_database() else { return };
    let (seed, fault) = freezing_fault(0x5eed_2027);
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    cli_support::make_tree(&data, FOLDERS, FILES);

    let mut a = node(work.path(), &url, "a", 2_000, &["--fault", &fault]);
    a.wait_for("node a serving");
    let mut b = node(work.path(), &url, "b", 2_000, &[]);
    b.wait_for("node b standing by: node a owns");

    // The tree is launched on the owner through the database, from a third directory.
    let demo = Running::start(&work.path().join("client"), &url, &["demo", data.to_str().expect("utf-8")]);
    a.wait_for("fault injected");
    a.child.kill().expect("SIGKILL node a");
    let (code, a_lines) = a.finish();
    assert_eq!(code, None, "node a was killed: {a_lines}");

    b.wait_for("node b owns");
    b.wait_for("node b serving");
    let (code, demo_lines) = demo.finish();
    let context = format!("seed {seed:#x}\n--- demo:\n{demo_lines}\n--- node a:\n{a_lines}");
    assert_eq!(code, Some(0), "{context}");
    assert!(
        demo_lines.contains(&format!("in {} files and {} folders", FOLDERS * FILES, FOLDERS + 1)),
        "{context}"
    );

    // Every process once, every one exited, none left running.
    let ps =
        cli_support::agentvisor(&work.path().join("client"), &["--store", &url, "ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    cli_support::assert_each_launched_once_and_exited(rows.as_array().expect("rows"), PROCESSES, &context);
    let ps = cli_support::agentvisor(&work.path().join("client"), &["--store", &url, "ps"]);
    assert!(text(&ps.stderr).contains("node b owns the store (fence 2"), "{}", text(&ps.stderr));

    // A clean stop ends the survivor's lease at once.
    b.signal("-TERM");
    let (code, b_lines) = b.finish();
    assert_eq!(code, Some(0), "{b_lines}");
    assert!(b_lines.contains("node b stopped"), "{b_lines}");
    eprintln!("--- node b:\n{b_lines}");
}

/// A node that stops cleanly ends its lease and notifies the release; a node standing by
/// claims the store at once. The lease is twenty minutes here, so the standby's next attempt
/// of its own would come long after [`LINE_BOUND`]: only the notification wakes it in time.
#[test]
fn a_node_standing_by_claims_the_store_as_soon_as_its_owner_stops_cleanly() {
    const LEASE_MS: u64 = 1_200_000;
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let mut a = node(work.path(), &url, "a", LEASE_MS, &[]);
    a.wait_for("node a serving");
    let mut b = node(work.path(), &url, "b", LEASE_MS, &[]);
    b.wait_for("node b standing by: node a owns");
    a.signal("-TERM");
    let (code, a_lines) = a.finish();
    assert_eq!(code, Some(0), "{a_lines}");
    b.wait_for("node b owns");
    b.wait_for("node b serving");
    b.signal("-TERM");
    let (code, b_lines) = b.finish();
    assert_eq!(code, Some(0), "{b_lines}");
}

#[test]
fn a_node_frozen_while_another_claimed_the_store_is_fenced_when_it_wakes() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let mut a = node(work.path(), &url, "a", 600, &[]);
    a.wait_for("node a serving");
    let mut b = node(work.path(), &url, "b", 600, &[]);
    b.wait_for("node b standing by: node a owns");

    // Node a stops answering anything (as a hung or cut-off machine would); its lease runs
    // out on the server's clock and node b claims the store.
    a.signal("-STOP");
    b.wait_for("node b owns");
    b.wait_for("node b serving");
    a.signal("-CONT");
    let (code, a_lines) = a.finish();
    assert_eq!(code, Some(3), "{a_lines}");
    assert!(a_lines.contains("node a stopped"), "{a_lines}");
    assert!(a_lines.contains("node b holds it now (fence 2)"), "{a_lines}");

    // The store is b's: a tree launched now runs there.
    let data = work.path().join("data");
    cli_support::make_tree(&data, 1, 2);
    let demo = cli_support::agentvisor(
        &work.path().join("client"),
        &["--store", &url, "demo", data.to_str().expect("utf-8")],
    );
    assert_eq!(demo.status.code(), Some(0), "{}\n{}", text(&demo.stdout), text(&demo.stderr));
    assert!(text(&demo.stderr).contains("node b owns"), "{}", text(&demo.stderr));
    b.signal("-TERM");
    let (code, b_lines) = b.finish();
    assert_eq!(code, Some(0), "{b_lines}");
}

#[test]
fn node_needs_a_postgres_store() {
    let work = tempfile::tempdir().expect("tempdir");
    let out = cli_support::agentvisor(work.path(), &["node"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--store postgres://"), "{}", text(&out.stderr));
    let out = cli_support::agentvisor(work.path(), &["--lease-ms", "10", "ps"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at least 300 ms"), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_console_beside_no_node_follows_a_tree_through_the_database() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let a = tokio::task::block_in_place(|| {
        let mut a = node(work.path(), &url, "a", 5_000, &[]);
        a.wait_for("node a serving");
        a
    });
    // The console's directory is not the node's: no file there changes while the tree runs.
    let (_console, console) = browser_support::start_console(&work.path().join("viewer"), &["--store", &url]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut stream =
        reqwest::Client::new().get(format!("{console}api/stream")).send().await.expect("the stream");

    let data = work.path().join("data");
    cli_support::make_tree(&data, 2, 3);
    let expected = 1 + 2 + 2 * 3;
    let demo = cli_support::agentvisor(
        &work.path().join("client"),
        &["--store", &url, "demo", data.to_str().expect("utf-8")],
    );
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo.stderr));

    // Snapshots arrive as the node commits; the last shows the whole tree ended.
    let ended = |snapshot: &serde_json::Value| {
        snapshot["processes"].as_array().map_or(0, |p| p.iter().filter(|p| p["status"] == "exited").count())
            == expected
    };
    let seen = wait_for_snapshot(&mut stream, ended).await;
    assert!(seen.is_ok(), "the console never showed the {expected} processes ended: {seen:?}");
    a.signal("-TERM");
    let (code, lines) = tokio::task::block_in_place(|| a.finish());
    assert_eq!(code, Some(0), "{lines}");
}

/// Reads the console's event stream until a snapshot satisfies `wanted`, within
/// [`LINE_BOUND`]; on failure, what was read and not yet taken.
async fn wait_for_snapshot(
    stream: &mut reqwest::Response,
    wanted: impl Fn(&serde_json::Value) -> bool,
) -> Result<(), String> {
    let mut pending = String::new();
    let read = tokio::time::timeout(LINE_BOUND, async {
        loop {
            let chunk = stream.chunk().await.expect("the stream reads").expect("the stream stays open");
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                if !event.lines().any(|l| l == "event: snapshot") {
                    continue;
                }
                let json: String = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                if wanted(&serde_json::from_str(&json).expect("a snapshot")) {
                    return;
                }
            }
        }
    })
    .await;
    read.map_err(|_| pending)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_console_started_before_an_agent_tree_draws_its_machines_from_the_stores_record() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let (_console, console) = browser_support::start_console(&work.path().join("viewer"), &["--store", &url]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut stream =
        reqwest::Client::new().get(format!("{console}api/stream")).send().await.expect("the stream");

    // The image record is written after the console started, in the database.
    let root = env!("CARGO_MANIFEST_DIR");
    let config = format!("{root}/examples/agents/swarm.yaml");
    let scripts = format!("{root}/examples/agents/swarm-scripts.json");
    let out = tokio::task::block_in_place(|| {
        cli_support::agentvisor(
            &work.path().join("run"),
            &["--store", &url, "agent", &config, "lead", "Write the report", "--scripts", &scripts],
        )
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let review = |snapshot: &serde_json::Value| {
        snapshot["machines"]["review"]["states"].as_array().is_some_and(|s| s.len() == 3)
    };
    let seen = wait_for_snapshot(&mut stream, review).await;
    assert!(seen.is_ok(), "the console never drew the review machine: {seen:?}");
}

#[test]
fn a_node_in_another_directory_takes_over_an_agent_tree_with_its_images() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let root = env!("CARGO_MANIFEST_DIR");
    let config = format!("{root}/examples/agents/swarm.yaml");
    let scripts = format!("{root}/examples/agents/swarm-scripts.json");
    let args = [
        "--store",
        url.as_str(),
        "agent",
        config.as_str(),
        "lead",
        "Write the report",
        "--scripts",
        scripts.as_str(),
    ];
    let killed = cli_support::killed_after(&work.path().join("first"), 12, &args);
    assert_eq!(killed, cli_support::Killed::AtCommit, "the agent tree ended before its kill point");

    // The node's directory never saw the configuration: the store's image record names it.
    let mut b = node(work.path(), &url, "b", 2_000, &[]);
    b.wait_for("node b serving");
    b.signal("-TERM");
    let (code, lines) = b.finish();
    assert_eq!(code, Some(0), "{lines}");
    assert!(lines.contains("resumed"), "a stale agent was resumed: {lines}");
    assert!(!lines.contains("image_unavailable"), "every image was registered: {lines}");
    assert!(!lines.contains("cannot load"), "{lines}");
}

#[test]
fn a_host_request_taken_by_an_owner_that_died_is_not_run_again_by_the_next() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    // A first node creates the request table, then stops.
    let mut a = node(work.path(), &url, "a", 2_000, &[]);
    a.wait_for("node a serving");
    a.signal("-TERM");
    assert_eq!(a.finish().0, Some(0));

    // Two requests no node answered: one a dead owner had taken, one nobody took.
    let mut db = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
    db.batch_execute("LISTEN agentvisor_host_answers").expect("listens");
    let request = r#"{"op":"process","pid":"00000000-0000-7000-8000-000000000000"}"#;
    let taken: i64 = db
        .query_one("INSERT INTO host_requests (request, taken) VALUES ($1, true) RETURNING id", &[&request])
        .expect("inserts")
        .get(0);
    let fresh: i64 = db
        .query_one("INSERT INTO host_requests (request) VALUES ($1) RETURNING id", &[&request])
        .expect("inserts")
        .get(0);

    let mut b = node(work.path(), &url, "b", 2_000, &[]);
    b.wait_for("node b serving");
    let mut heard: Vec<String> = Vec::new();
    {
        use postgres::fallible_iterator::FallibleIterator;
        let mut notifications = db.notifications();
        let mut answers = notifications.timeout_iter(LINE_BOUND);
        while heard.len() < 2 {
            let note = answers.next().expect("the notifications read").expect("an answer within the bound");
            heard.push(note.payload().to_string());
        }
    }
    assert_eq!(heard, [taken.to_string(), fresh.to_string()]);
    let mut answer = |id: i64| -> serde_json::Value {
        let text: String =
            db.query_one("SELECT answer FROM host_requests WHERE id = $1", &[&id]).expect("reads").get(0);
        serde_json::from_str(&text).expect("an answer line")
    };
    let refused = answer(taken);
    assert_eq!(refused["error"]["code"], "taken_by_a_dead_owner", "{refused}");
    assert_eq!(answer(fresh), serde_json::json!({ "result": null }));
    b.signal("-TERM");
    assert_eq!(b.finish().0, Some(0));
}

/// Three runtimes on one database: nodes a and b serve shards of their own, c stands by for
/// a's. Trees go to the least-loaded served shard; a host signal sent from a directory of its
/// own reaches the node running the process; and when a is SIGKILLed, c claims its shard while
/// b's goes on untouched.
#[test]
fn nodes_serve_shards_of_one_database_and_trees_go_to_the_least_loaded() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let client = work.path().join("client");
    let data = work.path().join("data");
    cli_support::make_tree(&data, 2, 3);
    let tree = 1 + 2 + 2 * 3;

    let mut a = node(work.path(), &url, "a", 2_000, &["--shard", "s1"]);
    a.wait_for("node a serving");
    let mut b = node(work.path(), &url, "b", 2_000, &["--shard", "s2"]);
    b.wait_for("node b serving");
    let mut c = node(work.path(), &url, "c", 2_000, &["--shard", "s1"]);
    c.wait_for("node c standing by: node a owns shard s1");

    // Both shards are empty: the first by name takes the first tree; then the other is the
    // least loaded.
    for expected in ["placed on node a", "placed on node b"] {
        let demo = cli_support::agentvisor(
            &client,
            &["--store", &url, "demo", "--place", "least-loaded", data.to_str().expect("utf-8")],
        );
        let stderr = text(&demo.stderr);
        assert_eq!(demo.status.code(), Some(0), "{stderr}\n{}", text(&demo.stdout));
        assert!(stderr.contains(expected), "{stderr}");
    }
    let listed = shards(&client, &url);
    let by_name = |name: &str| {
        listed.iter().find(|s| s["shard"] == name).cloned().unwrap_or_else(|| panic!("no {name}: {listed:?}"))
    };
    assert_eq!(by_name("s1")["node"], "a", "{listed:?}");
    assert_eq!(by_name("s2")["node"], "b", "{listed:?}");
    assert_eq!(by_name("s1")["processes"], tree, "{listed:?}");
    assert_eq!(by_name("s2")["processes"], tree, "{listed:?}");
    assert!(listed.iter().all(|s| s["shard"] != "main"), "no command used the main shard: {listed:?}");

    // A root that stays live on b's shard, launched through the database; then signalled by a
    // command that names only its pid.
    let shard = agentvisor::actors::store::shard_url(&url, "s2").expect("a shard URL");
    let root = agentvisor::control::RootRequest {
        goal: "wait".to_string(),
        image: agentvisor::images::PUPPET_IMAGE.into(),
        cwd: client.display().to_string(),
        capabilities: Vec::new(),
        budget: Default::default(),
        launch_key: None,
    };
    let request = agentvisor::control::protocol::Request::SpawnRoot { root };
    let answer = tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(agentvisor::control::database::request(&shard, &request))
        .expect("node b launches the root");
    let pid = answer["pid"].as_str().expect("a pid").to_string();
    let signal = cli_support::agentvisor(&client, &["--store", &url, "signal", &pid, "terminate"]);
    assert_eq!(signal.status.code(), Some(0), "{}", text(&signal.stderr));
    let inspect = cli_support::agentvisor(&client, &["--store", &url, "inspect", &pid, "--json"]);
    assert_eq!(inspect.status.code(), Some(0), "{}", text(&inspect.stderr));
    let row: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    assert_eq!(row["process"]["status"], "killed", "{row}");
    assert_eq!(shards(&client, &url).iter().find(|s| s["shard"] == "s2").expect("s2")["processes"], tree + 1);

    // a dies: c claims s1; b keeps s2 at the fence it had.
    a.child.kill().expect("SIGKILL node a");
    assert_eq!(a.finish().0, None);
    c.wait_for("node c owns shard s1");
    c.wait_for("node c serving");
    let listed = shards(&client, &url);
    let by_name = |name: &str| listed.iter().find(|s| s["shard"] == name).cloned().expect("listed");
    assert_eq!(
        (by_name("s1")["node"].clone(), by_name("s1")["fence"].clone()),
        ("c".into(), 2.into()),
        "{listed:?}"
    );
    assert_eq!(
        (by_name("s2")["node"].clone(), by_name("s2")["fence"].clone()),
        ("b".into(), 1.into()),
        "{listed:?}"
    );
    let ps = cli_support::agentvisor(&client, &["--store", &url, "--shard", "s1", "ps", "--all"]);
    assert!(text(&ps.stderr).contains("showing shard s1; other shards: s2"), "{}", text(&ps.stderr));
    assert!(text(&ps.stderr).contains("node c owns shard s1 (fence 2"), "{}", text(&ps.stderr));
    let ps = cli_support::agentvisor(&client, &["--store", &url, "--shard", "s1", "ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    cli_support::assert_each_launched_once_and_exited(rows.as_array().expect("rows"), tree, "shard s1");

    for running in [b, c] {
        running.signal("-TERM");
        let (code, lines) = running.finish();
        assert_eq!(code, Some(0), "{lines}");
    }
}

/// `agentvisor shards --json` run in `dir`.
fn shards(dir: &Path, url: &str) -> Vec<serde_json::Value> {
    let out = cli_support::agentvisor(dir, &["--store", url, "shards", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn a_shard_needs_a_postgres_store_and_a_usable_name() {
    let work = tempfile::tempdir().expect("tempdir");
    let out = cli_support::agentvisor(work.path(), &["--shard", "s1", "ps"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("pass --store"), "{}", text(&out.stderr));
    let out = cli_support::agentvisor(work.path(), &["--store", "postgres://u@h/db", "--shard", "S-1", "ps"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("lowercase letters"), "{}", text(&out.stderr));
}

/// A host acting as processes through the database: a blocking receive made as a child on
/// node b waits there, holds up no other request to b, and is woken by its parent's send made
/// from another directory through the database.
#[tokio::test(flavor = "multi_thread")]
async fn a_blocking_receive_through_the_database_is_woken_by_a_send_through_it() {
    use agentvisor::control::database::{Changes, request};
    use agentvisor::control::protocol::Request;
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let b = tokio::task::block_in_place(|| {
        let mut b = node(work.path(), &url, "b", 2_000, &["--shard", "s2"]);
        b.wait_for("node b serving");
        b
    });
    let shard = agentvisor::actors::store::shard_url(&url, "s2").expect("a shard URL");
    let spawn = agentvisor::actors::kernel::capability::CapabilityRequest {
        resource: "process:spawn".into(),
        rights: agentvisor::actors::kernel::capability::Rights::EXECUTE,
        constraints: Default::default(),
        delegable: true,
    };
    let root = agentvisor::control::RootRequest {
        goal: "parent".to_string(),
        image: agentvisor::images::PUPPET_IMAGE.into(),
        cwd: work.path().display().to_string(),
        capabilities: vec![spawn],
        budget: Default::default(),
        launch_key: None,
    };
    let launched = request(&shard, &Request::SpawnRoot { root }).await.expect("b launches the parent");
    let parent: agentvisor::actors::Pid = launched["pid"].as_str().expect("pid").parse().expect("a pid");
    let call = |pid, tool: &str, args: serde_json::Value| Request::Call { pid, tool: tool.to_string(), args };
    let spawned =
        request(&shard, &call(parent, "spawn_child_process", serde_json::json!({"goal": "listen"})))
            .await
            .expect("b spawns the child");
    let child: agentvisor::actors::Pid = spawned["pid"].as_str().expect("pid").parse().expect("a pid");

    let mut commits = Changes::listen(&shard).await.expect("listens for the shard's commits");
    let receive = {
        let (shard, request_) =
            (shard.clone(), call(child, "receive_process_messages", serde_json::json!({"block": true})));
        tokio::spawn(async move { request(&shard, &request_).await })
    };
    // The child waits (a commit makes it so); the send is made only then.
    loop {
        let row = request(&shard, &Request::Process { pid: child })
            .await
            .expect("b answers while the receive waits");
        if row["status"] == "waiting_event" {
            break;
        }
        assert!(!receive.is_finished(), "the receive returned before anything was sent: {row}");
        tokio::time::timeout(LINE_BOUND, commits.next()).await.expect("a commit within the bound");
    }
    let sent = request(
        &shard,
        &call(
            parent,
            "send_process_message",
            serde_json::json!({"to": child.to_string(), "body": "wake up"}),
        ),
    )
    .await
    .expect("b sends");
    assert!(sent.get("error").is_none(), "{sent}");
    let received =
        tokio::time::timeout(LINE_BOUND, receive).await.expect("woken within the bound").expect("joins");
    let received = received.expect("b answers the receive");
    assert!(received.to_string().contains("wake up"), "{received}");

    b.signal("-TERM");
    let (code, lines) = tokio::task::block_in_place(|| b.finish());
    assert_eq!(code, Some(0), "{lines}");
}

/// A node with `--take-over` claims the shard of another node that was SIGKILLed mid-work
/// (no node stands by for that shard) and finishes its tree, nothing replayed; stopping it
/// stops the node it started for that shard. While the shard's node cannot start there, it
/// is tried again after one look, then two, then four.
#[test]
fn a_node_taking_over_finishes_the_tree_of_a_shard_whose_node_was_sigkilled() {
    let Some(url) = pg_server::fresh_database() else { return };
    let (seed, fault) = freezing_fault(0x5eed_2028);
    let work = tempfile::tempdir().expect("tempdir");
    let client = work.path().join("client");
    let data = work.path().join("data");
    cli_support::make_tree(&data, FOLDERS, FILES);

    let mut a = node(work.path(), &url, "a", 2_000, &["--shard", "s1", "--fault", &fault]);
    a.wait_for("node a serving");
    let b_state = work.path().join("state-b");
    let mut b = Running::start(
        &b_state,
        &url,
        &["--node", "b", "--lease-ms", "2000", "--shard", "s2", "node", "--take-over"],
    );
    b.wait_for("node b serving");
    // A file where b keeps the state of the node it starts for s1: that node cannot start.
    let in_the_way = b_state.join("shards").join("s1");
    std::fs::create_dir_all(b_state.join("shards")).expect("mkdir");
    std::fs::write(&in_the_way, "not a directory").expect("a file in the way");

    let demo = Running::start(&client, &url, &["--shard", "s1", "demo", data.to_str().expect("utf-8")]);
    a.wait_for("fault injected");
    a.child.kill().expect("SIGKILL node a");
    let (code, a_lines) = a.finish();
    assert_eq!(code, None, "node a was killed: {a_lines}");

    let waits: Vec<String> = (0..3)
        .map(|_| {
            let line = b.wait_for("a node for shard s1 could not start");
            let (_, wait) = line.rsplit_once("trying again in ").expect("says when it tries again");
            wait.to_string()
        })
        .collect();
    let look = std::time::Duration::from_millis(2_000) / 3;
    let doubling: Vec<String> =
        [1u32, 2, 4].into_iter().map(|n| format!("{} ms", (look * n).as_millis())).collect();
    assert_eq!(waits, doubling);
    std::fs::remove_file(&in_the_way).expect("out of the way");
    let claimed = b.wait_for("[shard s1] node b owns shard s1 of");
    assert!(claimed.ends_with("(fence 2)"), "{claimed}");
    let (code, demo_lines) = demo.finish();
    let context = format!("seed {seed:#x}\n--- demo:\n{demo_lines}\n--- node a:\n{a_lines}");
    assert_eq!(code, Some(0), "{context}");
    let ps = cli_support::agentvisor(&client, &["--store", &url, "--shard", "s1", "ps", "--all", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    cli_support::assert_each_launched_once_and_exited(rows.as_array().expect("rows"), PROCESSES, &context);
    let listed = shards(&client, &url);
    let s1 = listed.iter().find(|s| s["shard"] == "s1").expect("s1 listed");
    assert_eq!((s1["node"].clone(), s1["fence"].clone()), ("b".into(), 2.into()), "{listed:?}");

    b.signal("-TERM");
    let (code, b_lines) = b.finish();
    assert_eq!(code, Some(0), "{b_lines}");
    assert!(b_lines.contains("node b takes over shard s1"), "{b_lines}");
    assert!(b_lines.contains("[shard s1] node b stopped"), "{b_lines}");
    assert!(b_lines.contains("the node serving shard s1 stopped"), "{b_lines}");
    assert!(!shards(&client, &url).iter().any(|s| s["node"] == "b"), "b's leases ended with it");
}
