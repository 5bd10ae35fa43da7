//! The machines the state directory's agents were declared with, so the page can draw a
//! machine whole (every state and move) with the current state highlighted. They come from
//! the configurations recorded in the image record (`<state>/images.json`, or the store's
//! `image_sources` row with `--store`; written by the commands that launched the processes),
//! loaded again from their paths; a source that cannot be loaded is skipped and
//! the page draws only the states the events name.

use crate::cli::sources::{Source, Sources};
use agentvisor::agent::config::{CheckedConfig, load_path};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The machines as last loaded, loaded again only when the image record changes.
#[derive(Default)]
pub(crate) struct MachineBook {
    /// The record they were loaded from (`None` before the first load).
    recorded: Option<Sources>,
    machines: Value,
}

impl MachineBook {
    /// The machines of `state`'s recorded configurations. A record that cannot be read is
    /// an empty one.
    pub(crate) fn current(&mut self, state: &Path) -> &Value {
        let sources = Sources::read(state).unwrap_or_default();
        if self.recorded.as_ref() != Some(&sources) {
            self.machines = machines_json(&sources);
            self.recorded = Some(sources);
        }
        &self.machines
    }
}

/// Machines by id: `{entry, description, states: [{id, profile}], transitions: [[from, to]]}`.
fn machines_json(sources: &Sources) -> Value {
    let mut machines = Map::new();
    for config in sources.distinct().iter().flat_map(configs_of) {
        let Ok(loaded) = load_path(&config) else { continue };
        add_machines(&mut machines, &loaded);
    }
    Value::Object(machines)
}

/// The agent configuration files a source names.
fn configs_of(source: &Source) -> Vec<PathBuf> {
    match source {
        Source::AgentConfig { config, .. } => vec![config.clone()],
        Source::RigSpec { spec, .. } => {
            let base = spec.parent().map(Path::to_path_buf).unwrap_or_default();
            let Ok(rig) = agentvisor::rig::load_rig(spec) else { return Vec::new() };
            let mut paths: Vec<PathBuf> =
                rig.members.iter().filter_map(|m| m.agent_ref.as_ref()).map(|r| base.join(r)).collect();
            paths.dedup();
            paths
        }
    }
}

fn add_machines(machines: &mut Map<String, Value>, config: &CheckedConfig) {
    for machine in config.machines() {
        machines.entry(machine.id().to_string()).or_insert_with(|| {
            json!({
                "entry": machine.entry().id().to_string(),
                "description": machine.description(),
                "states": machine.states().iter().map(|s| json!({
                    "id": s.id().to_string(),
                    "profile": s.profile().to_string(),
                })).collect::<Vec<_>>(),
                "transitions": machine.transitions().iter().map(|(from, to)| json!([from.to_string(), to.to_string()])).collect::<Vec<_>>(),
            })
        });
    }
}
