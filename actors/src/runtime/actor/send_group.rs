//! [`Call::SendGroup`](crate::runtime::calls::Call::SendGroup): several sends in one change
//! set, each answered as when made alone.

use super::delivery::{Origin, Outgoing, Planned, keyed};
use super::{ProcessActor, ProcessState};
use crate::kernel::budget::Usage;
use crate::kernel::status::Sender;
use crate::runtime::calls::{GroupedSend, SentMessage, ToolError};
use crate::runtime::keys::Keyed;
use crate::store::CallKey;
use std::collections::HashMap;

/// One answer per send, in order, and the message of a budget exhaustion if a charge ran out.
pub(super) type SendGroupAnswers = (Vec<Result<SentMessage, ToolError>>, Option<String>);

impl ProcessActor {
    /// Sends `sends` as that many `send_process_message` calls in a row would, with one commit
    /// for every message that passes its checks: each is charged a tool call, answered from
    /// its key if the key was used before, and checked against the mailboxes as the sends
    /// before it left them; a refused one commits nothing and the rest go on. A charge that
    /// runs out answers `budget_exhausted`, the later sends answer as calls of an ended
    /// process, and the caller ends this process as an exhausting call does. If the commit
    /// fails, every send that was to commit answers the store's error.
    pub(super) async fn send_group(
        &self,
        state: &mut ProcessState,
        sends: Vec<GroupedSend>,
    ) -> SendGroupAnswers {
        let me = state.pid();
        let one_call = Usage { tool_calls: 1, ..Usage::default() };
        let origin = Origin { sender: Sender::Process(me), parent: state.row.parent, grants: &state.grants };
        let mut answers: Vec<Option<Result<SentMessage, ToolError>>> = vec![None; sends.len()];
        let mut planned = Planned::default();
        let mut outgoing: Vec<(usize, Outgoing)> = Vec::new();
        // The send that planned each key in this group, and the sends that used it again.
        let mut planned_keys: HashMap<CallKey, usize> = HashMap::new();
        let mut copies: Vec<(usize, usize)> = Vec::new();
        let mut exhausted = None;
        for (index, send) in sends.into_iter().enumerate() {
            if let Err(e) = state.row.account.charge(&one_call) {
                let message = e.to_string();
                answers[index] = Some(Err(ToolError::new("budget_exhausted", message.clone())));
                exhausted = Some(message);
                break;
            }
            let key = match keyed(&self.shared, origin.sender, send.message_key) {
                Ok(Keyed::Answered(first)) => {
                    answers[index] = Some(Ok(first));
                    continue;
                }
                Ok(Keyed::New(key)) => key,
                Err(refused) => {
                    answers[index] = Some(Err(refused));
                    continue;
                }
            };
            if let Some(first) = key.as_ref().and_then(|key| planned_keys.get(key)) {
                copies.push((index, *first));
                continue;
            }
            match planned.plan(&self.shared, origin, send.request, key.clone()) {
                Ok(message) => {
                    if let Some(key) = key {
                        planned_keys.insert(key, index);
                    }
                    outgoing.push((index, message));
                }
                Err(refused) => answers[index] = Some(Err(refused)),
            }
        }
        let changes: Result<Vec<_>, ToolError> = outgoing
            .iter()
            .map(|(_, message)| message.changes())
            .collect::<Result<Vec<_>, _>>()
            .map(|sets| sets.concat());
        let committed = match changes {
            Ok(changes) if changes.is_empty() => Ok(()),
            Ok(changes) => {
                self.shared.store.submit(changes).await.map(drop).map_err(|e| ToolError::store(&e))
            }
            Err(e) => Err(e),
        };
        for (index, message) in outgoing {
            answers[index] = Some(match &committed {
                Ok(()) => {
                    let sent = message.sent.clone();
                    message.announce(&self.shared);
                    Ok(sent)
                }
                Err(e) => Err(e.clone()),
            });
        }
        // A key used twice answers what its first send came to.
        for (index, first) in copies {
            answers[index] = answers[first].clone();
        }
        let answers = answers
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|| Err(ToolError::process_ended(me))))
            .collect();
        (answers, exhausted)
    }
}
