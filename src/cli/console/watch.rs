//! Keeps the console's snapshot current without polling: an inotify watch (the `notify`
//! crate) on the state directory, and on its parent until the directory exists, and for a
//! store kept in PostgreSQL a `LISTEN` on its commits, wake one task that reads the appended
//! agent events and rebuilds the snapshot. Changes that arrive
//! together are taken together: after a wake-up the task waits [`COALESCE`] for the rest of
//! a burst (a commit touches the WAL several times) before it reads.

use super::history::HistoryBook;
use super::machines::MachineBook;
use super::snapshot::snapshot;
use agentvisor::actors::runtime::DB_FILE;
use agentvisor::agent::telemetry::EVENTS_FILE;
use agentvisor::control::database::Changes;
use agentvisor::rig::store::SEAT_STORE_FILE;
use anyhow::Context;
use notify::{RecursiveMode, Watcher};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// How long a wake-up waits for the rest of a burst of file changes.
const COALESCE: Duration = Duration::from_millis(50);

/// Batches of new agent event records a slow page may fall behind by before it is told to
/// read the conversation again.
const RECORD_BATCHES: usize = 256;

/// What the page's event stream carries.
#[derive(Clone)]
pub(crate) struct Frames {
    /// The newest snapshot, as JSON text.
    pub(crate) snapshot: watch::Receiver<Arc<String>>,
    /// Each batch of agent event records read from the file, as `{line, record}` objects.
    pub(crate) records: broadcast::Sender<Arc<Vec<Value>>>,
}

/// The files whose changes matter: the store, the agent event file, the seat store, the
/// image record (their WAL files included), and the state directory itself appearing.
fn relevant(path: &Path, state: &Path) -> bool {
    if path == state {
        return true;
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let base = name.strip_suffix("-wal").unwrap_or(name);
    [DB_FILE, EVENTS_FILE, SEAT_STORE_FILE, crate::cli::sources::SOURCES_FILE].contains(&base)
}

/// Starts the watch, builds the first snapshot, and starts the task that rebuilds it on
/// change; returns the frames it feeds.
pub(crate) async fn start(state: &Path) -> anyhow::Result<Frames> {
    let parent = state.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    if !parent.is_dir() {
        anyhow::bail!("neither {} nor its parent directory exists", state.display());
    }
    let (wake, woken) = mpsc::channel::<()>(1);
    if let Some(url) = crate::cli::stores::url() {
        wake_on_commits(url, wake.clone()).await?;
    }
    let watched = state.to_path_buf();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let matters = match &event {
            Ok(event) => event.paths.iter().any(|p| relevant(p, &watched)),
            // An overflowed or failed watch: rebuild to be safe.
            Err(_) => true,
        };
        if matters {
            // A full channel already holds a wake-up: nothing is lost.
            let _ = wake.try_send(());
        }
    })
    .context("failed to watch the state directory")?;
    watcher
        .watch(&parent, RecursiveMode::NonRecursive)
        .with_context(|| format!("failed to watch {}", parent.display()))?;
    let (publish, snapshot_rx) = watch::channel(Arc::new(String::from("{\"ready\":false}")));
    let (records, _) = broadcast::channel(RECORD_BATCHES);
    let frames = Frames { snapshot: snapshot_rx, records: records.clone() };
    let mut refresher = Refresher {
        state: state.to_path_buf(),
        book: Arc::new(Mutex::new((HistoryBook::new(state), MachineBook::default()))),
        watcher,
        watching_state: false,
        publish,
        records,
    };
    refresher.watch_state();
    refresher.refresh().await;
    tokio::spawn(refresher.run(woken));
    Ok(frames)
}

/// Wakes the refresher on every commit of the store kept in the PostgreSQL database `url`
/// (whichever node owns it, wherever it runs). A connection that ends is reported in the log;
/// the files of the state directory still wake the console.
async fn wake_on_commits(url: &str, wake: mpsc::Sender<()>) -> anyhow::Result<()> {
    let mut changes = Changes::listen(url).await.context("failed to listen for the store's commits")?;
    tokio::spawn(async move {
        while changes.next().await.is_some() {
            // A full channel already holds a wake-up: nothing is lost.
            let _ = wake.try_send(());
        }
        tracing::warn!("console: the connection listening for the store's commits ended");
    });
    Ok(())
}

struct Refresher {
    state: PathBuf,
    /// The event file and the machines as read so far.
    book: Arc<Mutex<(HistoryBook, MachineBook)>>,
    watcher: notify::RecommendedWatcher,
    watching_state: bool,
    publish: watch::Sender<Arc<String>>,
    records: broadcast::Sender<Arc<Vec<Value>>>,
}

impl Refresher {
    /// Watches the state directory itself once it exists.
    fn watch_state(&mut self) {
        if !self.watching_state && self.state.is_dir() {
            match self.watcher.watch(&self.state, RecursiveMode::NonRecursive) {
                Ok(()) => self.watching_state = true,
                Err(e) => tracing::warn!("console: failed to watch {}: {e}", self.state.display()),
            }
        }
    }

    async fn run(mut self, mut woken: mpsc::Receiver<()>) {
        while woken.recv().await.is_some() {
            tokio::time::sleep(COALESCE).await;
            while woken.try_recv().is_ok() {}
            self.watch_state();
            self.refresh().await;
        }
    }

    /// Reads the appended events and rebuilds the snapshot; publishes what changed.
    async fn refresh(&self) {
        let state = self.state.clone();
        let book = self.book.clone();
        let built = tokio::task::spawn_blocking(move || {
            let mut guard = book.lock();
            let (book, machines) = &mut *guard;
            let records = book.update().unwrap_or_else(|e| {
                tracing::warn!("console: failed to read the agent events: {e:#}");
                Vec::new()
            });
            let snapshot = snapshot(&state, book.histories(), machines.current(&state)).unwrap_or_else(|e| {
                json!({ "ready": false, "state": state.display().to_string(), "error": format!("{e:#}") })
            });
            (records, snapshot)
        })
        .await;
        let Ok((records, snapshot)) = built else { return };
        if !records.is_empty() {
            // No page listening is not an error.
            let _ = self.records.send(Arc::new(records));
        }
        let text = snapshot.to_string();
        self.publish.send_if_modified(|current| {
            if **current == text {
                return false;
            }
            *current = Arc::new(text);
            true
        });
    }
}
