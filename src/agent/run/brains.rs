//! Building a configuration's brains before anything launches: every HTTP brain's key read
//! from its variable and its client built once, shared by every agent that names it; scripted
//! brains made per incarnation from their scripts.

use super::error::AgentError;
use super::host::{AgentIdentity, BrainProvider};
use crate::agent::brain::{
    AnthropicBrain, AnthropicConfig, Brain, BrainError, OpenAiBrain, OpenAiConfig, Script, ScriptedBrain,
};
use crate::agent::config::{BrainBackend, CheckedConfig};
use std::collections::HashMap;
use std::sync::Arc;

/// A declared brain that cannot be built: an unset key variable, a client that cannot be made.
/// Found before any process launches.
#[derive(Debug, thiserror::Error)]
#[error("brain {brain:?} cannot be used: {source}")]
pub struct BrainSetupError {
    /// The brain's id.
    pub brain: String,
    /// Why.
    pub source: BrainError,
}

impl BrainSetupError {
    /// The stable code of the cause (`brain_invalid_config`).
    pub fn code(&self) -> &'static str {
        self.source.code()
    }
}

enum Built {
    Shared(Arc<dyn Brain>),
    Scripted(String),
}

/// The brains a configuration declares, built as real brains: OpenAI-compatible and Anthropic
/// endpoints with their key from the environment (read now: an unset variable is an error
/// here, before any process launches; an empty one means a server without keys); scripted
/// brains from `scripts` by name. Scripted brains are made afresh per incarnation, so each
/// incarnation plays its script from its own first turn (skipping the turns a restarted
/// incarnation already took); a fork plays the script named `<script>.fork` if there is one.
pub fn config_brains(
    config: &CheckedConfig,
    scripts: HashMap<String, Script>,
) -> Result<Arc<dyn BrainProvider>, BrainSetupError> {
    let mut built: HashMap<String, Built> = HashMap::new();
    for spec in config.brains() {
        let id = spec.id().as_str().to_string();
        let fail = |source: BrainError| BrainSetupError { brain: id.clone(), source };
        let brain = match spec.backend() {
            BrainBackend::Scripted { script } => Built::Scripted(script.clone()),
            BrainBackend::Openai { base_url, model, api_key_env, settings } => {
                let config = OpenAiConfig::new(base_url.clone(), model.clone())
                    .with_settings(settings.model_settings())
                    .with_api_key_from_env(api_key_env)
                    .map_err(fail)?;
                Built::Shared(Arc::new(OpenAiBrain::new(config).map_err(fail)?))
            }
            BrainBackend::Anthropic { base_url, model, api_key_env, settings } => {
                let config = AnthropicConfig::new(base_url.clone(), model.clone())
                    .with_settings(settings.model_settings())
                    .with_api_key_from_env(api_key_env)
                    .map_err(fail)?;
                Built::Shared(Arc::new(AnthropicBrain::new(config).map_err(fail)?))
            }
        };
        built.insert(id, brain);
    }
    Ok(Arc::new(move |identity: &AgentIdentity| -> Result<Arc<dyn Brain>, AgentError> {
        let no_brain = || AgentError::NoBrain { brain: identity.brain.clone() };
        match built.get(&identity.brain).ok_or_else(no_brain)? {
            Built::Shared(brain) => Ok(Arc::clone(brain)),
            Built::Scripted(script) => {
                // A fork plays `<script>.fork` when there is one: a copy has its own line.
                let fork_script =
                    identity.launch.fork.as_ref().and_then(|_| scripts.get(&format!("{script}.fork")));
                let script = fork_script.or_else(|| scripts.get(script)).ok_or_else(no_brain)?;
                Ok(Arc::new(ScriptedBrain::new(script.skip(identity.turns_taken))))
            }
        }
    }))
}
