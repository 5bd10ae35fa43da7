//! Hierarchical budgets.
//!
//! A child's budget is reserved out of its parent's remaining budget at launch. An explicit
//! limit must fit what remains; an omitted one is attenuated: the child gets half of what the
//! parent has left in that dimension, rounded down (an unlimited parent gives an unlimited
//! child). Usage is charged to the process that spends it; what a terminal child did not use
//! goes back to its parent, and what it used stays spent in the parent's account too. So nothing
//! anywhere ever spends more than its root was given.
//!
//! Additive dimensions (`tokens`, `cost_micros`, `tool_calls`) reserve and charge. The
//! `live_children` dimension reserves `1 + the child's own live_children` per live child and
//! returns all of it when the child ends. `wall_time_ms` is concurrent: time passes for parent
//! and child together, so a child's wall time must fit the parent's remaining time but is not
//! subtracted from it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The budget dimensions.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Model tokens, input and output together.
    Tokens,
    /// Cost in integer micro-units of the account's currency. Never floats.
    CostMicros,
    /// Tool calls made.
    ToolCalls,
    /// Wall-clock milliseconds since the process started.
    WallTimeMs,
    /// Live descendants at once.
    LiveChildren,
}

impl Dimension {
    /// Every dimension.
    pub const ALL: [Dimension; 5] = [
        Dimension::Tokens,
        Dimension::CostMicros,
        Dimension::ToolCalls,
        Dimension::WallTimeMs,
        Dimension::LiveChildren,
    ];

    /// The dimension's field name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Tokens => "tokens",
            Dimension::CostMicros => "cost_micros",
            Dimension::ToolCalls => "tool_calls",
            Dimension::WallTimeMs => "wall_time_ms",
            Dimension::LiveChildren => "live_children",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Limits per dimension; `None` is unlimited. As a tool argument (`resource_budget`), an
/// omitted dimension is attenuated from the parent's remaining budget.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Model tokens, input and output together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Cost in integer micro-units of the account's currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
    /// Tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Wall-clock milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_ms: Option<u64>,
    /// Live descendants at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_children: Option<u64>,
}

impl Budget {
    /// No limit in any dimension.
    pub const UNLIMITED: Budget =
        Budget { tokens: None, cost_micros: None, tool_calls: None, wall_time_ms: None, live_children: None };

    /// The limit in one dimension.
    pub fn get(&self, d: Dimension) -> Option<u64> {
        match d {
            Dimension::Tokens => self.tokens,
            Dimension::CostMicros => self.cost_micros,
            Dimension::ToolCalls => self.tool_calls,
            Dimension::WallTimeMs => self.wall_time_ms,
            Dimension::LiveChildren => self.live_children,
        }
    }

    /// Sets the limit in one dimension.
    pub fn set(&mut self, d: Dimension, v: Option<u64>) {
        match d {
            Dimension::Tokens => self.tokens = v,
            Dimension::CostMicros => self.cost_micros = v,
            Dimension::ToolCalls => self.tool_calls = v,
            Dimension::WallTimeMs => self.wall_time_ms = v,
            Dimension::LiveChildren => self.live_children = v,
        }
    }
}

/// Amounts spent per additive dimension (wall time is recorded, live children are not spent).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Model tokens.
    #[serde(default)]
    pub tokens: u64,
    /// Cost in micro-units.
    #[serde(default)]
    pub cost_micros: u64,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: u64,
    /// Wall-clock milliseconds the process ran (recorded, not summed into the parent).
    #[serde(default)]
    pub wall_time_ms: u64,
}

impl Usage {
    /// The amount in one dimension (`live_children` is never spent: 0).
    pub fn get(&self, d: Dimension) -> u64 {
        match d {
            Dimension::Tokens => self.tokens,
            Dimension::CostMicros => self.cost_micros,
            Dimension::ToolCalls => self.tool_calls,
            Dimension::WallTimeMs => self.wall_time_ms,
            Dimension::LiveChildren => 0,
        }
    }

    /// Adds the additive dimensions of `other` (saturating; wall time is not added).
    pub fn add_spend(&mut self, other: &Usage) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost_micros = self.cost_micros.saturating_add(other.cost_micros);
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
    }

    /// The additive dimensions.
    pub const ADDITIVE: [Dimension; 3] = [Dimension::Tokens, Dimension::CostMicros, Dimension::ToolCalls];
}

/// A process's budget account: its limit and what is spent or reserved against it.
///
/// `remaining(d) = limit - spent - reserved_for_live_children` for additive dimensions, where
/// `spent` includes what terminal children used. The account is derivable from the rows of the
/// process and its children, so recovery rebuilds it instead of trusting a cached sum.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Account {
    /// What this process was given at launch.
    pub limit: Budget,
    /// Spent by this process itself.
    pub self_spent: Usage,
    /// Spent by terminal children's whole subtrees, charged up at their end.
    pub children_spent: Usage,
    /// The sum of live children's limits (additive dimensions) and, for `live_children`, the
    /// sum of `1 + child.live_children` over live children.
    pub children_reserved: Budget,
}

/// Why a budget request cannot be met.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[error("budget {dimension}: requested {requested} but only {remaining} remains")]
pub struct BudgetExceeded {
    /// The dimension that does not fit.
    pub dimension: Dimension,
    /// What was asked for.
    pub requested: u64,
    /// What remains.
    pub remaining: u64,
}

impl Account {
    /// A fresh account with nothing spent.
    pub fn new(limit: Budget) -> Account {
        Account { limit, ..Account::default() }
    }

    /// Spent by this process and its terminal descendants.
    pub fn total_spent(&self) -> Usage {
        let mut u = self.self_spent;
        u.add_spend(&self.children_spent);
        u.wall_time_ms = self.self_spent.wall_time_ms;
        u
    }

    /// What remains in one dimension; `None` is unlimited. `elapsed_ms` is how long this
    /// process has run (only used for `wall_time_ms`).
    pub fn remaining(&self, d: Dimension, elapsed_ms: u64) -> Option<u64> {
        let limit = self.limit.get(d)?;
        let used = match d {
            Dimension::WallTimeMs => elapsed_ms,
            Dimension::LiveChildren => self.children_reserved.live_children.unwrap_or(0),
            _ => self
                .self_spent
                .get(d)
                .saturating_add(self.children_spent.get(d))
                .saturating_add(self.children_reserved.get(d).unwrap_or(0)),
        };
        Some(limit.saturating_sub(used))
    }

    /// Decides a child's limits from an optional explicit request: each explicit dimension must
    /// fit; each omitted one gets half of what remains (unlimited stays unlimited). A child also
    /// needs one unit of `live_children` for itself plus its own `live_children` limit.
    pub fn plan_child(&self, requested: Option<&Budget>, elapsed_ms: u64) -> Result<Budget, BudgetExceeded> {
        let mut child = Budget::UNLIMITED;
        for d in Dimension::ALL {
            let remaining = self.remaining(d, elapsed_ms);
            // The child itself takes one unit of the parent's live_children.
            let available = match (d, remaining) {
                (Dimension::LiveChildren, Some(r)) => {
                    if r == 0 {
                        return Err(BudgetExceeded { dimension: d, requested: 1, remaining: 0 });
                    }
                    Some(r - 1)
                }
                (_, r) => r,
            };
            let explicit = requested.and_then(|b| b.get(d));
            let value = match (explicit, available) {
                (Some(v), Some(a)) if v > a => {
                    let requested = if d == Dimension::LiveChildren { v + 1 } else { v };
                    let remaining = remaining.unwrap_or(0);
                    return Err(BudgetExceeded { dimension: d, requested, remaining });
                }
                (Some(v), _) => Some(v),
                (None, Some(a)) => Some(a / 2),
                (None, None) => None,
            };
            child.set(d, value);
        }
        Ok(child)
    }

    /// Reserves a planned child's limits.
    pub fn reserve_child(&mut self, child: &Budget) {
        for d in [Dimension::Tokens, Dimension::CostMicros, Dimension::ToolCalls] {
            if self.limit.get(d).is_some() {
                let cur = self.children_reserved.get(d).unwrap_or(0);
                self.children_reserved.set(d, Some(cur.saturating_add(child.get(d).unwrap_or(0))));
            }
        }
        let cur = self.children_reserved.live_children.unwrap_or(0);
        let take = 1u64.saturating_add(child.live_children.unwrap_or(0));
        self.children_reserved.live_children = Some(cur.saturating_add(take));
    }

    /// Releases a terminal child's reservation and charges what its subtree spent.
    pub fn settle_child(&mut self, child_limit: &Budget, child_spent: &Usage) {
        for d in [Dimension::Tokens, Dimension::CostMicros, Dimension::ToolCalls] {
            if let Some(cur) = self.children_reserved.get(d) {
                self.children_reserved.set(d, Some(cur.saturating_sub(child_limit.get(d).unwrap_or(0))));
            }
        }
        let cur = self.children_reserved.live_children.unwrap_or(0);
        let give = 1u64.saturating_add(child_limit.live_children.unwrap_or(0));
        self.children_reserved.live_children = Some(cur.saturating_sub(give));
        self.children_spent.add_spend(child_spent);
    }

    /// Charges this process's own spending. Refuses (and changes nothing) if any additive
    /// dimension would go past what remains.
    pub fn charge(&mut self, usage: &Usage) -> Result<(), BudgetExceeded> {
        for d in Usage::ADDITIVE {
            let want = usage.get(d);
            if want == 0 {
                continue;
            }
            if let Some(remaining) = self.remaining(d, 0)
                && want > remaining
            {
                return Err(BudgetExceeded { dimension: d, requested: want, remaining });
            }
        }
        self.self_spent.add_spend(usage);
        Ok(())
    }

    /// Records the process's wall time (not a charge; checked by the runtime's timer).
    pub fn record_wall_time(&mut self, elapsed_ms: u64) {
        self.self_spent.wall_time_ms = elapsed_ms;
    }
}

/// A child's contribution to its parent's account, for rebuilding the account from rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildShare {
    /// The child's limits.
    pub limit: Budget,
    /// What the child's subtree spent.
    pub spent: Usage,
    /// Whether the child is terminal (settled) or live (reserved).
    pub terminal: bool,
}

impl Account {
    /// Rebuilds the children part of the account from the children's rows. Recovery uses this
    /// instead of trusting a sum that may predate the last child's end.
    pub fn rebuild_children(&mut self, children: impl IntoIterator<Item = ChildShare>) {
        self.children_spent = Usage::default();
        self.children_reserved = Budget::default();
        for child in children {
            if child.terminal {
                self.children_spent.add_spend(&child.spent);
            } else {
                self.reserve_child(&child.limit);
            }
        }
    }
}
