//! agentvisor: a supervision runtime for LLM agent processes.
pub use agentvisor_actors as actors;
