//! agentvisor: a supervision runtime for LLM agent processes.
//!
//! The process kernel (process table, store, actor shell) is the [`actors`] crate, re-exported
//! here. This crate adds the agent layer ([`agent`]), the JSON tool surface ([`tools`]), the
//! scenario runner ([`scenario`]), the built-in images ([`images`]), and the `agentvisor`
//! command line.

pub use agentvisor_actors as actors;

pub mod agent;
pub mod control;
pub mod demo;
pub mod images;
pub mod mcp;
mod postgres_session;
pub mod rig;
pub mod scenario;
pub mod tools;
