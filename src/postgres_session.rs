//! One PostgreSQL connection shared by the callers of a store beside the kernel's (the
//! windows' chunks, the rigs' seats): behind a mutex, used only off the tokio workers
//! (`off_runtime`), closed off them too, and fail-stopped after the first failed write.

pub(crate) use agentvisor_actors::store::describe_postgres_error as describe;
use agentvisor_actors::store::off_runtime;
use parking_lot::Mutex;
use postgres::{Client, NoTls};

/// The connection and its fail-stop mark.
pub(crate) struct PostgresSession {
    state: Mutex<State>,
}

struct State {
    /// `None` once dropped.
    client: Option<Client>,
    /// Set by the first failed write; every later write is refused with it.
    failed: Option<String>,
}

impl std::fmt::Debug for PostgresSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSession").finish_non_exhaustive()
    }
}

impl PostgresSession {
    /// Connects to `url` and runs `setup` on the new connection (creating tables, checking
    /// versions), off the runtime; returns the session and what `setup` found.
    pub(crate) fn open<T: Send, E: Send>(
        url: &str,
        connect_failed: impl FnOnce(postgres::Error) -> E + Send,
        setup: impl FnOnce(&mut Client) -> Result<T, E> + Send,
    ) -> Result<(PostgresSession, T), E> {
        let (client, found) = off_runtime(|| {
            let mut client = Client::connect(url, NoTls).map_err(connect_failed)?;
            let found = setup(&mut client)?;
            Ok((client, found))
        })?;
        Ok((PostgresSession { state: Mutex::new(State { client: Some(client), failed: None }) }, found))
    }

    /// Runs `f` on the connection, off the runtime, with the fail-stop mark. `closed` is the
    /// error when the session is gone.
    pub(crate) fn with<T: Send, E: Send>(
        &self,
        closed: impl FnOnce() -> E + Send,
        f: impl FnOnce(&mut Client, &mut Option<String>) -> Result<T, E> + Send,
    ) -> Result<T, E> {
        off_runtime(|| {
            let mut state = self.state.lock();
            let State { client, failed } = &mut *state;
            match client.as_mut() {
                Some(client) => f(client, failed),
                None => Err(closed()),
            }
        })
    }
}

impl Drop for PostgresSession {
    fn drop(&mut self) {
        // Closing a client blocks on the network.
        let client = self.state.lock().client.take();
        off_runtime(move || drop(client));
    }
}
