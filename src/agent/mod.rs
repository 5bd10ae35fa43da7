//! The agent layer: profiles, brains, the turn loop, exec and fork, built on the process kernel
//! through its public API (`DESIGN.md` §3).
//!
//! [`window`] is the conversation window a brain produces each turn from: a persistent
//! structure, so that fork copies it in O(1) and a durable fork writes O(1) new chunks.

pub mod window;
