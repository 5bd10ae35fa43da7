//! Where a state directory's images came from: `<state>/images.json` (with `--store`, a row of
//! the database's `image_sources`, so that every node serving the store has it), written by
//! the commands that launch processes (`agent`, `run`) when they open the state as its owner,
//! so that `agentvisor recover`, `agentvisor node` (and `inspect`) can reopen it with the
//! images its processes need.
//!
//! Built-in images (the puppets, the demo's) need no record: every command registers them.
//! An agent configuration is recorded by path and BLAKE3 content hash with its scripts file;
//! a rig spec by path and hash (its members' configurations are found from it again). A
//! source whose file has changed since it was recorded is still used, with a warning naming
//! both hashes: the images' ids are what the rows name, and the person decides.

use agentvisor::actors::kernel::process::ProcessRow;
use agentvisor::actors::kernel::status::PauseReason;
use agentvisor::actors::store::{describe_postgres_error, off_runtime};
use agentvisor::images::builtin_images;
use anyhow::Context;
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The record's file name in a state directory.
pub(crate) const SOURCES_FILE: &str = "images.json";

/// Largest record file read, in bytes: one entry per image, each a few paths and hashes.
const SOURCES_BYTES_MAX: u64 = 1024 * 1024;

/// One image's origin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Source {
    /// An agent configuration run by `agentvisor agent`.
    AgentConfig {
        /// Its absolute path.
        config: PathBuf,
        /// BLAKE3 of its bytes when recorded.
        config_blake3: String,
        /// The `--scripts` file, if one was given.
        scripts: Option<PathBuf>,
    },
    /// A rig spec run by `agentvisor run`; its members' configurations are found from it.
    RigSpec {
        /// Its absolute path.
        spec: PathBuf,
        /// BLAKE3 of its bytes when recorded.
        spec_blake3: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::AgentConfig { config, config_blake3, .. } => {
                write!(f, "agent configuration {} (blake3 {})", config.display(), short_hash(config_blake3))
            }
            Source::RigSpec { spec, spec_blake3 } => {
                write!(f, "rig spec {} (blake3 {})", spec.display(), short_hash(spec_blake3))
            }
        }
    }
}

/// The record: image id → where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sources {
    /// Format version of the file (1).
    pub(crate) version: u32,
    /// Each image's source; the last command to register an id wins.
    pub(crate) images: BTreeMap<String, Source>,
}

/// The first 16 hex digits of a hash, as lines print it (a hand-edited record's shorter
/// value whole).
pub(crate) fn short_hash(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

/// BLAKE3 of a file's bytes, as hex.
pub(crate) fn file_hash(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("failed to read {}", path.display()))?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// The record's table in a PostgreSQL store: one row holding the record's JSON, so that
/// every node serving the store reopens it with the images its processes need.
const SOURCES_TABLE: &str = "CREATE TABLE IF NOT EXISTS image_sources (
    id     SMALLINT PRIMARY KEY CHECK (id = 1),
    record TEXT NOT NULL
)";

impl Sources {
    /// Reads the record of `state` (of the database, with `--store`); an absent record is an
    /// empty one.
    pub(crate) fn read(state: &Path) -> anyhow::Result<Sources> {
        if let Some(url) = super::stores::url() {
            return read_from_database(url);
        }
        let path = state.join(SOURCES_FILE);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Sources::default()),
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
        };
        if meta.len() > SOURCES_BYTES_MAX {
            anyhow::bail!("{} is {} bytes; the limit is {SOURCES_BYTES_MAX}", path.display(), meta.len());
        }
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("failed to read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not an image record", path.display()))
    }

    /// Records `source` for each of `images` in `state`'s record, atomically (a temporary
    /// file renamed over the old one). Called only by an owner of the directory.
    pub(crate) fn record(state: &Path, images: &[String], source: &Source) -> anyhow::Result<()> {
        if let Some(url) = super::stores::url() {
            return record_in_database(url, images, source);
        }
        let mut sources = Sources::read(state)?;
        sources.add(images, source);
        let path = state.join(SOURCES_FILE);
        let tmp = state.join(format!("{SOURCES_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec_pretty(&sources)?)
            .with_context(|| format!("failed to write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("failed to write {}", path.display()))?;
        Ok(())
    }

    /// Records `source` for each of `images`.
    fn add(&mut self, images: &[String], source: &Source) {
        self.version = 1;
        for image in images {
            self.images.insert(image.clone(), source.clone());
        }
    }

    /// The distinct sources, in a stable order.
    pub(crate) fn distinct(&self) -> Vec<Source> {
        let mut out: Vec<Source> = Vec::new();
        for source in self.images.values() {
            if !out.contains(source) {
                out.push(source.clone());
            }
        }
        out
    }
}

/// The record kept in the database `url` names; empty when none was written there.
fn read_from_database(url: &str) -> anyhow::Result<Sources> {
    off_runtime(|| {
        let mut client =
            Client::connect(url, NoTls).map_err(|e| anyhow::anyhow!(describe_postgres_error(&e)))?;
        match client.query_opt("SELECT record FROM image_sources WHERE id = 1", &[]) {
            Ok(Some(row)) => {
                let text: String = row.try_get(0)?;
                serde_json::from_str(&text).context("the database's image record is not an image record")
            }
            Ok(None) => Ok(Sources::default()),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(Sources::default()),
            Err(e) => Err(anyhow::anyhow!(describe_postgres_error(&e))),
        }
    })
    .context("failed to read the image record of the PostgreSQL store")
}

/// Records `source` for each of `images` in the database `url` names, in one transaction
/// that holds the record's row (a node recording at the same time waits).
fn record_in_database(url: &str, images: &[String], source: &Source) -> anyhow::Result<()> {
    off_runtime(|| {
        let failed = |e: postgres::Error| anyhow::anyhow!(describe_postgres_error(&e));
        let mut client = Client::connect(url, NoTls).map_err(failed)?;
        let mut tx = client.transaction().map_err(failed)?;
        tx.batch_execute(SOURCES_TABLE).map_err(failed)?;
        tx.execute(
            "INSERT INTO image_sources (id, record) VALUES (1, '{}') ON CONFLICT (id) DO NOTHING",
            &[],
        )
        .map_err(failed)?;
        let text: String = tx
            .query_one("SELECT record FROM image_sources WHERE id = 1 FOR UPDATE", &[])
            .map_err(failed)?
            .get(0);
        let mut sources: Sources =
            if text == "{}" { Sources::default() } else { serde_json::from_str(&text)? };
        sources.add(images, source);
        tx.execute("UPDATE image_sources SET record = $1 WHERE id = 1", &[&serde_json::to_string(&sources)?])
            .map_err(failed)?;
        tx.commit().map_err(failed)
    })
    .context("failed to record the image sources in the PostgreSQL store")
}

/// Which image a live process needs and where it can be had, for `inspect`: `None` for a
/// terminal row or a built-in image.
pub(crate) fn image_needed(state: &Path, row: &ProcessRow) -> Option<String> {
    if row.status.is_terminal() || builtin_images().images.contains(&row.image) {
        return None;
    }
    let unavailable = matches!(row.pause_reason, Some(PauseReason::ImageUnavailable { .. }));
    let recorded = Sources::read(state).ok().and_then(|s| s.images.get(row.image.as_str()).cloned());
    Some(match (recorded, unavailable) {
        (Some(source), true) => {
            format!(
                "{} (paused: no runtime had it); from {source}: `agentvisor recover` reopens with it",
                row.image
            )
        }
        (Some(source), false) => format!("{}, from {source}", row.image),
        (None, _) => format!(
            "{} (no recorded source: reopen the directory with the configuration that registers it)",
            row.image
        ),
    })
}
