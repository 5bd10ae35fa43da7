//! One call of a batch as JSON. The batch rule itself is the kernel's
//! ([`crate::actors::runtime::calls::BatchRule`]), shared by every caller.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call of a batch, as JSON: `{"tool": "...", "args": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchCall {
    /// The tool's name.
    pub tool: String,
    /// Its arguments object (`{}` when omitted).
    #[serde(default)]
    pub args: Value,
}
