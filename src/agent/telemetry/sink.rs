//! `Sink`: the thread that serialises records, keeps the newest in memory and appends them
//! to the event file.

use super::error::TelemetryError;
use super::event::EventRecord;
use super::limits::{RECORDS_BYTES_MAX, RECORDS_MAX, WRITER_QUEUE_MAX};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Where records go after they are numbered: a thread of its own (`agent-events`) that
/// serialises each, keeps the newest in memory (the newest [`RECORDS_MAX`] whose JSON lines
/// add up to at most [`RECORDS_BYTES_MAX`]) and, with a file, appends each line to it.
///
/// Records reach the thread in seq order and are kept and written in that order. Serialising
/// is the costly part of a record (a `context_chunk` also prepares its messages,
/// [`ChunkMessages`](super::ChunkMessages)): here it is the thread's cost, not the emitting
/// agent's, so stating a long inherited window does not slow the fork that inherits it.
/// [`flush`](Self::flusher) waits until every record handed over before it is kept and
/// written; dropping the sink does what is queued and joins the thread. Handing records over
/// waits only when the thread is [`WRITER_QUEUE_MAX`] hand-overs behind. The thread runs at a
/// lower scheduling priority than the agents (Linux: nice +[`WRITER_NICE`]): on a busy machine
/// an observer's copy waits for the work it observes, not the other way round.
///
/// Each line is written with a single `write_all` of the whole line (newline included) on an
/// unbuffered file opened with `O_APPEND`, so concurrent readers see whole lines. Lines reach
/// the operating system, not the disk: the file is not fsynced (it is an observer's log, not a
/// record the runtime recovers from), and a crash loses what was still queued. Fail-stop:
/// after the first failed write the thread writes nothing more to the file (a part of a line
/// may be at its end) and counts every record it drops; it keeps them in memory all the same.
#[derive(Debug)]
pub(super) struct Sink {
    queue: Option<mpsc::SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    kept: Arc<Mutex<Kept>>,
    dropped: Arc<AtomicU64>,
    has_file: bool,
}

/// The records kept in memory, each with the length of its JSON line.
#[derive(Debug, Default)]
struct Kept {
    records: VecDeque<(Arc<EventRecord>, usize)>,
    bytes: usize,
}

enum Job {
    Record(Arc<EventRecord>),
    /// Consecutive records handed over at once (an incarnation's start and the chunks it
    /// states): one place in the queue and one wake-up of the thread.
    Records(Vec<Arc<EventRecord>>),
    Flush(mpsc::SyncSender<()>),
}

/// How much lower than the emitting threads the writer thread runs (a nice value).
pub(super) const WRITER_NICE: i32 = 10;

/// A line buffer this large is given back after its line is written rather than kept for the
/// next: lines are mostly a few hundred bytes, a `context_chunk` tens of KiB.
const LINE_BUFFER_KEEP: usize = 1024 * 1024;

impl Sink {
    /// A sink that keeps records in memory only.
    pub(super) fn memory() -> Result<Sink, TelemetryError> {
        Sink::start(None, Path::new("(memory)"))
    }

    /// A sink that also appends to `path`, creating the file (not its directory).
    pub(super) fn file(path: &Path) -> Result<Sink, TelemetryError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| TelemetryError::Open { path: path.to_path_buf(), source })?;
        Sink::start(Some(file), path)
    }

    fn start(file: Option<File>, path: &Path) -> Result<Sink, TelemetryError> {
        let (queue, jobs) = mpsc::sync_channel(WRITER_QUEUE_MAX);
        let kept = Arc::new(Mutex::new(Kept::default()));
        let dropped = Arc::new(AtomicU64::new(0));
        let has_file = file.is_some();
        let mut writer = Writer {
            path: path.to_path_buf(),
            file,
            failed: false,
            kept: Arc::clone(&kept),
            dropped: Arc::clone(&dropped),
            line: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("agent-events".to_string())
            .spawn(move || writer.run(jobs))
            .map_err(|source| TelemetryError::Open { path: path.to_path_buf(), source })?;
        Ok(Sink { queue: Some(queue), thread: Some(thread), kept, dropped, has_file })
    }

    /// Hands a numbered record to the thread; waits only while the thread is
    /// [`WRITER_QUEUE_MAX`] hand-overs behind.
    pub(super) fn append(&self, record: Arc<EventRecord>) {
        self.hand_over(Job::Record(record), 1);
    }

    /// Hands consecutive numbered records to the thread at once.
    pub(super) fn append_all(&self, records: Vec<Arc<EventRecord>>) {
        let count = records.len() as u64;
        self.hand_over(Job::Records(records), count);
    }

    fn hand_over(&self, job: Job, records: u64) {
        let sent = self.queue.as_ref().is_some_and(|queue| queue.send(job).is_ok());
        if !sent && self.has_file {
            self.dropped.fetch_add(records, Ordering::Relaxed);
        }
    }

    /// Asks the thread to report once every record handed over before the call is kept and
    /// written (or dropped); [`Flushing::wait`] waits for that.
    pub(super) fn flusher(&self) -> Flushing {
        let (done, wait) = mpsc::sync_channel(1);
        let asked = self.queue.as_ref().is_some_and(|queue| queue.send(Job::Flush(done)).is_ok());
        Flushing(asked.then_some(wait))
    }

    /// The records kept, oldest first, that `keep` accepts (as of the last flush).
    pub(super) fn kept(&self, keep: impl Fn(&EventRecord) -> bool) -> Vec<Arc<EventRecord>> {
        self.kept.lock().records.iter().filter(|(r, _)| keep(r)).map(|(r, _)| Arc::clone(r)).collect()
    }

    /// Records the file did not get because a write to it failed, among those handled so far.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A flush asked of the writer thread.
pub(super) struct Flushing(Option<mpsc::Receiver<()>>);

impl Flushing {
    /// Waits for the thread to reach the flush.
    pub(super) fn wait(self) {
        if let Some(wait) = self.0 {
            // An error means the thread is gone, and with it anything left to wait for.
            let _ = wait.recv();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has done what is queued.
        self.queue = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!(target: "agentvisor::agent", "the agent event writer panicked");
        }
    }
}

struct Writer {
    path: PathBuf,
    file: Option<File>,
    failed: bool,
    kept: Arc<Mutex<Kept>>,
    dropped: Arc<AtomicU64>,
    /// The line being written, its allocation reused from one record to the next.
    line: Vec<u8>,
}

impl Writer {
    fn run(&mut self, jobs: mpsc::Receiver<Job>) {
        lower_priority();
        for job in jobs {
            match job {
                Job::Record(record) => self.handle(record),
                Job::Records(records) => records.into_iter().for_each(|record| self.handle(record)),
                Job::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    fn handle(&mut self, record: Arc<EventRecord>) {
        // Serialised once, for the file and for the memory copy's byte bound.
        self.line.clear();
        let line = serde_json::to_writer(&mut self.line, &*record);
        let bytes = if line.is_ok() { self.line.len() } else { 0 };
        self.keep(Arc::clone(&record), bytes);
        if self.file.is_some() {
            self.write(record.seq, line);
        }
        if self.line.capacity() > LINE_BUFFER_KEEP {
            self.line = Vec::new();
        }
    }

    fn keep(&self, record: Arc<EventRecord>, bytes: usize) {
        let mut kept = self.kept.lock();
        while !kept.records.is_empty()
            && (kept.records.len() >= RECORDS_MAX || kept.bytes.saturating_add(bytes) > RECORDS_BYTES_MAX)
        {
            if let Some((_, dropped)) = kept.records.pop_front() {
                kept.bytes = kept.bytes.saturating_sub(dropped);
            }
        }
        kept.records.push_back((record, bytes));
        kept.bytes = kept.bytes.saturating_add(bytes);
    }

    /// Appends the line just serialised. A failure, serialising included, is logged once,
    /// then counted.
    fn write(&mut self, seq: u64, serialised: Result<(), serde_json::Error>) {
        let Some(file) = self.file.as_mut().filter(|_| !self.failed) else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let line = &mut self.line;
        let result = serialised.map_err(std::io::Error::from).and_then(|()| {
            line.push(b'\n');
            file.write_all(line)?;
            file.flush()
        });
        if let Err(error) = result {
            tracing::warn!(
                target: "agentvisor::agent",
                path = %self.path.display(),
                seq,
                %error,
                "failed to append to the agent event file; later events are kept in memory only"
            );
            self.failed = true;
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Lowers the calling thread's scheduling priority by [`WRITER_NICE`]. On Linux a nice value
/// is a thread's own (`setpriority` of the caller applies to the calling thread only); other
/// systems would lower the whole process, so there the thread keeps its priority. A failure
/// is logged and otherwise harmless.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let now = rustix::process::getpriority_process(None).unwrap_or(0);
        if let Err(error) = rustix::process::setpriority_process(None, now.saturating_add(WRITER_NICE)) {
            tracing::debug!(target: "agentvisor::agent", %error, "the agent event writer keeps its priority");
        }
    }
}
