//! The live "waiting on model" line: model-call progress from telemetry, drawn on stderr
//! while a call is under way, on a terminal only (never into stdout, never into `--json`).

use agentvisor::agent::telemetry::{ModelProgress, Telemetry};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;
use tokio::time::Instant;

/// One line per call under way: `waiting on model 12 s, 340 tokens`.
pub(crate) fn progress_line(progress: &ModelProgress, since: Instant) -> String {
    let elapsed = Duration::from_millis(progress.elapsed_ms).max(since.elapsed());
    let attempt =
        if progress.attempt > 1 { format!(" (attempt {})", progress.attempt) } else { String::new() };
    format!(
        "  {} waiting on model {} s, {} tokens{attempt}",
        progress.pid.get(..8).unwrap_or(&progress.pid),
        elapsed.as_secs(),
        progress.output_tokens
    )
}

/// Draws the live line on stderr until aborted; does nothing unless stderr is a terminal.
pub(crate) async fn draw_progress(telemetry: Telemetry) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let mut progress = telemetry.subscribe_progress();
    let mut calls: BTreeMap<String, (ModelProgress, Instant)> = BTreeMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            update = progress.recv() => match update {
                Ok(p) if p.done => { calls.remove(&p.pid); }
                Ok(p) => {
                    let since = calls.get(&p.pid).map_or_else(Instant::now, |(_, s)| *s);
                    calls.insert(p.pid.clone(), (p, since));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => {}
        }
        let line = calls.values().map(|(p, since)| progress_line(p, *since)).collect::<Vec<_>>().join(" |");
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }
}
