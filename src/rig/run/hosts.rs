//! The agent hosts a rig's native seats run on: one per agent configuration the members name,
//! each on an image of its own, so a runtime can run them side by side.

use crate::actors::runtime::RuntimeOptions;
use crate::agent::brain::Script;
use crate::agent::config::load_path;
use crate::agent::run::{AgentHost, config_brains, read_scripts};
use crate::agent::telemetry::Telemetry;
use crate::agent::window::ChunkStore;
use crate::rig::RigSpec;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a rig's agent configurations cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("member {member}: the agent configuration {path} cannot be used: {message}")]
pub struct HostError {
    /// The first member naming it.
    pub member: String,
    /// The configuration's path.
    pub path: String,
    /// Why (the launch check's report, or the read error).
    pub message: String,
}

/// Agent hosts by `agent_ref` as written in the spec.
pub struct RigHosts {
    hosts: BTreeMap<String, Arc<AgentHost>>,
}

impl RigHosts {
    /// Loads and checks every configuration `spec`'s native members name (relative to `base`).
    /// A configuration's scripted brains play the scripts of the file beside it named
    /// `<stem>-scripts.json` (`swarm.yaml` → `swarm-scripts.json`), if there is one.
    pub fn load(
        spec: &RigSpec,
        base: &Path,
        chunks: Arc<dyn ChunkStore + Send + Sync>,
        telemetry: &Telemetry,
    ) -> Result<RigHosts, HostError> {
        let mut hosts = BTreeMap::new();
        for member in &spec.members {
            let Some(agent_ref) = &member.agent_ref else { continue };
            if hosts.contains_key(agent_ref) {
                continue;
            }
            let path: PathBuf = base.join(agent_ref);
            let config = load_path(&path).map_err(|e| HostError {
                member: member.id.to_string(),
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            let scripts = scripts_beside(&path).map_err(|message| HostError {
                member: member.id.to_string(),
                path: path.display().to_string(),
                message,
            })?;
            let brains = config_brains(&config, scripts).map_err(|e| HostError {
                member: member.id.to_string(),
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            let suffix = image_suffix(agent_ref);
            let host =
                AgentHost::with_image_suffix(&suffix, config, brains, Arc::clone(&chunks), telemetry.clone());
            hosts.insert(agent_ref.clone(), host);
        }
        Ok(RigHosts { hosts })
    }

    /// The host for `agent_ref`.
    pub fn get(&self, agent_ref: &str) -> Option<&Arc<AgentHost>> {
        self.hosts.get(agent_ref)
    }

    /// Every host.
    pub fn all(&self) -> impl Iterator<Item = &Arc<AgentHost>> {
        self.hosts.values()
    }

    /// `options` with every host's image registered.
    pub fn register(&self, options: RuntimeOptions) -> RuntimeOptions {
        self.hosts.values().flat_map(|host| host.images()).fold(options, RuntimeOptions::image)
    }
}

/// The scripts beside the configuration at `path`: `<stem>-scripts.json`, a JSON object of
/// script names to scripts; none if there is no such file.
pub fn scripts_beside(path: &Path) -> Result<HashMap<String, Script>, String> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let file = path.with_file_name(format!("{stem}-scripts.json"));
    if !file.exists() {
        return Ok(HashMap::new());
    }
    read_scripts(&file)
}

/// A stable image suffix for an agent configuration path: the same path gives the same image
/// after a reopen, so recovery can restart its processes.
fn image_suffix(agent_ref: &str) -> String {
    let hash = blake3::hash(agent_ref.as_bytes());
    hash.to_hex()[..12].to_string()
}
