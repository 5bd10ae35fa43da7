//! `agentvisor events [--follow] [--json] [PID]`: the agent event file of a state directory,
//! one line per record.

use super::output::{cell, open_view, resolve_pid};
use agentvisor::actors::Pid;
use agentvisor::agent::telemetry::{EVENTS_FILE, EventFileReader, EventLine};
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// How often `--follow` looks at the file's length. A person watching a terminal does not
/// notice 200 ms; polling a length costs one `stat`.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Width of the agent column; longer ids are clipped (the full id is in `--json`).
const AGENT_WIDTH: usize = 24;

/// Arguments of `agentvisor events`.
#[derive(clap::Args, Debug)]
pub(crate) struct EventsArgs {
    /// Only this process's events.
    pid: Option<String>,
    /// Keep printing events as they are appended, until interrupted.
    #[arg(long)]
    follow: bool,
    /// Print the records as written: one JSON object per line.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(state: &Path, args: EventsArgs) -> anyhow::Result<ExitCode> {
    let pid = match args.pid.as_deref().map(|text| events_pid(state, text)).transpose() {
        Ok(pid) => pid.map(|p| p.to_string()),
        Err(e) => {
            eprintln!("agentvisor: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let path = state.join(EVENTS_FILE);
    let mut printer = Printer { json: args.json, pid, header_done: false };
    let mut reader = EventFileReader::new(&path);
    if !path.exists() {
        outln!("no agent events recorded in {}", state.display());
        if !args.follow {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if !args.follow {
        let mut lines = reader.read_new()?;
        lines.extend(reader.finish()?);
        return Ok(printer.print(&lines).unwrap_or(ExitCode::SUCCESS));
    }
    // Made once, so that an interrupt while the file is being read is not missed.
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut seen_len = None;
    loop {
        let len = std::fs::metadata(&path).map(|m| m.len()).ok();
        if len.is_some() && len != seen_len {
            seen_len = len;
            let lines = reader.read_new()?;
            if let Some(code) = printer.print(&lines) {
                return Ok(code);
            }
        }
        tokio::select! {
            _ = &mut interrupted => return Ok(ExitCode::SUCCESS),
            () = tokio::time::sleep(FOLLOW_POLL) => {}
        }
    }
}

/// The process a `PID` argument names: a whole pid, or (when the state directory has a store
/// to look it up in) a unique prefix or the short id the views print, resolved as every other
/// view does.
fn events_pid(state: &Path, text: &str) -> Result<Pid, String> {
    let whole = match text.parse::<Pid>() {
        Ok(pid) => return Ok(pid),
        Err(e) => e,
    };
    let short = text.len() >= 4 && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if !short || !super::stores::has_state(state) {
        return Err(format!("{whole} (as `agentvisor ps` prints it)"));
    }
    let view = open_view(state).map_err(|e| format!("{e:#}"))?;
    resolve_pid(&view.rt, text).map_err(|e| format!("{e:#}"))
}

struct Printer {
    json: bool,
    /// The process to show, as its `Display`.
    pid: Option<String>,
    header_done: bool,
}

impl Printer {
    /// Prints the lines that pass the filter; `Some(code)` when the command should end with
    /// it. A closed stdout (`| head`) ends it quietly and successfully.
    fn print(&mut self, lines: &[EventLine]) -> Option<ExitCode> {
        match self.write(lines) {
            Ok(()) => None,
            Err(e) if e.kind() == ErrorKind::BrokenPipe => Some(ExitCode::SUCCESS),
            Err(e) => {
                eprintln!("agentvisor: failed to write to stdout: {e}");
                Some(ExitCode::from(1))
            }
        }
    }

    fn write(&mut self, lines: &[EventLine]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        for line in lines {
            if self.pid.as_deref().is_some_and(|pid| pid != line.record.pid) {
                continue;
            }
            if self.json {
                writeln!(out, "{}", line.text)?;
                continue;
            }
            if !self.header_done {
                self.header_done = true;
                writeln!(
                    out,
                    "{:>6}  {:<24}  {:<36}  {:<AGENT_WIDTH$}  {:<16}  SUMMARY",
                    "SEQ", "TIME", "PID", "AGENT", "TYPE"
                )?;
            }
            let record = &line.record;
            writeln!(
                out,
                "{:>6}  {:<24}  {:<36}  {:<AGENT_WIDTH$}  {:<16}  {}",
                record.seq,
                utc_time(record.at_ms),
                record.pid,
                cell(&record.agent_id, AGENT_WIDTH),
                record.event.type_name(),
                record.event.summary()
            )?;
        }
        out.flush()
    }
}

/// Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn utc_time(at_ms: u64) -> String {
    let (days, ms_of_day) = (at_ms / 86_400_000, at_ms % 86_400_000);
    let (year, month, day) = civil_from_days(days);
    let seconds = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        ms_of_day % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
