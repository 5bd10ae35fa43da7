//! The control protocol through the database, for a state kept in PostgreSQL: a host action
//! from a machine (or a state directory) that does not share the owner's control socket.
//!
//! The database is the truth and `LISTEN`/`NOTIFY` the wake-up. A client writes its request
//! (the socket protocol's JSON) as a row of `host_requests`, listening on the answers channel
//! first, and notifies the owner in the same statement; the owner, listening on the requests
//! channel, takes every row nobody took, in id order, whenever it is woken (so a notification
//! lost while it was busy costs nothing: the next one, or its start, finds the row), answers
//! each in a task of its own, writes the answer line into the row and notifies the answers
//! channel with the row's id in one statement. A client that hears nothing within
//! [`ANSWER_WAIT`] reads its row once more and reports that the owner did not answer. Each
//! shard of a database has its own table and channels.

use super::ControlError;
use super::limits::STOP_GRACE_MS;
use super::protocol::{HostError, Line, Request};
use super::server::handle;
use crate::actors::runtime::Runtime;
use crate::actors::store::{
    CHANGES_CHANNEL, OWNER_CHANNEL, channel_name, channel_sql, create_shard_schema_sql,
};
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tokio_util::sync::CancellationToken;

/// The channel the owner listens on.
const REQUESTS_CHANNEL: &str = "agentvisor_host_requests";

/// The channel clients listen on; each notification's payload is an answered row's id.
const ANSWERS_CHANNEL: &str = "agentvisor_host_answers";

/// How long a client waits for the owner's answer.
pub const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// The request table as it is now.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS host_requests (
    id      BIGSERIAL PRIMARY KEY,
    request TEXT NOT NULL,
    answer  TEXT NULL,
    taken   BOOLEAN NOT NULL DEFAULT false
)";

/// What a table created before `taken` existed lacks; run by the owner when it starts serving
/// (a client's insert needs nothing of it: the column has a default).
const MIGRATE: &str =
    "ALTER TABLE host_requests ADD COLUMN IF NOT EXISTS taken BOOLEAN NOT NULL DEFAULT false";

/// The advisory lock the request table's creation takes.
const HOST_REQUESTS_LOCK: i64 = 0x6167_656e_7476_0004;

/// The answer to a request an owner took and died before answering: it is not run again.
pub const TAKEN_BY_A_DEAD_OWNER: &str = "taken_by_a_dead_owner";

fn db_error(e: tokio_postgres::Error) -> ControlError {
    ControlError::Database(crate::actors::store::describe_postgres_error(&e))
}

/// Connects to `url` and listens on `channel`: the client, and the payloads of the
/// notifications it hears. The connection is driven by a task of its own, which ends with it.
async fn listen(url: &str, channel: &str) -> Result<(Client, mpsc::UnboundedReceiver<String>), ControlError> {
    listen_after(url, None, channel).await
}

/// [`listen`], running `prepare` (SQL), if any, on the connection first.
async fn listen_after(
    url: &str,
    prepare: Option<&str>,
    channel: &str,
) -> Result<(Client, mpsc::UnboundedReceiver<String>), ControlError> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await.map_err(db_error)?;
    let (notes, heard) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(note)) => {
                    if notes.send(note.payload().to_string()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "a host-request connection ended");
                    return;
                }
            }
        }
    });
    if let Some(prepare) = prepare {
        client.batch_execute(prepare).await.map_err(db_error)?;
    }
    // Each shard's channels carry its name: the server names them for this connection.
    let channel = channel_name(&client, channel).await.map_err(db_error)?;
    client.batch_execute(&format!("LISTEN {channel}")).await.map_err(db_error)?;
    Ok((client, heard))
}

/// [`listen`], creating the shard's schema and the request table first if needed, under a
/// lock (concurrent `CREATE TABLE IF NOT EXISTS` can collide: a client and a node starting
/// together). The owner (`serving`) also migrates an older table; a client only creates a
/// missing one, so that a request takes no table lock beside the owner's reads.
async fn listen_for_requests(
    url: &str,
    channel: &str,
    serving: bool,
) -> Result<(Client, mpsc::UnboundedReceiver<String>), ControlError> {
    let shard = create_shard_schema_sql();
    let prepare = if serving {
        format!(
            "{shard}; BEGIN; SELECT pg_advisory_xact_lock({HOST_REQUESTS_LOCK}); {TABLE}; {MIGRATE}; COMMIT"
        )
    } else {
        format!(
            "{shard}; DO $$ BEGIN IF to_regclass('host_requests') IS NULL THEN \
             PERFORM pg_advisory_xact_lock({HOST_REQUESTS_LOCK}); EXECUTE '{}'; END IF; END $$",
            TABLE.replace('\'', "''")
        )
    };
    listen_after(url, Some(&prepare), channel).await
}

/// The commits of the store kept in a PostgreSQL database, as they happen: each committing
/// transaction of its owner notifies [`CHANGES_CHANNEL`]. Writes nothing to the database.
pub struct Changes {
    _client: Client,
    heard: mpsc::UnboundedReceiver<String>,
}

impl Changes {
    /// Listens for the commits of the store in the database `url` names.
    pub async fn listen(url: &str) -> Result<Changes, ControlError> {
        Changes::on(url, CHANGES_CHANNEL).await
    }

    /// Listens for the releases of the store's owner lease instead: a node that stops cleanly
    /// ends its lease and notifies [`OWNER_CHANNEL`], so a node standing by claims at once.
    pub async fn releases(url: &str) -> Result<Changes, ControlError> {
        Changes::on(url, OWNER_CHANNEL).await
    }

    async fn on(url: &str, channel: &str) -> Result<Changes, ControlError> {
        let (client, heard) = listen(url, channel).await?;
        Ok(Changes { _client: client, heard })
    }

    /// Waits for the next commit, taking with it every commit already heard (a reader reads
    /// the state once for all of them); `None` once the connection ended.
    pub async fn next(&mut self) -> Option<()> {
        self.heard.recv().await?;
        while self.heard.try_recv().is_ok() {}
        Some(())
    }
}

/// Serves host requests sent through the database until `stopping` is cancelled: the owner's
/// half. Each request is answered by a task of its own, so that one that blocks (a receive
/// or a wait made as a process) holds up no other. A failure of its connection is logged and
/// ends it (the control socket keeps serving). Stopping gives the requests still running up
/// to [`STOP_GRACE_MS`] to answer, as the socket does, then aborts them: they stay taken
/// without an answer, which the next owner answers [`TAKEN_BY_A_DEAD_OWNER`].
pub(super) async fn serve(rt: Arc<Runtime>, url: String, stopping: CancellationToken) {
    let mut running: JoinSet<i64> = JoinSet::new();
    let served = async {
        let (client, mut heard) = listen_for_requests(&url, REQUESTS_CHANNEL, true).await?;
        let client = Arc::new(client);
        let mut answering: HashSet<i64> = HashSet::new();
        // Once at the start (rows written while no owner listened), then at each notification.
        take_pending(&client, &rt, &mut answering, &mut running).await?;
        loop {
            tokio::select! {
                note = heard.recv() => match note {
                    Some(_) => take_pending(&client, &rt, &mut answering, &mut running).await?,
                    None => return Err(ControlError::Closed),
                },
                Some(done) = running.join_next() => match done {
                    Ok(id) => { answering.remove(&id); }
                    Err(e) => tracing::error!(error = %e, "a host request's task ended abnormally"),
                },
                () = stopping.cancelled() => return Ok(()),
            }
        }
    };
    if let Err(e) = served.await {
        tracing::error!(error = %e, "stopped serving host requests through the database");
    }
    let drain = async { while running.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(Duration::from_millis(STOP_GRACE_MS), drain).await;
    running.shutdown().await;
}

/// Takes every request without an answer that is not being answered already, in id order,
/// and starts answering each in a task of `running`. A request is marked taken (durably)
/// before it runs; one found taken but unanswered and not among `answering` was taken by an
/// owner that died before answering, and may have taken effect: it is answered
/// [`TAKEN_BY_A_DEAD_OWNER`], never run again (a launch with a `launch_key` sent again is
/// safe: it launches nothing twice).
async fn take_pending(
    client: &Arc<Client>,
    rt: &Arc<Runtime>,
    answering: &mut HashSet<i64>,
    running: &mut JoinSet<i64>,
) -> Result<(), ControlError> {
    // One statement, one commit: every request nobody took is taken now (`taken_now`), beside
    // those taken before (the main query sees the table as it was before the update).
    let rows = client
        .query(
            "WITH took AS (
                 UPDATE host_requests SET taken = true WHERE answer IS NULL AND NOT taken
                 RETURNING id, request
             )
             SELECT id, request, true FROM took
             UNION ALL
             SELECT id, request, false FROM host_requests WHERE answer IS NULL AND taken
             ORDER BY id",
            &[],
        )
        .await
        .map_err(db_error)?;
    for row in rows {
        let id: i64 = row.try_get(0).map_err(db_error)?;
        if answering.contains(&id) {
            continue;
        }
        let text: String = row.try_get(1).map_err(db_error)?;
        let taken_now: bool = row.try_get(2).map_err(db_error)?;
        answering.insert(id);
        let (client, rt) = (Arc::clone(client), Arc::clone(rt));
        running.spawn(async move {
            if let Err(e) = answer(&client, &rt, id, &text, taken_now).await {
                tracing::error!(error = %e, id, "failed to answer a host request");
            }
            id
        });
    }
    Ok(())
}

/// Runs the request `text` of row `id` (unless it was taken by an owner that died:
/// `taken_now` false), writes the answer into the row and notifies it.
async fn answer(
    client: &Client,
    rt: &Runtime,
    id: i64,
    text: &str,
    taken_now: bool,
) -> Result<(), ControlError> {
    let line = match serde_json::from_str::<Request>(text) {
        _ if !taken_now => Line::Error(HostError::new(
            TAKEN_BY_A_DEAD_OWNER,
            "the runtime that took this request stopped before answering it; it may have taken \
             effect and is not run again: read the state, and ask again if it did not",
        )),
        Ok(request) => {
            // Progress is not carried through the database: only the answer is.
            let (sink, _progress) = mpsc::channel(16);
            handle(rt, request, sink).await
        }
        Err(e) => Line::Error(HostError::new("control_protocol", format!("not a control request: {e}"))),
    };
    let answer = serde_json::to_string(&line).map_err(|e| ControlError::Protocol(e.to_string()))?;
    // One statement, one commit: the notification is delivered once the answer is visible.
    let answered = format!(
        "WITH answered AS (UPDATE host_requests SET answer = $2 WHERE id = $1 RETURNING id) \
         SELECT pg_notify({}, id::text) FROM answered",
        channel_sql(ANSWERS_CHANNEL)
    );
    client.execute(&answered, &[&id, &answer]).await.map_err(db_error)?;
    Ok(())
}

/// Sends `request` to the runtime that owns the state in the database `url` names and returns
/// its answer: the client's half, on a connection of its own ([`Requester`] keeps one for
/// many requests).
pub async fn request(url: &str, request: &Request) -> Result<Value, ControlError> {
    Requester::connect(url).await?.request(request).await
}

/// A client of the runtime that owns the state in one database (or shard) that keeps its
/// connection: its requests, concurrent ones too, cost no connection of their own.
pub struct Requester {
    client: Client,
    /// The requests waiting for their answer's notification, by row id.
    waiting: Arc<parking_lot::Mutex<HashMap<i64, oneshot::Sender<()>>>>,
    /// Hands the answers' notifications to their requests; ends with the requester.
    dispatch: tokio::task::JoinHandle<()>,
}

impl Requester {
    /// Connects to the database `url` names, listening for answers.
    pub async fn connect(url: &str) -> Result<Requester, ControlError> {
        let (client, mut heard) = listen_for_requests(url, ANSWERS_CHANNEL, false).await?;
        let waiting: Arc<parking_lot::Mutex<HashMap<i64, oneshot::Sender<()>>>> = Arc::default();
        let dispatch = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move {
                while let Some(note) = heard.recv().await {
                    let Ok(id) = note.parse::<i64>() else { continue };
                    if let Some(answered) = waiting.lock().remove(&id) {
                        let _ = answered.send(());
                    }
                }
            })
        };
        Ok(Requester { client, waiting, dispatch })
    }

    /// Sends `request` and returns its answer, waiting at most [`ANSWER_WAIT`].
    pub async fn request(&self, request: &Request) -> Result<Value, ControlError> {
        let text = serde_json::to_string(request).map_err(|e| ControlError::Protocol(e.to_string()))?;
        // One statement, one commit: the owner is notified once the row is visible.
        let sent = format!(
            "WITH sent AS (INSERT INTO host_requests (request) VALUES ($1) RETURNING id) \
             SELECT id, pg_notify({}, id::text) FROM sent",
            channel_sql(REQUESTS_CHANNEL)
        );
        let row = self.client.query_one(&sent, &[&text]).await.map_err(db_error)?;
        let id: i64 = row.try_get(0).map_err(db_error)?;
        let (answered, heard) = oneshot::channel();
        self.waiting.lock().insert(id, answered);
        // An answer written before this request was registered notified nobody: read it now.
        // One written later notifies after it is visible, so the wait below hears it.
        let answer = match self.answer(id).await {
            Ok(None) => {
                let _ = tokio::time::timeout(ANSWER_WAIT, heard).await;
                self.answer(id).await
            }
            read => read,
        };
        // Gone whether the request was answered, timed out or failed.
        self.waiting.lock().remove(&id);
        let Some(answer) = answer? else {
            return Err(ControlError::NoAnswer { waited_ms: ANSWER_WAIT.as_millis() as u64 });
        };
        match serde_json::from_str::<Line>(&answer) {
            Ok(Line::Result(value)) => Ok(value),
            Ok(Line::Error(e)) => Err(ControlError::Refused(e)),
            Ok(Line::Progress(_)) => Err(ControlError::Protocol("a progress line as the answer".to_string())),
            Err(e) => Err(ControlError::Protocol(e.to_string())),
        }
    }

    /// Row `id`'s answer, if written.
    async fn answer(&self, id: i64) -> Result<Option<String>, ControlError> {
        self.client
            .query_one("SELECT answer FROM host_requests WHERE id = $1", &[&id])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(db_error)
    }
}

impl Drop for Requester {
    fn drop(&mut self) {
        self.dispatch.abort();
    }
}
