//! The `agentvisor` command line.
fn main() {}
