//! `agentvisor rig status`: rigs and their seats, from the seat store in the state directory.
//!
//! Wording is honest about what a seat is: a realized seat with a source "forked from source
//! session <id>"; nothing here says a seat was resumed, restored or snapshotted.

use super::output::cell;
use agentvisor::actors::runtime::lock::{self, Owner};
use agentvisor::rig::store::{RigRecord, SeatRecord, SeatStatus, SeatStore};
use agentvisor::rig::{RigId, RigSpec};
use anyhow::{Context, bail};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `agentvisor rig status`.
#[derive(clap::Args, Debug)]
pub(crate) struct RigStatusArgs {
    /// The rig to show seat by seat; without it, every rig with its seat counts.
    rig_id: Option<String>,
    /// Print JSON: the rig records (with seat counts), or the rig and its seat records.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(state: &Path, args: RigStatusArgs) -> anyhow::Result<ExitCode> {
    // Read-only: a view creates no schema and switches no journal mode.
    let Some(store) = super::stores::seats_read_only(state)? else {
        bail!("no rigs at {} (start a rig first, or pass --state DIR)", super::stores::describe(state));
    };
    let rigs = store.rigs()?;
    // Seats still declared or resolved progress only while a runtime owns the directory.
    let owner_alive = state.exists()
        && lock::probe(state).with_context(|| format!("failed to read the lock of {}", state.display()))?
            == Owner::Alive;
    let Some(wanted) = args.rig_id else {
        let mut counted = Vec::with_capacity(rigs.len());
        for rig in rigs {
            let seats = store.seats(&rig.id)?;
            counted.push((rig, counts(&seats)));
        }
        if args.json {
            let out: Vec<_> = counted
                .iter()
                .map(|(rig, counts)| {
                    let mut value = serde_json::to_value(rig).unwrap_or_default();
                    if let Some(map) = value.as_object_mut() {
                        map.insert("seat_counts".into(), counts_json(counts));
                        map.insert("owner_alive".into(), json!(owner_alive));
                    }
                    value
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            let pending = counted.iter().any(|(_, [declared, resolved, ..])| declared + resolved > 0);
            if pending && !owner_alive {
                outln!("{}", stale_note(state));
            }
            out!("{}", rigs_table(&counted));
        }
        return Ok(ExitCode::SUCCESS);
    };
    let Some(rig) = rigs.iter().find(|rig| rig.id.as_str() == wanted) else {
        let known: Vec<&str> = rigs.iter().map(|rig| rig.id.as_str()).collect();
        bail!(
            "no rig {wanted} in {} (known rigs: {})",
            super::stores::describe_seats(state),
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        );
    };
    let seats = store.seats(&rig.id)?;
    // The edges the spec drew between seats (OpenRig `edges`), as the rig was created.
    let edges = serde_json::from_str::<RigSpec>(&rig.spec_json).map(|spec| spec.edges).unwrap_or_default();
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "rig": rig, "seats": seats, "edges": edges, "owner_alive": owner_alive })
            )?
        );
    } else {
        let pending = seats.iter().any(|s| matches!(s.status, SeatStatus::Declared | SeatStatus::Resolved));
        if pending && !owner_alive {
            outln!("{}", stale_note(state));
        }
        out!("{}", seats_table(&rig.id, &seats));
        if !edges.is_empty() {
            outln!("edges:");
            for edge in &edges {
                outln!("  {} {} {}", edge.from, edge.kind.as_str(), edge.to);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The line above a table whose declared or resolved seats no runtime is launching.
fn stale_note(state: &Path) -> String {
    format!(
        "# stale: no live runtime owns {}; declared and resolved seats are not being launched",
        state.display()
    )
}

/// Seats per status, in [`SeatStatus::ALL`] order.
fn counts(seats: &[SeatRecord]) -> [usize; 4] {
    SeatStatus::ALL.map(|status| seats.iter().filter(|seat| seat.status == status).count())
}

fn counts_json(counts: &[usize; 4]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = SeatStatus::ALL
        .iter()
        .zip(counts)
        .map(|(status, n)| (status.as_str().to_owned(), json!(n)))
        .collect();
    serde_json::Value::Object(map)
}

/// The table of rigs: id, seats, seats per status, spec file.
fn rigs_table(rigs: &[(RigRecord, [usize; 4])]) -> String {
    let mut out = format!(
        "{:<24}  {:>5}  {:>8}  {:>8}  {:>8}  {:>6}  SPEC\n",
        "RIG", "SEATS", "DECLARED", "RESOLVED", "REALIZED", "FAILED"
    );
    for (rig, [declared, resolved, realized, failed]) in rigs {
        let total = declared + resolved + realized + failed;
        out.push_str(&format!(
            "{:<24}  {total:>5}  {declared:>8}  {resolved:>8}  {realized:>8}  {failed:>6}  {}\n",
            cell(rig.id.as_str(), 24),
            rig.spec_path
        ));
    }
    if rigs.is_empty() {
        out.push_str("(no rigs)\n");
    }
    out
}

/// One line per seat: member, runtime, status, token, tokens used, cost, source, failed step,
/// error.
fn seats_table(rig: &RigId, seats: &[SeatRecord]) -> String {
    let mut out = format!(
        "{:<20}  {:<11}  {:<8}  {:<36}  {:>9}  {:>8}  {:>10}  {:<60}  {:<16}  ERROR\n",
        "MEMBER", "RUNTIME", "STATUS", "TOKEN", "TOKENS_IN", "OUT", "COST_USD", "SOURCE", "FAILED_STEP"
    );
    for seat in seats {
        let (input, output, cost) = usage_cells(seat.usage.as_ref());
        out.push_str(&format!(
            "{:<20}  {:<11}  {:<8}  {:<36}  {input:>9}  {output:>8}  {cost:>10}  {:<60}  {:<16}  {}\n",
            cell(seat.member.as_str(), 20),
            seat.runtime.as_str(),
            seat.status.as_str(),
            seat.token.as_ref().map_or("-", |token| token.as_str()),
            source_words(seat),
            seat.failed_step.as_deref().map_or_else(|| "-".to_owned(), |step| cell(step, 16)),
            seat.error.as_deref().map_or_else(|| "-".to_owned(), |error| cell(error, 100)),
        ));
    }
    if seats.is_empty() {
        out.push_str(&format!("(rig {rig} has no seats)\n"));
    }
    out
}

/// A seat's input tokens, output tokens and cost as table cells: `-` where nothing was
/// reported, and `not reported` for a cost the runtime did not give.
pub(crate) fn usage_cells(usage: Option<&agentvisor::agent::brain::Usage>) -> (String, String, String) {
    match usage {
        None => ("-".into(), "-".into(), "-".into()),
        Some(usage) => (
            usage.input_tokens.to_string(),
            usage.output_tokens.to_string(),
            usage
                .cost_micros
                .map_or_else(|| "not reported".into(), agentvisor::agent::money::format_usd_micros),
        ),
    }
}

/// What a seat's source means for it, in words that claim only what happened: a fresh seat has
/// none; a realized one was forked from it; a failed one was not.
fn source_words(seat: &SeatRecord) -> String {
    let Some(source) = &seat.source else { return "-".to_owned() };
    match seat.status {
        SeatStatus::Declared | SeatStatus::Resolved => format!("to fork from source session {source}"),
        SeatStatus::Realized => format!("forked from source session {source}"),
        SeatStatus::Failed => format!("not forked from source session {source}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{rigs_table, seats_table, source_words};
    use agentvisor::rig::store::{MemorySeatStore, SeatRecord, SeatStore};
    use agentvisor::rig::{MemberId, NativeId, RigId, RigSpec};

    fn store() -> (MemorySeatStore, RigId) {
        let spec: RigSpec = serde_json::from_value(serde_json::json!({
            "id": "review",
            "members": [
                { "id": "fresh", "runtime": "native", "cwd": "." },
                { "id": "forked", "runtime": "claude-code", "cwd": ".",
                  "session_source": { "mode": "fork", "native_id": "parent-1" } },
                { "id": "broken", "runtime": "codex", "cwd": ".",
                  "session_source": { "mode": "fork", "native_id": "parent-2" } },
            ]
        }))
        .expect("spec");
        let store = MemorySeatStore::new();
        store.create_rig(&spec, "review.yaml").expect("create");
        let rig = spec.id;
        let id = |s: &str| -> MemberId { serde_json::from_value(serde_json::json!(s)).expect("id") };
        store.resolve(&rig, &id("forked")).expect("resolve");
        store
            .realize(&rig, &id("forked"), &NativeId::from_token("child-1").expect("token"), None)
            .expect("realize");
        store
            .fail(&rig, &id("broken"), "resolve_source", "codex has no thread parent-2", None)
            .expect("fail");
        (store, rig)
    }

    #[test]
    fn seat_lines_say_forked_from_source_session_and_nothing_else() {
        let (store, rig) = store();
        let seats: Vec<SeatRecord> = store.seats(&rig).expect("seats");
        let table = seats_table(&rig, &seats);
        let line = |member: &str| table.lines().find(|l| l.starts_with(member)).expect("a line").to_owned();
        assert!(line("forked").contains("child-1"), "{table}");
        assert!(line("forked").contains("forked from source session parent-1"), "{table}");
        assert!(
            line("broken").contains("resolve_source") && line("broken").contains("not forked"),
            "{table}"
        );
        assert!(line("fresh").contains("declared"), "{table}");
        for word in ["resumed", "restored", "snapshot"] {
            assert!(!table.to_lowercase().contains(word), "{word} in {table}");
        }
        assert_eq!(source_words(&seats[0]), "-");
    }

    #[test]
    fn the_rig_table_counts_seats_per_status() {
        let (store, rig) = store();
        let record = store.rig(&rig).expect("read").expect("rig");
        let seats = store.seats(&rig).expect("seats");
        let table = rigs_table(&[(record, super::counts(&seats))]);
        let line = table.lines().nth(1).expect("a line");
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words, ["review", "3", "1", "0", "1", "1", "review.yaml"], "{table}");
    }
}
