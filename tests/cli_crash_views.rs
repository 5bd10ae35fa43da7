//! The read-only views after a crash, as a person uses them: a real `agentvisor demo` child is
//! SIGKILLed at a known commit, then `ps`, `tree` and `inspect` mark every live row of the
//! dead owner stale and write nothing; a closed stdout ends a view quietly; views work on a
//! read-only copy; a command refused by a live owner creates nothing.

mod cli_support;

use cli_support::{
    Killed, agentvisor, copy_dir, demo_killed_after, into_closed_pipe, make_tree, names, rows, text,
};
use std::path::Path;
use std::process::{Command, Stdio};

/// The store file and its WAL: what a view must never change.
fn store_bytes(state: &Path) -> Vec<Option<Vec<u8>>> {
    ["agentvisor.db", "agentvisor.db-wal"].iter().map(|f| std::fs::read(state.join(f)).ok()).collect()
}

#[test]
fn a_killed_demo_shows_stale_rows_and_views_write_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, 3, 2);
    let state = work.path().join("state");
    // Six commits in: the root and its first children are launched, none has ended.
    assert_eq!(demo_killed_after(&state, &data, 6), Killed::AtCommit);
    let before = store_bytes(&state);

    let all = rows(&state);
    let live: Vec<_> = all
        .iter()
        .filter(|r| !["exited", "failed", "killed"].contains(&r["status"].as_str().unwrap_or("")))
        .collect();
    assert!(!live.is_empty(), "the tree was live when it was killed: {all:?}");
    for row in &all {
        assert_eq!(row["owner_alive"], false, "{row}");
        let active = ["runnable", "running", "waiting_event"].contains(&row["status"].as_str().unwrap_or(""));
        assert_eq!(row["stale"], active, "{row}");
    }
    let live: Vec<_> = live.into_iter().filter(|r| r["stale"] == true).collect();
    let ps = agentvisor(&state, &["ps"]);
    assert!(ps.status.success(), "{}", text(&ps.stderr));
    let ps = text(&ps.stdout);
    assert_eq!(ps.matches("(stale: no runtime owns it since epoch 1)").count(), live.len(), "{ps}");
    assert!(text(&agentvisor(&state, &["ps"]).stderr).contains("no live runtime owns"));

    let tree = agentvisor(&state, &["tree"]);
    assert!(tree.status.success());
    assert_eq!(text(&tree.stdout).matches("(stale: no runtime owns it since epoch 1)").count(), live.len());

    let root = all.iter().find(|r| r["depth"] == 0).expect("a root");
    let pid = root["pid"].as_str().expect("pid");
    // A short id (the random tail the views print) resolves like the whole pid.
    let short = &pid[pid.len() - 8..];
    let inspect = agentvisor(&state, &["inspect", short, "--json"]);
    assert!(inspect.status.success(), "{}", text(&inspect.stderr));
    let view: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("json");
    assert_eq!(view["owner_alive"], false);
    assert_eq!(view["process"]["pid"], pid);
    assert_eq!(view["process"]["stale"], true);
    let inspect = agentvisor(&state, &["inspect", pid]);
    assert!(text(&inspect.stdout).contains("stale: no runtime owns it since epoch 1"));

    assert_eq!(store_bytes(&state), before, "a view changes neither the store file nor its WAL");
}

#[test]
fn views_into_a_closed_pipe_end_quietly_with_status_0() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, 2, 2);
    let state = work.path().join("state");
    let demo = agentvisor(&state, &["demo", data.to_str().expect("utf-8")]);
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    let pid = rows(&state)[0]["pid"].as_str().expect("pid").to_string();
    for args in [
        vec!["ps", "--all"],
        vec!["ps", "--all", "--json"],
        vec!["tree"],
        vec!["inspect", pid.as_str()],
        vec!["events"],
    ] {
        let out = into_closed_pipe(&state, &args);
        assert!(out.status.success(), "{args:?}: {} {}", out.status, text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?} is quiet");
    }
    // And through a shell, as a person types it.
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!("{:?} --state {:?} ps --all | head -1", env!("CARGO_BIN_EXE_agentvisor"), state))
        .output()
        .expect("sh runs");
    assert!(piped.status.success());
    assert!(!text(&piped.stderr).contains("panicked"), "{}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout).lines().count(), 1);
}

/// Whether this process may mount (root in a namespace that allows it).
fn bind_read_only(from: &Path, to: &Path) -> bool {
    let ok = |args: &[&str]| Command::new("mount").args(args).status().is_ok_and(|s| s.success());
    std::fs::create_dir_all(to).expect("mkdir");
    let (from, to) = (from.to_str().expect("utf-8"), to.to_str().expect("utf-8"));
    ok(&["--bind", from, to]) && ok(&["-o", "remount,ro,bind", to])
}

#[test]
fn views_work_on_a_read_only_copy_and_change_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, 2, 1);
    let state = work.path().join("state");
    assert_eq!(demo_killed_after(&state, &data, 4), Killed::AtCommit);
    // A copy, made read-only: by permissions, and by a read-only bind mount where this
    // process may mount (a root's writes ignore permissions).
    let copy = work.path().join("copy");
    copy_dir(&state, &copy);
    let mounted = work.path().join("ro");
    let read_only = if bind_read_only(&copy, &mounted) { mounted.clone() } else { copy.clone() };
    for entry in std::fs::read_dir(&copy).expect("list") {
        let path = entry.expect("entry").path();
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
    let before = store_bytes(&read_only);
    let files = names(&read_only);
    let pid = rows(&read_only)[0]["pid"].as_str().expect("pid").to_string();
    for args in [vec!["ps", "--all"], vec!["tree"], vec!["inspect", pid.as_str()]] {
        let out = agentvisor(&read_only, &args);
        assert!(out.status.success(), "{args:?} on a read-only copy: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("stale"), "{args:?}: {}", text(&out.stdout));
    }
    assert_eq!(store_bytes(&read_only), before);
    assert_eq!(names(&read_only), files, "no file created");
    if read_only == mounted {
        let _ = Command::new("umount").arg(&mounted).status();
    }

    // A copy of a cleanly closed store: its WAL checkpointed into the file and gone, so on a
    // read-only location SQLite has no `-shm` to open WAL mode with.
    let clean = work.path().join("clean");
    let demo = agentvisor(&clean, &["demo", data.to_str().expect("utf-8")]);
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    {
        let conn = rusqlite::Connection::open(clean.join("agentvisor.db")).expect("open");
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").expect("checkpoint");
    }
    let copy = work.path().join("clean-copy");
    std::fs::create_dir_all(&copy).expect("mkdir");
    std::fs::copy(clean.join("agentvisor.db"), copy.join("agentvisor.db")).expect("copy");
    let mounted = work.path().join("clean-ro");
    if bind_read_only(&copy, &mounted) {
        let out = agentvisor(&mounted, &["ps", "--all", "--json"]);
        assert!(out.status.success(), "a WAL-less read-only copy: {}", text(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(rows.as_array().expect("rows").iter().all(|r| r["status"] == "exited"));
        assert_eq!(names(&mounted), vec![std::ffi::OsString::from("agentvisor.db")]);
        let _ = Command::new("umount").arg(&mounted).status();
    }
}

#[test]
fn a_command_refused_by_a_live_owner_creates_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    make_tree(&data, 1, 1);
    let state = work.path().join("state");
    // A live owner: a demo frozen at its second commit, kept alive while the others run.
    let mut owner = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(&state)
        .args(["--fault", "freeze-after:2", "demo"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the owner");
    let stderr = owner.stderr.take().expect("stderr");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    assert!(lines.any(|l| l.expect("a line").contains("fault injected")), "the owner froze");
    let before = names(&state);
    for args in [
        vec!["demo", data.to_str().expect("utf-8")],
        vec!["recover"],
        vec!["signal", "00000000", "pause"],
        vec!["agent", "/nonexistent-config.yaml", "a", "b"],
    ] {
        let out = agentvisor(&state, &args);
        assert!(!out.status.success(), "{args:?} must be refused");
        let err = text(&out.stderr);
        match args[0] {
            // A host action goes to the owner through its socket: here it names no process.
            "signal" => assert!(err.contains("no process matches"), "{args:?}: {err}"),
            "agent" => {}
            _ => assert!(err.contains("a live agentvisor runtime owns"), "{args:?}: {err}"),
        }
    }
    let ps = agentvisor(&state, &["ps", "--json"]);
    assert!(ps.status.success());
    let live: serde_json::Value = serde_json::from_slice(&ps.stdout).expect("json");
    assert!(live.as_array().expect("rows").iter().all(|r| r["owner_alive"] == true && r["stale"] == false));
    assert_eq!(names(&state), before, "a refused command creates no file");
    owner.kill().expect("kill the owner");
    owner.wait().expect("reap");
}

#[test]
fn a_view_racing_an_owner_creating_the_store_says_so() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    // What a view finds in an owner's first milliseconds: the file, no tables yet.
    std::fs::write(state.join("agentvisor.db"), b"").expect("an empty database file");
    for args in [vec!["ps"], vec!["tree"]] {
        let out = agentvisor(&state, &args);
        assert!(!out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("is being created"), "{args:?}: {err}");
        assert!(!err.contains("not an agentvisor store"), "{err}");
    }
    assert_eq!(std::fs::read(state.join("agentvisor.db")).expect("read"), b"", "the view wrote nothing");
}

#[test]
fn rig_status_reads_a_read_only_copy_without_touching_it() {
    use agentvisor::rig::RigSpec;
    use agentvisor::rig::store::{SeatStore, SqliteSeatStore};
    let work = tempfile::tempdir().expect("tempdir");
    let state = work.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    let spec: RigSpec = serde_json::from_value(serde_json::json!({
        "id": "review",
        "members": [{ "id": "fresh", "runtime": "native", "cwd": "." }]
    }))
    .expect("spec");
    {
        let store = SqliteSeatStore::open(state.join("rigs.sqlite")).expect("seat store");
        store.create_rig(&spec, "review.yaml").expect("create");
    }
    let copy = work.path().join("copy");
    copy_dir(&state, &copy);
    let mounted = work.path().join("ro");
    let dir = if bind_read_only(&copy, &mounted) { mounted.clone() } else { copy.clone() };
    let before = std::fs::read(dir.join("rigs.sqlite")).expect("read");
    let out = agentvisor(&dir, &["rig", "status", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rigs: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rigs[0]["id"], "review", "{rigs}");
    assert_eq!(rigs[0]["owner_alive"], false);
    let table = agentvisor(&dir, &["rig", "status"]);
    assert!(text(&table.stdout).contains("# stale: no live runtime owns"), "{}", text(&table.stdout));
    assert_eq!(std::fs::read(dir.join("rigs.sqlite")).expect("read"), before, "nothing written");
    if dir == mounted {
        let _ = Command::new("umount").arg(&mounted).status();
    }
}
