//! The agent layer: agents on processes.
//!
//! [`brain`]: the `Brain` trait (a window in, the model's next turn out), the scripted and
//! OpenAI-compatible brains, the conversation types and the token estimator.

pub mod brain;
