//! [`Call::SpawnGroup`](crate::runtime::calls::Call::SpawnGroup): several launches in one
//! change set, each answered as when made alone.

use super::calls::{launched_of, stage_launch};
use super::{ProcessActor, ProcessMsg, ProcessState};
use crate::kernel::budget::Usage;
use crate::kernel::capability::Grant;
use crate::kernel::launch::{LaunchRequest, Parent};
use crate::kernel::process::ProcessRow;
use crate::kernel::status::Sender;
use crate::runtime::calls::{CallOk, Launched, ToolError};
use crate::runtime::keys::{self, Keyed};
use crate::runtime::telemetry::KernelEvent;
use crate::store::{CallKey, Change, KeyKind, StoreError};
use ractor::ActorRef;
use std::collections::HashMap;

/// A launch of the group that passed its checks: where it stands in the group, and what its
/// commit starts.
struct Planned {
    index: usize,
    child: ProcessRow,
    grants: Vec<Grant>,
}

impl ProcessActor {
    /// Launches `requests` as that many `spawn_child_process` calls in a row would, with one
    /// commit for every launch that passes: each is charged a tool call, checked against its
    /// launch key, and planned against the parent as the launches before it left it (its
    /// account, its child count); a refused one takes nothing and the rest go on. Answers one
    /// result per request, in order, and the message of a budget exhaustion if a charge ran
    /// out: that request answers `budget_exhausted`, the later ones answer as calls of an
    /// ended process, and the caller ends this process as an exhausting call does.
    ///
    /// A grant revoked while the group committed refuses the whole change set; the launches
    /// are then taken back and made one by one, each refused or made as it would have been
    /// alone.
    pub(super) async fn launch_group(
        &self,
        myself: &ActorRef<ProcessMsg>,
        state: &mut ProcessState,
        requests: Vec<LaunchRequest>,
    ) -> (Vec<Result<Launched, ToolError>>, Option<String>) {
        let me = state.pid();
        let store = self.shared.store.as_ref();
        // Keys are read before the object memory is locked: a launch already made answers as
        // it did the first time.
        let mut answers: Vec<Option<Result<Launched, ToolError>>> = vec![None; requests.len()];
        let mut keys: Vec<Option<CallKey>> = Vec::with_capacity(requests.len());
        for (answer, request) in answers.iter_mut().zip(&requests) {
            let key = request.launch_key.clone();
            keys.push(match keys::lookup(store, Sender::Process(me), KeyKind::Launch, key, "launch_key") {
                Ok(Keyed::New(key)) => key,
                Ok(Keyed::Answered(first)) => {
                    *answer = Some(Ok(first));
                    None
                }
                Err(e) => {
                    *answer = Some(Err(e));
                    None
                }
            });
        }
        let elapsed_ms = state.wall_before_ms
            + state.started_at.map_or(0, |s| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX));
        let one_call = Usage { tool_calls: 1, ..Usage::default() };
        // The parent as the launches so far leave it: charged a tool call per launch, as
        // `on_call` charges each call, and holding each planned child's reservation.
        let mut parent_row = state.row.clone();
        let mut children = state.children_total;
        let mut charges = 0;
        let mut committed_row: Option<ProcessRow> = None;
        // Launches whose key an earlier launch of the group staged: (this one, that one).
        let mut copies: Vec<(usize, usize)> = Vec::new();
        let mut planned: Vec<Planned> = Vec::new();
        let mut exhausted: Option<(usize, String)> = None;
        let images = &self.shared.images;
        let telemetry = &self.shared.telemetry;
        let grants = &state.grants;
        let staged = self.shared.memory.plan(store, |stage| {
            // The launch that recorded each key staged in this group, for a key used twice.
            let mut staged_keys: HashMap<CallKey, usize> = HashMap::new();
            for (index, request) in requests.iter().enumerate() {
                if let Err(e) = parent_row.account.charge(&one_call) {
                    exhausted = Some((index, e.to_string()));
                    break;
                }
                charges += 1;
                if answers[index].is_some() {
                    continue;
                }
                if let Some(first) = keys[index].as_ref().and_then(|key| staged_keys.get(key)) {
                    copies.push((index, *first));
                    continue;
                }
                let parent = Parent { row: &parent_row, grants, elapsed_ms, children };
                match stage_launch(stage, images, parent, request, None, |_| {}) {
                    Ok((plan, view)) => {
                        let launched = launched_of(&plan.child, &plan.grants, &view, None);
                        if let Some(key) = keys[index].take() {
                            stage.push(keys::record(key.clone(), &launched)?);
                            staged_keys.insert(key, index);
                        }
                        parent_row.account = plan.parent_account;
                        children += 1;
                        // The row as this launch's own commit would have written it: the
                        // charges of the calls after the last launch stay in memory only, as
                        // they do when each call is made alone.
                        committed_row = Some(parent_row.clone());
                        answers[index] = Some(Ok(launched));
                        planned.push(Planned { index, child: plan.child, grants: plan.grants });
                    }
                    Err(denied) => {
                        telemetry.publish(KernelEvent::LaunchDenied {
                            parent: me,
                            code: denied.code.clone(),
                            message: denied.message.clone(),
                        });
                        answers[index] = Some(Err(denied));
                    }
                }
            }
            if let Some(row) = committed_row.take() {
                stage.push(Change::PutProcess(row));
            }
            Ok::<_, ToolError>(())
        });
        let committed = match staged {
            Ok(((), None)) => Ok(()),
            Ok(((), Some(ticket))) => self.shared.memory.finish(ticket).await.map(drop),
            Err(e) => Err(StoreError::Write(e.to_string())),
        };
        if committed.is_ok() {
            state.row = parent_row;
            state.children_total = children;
        } else {
            // Nothing of the group landed but the calls were made: the charges stay.
            for _ in 0..charges {
                let _ = state.row.account.charge(&one_call);
            }
        }
        match committed {
            Ok(()) => {
                for launch in planned {
                    self.start_launched(myself, state, launch.child, launch.grants).await;
                }
            }
            Err(StoreError::SourceGrantRevoked { .. }) => {
                for launch in &planned {
                    self.shared.memory.discard_launch(launch.child.pid);
                }
                if let Ok(grants) = store.grants_of(me) {
                    state.grants = grants;
                }
                for launch in planned {
                    let alone = self.launch(myself, state, requests[launch.index].clone(), None).await;
                    answers[launch.index] = Some(alone.and_then(|ok| match ok {
                        CallOk::Spawned(launched) => Ok(launched),
                        other => Err(ToolError::new("internal", format!("a launch answered {other:?}"))),
                    }));
                }
            }
            Err(e) => {
                for launch in planned {
                    answers[launch.index] = Some(Err(ToolError::store(&e)));
                }
            }
        }
        // A key used twice answers what its first launch came to, however that was settled.
        for (index, first) in copies {
            answers[index] = answers[first].clone();
        }
        let exhausted_message = exhausted.map(|(index, message)| {
            answers[index] = Some(Err(ToolError::new("budget_exhausted", message.clone())));
            message
        });
        let answers = answers
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|| Err(ToolError::process_ended(me))))
            .collect();
        (answers, exhausted_message)
    }
}
