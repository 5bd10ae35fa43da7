//! `Telemetry`: where agent events are emitted, kept, broadcast and written.

use super::answered::CallAnswered;
use super::chunk_messages::ChunkMessages;
use super::context::ContextSource;
use super::error::TelemetryError;
use super::event::{AgentEvent, EventRecord, TransitionKind};
use super::limits::{BROADCAST_CAPACITY, STATED_CHUNKS_MAX};
use super::read::last_seq;
use super::redact::Redactor;
use super::sink::Sink;
use crate::agent::window::ChunkId;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast;

/// The agent layer's event stream: a handle cheap to clone and share between agents.
///
/// Each [`emit`](Telemetry::emit) redacts the event's secrets ([`Telemetry::redact`]), caps
/// what the model said and did, numbers the event (`seq`: one counter per instance shared by
/// its clones, from 1, or after the last record already in its file), stamps it, and then, in
/// seq order, keeps it in memory (the newest
/// [`RECORDS_MAX`](super::RECORDS_MAX), within
/// [`RECORDS_BYTES_MAX`](super::RECORDS_BYTES_MAX)) and appends it to the JSONL file if there
/// is one — both from a writer thread of its own, which serialises it — sends it to
/// subscribers and logs it as a `tracing` event with target `agentvisor::agent`. Emitting
/// never fails and never waits on an observer: a failed file write is logged once and
/// counted, a subscriber that falls behind misses records (`Lagged`), and the writer is waited
/// for only when it is [`WRITER_QUEUE_MAX`](super::WRITER_QUEUE_MAX) hand-overs behind;
/// [`flush`](Telemetry::flush) waits for it.
#[derive(Clone, Debug)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// One lock for numbering, the writer's queue and the broadcast, so that all are in seq
    /// order.
    state: Mutex<State>,
    /// The writer thread: the memory copy and the file. None only if the thread could not be
    /// started for a telemetry kept in memory (then nothing is kept).
    sink: Option<Sink>,
    /// The secrets taken out of every event before anything else sees it; a chunk's
    /// messages keep the set they were emitted under until they are first read.
    redactor: parking_lot::RwLock<Arc<Redactor>>,
    /// Records are shared, not copied: a fork's `context_chunk` records carry a whole
    /// conversation, kept in memory and sent to every subscriber.
    tx: broadcast::Sender<Arc<EventRecord>>,
    progress: broadcast::Sender<ModelProgress>,
    answered: broadcast::Sender<CallAnswered>,
}

/// How a model call under way is going: sent to progress subscribers only (a live line),
/// never kept or written, since it changes with every streamed chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelProgress {
    /// The process.
    pub pid: String,
    /// The incarnation.
    pub agent_id: String,
    /// The turn.
    pub turn: u64,
    /// The attempt, from 1.
    pub attempt: u32,
    /// Since the turn's call started, in milliseconds.
    pub elapsed_ms: u64,
    /// Output tokens so far (estimated until the server reports them).
    pub output_tokens: u64,
    /// Whether the call has ended (answered or failed).
    pub done: bool,
}

#[derive(Debug)]
struct State {
    next_seq: u64,
    /// The chunks whose content each live stream has stated (`context_chunk`), so that a
    /// later reference on the same stream names the chunk by id only.
    stated: StatedChunks,
}

/// Which chunks each stream has stated, bounded by [`STATED_CHUNKS_MAX`] ids in all. A
/// stream's set goes when the stream ends (its `agent_finished`, or its exec or machine
/// transition); past the bound every set is forgotten at once. Forgetting is always safe: a
/// chunk is then stated again, which costs bytes but never leaves a reference unresolved.
#[derive(Debug, Default)]
struct StatedChunks {
    by_stream: HashMap<String, HashSet<ChunkId>>,
    ids: usize,
}

impl StatedChunks {
    /// Records `chunk` as stated on `agent_id`'s stream: false if it already was.
    fn insert(&mut self, agent_id: &str, chunk: ChunkId) -> bool {
        if self.ids >= STATED_CHUNKS_MAX {
            self.by_stream.clear();
            self.ids = 0;
        }
        let new = match self.by_stream.get_mut(agent_id) {
            Some(set) => set.insert(chunk),
            None => self.by_stream.insert(agent_id.to_string(), HashSet::from([chunk])).is_none(),
        };
        self.ids += usize::from(new);
        new
    }

    /// Forgets a stream that `event` ends.
    fn observe(&mut self, agent_id: &str, event: &AgentEvent) {
        let ends = match event {
            AgentEvent::AgentFinished { .. } => true,
            AgentEvent::AgentTransition { kind, .. } => *kind != TransitionKind::Fork,
            _ => false,
        };
        if ends && let Some(set) = self.by_stream.remove(agent_id) {
            self.ids = self.ids.saturating_sub(set.len());
        }
    }
}

/// An event and the stream it goes on: process `pid`, incarnation `agent_id`.
#[derive(Clone, Debug, PartialEq)]
pub struct EventOn {
    /// The process (a `Pid`'s `Display`).
    pub pid: String,
    /// The incarnation whose stream it goes on.
    pub agent_id: String,
    /// The event.
    pub event: AgentEvent,
}

impl Default for Telemetry {
    fn default() -> Telemetry {
        let sink = Sink::memory()
            .inspect_err(|error| {
                tracing::warn!(target: "agentvisor::agent", %error, "agent events will not be kept in memory");
            })
            .ok();
        Telemetry::build(sink, 1)
    }
}

impl Telemetry {
    /// Telemetry kept in memory only (and sent to subscribers and `tracing`).
    pub fn new() -> Telemetry {
        Telemetry::default()
    }

    /// Telemetry that also appends every record to the JSONL file at `path`, creating it if
    /// needed (not its directory). Records already in the file are kept, and `seq` continues
    /// after the last of them ([`last_seq`](super::last_seq), which reads only the file's
    /// tail), so seqs never repeat within one file.
    pub fn with_jsonl(path: impl AsRef<Path>) -> Result<Telemetry, TelemetryError> {
        let path = path.as_ref();
        let last = last_seq(path)?.unwrap_or(0);
        let sink = Sink::file(path)?;
        Ok(Telemetry::build(Some(sink), last.saturating_add(1)))
    }

    fn build(sink: Option<Sink>, next_seq: u64) -> Telemetry {
        let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
        let (progress, _) = broadcast::channel(BROADCAST_CAPACITY);
        let (answered, _) = broadcast::channel(BROADCAST_CAPACITY);
        let state = State { next_seq, stated: StatedChunks::default() };
        let redactor = parking_lot::RwLock::new(Arc::new(Redactor::default()));
        Telemetry {
            inner: Arc::new(Inner { state: Mutex::new(state), sink, redactor, tx, progress, answered }),
        }
    }

    /// Adds `secrets`: from now on each is replaced by [`REDACTED`](super::REDACTED) in every
    /// text of every event, before the event is kept, written, broadcast or logged. Shared by
    /// every clone; empty strings are ignored. An agent host adds its configuration's
    /// `telemetry.redact` literals, the values of its `telemetry.redact_env` variables and of
    /// its brains' API key variables.
    pub fn redact(&self, secrets: impl IntoIterator<Item = String>) {
        Arc::make_mut(&mut *self.inner.redactor.write()).extend(secrets);
    }

    /// Emits `event` on the stream of incarnation `agent_id` of process `pid`, and returns the
    /// record as written.
    pub fn emit(&self, pid: &str, agent_id: &str, event: AgentEvent) -> Arc<EventRecord> {
        let event = self.prepare(event);
        let record = {
            let mut state = self.inner.state.lock();
            let record = self.append(&mut state, pid, agent_id, event);
            if let Some(sink) = &self.inner.sink {
                sink.append(Arc::clone(&record));
            }
            record
        };
        log(&record);
        record
    }

    /// Emits an incarnation's start as one run of consecutive records that no other record
    /// comes between: `transition` (a succession's `agent_transition`, on the outgoing
    /// incarnation's stream), then `spawned` (the new incarnation's `agent_spawned`, whose
    /// `inherited` is `context.named()`), then a `context_chunk` for each chunk of `context`
    /// that `spawned`'s stream has not stated yet, in window order. Returns the records as
    /// written.
    pub fn emit_spawn(
        &self,
        transition: Option<EventOn>,
        spawned: EventOn,
        context: &ContextSource,
    ) -> Vec<Arc<EventRecord>> {
        debug_assert!(
            matches!(&spawned.event, AgentEvent::AgentSpawned { inherited, .. } if *inherited == context.named()),
            "an agent_spawned names the context it is emitted with"
        );
        let EventOn { pid, agent_id, event } = spawned;
        // The transition and the spawn are redacted and capped outside the lock; the chunks'
        // statements cost O(1) each (redacted and capped when first read, `ChunkMessages`), so
        // which ones the stream still needs is decided under the same lock that writes them.
        let run: Vec<EventOn> = transition
            .into_iter()
            .chain([EventOn { pid: pid.clone(), agent_id: agent_id.clone(), event }])
            .map(|on| EventOn { event: self.prepare(on.event), ..on })
            .collect();
        let redactor = Arc::clone(&*self.inner.redactor.read());
        let records: Vec<Arc<EventRecord>> = {
            let mut state = self.inner.state.lock();
            let mut records: Vec<Arc<EventRecord>> =
                run.into_iter().map(|on| self.append(&mut state, &on.pid, &on.agent_id, on.event)).collect();
            for chunk in context.chunks() {
                // A chunk the window holds twice is stated once.
                if !state.stated.insert(&agent_id, chunk.id()) {
                    continue;
                }
                let messages = ChunkMessages::deferred(chunk.shared_items(), Arc::clone(&redactor));
                let event = AgentEvent::ContextChunk { chunk: chunk.id(), messages };
                records.push(self.append(&mut state, &pid, &agent_id, event));
            }
            // One hand-over for the whole run: a long window's statements wake the writer once.
            if let Some(sink) = &self.inner.sink {
                sink.append_all(records.clone());
            }
            records
        };
        records.iter().for_each(|record| log(record));
        records
    }

    /// Redaction, then the cap: so that a cut never leaves the start of a secret. A chunk's
    /// messages are prepared the same way when first read ([`ChunkMessages`]).
    fn prepare(&self, mut event: AgentEvent) -> AgentEvent {
        self.inner.redactor.read().apply(&mut event);
        event.bound();
        event
    }

    /// Numbers and stamps a prepared event and sends it on the broadcast. Called under the
    /// state lock, which the caller holds until it has handed the record to the writer (the
    /// memory copy and the file), so both are in seq order.
    fn append(&self, state: &mut State, pid: &str, agent_id: &str, event: AgentEvent) -> Arc<EventRecord> {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let seq = state.next_seq;
        state.next_seq = seq.saturating_add(1);
        state.stated.observe(agent_id, &event);
        let record = EventRecord { seq, at_ms, pid: pid.to_string(), agent_id: agent_id.to_string(), event };
        let record = Arc::new(record);
        // Sent under the lock so subscribers receive records in seq order; `send` never
        // waits. No subscriber is not an error.
        let _ = self.inner.tx.send(Arc::clone(&record));
        debug_assert!(record.seq >= 1, "seq counts from 1");
        record
    }

    /// Sends a model call's progress to progress subscribers (nothing is kept or written).
    pub fn progress(&self, progress: ModelProgress) {
        let _ = self.inner.progress.send(progress);
    }

    /// A new subscription to model-call progress (a live "waiting on model" line).
    pub fn subscribe_progress(&self) -> broadcast::Receiver<ModelProgress> {
        self.inner.progress.subscribe()
    }

    /// Sends a call's answer to answer subscribers, redacted; nothing is built when no one
    /// subscribes, and nothing is kept or written.
    pub fn answered(
        &self,
        pid: crate::actors::Pid,
        agent_id: &str,
        turn: u64,
        call: (&str, &str),
        result: &str,
    ) {
        if self.inner.answered.receiver_count() == 0 {
            return;
        }
        let (call_id, tool) = call;
        let answered = CallAnswered {
            pid: pid.to_string(),
            agent_id: agent_id.to_string(),
            turn,
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            result: self.inner.redactor.read().redact(result),
        };
        let _ = self.inner.answered.send(answered);
    }

    /// A new subscription to calls answered from now on ([`CallAnswered`]).
    pub fn subscribe_answered(&self) -> broadcast::Receiver<CallAnswered> {
        self.inner.answered.subscribe()
    }

    /// A new subscription; it receives the records emitted from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<EventRecord>> {
        self.inner.tx.subscribe()
    }

    /// Waits until the writer thread has kept, and written to the JSONL file, every record
    /// emitted before the call. A reader of the file in the same process flushes first
    /// ([`records`](Self::records) and [`stream`](Self::stream) do); dropping the last clone
    /// of a `Telemetry` flushes too.
    pub fn flush(&self) {
        // Asked under the state lock, so the flush comes after every record emitted before
        // it; waited for after the lock.
        let flushing = {
            let _state = self.inner.state.lock();
            self.inner.sink.as_ref().map(Sink::flusher)
        };
        if let Some(flushing) = flushing {
            flushing.wait();
        }
    }

    /// The records emitted so far, oldest first: all of them, or the newest that fit in
    /// [`RECORDS_MAX`](super::RECORDS_MAX) records and
    /// [`RECORDS_BYTES_MAX`](super::RECORDS_BYTES_MAX) bytes of JSON.
    pub fn records(&self) -> Vec<Arc<EventRecord>> {
        self.flush();
        self.inner.sink.as_ref().map_or_else(Vec::new, |sink| sink.kept(|_| true))
    }

    /// The records on incarnation `agent_id`'s stream, oldest first (from those
    /// [`records`](Self::records) keeps).
    pub fn stream(&self, agent_id: &str) -> Vec<Arc<EventRecord>> {
        self.flush();
        self.inner.sink.as_ref().map_or_else(Vec::new, |sink| sink.kept(|r| r.agent_id == agent_id))
    }

    /// Records the JSONL file did not get because a write to it failed (0 without a file),
    /// after a [`flush`](Self::flush).
    pub fn dropped_writes(&self) -> u64 {
        self.flush();
        self.inner.sink.as_ref().map_or(0, Sink::dropped)
    }
}

/// Logs a record as a `tracing` event (target `agentvisor::agent`), after the lock.
fn log(record: &EventRecord) {
    tracing::info!(
        target: "agentvisor::agent",
        seq = record.seq,
        pid = %record.pid,
        agent_id = %record.agent_id,
        event = record.event.type_name(),
        "{}",
        record.event.summary()
    );
}
