//! The root a new MCP session runs as: flags, optionally on top of a small TOML file.
//!
//! ```toml
//! goal = "Review the open pull requests"
//! cwd = "/work/repo"              # absolute; default: the current directory
//! image = "puppet"                # default: the host-driven puppet image
//! grants = ["process:spawn=x"]    # RESOURCE=RIGHTS, rights as letters (rwxcd) or names
//!
//! [budget]                        # omitted dimensions are unlimited
//! tool_calls = 200
//! tokens = 100000
//! wall_time_ms = 3600000
//! live_children = 8
//! cost_micros = 5000000
//! ```
//!
//! Flags (`--goal`, `--cwd`, `--image`, `--grant`, `--max-*`) override the file's values;
//! `--grant` adds to its grants. Host grants are delegable, so the root can hand them on.

use super::McpError;
use crate::actors::ImageId;
use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::capability::{CapabilityRequest, Constraints, Rights};
use crate::control::RootRequest;
use crate::images::PUPPET_IMAGE;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The goal of a root given none.
pub const DEFAULT_GOAL: &str = "Act for an MCP client as a process of the agentvisor runtime.";

/// The root's configuration file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// The goal.
    pub goal: Option<String>,
    /// The absolute working directory.
    pub cwd: Option<String>,
    /// The image.
    pub image: Option<String>,
    /// Host grants, `RESOURCE=RIGHTS`.
    #[serde(default)]
    pub grants: Vec<String>,
    /// The budget.
    #[serde(default)]
    pub budget: Budget,
}

/// The flags that shape a new root.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RootFlags {
    /// A TOML file with the root's goal, cwd, image, grants and budget (see docs/mcp.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The root's goal.
    #[arg(long)]
    pub goal: Option<String>,
    /// The root's absolute working directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<String>,
    /// The root's image (default: `puppet`, whose program is the MCP client).
    #[arg(long)]
    pub image: Option<String>,
    /// A host grant, `RESOURCE=RIGHTS` (e.g. `process:spawn=x`; rights as letters `rwxcd`
    /// or comma-separated names). Repeatable.
    #[arg(long = "grant", value_name = "RESOURCE=RIGHTS")]
    pub grants: Vec<String>,
    /// The budget's tool calls.
    #[arg(long)]
    pub max_tool_calls: Option<u64>,
    /// The budget's model tokens.
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// The budget's wall-clock milliseconds.
    #[arg(long)]
    pub max_wall_time_ms: Option<u64>,
    /// The budget's live descendants.
    #[arg(long)]
    pub max_children: Option<u64>,
    /// The budget's cost, in micro-units.
    #[arg(long)]
    pub max_cost_micros: Option<u64>,
}

impl RootFlags {
    /// Whether any flag shaping a root was given.
    pub fn any(&self) -> bool {
        self.config.is_some()
            || self.goal.is_some()
            || self.cwd.is_some()
            || self.image.is_some()
            || !self.grants.is_empty()
            || self.max_tool_calls.is_some()
            || self.max_tokens.is_some()
            || self.max_wall_time_ms.is_some()
            || self.max_children.is_some()
            || self.max_cost_micros.is_some()
    }

    /// The root to launch; `cwd` is the default working directory.
    pub fn to_request(&self, cwd: &Path) -> Result<RootRequest, McpError> {
        let file = match &self.config {
            Some(path) => load_config(path)?,
            None => RootConfig::default(),
        };
        let mut budget = file.budget;
        let flags = [
            (&mut budget.tool_calls, self.max_tool_calls),
            (&mut budget.tokens, self.max_tokens),
            (&mut budget.wall_time_ms, self.max_wall_time_ms),
            (&mut budget.live_children, self.max_children),
            (&mut budget.cost_micros, self.max_cost_micros),
        ];
        for (slot, flag) in flags {
            if flag.is_some() {
                *slot = flag;
            }
        }
        let capabilities =
            file.grants.iter().chain(&self.grants).map(|g| parse_grant(g)).collect::<Result<Vec<_>, _>>()?;
        let goal = self.goal.clone().or(file.goal).unwrap_or_else(|| DEFAULT_GOAL.to_string());
        let cwd = self.cwd.clone().or(file.cwd).unwrap_or_else(|| cwd.display().to_string());
        if !cwd.starts_with('/') {
            return Err(McpError::Root(format!("cwd {cwd:?} must be an absolute path")));
        }
        let image = ImageId(self.image.clone().or(file.image).unwrap_or_else(|| PUPPET_IMAGE.to_string()));
        Ok(RootRequest { goal, image, cwd, capabilities, budget, launch_key: None })
    }
}

fn load_config(path: &Path) -> Result<RootConfig, McpError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| McpError::Root(format!("failed to read --config {}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| McpError::Root(format!("--config {}: {e}", path.display())))
}

/// Parses `RESOURCE=RIGHTS`: rights as letters (`r` read, `w` write, `x` execute, `c`
/// create, `d` delete) or comma-separated names (`read,execute`).
pub fn parse_grant(text: &str) -> Result<CapabilityRequest, McpError> {
    let bad = |why: &str| {
        McpError::Root(format!("grant {text:?}: {why}; write RESOURCE=RIGHTS, e.g. process:spawn=x"))
    };
    let Some((resource, rights)) = text.rsplit_once('=') else { return Err(bad("no `=`")) };
    if resource.is_empty() {
        return Err(bad("the resource is empty"));
    }
    let letters = !rights.is_empty() && rights.chars().all(|c| "rwxcd".contains(c));
    let names: Vec<&str> = if letters {
        let name = |c| match c {
            'r' => "read",
            'w' => "write",
            'x' => "execute",
            'c' => "create",
            _ => "delete",
        };
        rights.chars().map(name).collect()
    } else {
        rights.split(',').collect()
    };
    let rights = Rights::parse_names(&names).map_err(|e| bad(&e.to_string()))?;
    Ok(CapabilityRequest {
        resource: resource.to_string(),
        rights,
        constraints: Constraints::new(),
        delegable: true,
    })
}
