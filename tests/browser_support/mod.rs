//! A real browser for the console tests: headless Chromium driven over WebDriver
//! (`chromedriver`, Debian's `chromium-driver`) through fantoccini, and the console itself
//! as a child process of the built binary.

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a condition on the page may take before the test fails with the page's text.
/// A bound for a broken console, not a performance claim: conditions usually hold at once.
pub(crate) const PAGE_PATIENCE: Duration = Duration::from_secs(90);

/// A child process killed when dropped.
pub(crate) struct Reaped(pub(crate) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `agentvisor --state STATE console --listen 127.0.0.1:0 EXTRA…`, and the URL it serves.
pub(crate) fn start_console(state: &Path, extra: &[&str]) -> (Reaped, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentvisor"))
        .arg("--state")
        .arg(state)
        .args(["console", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the console");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).expect("read the console's first line");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("the console printed no address: {first:?}"))
        .to_string();
    (Reaped(child), url)
}

/// A free loopback port (bound, then released for chromedriver to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A running chromedriver and a headless Chromium session on it.
pub(crate) struct Browser {
    pub(crate) client: Client,
    _driver: Reaped,
}

/// Starts chromedriver, waits for its "started successfully" line, and opens a session.
pub(crate) async fn browser() -> Browser {
    let port = free_port();
    let mut driver = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "chromedriver runs (Debian: apt-get install chromium chromium-driver; .ci/run installs them)",
        );
    let stdout = driver.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    loop {
        let line = lines.next().expect("chromedriver exited before it started").expect("read");
        if line.contains("started successfully") {
            break;
        }
    }
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let mut options = json!({
        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--no-first-run", "--disable-dev-shm-usage", "--window-size=1400,1100"],
    });
    if Path::new("/usr/bin/chromium").exists() {
        options["binary"] = json!("/usr/bin/chromium");
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), options);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session on headless Chromium");
    let timeouts = fantoccini::wd::TimeoutConfiguration::new(Some(PAGE_PATIENCE), Some(PAGE_PATIENCE), None);
    client.update_timeouts(timeouts).await.expect("set the script timeout");
    Browser { client, _driver: Reaped(driver) }
}

/// Evaluates `script` (a function body returning a value) in the page.
pub(crate) async fn eval(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.expect("the script runs in the page")
}

/// Waits until `script` (a function body) returns true in the page: checked at once, then on
/// every change of the page's DOM (a `MutationObserver`), with no polling. Fails with the
/// page's text after [`PAGE_PATIENCE`].
pub(crate) async fn wait_for(client: &Client, what: &str, script: &str) {
    let waiter = format!(
        r#"const done = arguments[arguments.length - 1];
        const check = () => {{ try {{ return (function () {{ {script} }})() === true; }} catch (e) {{ return false; }} }};
        if (check()) {{ done(true); return; }}
        const observer = new MutationObserver(() => {{ if (check()) {{ observer.disconnect(); done(true); }} }});
        observer.observe(document.documentElement, {{ subtree: true, childList: true, attributes: true, characterData: true }});"#
    );
    match client.execute_async(&waiter, vec![]).await {
        Ok(Value::Bool(true)) => {}
        other => {
            let body = eval(client, "return document.body.innerText").await;
            panic!(
                "the page never showed {what} ({other:?}); it shows:\n{}",
                body.as_str().unwrap_or_default()
            );
        }
    }
}

/// Saves a screenshot of the page to `DIR/NAME.png` when `AGENTVISOR_SCREENSHOTS=DIR` is set
/// (the committed ones under docs/ are made this way).
pub(crate) async fn screenshot(client: &Client, name: &str) {
    let Ok(dir) = std::env::var("AGENTVISOR_SCREENSHOTS") else { return };
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).expect("write the screenshot");
}
