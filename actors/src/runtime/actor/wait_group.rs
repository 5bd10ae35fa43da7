//! [`Call::WaitGroup`](crate::runtime::calls::Call::WaitGroup): non-blocking waits on several
//! children, the result handles of the ended ones granted in one commit.

use super::lifecycle::ready_result;
use super::objects::grant_result;
use super::{ProcessActor, ProcessState};
use crate::kernel::budget::Usage;
use crate::kernel::ids::Pid;
use crate::kernel::process::ProcessRow;
use crate::runtime::calls::{ToolError, WaitResult};

/// What a group's waits answer, and the message of a budget exhaustion if a charge ran out.
pub(super) type WaitGroupAnswers = (Vec<Result<WaitResult, ToolError>>, Option<String>);

impl ProcessActor {
    /// Answers each of `children` as `wait_child_process` with `block=false` would, in order,
    /// with one commit for the result handles of every ended child. A wait that answers
    /// (an ended child, or a refusal) is charged a tool call, as a call made alone is; a
    /// child still running answers `ready=false` and is not charged, so that a caller polling
    /// the rest of a set pays for each child once, when its wait answers. A charge that runs
    /// out answers `budget_exhausted`, the waits after it answer as calls of an ended process,
    /// and the caller ends this process as an exhausting call does.
    pub(super) async fn wait_group(&self, state: &mut ProcessState, children: Vec<Pid>) -> WaitGroupAnswers {
        let me = state.pid();
        let one_call = Usage { tool_calls: 1, ..Usage::default() };
        let mut answers: Vec<Option<Result<WaitResult, ToolError>>> = Vec::with_capacity(children.len());
        // The ended children, and where each one's answer goes.
        let (mut ended, mut ended_at) = (Vec::new(), Vec::new());
        let mut exhausted = None;
        for (index, pid) in children.iter().enumerate() {
            if exhausted.is_some() {
                answers.push(Some(Err(ToolError::process_ended(me))));
                continue;
            }
            let row = self.direct_child(state, *pid);
            if let Ok(child) = &row
                && !child.status.is_terminal()
            {
                answers.push(Some(Ok(WaitResult { ready: false, ..ready_result(child, false) })));
                continue;
            }
            if let Err(e) = state.row.account.charge(&one_call) {
                let message = e.to_string();
                answers.push(Some(Err(ToolError::new("budget_exhausted", message.clone()))));
                exhausted = Some(message);
                continue;
            }
            match row {
                Ok(child) => {
                    answers.push(None);
                    ended.push(child);
                    ended_at.push(index);
                }
                Err(e) => answers.push(Some(Err(e))),
            }
        }
        if !ended.is_empty() {
            match self.grant_results(me, &ended).await {
                Ok(results) => {
                    for (index, result) in ended_at.iter().zip(results) {
                        answers[*index] = Some(Ok(result));
                    }
                }
                Err(e) => {
                    for index in &ended_at {
                        answers[*index] = Some(Err(e.clone()));
                    }
                }
            }
        }
        let answers = answers.into_iter().map(|a| a.unwrap_or_else(|| Err(ToolError::process_ended(me))));
        (answers.collect(), exhausted)
    }

    /// The answers of waits by `parent` on the terminal `children`, with a handle on each one's
    /// result where data flow allows, granted in one commit. A child merged before a reopen
    /// has its memory in the store only: it is read first.
    pub(super) async fn grant_results(
        &self,
        parent: Pid,
        children: &[ProcessRow],
    ) -> Result<Vec<WaitResult>, ToolError> {
        let pids: Vec<Pid> = children.iter().map(|child| child.pid).collect();
        self.shared.memory.ensure(self.shared.store.as_ref(), &pids, &[])?;
        self.shared
            .memory
            .commit(self.shared.store.as_ref(), |stage| {
                let results = children.iter().map(|child| {
                    let mut result = ready_result(child, false);
                    grant_result(stage, parent, &mut result);
                    result
                });
                Ok::<_, ToolError>(results.collect())
            })
            .await
    }
}
