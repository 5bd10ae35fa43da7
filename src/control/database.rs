//! The control protocol through the database, for a state kept in PostgreSQL: a host action
//! from a machine (or a state directory) that does not share the owner's control socket.
//!
//! The database is the truth and `LISTEN`/`NOTIFY` the wake-up. A client writes its request
//! (the socket protocol's JSON) as a row of `host_requests`, listening on the answers channel
//! first, and notifies the owner; the owner, listening on the requests channel, answers every
//! row without an answer in id order (so a notification lost while it was busy costs nothing:
//! the next one, or its start, finds the row), writes the answer line into the row and
//! notifies the answers channel with the row's id. A client that hears nothing within
//! [`ANSWER_WAIT`] reads its row once more and reports that the owner did not answer.

use super::ControlError;
use super::protocol::{HostError, Line, Request};
use super::server::handle;
use crate::actors::runtime::Runtime;
use crate::actors::store::{CHANGES_CHANNEL, OWNER_CHANNEL};
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tokio_util::sync::CancellationToken;

/// The channel the owner listens on.
const REQUESTS_CHANNEL: &str = "agentvisor_host_requests";

/// The channel clients listen on; each notification's payload is an answered row's id.
const ANSWERS_CHANNEL: &str = "agentvisor_host_answers";

/// How long a client waits for the owner's answer.
pub const ANSWER_WAIT: Duration = Duration::from_secs(30);

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS host_requests (
    id      BIGSERIAL PRIMARY KEY,
    request TEXT NOT NULL,
    answer  TEXT NULL
);
ALTER TABLE host_requests ADD COLUMN IF NOT EXISTS taken BOOLEAN NOT NULL DEFAULT false";

/// The answer to a request an owner took and died before answering: it is not run again.
pub const TAKEN_BY_A_DEAD_OWNER: &str = "taken_by_a_dead_owner";

fn db_error(e: tokio_postgres::Error) -> ControlError {
    ControlError::Database(crate::actors::store::describe_postgres_error(&e))
}

/// Connects to `url` and listens on `channel`: the client, and the payloads of the
/// notifications it hears. The connection is driven by a task of its own, which ends with it.
async fn listen(url: &str, channel: &str) -> Result<(Client, mpsc::UnboundedReceiver<String>), ControlError> {
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
    client.batch_execute(&format!("LISTEN {channel}")).await.map_err(db_error)?;
    Ok((client, heard))
}

/// [`listen`], creating the request table first if needed.
async fn listen_for_requests(
    url: &str,
    channel: &str,
) -> Result<(Client, mpsc::UnboundedReceiver<String>), ControlError> {
    let (client, heard) = listen(url, channel).await?;
    client.batch_execute(SCHEMA).await.map_err(db_error)?;
    Ok((client, heard))
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
/// half. A failure of its connection is logged and ends it (the control socket keeps
/// serving).
pub(super) async fn serve(rt: Arc<Runtime>, url: String, stopping: CancellationToken) {
    let served = async {
        let (client, mut heard) = listen_for_requests(&url, REQUESTS_CHANNEL).await?;
        loop {
            answer_pending(&client, &rt).await?;
            tokio::select! {
                note = heard.recv() => if note.is_none() { return Err(ControlError::Closed) },
                () = stopping.cancelled() => return Ok(()),
            }
        }
    };
    if let Err(e) = served.await {
        tracing::error!(error = %e, "stopped serving host requests through the database");
    }
}

/// Answers every request without an answer, in id order. A request is marked taken (durably)
/// before it runs; one found taken but unanswered was taken by an owner that died before
/// answering, and may have taken effect: it is answered [`TAKEN_BY_A_DEAD_OWNER`], never run
/// again (a launch with a `launch_key` sent again is safe: it launches nothing twice).
async fn answer_pending(client: &Client, rt: &Runtime) -> Result<(), ControlError> {
    let rows = client
        .query("SELECT id, request, taken FROM host_requests WHERE answer IS NULL ORDER BY id", &[])
        .await
        .map_err(db_error)?;
    for row in rows {
        let id: i64 = row.try_get(0).map_err(db_error)?;
        let text: String = row.try_get(1).map_err(db_error)?;
        let taken: bool = row.try_get(2).map_err(db_error)?;
        let taken_now = !taken
            && client
                .execute("UPDATE host_requests SET taken = true WHERE id = $1 AND NOT taken", &[&id])
                .await
                .map_err(db_error)?
                == 1;
        let request = serde_json::from_str::<Request>(&text);
        let line = match request {
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
        client
            .execute("UPDATE host_requests SET answer = $2 WHERE id = $1", &[&id, &answer])
            .await
            .map_err(db_error)?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&ANSWERS_CHANNEL, &id.to_string()])
            .await
            .map_err(db_error)?;
    }
    Ok(())
}

/// Sends `request` to the runtime that owns the state in the database `url` names and returns
/// its answer: the client's half.
pub async fn request(url: &str, request: &Request) -> Result<Value, ControlError> {
    let (client, mut heard) = listen_for_requests(url, ANSWERS_CHANNEL).await?;
    let text = serde_json::to_string(request).map_err(|e| ControlError::Protocol(e.to_string()))?;
    let row = client
        .query_one("INSERT INTO host_requests (request) VALUES ($1) RETURNING id", &[&text])
        .await
        .map_err(db_error)?;
    let id: i64 = row.try_get(0).map_err(db_error)?;
    let mine = id.to_string();
    client.execute("SELECT pg_notify($1, $2)", &[&REQUESTS_CHANNEL, &mine]).await.map_err(db_error)?;
    let _ = tokio::time::timeout(ANSWER_WAIT, async {
        while let Some(note) = heard.recv().await {
            if note == mine {
                return;
            }
        }
    })
    .await;
    let answer: Option<String> = client
        .query_one("SELECT answer FROM host_requests WHERE id = $1", &[&id])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(db_error)?;
    let Some(answer) = answer else {
        return Err(ControlError::NoAnswer { waited_ms: ANSWER_WAIT.as_millis() as u64 });
    };
    match serde_json::from_str::<Line>(&answer) {
        Ok(Line::Result(value)) => Ok(value),
        Ok(Line::Error(e)) => Err(ControlError::Refused(e)),
        Ok(Line::Progress(_)) => Err(ControlError::Protocol("a progress line as the answer".to_string())),
        Err(e) => Err(ControlError::Protocol(e.to_string())),
    }
}
