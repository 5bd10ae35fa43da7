//! `agentvisor script FILE`: run a scenario file (see `docs/scenarios.md`).
//!
//! Exit codes: 0 when every expectation held, 2 when one did not, 1 when the file cannot be
//! read or parsed or the run cannot go on (the error is one line on stderr).

use agentvisor::scenario::{Scenario, run_scenario};
use anyhow::Context;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `agentvisor script`.
#[derive(clap::Args, Debug)]
pub(crate) struct ScriptArgs {
    /// The scenario file (JSON: `{"steps": [...]}`).
    file: PathBuf,
    /// Print exactly one JSON line per step (the default prints a line a person reads).
    #[arg(long)]
    json: bool,
    /// Run on the --state directory even if the scenario never restarts. By default only a
    /// scenario with a `restart` step uses it; others run in memory and leave no state.
    #[arg(long)]
    persist: bool,
}

pub(crate) async fn run(state: &Path, args: ScriptArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("failed to read the scenario {}", args.file.display()))?;
    let scenario = Scenario::from_json(&text)
        .with_context(|| format!("{} is not a valid scenario", args.file.display()))?
        .relative_to(args.file.parent().unwrap_or(Path::new(".")));
    let dir = (args.persist || scenario.restarts()).then_some(state);
    let mut stdout = std::io::stdout();
    let summary = if args.json {
        run_scenario(&scenario, dir, super::stores::url(), &mut stdout).await?
    } else {
        let mut human = HumanLines { out: &mut stdout, pending: Vec::new() };
        let summary = run_scenario(&scenario, dir, super::stores::url(), &mut human).await?;
        human.flush_pending()?;
        summary
    };
    eprintln!("{}: {summary}", args.file.display());
    Ok(if summary.passed() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// Turns the runner's JSON lines into lines a person reads, as they arrive.
struct HumanLines<'a> {
    out: &'a mut dyn Write,
    pending: Vec<u8>,
}

impl HumanLines<'_> {
    fn render(line: &[u8]) -> String {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return String::from_utf8_lossy(line).into_owned();
        };
        let step = v.get("step").and_then(Value::as_u64).unwrap_or_default();
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("?");
        let head = format!("[{step:>3}] {kind:<13}");
        if let Some(e) = v.get("error") {
            let code = e.get("code").and_then(Value::as_str).unwrap_or("?");
            let message = e.get("message").and_then(Value::as_str).unwrap_or("");
            return format!("{head} ✗ {code}: {message}");
        }
        let mut text = head;
        if v.get("suspended").and_then(Value::as_bool) == Some(true) {
            let handle = v.get("handle").and_then(Value::as_str).unwrap_or("?");
            let how = if v.get("held").is_some() { "held (caller paused)" } else { "suspended" };
            text.push_str(&format!(" … {how}; await {handle}"));
        } else {
            text.push_str(" ✓");
        }
        if let Some(result) = v.get("result") {
            text.push(' ');
            text.push_str(&summarize(result));
        }
        text
    }

    fn flush_pending(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let line = Self::render(&self.pending);
            self.pending.clear();
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }
}

/// A one-line gist of a result: the fields a person scans first, else compact JSON.
fn summarize(result: &Value) -> String {
    const KEYS: [&str; 11] = [
        "pid",
        "child_pid",
        "oid",
        "status",
        "mode",
        "ready",
        "suspended",
        "result_oid",
        "result_handle",
        "passed",
        "epoch",
    ];
    match result {
        Value::Object(map) if map.contains_key("children") => {
            let rows = map.get("children").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let rows: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{}:{}",
                        plain(r.get("pid").unwrap_or(&Value::Null)),
                        plain(r.get("status").unwrap_or(&Value::Null))
                    )
                })
                .collect();
            format!("children=[{}]", rows.join(", "))
        }
        // An agent's telemetry: the event types in order.
        Value::Object(map) if map.contains_key("types") && map.contains_key("events") => {
            let types: Vec<String> =
                map.get("types").and_then(Value::as_array).into_iter().flatten().map(plain).collect();
            format!("types=[{}]", types.join(", "))
        }
        // An agent turn: each call's result (a refusal's code), then where the process stands.
        Value::Object(map) if map.contains_key("tool_results") => {
            let results: Vec<String> = map
                .get("tool_results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    let name = plain(r.get("name").unwrap_or(&Value::Null));
                    match r.pointer("/result/error/code") {
                        Some(code) => format!("{name}:✗ {}", plain(code)),
                        None => format!("{name}:ok"),
                    }
                })
                .collect();
            let mut text = format!("calls=[{}]", results.join(", "));
            for key in ["status", "ended", "waiting"] {
                if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
                    text.push_str(&format!(" {key}={}", plain(v)));
                }
            }
            if let Some(profile) = map.get("next").and_then(|n| n.get("profile")) {
                text.push_str(&format!(" next={}", plain(profile)));
            }
            text
        }
        Value::Object(map) => {
            let mut parts: Vec<String> = KEYS
                .iter()
                .filter_map(|k| map.get(*k).filter(|v| !v.is_null()).map(|v| format!("{k}={}", plain(v))))
                .collect();
            // A merge: what was adopted and why the rest was not.
            if let Some(merged) = map.get("merged_oids").and_then(Value::as_array) {
                let merged: Vec<String> = merged.iter().map(plain).collect();
                parts.push(format!("merged=[{}]", merged.join(", ")));
            }
            if let Some(skipped) = map.get("skipped_oids").and_then(Value::as_array) {
                let skipped: Vec<String> = skipped
                    .iter()
                    .map(|s| {
                        let field = |k: &str| plain(s.get(k).unwrap_or(&Value::Null));
                        format!("{}:{}", field("oid"), field("reason"))
                    })
                    .collect();
                parts.push(format!("skipped=[{}]", skipped.join(", ")));
            }
            // A memory listing: how much it holds.
            if let Some(handles) = map.get("handles").and_then(Value::as_array) {
                parts.push(format!("handles={}", handles.len()));
            }
            if parts.is_empty() { result.to_string() } else { parts.join(" ") }
        }
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| match item.get("error") {
                    Some(e) => format!("✗ {}", e.get("code").and_then(Value::as_str).unwrap_or("?")),
                    None => summarize(item),
                })
                .collect();
            format!("[{}]", parts.join("; "))
        }
        other => other.to_string(),
    }
}

fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

impl Write for HumanLines<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for &byte in buf {
            if byte == b'\n' {
                let line = Self::render(&self.pending);
                self.pending.clear();
                writeln!(self.out, "{line}")?;
            } else {
                self.pending.push(byte);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
