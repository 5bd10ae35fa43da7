//! Idempotency keys: a launch with a `launch_key` or a send with a `message_key` records its
//! answer in the same change set as its effect, and a later call with the same key (from the
//! same caller) answers that record instead of acting again. The record is durable, so a
//! program restarted after a crash that issues the same calls again creates nothing twice.

use crate::kernel::status::Sender;
use crate::limits;
use crate::runtime::calls::ToolError;
use crate::store::{CallKey, Change, KeyKind, Store};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a call's key says before the call acts: the first call's answer, or the key to record
/// this call's answer under (`None` for a call without a key).
pub(crate) enum Keyed<T> {
    Answered(T),
    New(Option<CallKey>),
}

/// Looks up the key a call of `caller` names in its argument `field` (`launch_key`,
/// `message_key`), refusing an empty or oversized key.
pub(crate) fn lookup<T: DeserializeOwned>(
    store: &dyn Store,
    caller: Sender,
    kind: KeyKind,
    key: Option<String>,
    field: &str,
) -> Result<Keyed<T>, ToolError> {
    let Some(key) = key else { return Ok(Keyed::New(None)) };
    let key = call_key(caller, kind, key, field)?;
    Ok(match answered(store, &key)? {
        Some(first) => Keyed::Answered(first),
        None => Keyed::New(Some(key)),
    })
}

/// The durable name of `key` for `caller`, refusing an empty or oversized key
/// (`invalid_arguments`, naming `field`).
fn call_key(caller: Sender, kind: KeyKind, key: String, field: &str) -> Result<CallKey, ToolError> {
    if key.is_empty() || key.len() > limits::IDEMPOTENCY_KEY_BYTES_MAX {
        return Err(ToolError::new(
            crate::kernel::codes::INVALID_ARGUMENTS,
            format!(
                "{field} must be 1 to {} bytes; it names one call of this caller",
                limits::IDEMPOTENCY_KEY_BYTES_MAX
            ),
        ));
    }
    let caller = match caller {
        Sender::Process(pid) => pid.to_string(),
        Sender::Host => "host".to_string(),
        Sender::Runtime => "runtime".to_string(),
    };
    Ok(CallKey { caller, kind, key })
}

/// The first call's answer, if this key was used before.
fn answered<T: DeserializeOwned>(store: &dyn Store, key: &CallKey) -> Result<Option<T>, ToolError> {
    let Some(answer) = store.keyed(key).map_err(|e| ToolError::store(&e))? else { return Ok(None) };
    serde_json::from_value(answer).map(Some).map_err(|e| {
        ToolError::new(
            "internal",
            format!("the recorded answer of key {:?} of {} does not decode: {e}", key.key, key.caller),
        )
    })
}

/// The change that records `answer` under `key`.
pub(crate) fn record<T: Serialize>(key: CallKey, answer: &T) -> Result<Change, ToolError> {
    let answer = serde_json::to_value(answer)
        .map_err(|e| ToolError::new("internal", format!("an answer could not be recorded: {e}")))?;
    Ok(Change::PutKeyed { key, answer })
}
