//! The command line with `--store postgres://…`: the example rig runs with the whole tree's
//! state (kernel tables, windows, seats) in one PostgreSQL database, the views read it from
//! there, and the state directory holds none of the SQLite files.

use std::path::Path;
use std::process::Output;

mod cli_support;
#[path = "../actors/tests/pg_server/mod.rs"]
mod pg_server;

use cli_support::text;

/// `agentvisor --state STATE --store STORE ARGS…`.
fn agentvisor(state: &Path, store: &str, args: &[&str]) -> Output {
    let mut all = vec!["--store", store];
    all.extend_from_slice(args);
    cli_support::agentvisor(state, &all)
}

#[test]
fn the_example_rig_runs_on_postgres_and_the_views_read_it_there() {
    let Some(url) = pg_server::fresh_database() else { return };
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");

    let out = agentvisor(&state, &url, &["run", "examples/rigs/swarm.yaml"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("report published"), "{stdout}");
    for file in ["agentvisor.db", "windows.sqlite", "rigs.sqlite"] {
        assert!(!state.join(file).exists(), "{file} was written beside a PostgreSQL store");
    }

    let ps = agentvisor(&state, &url, &["ps", "--all", "--json"]);
    assert_eq!(ps.status.code(), Some(0), "{}", text(&ps.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    let rows = rows.as_array().expect("rows");
    assert!(rows.len() >= 4, "{rows:?}");
    assert!(rows.iter().all(|r| r["status"] != "running"), "{rows:?}");

    let status = agentvisor(&state, &url, &["rig", "status", "swarm", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let view: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    let seats = view["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 2, "{view}");
    assert!(seats.iter().all(|s| s["status"] == "realized"), "{view}");

    // The same database read through another state directory: the state is in the database.
    let elsewhere = work.path().join("elsewhere");
    let tree = agentvisor(&elsewhere, &url, &["tree"]);
    assert_eq!(tree.status.code(), Some(0), "{}", text(&tree.stderr));
    assert!(text(&tree.stdout).contains("lead"), "{}", text(&tree.stdout));
    let pid = rows[0]["pid"].as_str().expect("a pid");
    let inspect = agentvisor(&elsewhere, &url, &["inspect", pid]);
    assert_eq!(inspect.status.code(), Some(0), "{}", text(&inspect.stderr));
}

#[test]
fn a_store_that_is_not_a_postgres_url_is_refused_naming_what_to_give() {
    let work = tempfile::tempdir().expect("tempdir");
    let out = agentvisor(work.path(), "mysql://somewhere/db", &["ps"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("postgres://"), "{}", text(&out.stderr));
}

#[test]
fn an_unreachable_database_is_reported_without_its_password() {
    let work = tempfile::tempdir().expect("tempdir");
    let url = "postgresql://agent:s3cret@127.0.0.1:1/agentvisor?connect_timeout=5";
    let out = agentvisor(work.path(), url, &["ps"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// The demo's tree: the root, one process per folder, one per file.
const FOLDERS: usize = 3;
const FILES: usize = 2;
const PROCESSES: usize = 1 + FOLDERS + FOLDERS * FILES;

#[test]
fn a_demo_killed_mid_work_on_postgres_recovers_with_nothing_replayed() {
    let seed: u64 =
        std::env::var("AGENTVISOR_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026);
    let points: Vec<u64> = (0..3).map(|i| 1 + (seed.rotate_left(i * 13) % 30)).collect();
    eprintln!("seed {seed:#x}: killing the demo after commits {points:?} (AGENTVISOR_TEST_SEED replays)");
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    cli_support::make_tree(&data, FOLDERS, FILES);
    let data = data.to_str().expect("utf-8");
    let mut killed_runs = 0;
    for (i, commits) in points.iter().enumerate() {
        let Some(url) = pg_server::fresh_database() else { return };
        let state = work.path().join(format!("state-{i}"));
        let killed = cli_support::killed_after(&state, *commits, &["--store", &url, "demo", data]);
        if killed == cli_support::Killed::Finished {
            continue;
        }
        killed_runs += 1;
        // SIGKILLed with its writer frozen mid-group: the server rolled back the open
        // transaction and ended the session, releasing the owner lock.
        let out = agentvisor(&state, &url, &["recover", "--resume"]);
        let context =
            format!("seed {seed:#x}, kill after {commits}: {}\n{}", text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{context}");
        let ps = agentvisor(&state, &url, &["ps", "--all", "--json"]);
        let rows: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
        cli_support::assert_each_launched_once_and_exited(
            rows.as_array().expect("rows"),
            PROCESSES,
            &context,
        );
    }
    assert!(killed_runs > 0 || pg_server::server_url().is_none(), "every demo ended before its kill point");
}
