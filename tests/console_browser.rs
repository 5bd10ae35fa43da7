//! `agentvisor console` in a real browser (headless Chromium over WebDriver): the example
//! rig's tree with its exec drawn as one box, its fork as a linked copy and its machine state
//! highlighted; a live run filling the page without a reload; a cancel from the page reaching
//! the process and `ps`.

mod browser_support;
mod cli_support;

use browser_support::{browser, eval, screenshot, start_console, wait_for};
use cli_support::{Killed, agentvisor, demo_killed_after, make_tree, rows, text};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

const RIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rigs/swarm.yaml");

/// `rig status swarm --json`'s seats.
fn seats(state: &Path) -> Vec<Value> {
    let out = agentvisor(state, &["rig", "status", "swarm", "--json"]);
    assert!(out.status.success(), "rig status: {}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).expect("json");
    value["seats"].as_array().expect("seats").clone()
}

fn seat_pid(seats: &[Value], member: &str) -> String {
    let seat = seats.iter().find(|s| s["member"] == member).expect("the seat");
    seat["pid"].as_str().expect("a realized seat has a pid").to_string()
}

fn run_rig(state: &Path) {
    let out = agentvisor(state, &["run", RIG]);
    assert!(out.status.success(), "run: {}\n{}", text(&out.stdout), text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_example_rig_draws_its_exec_as_one_box_its_fork_as_a_copy_and_its_machine_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    run_rig(&state);
    let processes = rows(&state).len();
    let seats = seats(&state);
    let lead = seat_pid(&seats, "lead");
    let second = seat_pid(&seats, "second-opinion");
    let (_console, url) = start_console(&state, &[]);
    let b = browser().await;
    b.client.goto(&url).await.expect("open the console");
    wait_for(
        &b.client,
        "every process",
        &format!("return document.querySelectorAll('.proc').length === {processes}"),
    )
    .await;

    // The exec into the review machine: one box, its incarnations stacked, the move an exec.
    let lead_box = format!(".proc[data-pid='{lead}']");
    let incarnations = eval(
        &b.client,
        &format!(
            "return [...document.querySelectorAll(\"{lead_box} .incarnation\")].map(i => i.dataset.via)"
        ),
    )
    .await;
    let vias: Vec<&str> = incarnations.as_array().expect("a list").iter().filter_map(Value::as_str).collect();
    assert!(vias.len() >= 2, "the lead box stacks its incarnations: {vias:?}");
    assert!(vias.contains(&"exec"), "one of them began by exec: {vias:?}");
    assert_eq!(
        eval(&b.client, &format!("return document.querySelectorAll(\"[data-pid='{lead}']\").length")).await,
        Value::from(1),
        "an exec is the same process: one box"
    );
    // The machine drawn whole, its current state highlighted, every state it went through.
    let machine = format!("{lead_box} .machine[data-machine='review']");
    let current = eval(&b.client, &format!("return [...document.querySelectorAll(\"{machine} .fsm-state.current\")].map(s => s.dataset.state)")).await;
    assert_eq!(current, serde_json::json!(["publish"]));
    let drawn = eval(&b.client, &format!("return [...document.querySelectorAll(\"{machine} .fsm-state\")].map(s => s.dataset.state + (s.classList.contains('visited') ? '*' : ''))")).await;
    assert_eq!(drawn, serde_json::json!(["draft*", "check*", "publish*"]));

    // The fork: a box of its own, marked a copy, linked to the lead and the turn it was made at.
    let fork = eval(&b.client, &format!("const f = document.querySelector(\"{lead_box}\").parentElement.querySelector('.proc.fork .forked-from'); return f ? [f.querySelector('a').dataset.goto, f.textContent] : null")).await;
    let fork = fork.as_array().expect("the lead has a forked child drawn as a copy");
    assert_eq!(fork[0], Value::from(lead.clone()));
    assert!(fork[1].as_str().expect("text").contains("at turn"), "{fork:?}");
    // The forked seat is drawn as a copy, linked to the seat whose session it started from.
    let source = eval(&b.client, &format!("const s = document.querySelector(\".proc.fork[data-pid='{second}'] .seat-source\"); return s && [s.textContent, s.querySelector('a').dataset.goto]")).await;
    let source = source.as_array().expect("the forked seat is a copy with its source");
    assert!(source[0].as_str().is_some_and(|s| s.starts_with("forked from source session")), "{source:?}");
    assert_eq!(source[1], Value::from(lead.clone()), "linked to the lead's box");
    screenshot(&b.client, "console-tree").await;

    // The conversation of the lead across its incarnations, with the exec marked.
    b.client
        .execute(&format!("document.querySelector(\"{lead_box} .open-conversation\").click()"), vec![])
        .await
        .expect("open the conversation");
    wait_for(
        &b.client,
        "the lead's streams",
        "return document.querySelectorAll('#conversation .stream').length >= 2",
    )
    .await;
    wait_for(&b.client, "the exec mark", "return [...document.querySelectorAll('.event.transition-exec')].some(e => e.textContent.includes('exec →'))").await;
    wait_for(&b.client, "turns", "return document.querySelectorAll('#conversation .event.turn').length > 0")
        .await;
    screenshot(&b.client, "console-conversation").await;

    // The seats, with their own tokens and sources.
    b.client
        .execute("document.querySelector(\".tab[data-view='seats']\").click()", vec![])
        .await
        .expect("seats tab");
    let row = eval(&b.client, "const r = document.querySelector(\"tr.seat[data-member='second-opinion']\"); return r && [r.querySelector('.token').textContent, r.querySelector('.source').textContent]").await;
    let row = row.as_array().expect("the forked seat's row");
    let token = seats.iter().find(|s| s["member"] == "second-opinion").expect("seat")["token"].clone();
    assert_eq!(row[0], token);
    assert!(row[1].as_str().expect("text").starts_with("forked from source session"), "{row:?}");
    screenshot(&b.client, "console-seats").await;
    b.client.close().await.expect("close the session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_run_fills_the_page_without_a_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("mkdir");
    let (_console, url) = start_console(&state, &[]);
    let b = browser().await;
    b.client.goto(&url).await.expect("open the console");
    wait_for(&b.client, "the empty state", "return document.body.innerText.includes('No processes yet')")
        .await;
    let load = eval(&b.client, "return window.__consoleLoadId").await;
    let frames = eval(&b.client, "return window.__consoleFrames").await;

    let run = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(&state)
        .args(["run", RIG])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run the rig");
    assert!(run.status.success(), "run: {}", text(&run.stderr));
    let processes = rows(&state).len();
    wait_for(
        &b.client,
        "the finished tree",
        &format!("return document.querySelectorAll('.proc').length === {processes} && document.querySelectorAll('.proc.status-running, .proc.status-runnable').length === 0"),
    )
    .await;
    assert_eq!(eval(&b.client, "return window.__consoleLoadId").await, load, "the page was not reloaded");
    let later = eval(&b.client, "return window.__consoleFrames").await;
    assert!(later.as_u64() > frames.as_u64(), "updates arrived on the stream: {frames} then {later}");
    b.client.close().await.expect("close the session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_from_the_page_reaches_the_process_and_ps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    make_tree(&data, 3, 3);
    assert_eq!(demo_killed_after(&state, &data, 6), Killed::AtCommit);
    let before = rows(&state);
    let root = before.iter().find(|r| r["parent"].is_null()).expect("a root")["pid"]
        .as_str()
        .expect("pid")
        .to_string();
    let (_console, url) = start_console(&state, &["--control"]);
    let b = browser().await;
    b.client.goto(&url).await.expect("open the console");
    let button = format!("button.act[data-action='cancel'][data-pid='{root}']");
    wait_for(
        &b.client,
        "the cancel button",
        &format!("return document.querySelector(\"{button}\") !== null"),
    )
    .await;
    b.client
        .execute(&format!("document.querySelector(\"{button}\").click()"), vec![])
        .await
        .expect("click cancel");
    wait_for(
        &b.client,
        "the root killed",
        &format!("return document.querySelector(\".proc[data-pid='{root}']\").dataset.status === 'killed'"),
    )
    .await;
    let after = rows(&state);
    let row = after.iter().find(|r| r["pid"] == root.as_str()).expect("the root row");
    assert_eq!(row["status"], "killed", "{row}");
    b.client.close().await.expect("close the session");
}
