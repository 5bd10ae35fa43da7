//! Host actions and observations: `spawn_root`, `signal`, `gate`, `ungate`, `revoke`,
//! `inspect`, `wait_terminal`, `restart`, and `expect`.

use super::calls::Handle;
use super::error::ScenarioError;
use super::format::{Check, ExpectStep, PidStep, RevokeStep, SignalStep, SpawnRootStep};
use super::runner::{Answer, Runner, host_error, open_runtime};
use super::settle;
use crate::actors::kernel::budget::Budget;
use crate::actors::kernel::capability::Grant;
use crate::actors::kernel::process::ProcessRow;
use crate::actors::runtime::calls::{CallOk, GrantView, ToolError};
use crate::actors::runtime::{RootSpec, Runtime};
use crate::actors::{ImageId, Pid};
use crate::images::PUPPET_IMAGE;
use serde_json::{Value, json};
use std::sync::Arc;

/// A process's committed row and grants, as `gate` and `ungate` print them (`inspect` adds
/// its object memory).
pub(super) fn row_view(row: &ProcessRow, grants: &[Grant]) -> Value {
    json!({
        "pid": row.pid,
        "parent": row.parent,
        "image": row.image,
        "goal": row.goal,
        "depth": row.depth,
        "status": row.status,
        "wait_state": row.wait_state,
        "outcome": row.outcome,
        "result_oid": row.result_oid,
        "cwd": row.cwd,
        "state_generation": row.state_generation,
        "pause_reason": row.pause_reason,
        "host_gate": row.host_gate,
        "budget": row.account.limit,
        "usage": row.account.total_spent(),
        "grants": grants.iter().map(GrantView::from).collect::<Vec<_>>(),
    })
}

/// A process's row, grants and object memory (`Runtime::memory`: goal, roots, handles, owned
/// objects, context, clearance, skills, collection), as `inspect` prints them.
pub(super) fn inspect_json(rt: &Runtime, pid: Pid) -> Result<Value, ToolError> {
    let row = rt
        .process(pid)
        .map_err(|e| host_error(&e))?
        .ok_or_else(|| ToolError::new("unknown_process", format!("no process {pid}")))?;
    let grants = rt.grants_of(pid).map_err(|e| host_error(&e))?;
    let mut view = row_view(&row, &grants);
    view["memory"] = json!(rt.memory(pid));
    Ok(view)
}

fn answer(result: Result<Value, ToolError>) -> Answer {
    match result {
        Ok(v) => Answer::Result(v),
        Err(e) => Answer::Error(e),
    }
}

impl Runner<'_> {
    pub(super) async fn spawn_root(&mut self, i: usize, s: &SpawnRootStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let capabilities = s
            .capabilities
            .iter()
            .enumerate()
            .map(|(k, c)| c.to_request(&format!("capabilities[{k}]")))
            .collect::<Result<Vec<_>, _>>();
        let capabilities = match capabilities {
            Ok(c) => c,
            Err(e) => {
                self.unbind_name(&s.name, format!(": steps[{i}] did not launch it ({})", e.code));
                return self.emit(i, "spawn_root", Answer::Error(e));
            }
        };
        let spec = RootSpec {
            clearance: s.clearance.as_ref().map(|labels| labels.iter().cloned().collect()),
            goal_labels: s.goal_labels.iter().cloned().collect(),
            goal: s.goal.clone(),
            image: ImageId(s.image.clone().unwrap_or_else(|| PUPPET_IMAGE.to_string())),
            cwd: s.cwd.clone().unwrap_or_else(|| "/".to_string()),
            capabilities,
            budget: s.budget.unwrap_or(Budget::UNLIMITED),
            supervision: None,
        };
        match rt.spawn_root(spec).await {
            Ok(pid) => {
                settle::until_started(&rt, pid).await;
                self.bind_name(&s.name, json!(pid));
                self.emit(i, "spawn_root", answer(inspect_json(&rt, pid)))
            }
            Err(e) => {
                let e = host_error(&e);
                self.unbind_name(&s.name, format!(": steps[{i}] did not launch it ({})", e.code));
                self.emit(i, "spawn_root", Answer::Error(e))
            }
        }
    }

    pub(super) async fn signal(&mut self, i: usize, s: &SignalStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.pid_of(i, &s.pid)?;
        let result = rt.signal(pid, s.signal, s.reason.clone()).await.map(CallOk::Signalled);
        settle::after_call(&rt, &result).await;
        self.emit_call(i, "signal", &result)
    }

    /// Sets (`Some(reason)`) or clears (`None`) the host gate.
    pub(super) async fn gate(
        &mut self,
        i: usize,
        name: &str,
        reason: Option<&str>,
    ) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.pid_of(i, name)?;
        let (kind, result) = match reason {
            Some(reason) => ("gate", rt.set_gate(pid, reason).await),
            None => ("ungate", rt.clear_gate(pid).await),
        };
        let result = result.and_then(|row| {
            let grants = rt.grants_of(pid).map_err(|e| host_error(&e))?;
            Ok(row_view(&row, &grants))
        });
        self.emit(i, kind, answer(result))
    }

    pub(super) async fn revoke(&mut self, i: usize, s: &RevokeStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.pid_of(i, &s.pid)?;
        let result = async {
            let grants = rt.grants_of(pid).map_err(|e| host_error(&e))?;
            let targets: Vec<_> =
                grants.iter().filter(|g| g.live && g.resource == s.resource).map(|g| g.id).collect();
            if targets.is_empty() {
                return Err(ToolError::new(
                    "capability_not_held",
                    format!("{pid} holds no live grant on {:?}", s.resource),
                ));
            }
            let mut revoked = Vec::new();
            for id in targets {
                for (grant_id, holder) in rt.revoke(id).await.map_err(|e| host_error(&e))? {
                    revoked.push(json!({ "grant_id": grant_id, "holder": holder }));
                }
            }
            Ok(json!({ "revoked": revoked }))
        }
        .await;
        self.emit(i, "revoke", answer(result))
    }

    pub(super) async fn inspect(&mut self, i: usize, s: &PidStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.pid_of(i, &s.pid)?;
        self.emit(i, "inspect", answer(inspect_json(&rt, pid)))
    }

    pub(super) async fn wait_terminal(&mut self, i: usize, s: &PidStep) -> Result<(), ScenarioError> {
        let rt = self.rt(i)?;
        let pid = self.pid_of(i, &s.pid)?;
        let result = match rt.wait_terminal(pid).await {
            Ok(_) => {
                settle::until_parent_notified(&rt, pid).await;
                inspect_json(&rt, pid)
            }
            Err(e) => Err(host_error(&e)),
        };
        self.emit(i, "wait_terminal", answer(result))
    }

    pub(super) async fn restart(&mut self, i: usize) -> Result<(), ScenarioError> {
        let Some(dir) = self.state_dir.clone() else {
            return Err(ScenarioError::RestartWithoutStateDir { step: i });
        };
        self.release_calls().await;
        // Agent turns in flight are abandoned: their processes ask again after the reopen.
        if let Some(rig) = self.agents.as_mut() {
            rig.abandon_asks();
        }
        // Reports queued before the restart say nothing about waits carried across it.
        self.drain_restarts();
        let carried: Vec<Pid> = self
            .handles
            .values()
            .filter_map(|h| match h {
                Handle::Carried { pid, .. } => Some(*pid),
                _ => None,
            })
            .collect();
        for pid in carried {
            self.restarted.remove(&pid);
        }
        if let Some(rt) = self.take_rt() {
            let rt = Arc::try_unwrap(rt).map_err(|_| ScenarioError::Runtime {
                step: i,
                message: "the runtime is still in use by a call task".into(),
            })?;
            rt.shutdown().await.map_err(|e| ScenarioError::Runtime {
                step: i,
                message: format!("failed to shut down: {e}"),
            })?;
        }
        let rt = open_runtime(Some(&dir), self.store_url.as_deref(), &self.restart_tx, self.agents.as_ref())
            .await?;
        let report = rt.recovery_report().clone();
        let result = json!({
            "epoch": rt.epoch(),
            "recovery": {
                "stale_paused": report.stale_paused,
                "failed_closed": report.failed_closed,
                "orphans_killed": report.orphans_killed,
                "live": report.live,
            },
        });
        self.set_rt(rt);
        self.emit(i, "restart", Answer::Result(result))
    }

    pub(super) fn expect(&mut self, i: usize, s: &ExpectStep) -> Result<(), ScenarioError> {
        let doc = self.outputs.get(s.step).cloned().unwrap_or(Value::Null);
        let actual = doc.pointer(&s.pointer);
        let checks = s
            .checks
            .iter()
            .map(|check| {
                Ok(match check {
                    Check::Equals(v) => Check::Equals(self.substitute(i, v)?),
                    Check::NotEquals(v) => Check::NotEquals(self.substitute(i, v)?),
                    Check::Exists(e) => Check::Exists(*e),
                })
            })
            .collect::<Result<Vec<_>, ScenarioError>>()?;
        let failures: Vec<String> = checks
            .iter()
            .filter_map(|check| {
                let holds = match check {
                    Check::Equals(v) => actual == Some(v),
                    Check::NotEquals(v) => actual != Some(v),
                    Check::Exists(e) => actual.is_some() == *e,
                };
                (!holds).then(|| match check {
                    Check::Equals(v) => format!("expected {v}"),
                    Check::NotEquals(v) => format!("expected anything but {v}"),
                    Check::Exists(true) => "expected a value".to_string(),
                    Check::Exists(false) => "expected no value".to_string(),
                })
            })
            .collect();
        let shown = actual.map_or_else(|| "nothing".to_string(), Value::to_string);
        if failures.is_empty() {
            self.summary.expectations_passed += 1;
            let result = json!({ "passed": true, "step": s.step, "pointer": s.pointer, "actual": actual });
            self.emit(i, "expect", Answer::Result(result))
        } else {
            self.summary.expectations_failed += 1;
            let message =
                format!("steps[{}] at {:?} is {shown}; {}", s.step, s.pointer, failures.join(" and "));
            self.emit(i, "expect", Answer::Error(ToolError::new("expectation_failed", message)))
        }
    }
}
