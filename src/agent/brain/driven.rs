//! [`DrivenBrains`]: brains whose turns are supplied from outside, one request at a time.
//!
//! A scenario (or a test) plays the model: each brain publishes every turn request to a
//! [`DrivenDriver`] as a [`TurnAsk`] — the process, the incarnation, the offered tool names
//! and the window's tail since the model last spoke — and waits for the driver to
//! [`answer`](TurnAsk::answer) it with an assistant message. Usage is the token estimator's
//! ([`super::tokens`]), as for a scripted brain, so it is reproducible.
//!
//! Nothing polls: asks are queued per process under a lock and a [`Notify`] wakes the driver;
//! each answer travels on its own oneshot.
//!
//! The queue is unbounded, which is safe because an agent process asks for one turn at a time
//! and waits for it: a process has at most one live ask (plus asks its abandoned turns left,
//! which the driver skips and drops).

use super::error::BrainError;
use super::message::{AssistantMessage, Message, Usage};
use super::window::tail_since_assistant;
use super::{Brain, FinishReason, Turn, TurnFuture, TurnRequest, tokens};
use crate::actors::Pid;
use crate::agent::run::{AgentError, AgentIdentity, BrainProvider};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::{Notify, oneshot};

/// What the driver and the brains share.
#[derive(Debug, Default)]
struct Shared {
    /// Asks not yet taken by the driver, per process, oldest first.
    asks: Mutex<HashMap<Pid, VecDeque<TurnAsk>>>,
    /// Woken on every published ask and when the last brain goes away.
    published: Notify,
    /// Set when the driver is dropped: no ask can be answered any more.
    driver_gone: AtomicBool,
}

/// Held by the provider and by every brain it made; its drop wakes the driver, which sees
/// through its `Weak` whether any brain can still ask.
#[derive(Debug)]
struct Liveness {
    shared: Arc<Shared>,
}

impl Drop for Liveness {
    fn drop(&mut self) {
        self.shared.published.notify_waiters();
    }
}

/// A [`BrainProvider`] whose brains ask a [`DrivenDriver`] for every turn.
#[derive(Debug)]
pub struct DrivenBrains {
    alive: Arc<Liveness>,
}

/// The other end of [`DrivenBrains`]: takes the turn requests and answers them.
///
/// Dropping it makes every waiting brain (and every later ask) fail with
/// [`BrainError::DriverGone`].
#[derive(Debug)]
pub struct DrivenDriver {
    shared: Arc<Shared>,
    alive: Weak<Liveness>,
}

/// One turn request, waiting for its answer.
#[derive(Debug)]
pub struct TurnAsk {
    /// The asking process.
    pub pid: Pid,
    /// The incarnation's agent id.
    pub agent_id: String,
    /// The profile it runs.
    pub profile: String,
    /// The brain id its profile (or its compaction strategy, for a summary) names.
    pub brain: String,
    /// The names of the tools offered in this request, in the order the system slot lists them.
    pub tools: Vec<String>,
    /// The rendered system prompt slot.
    pub system: String,
    /// The window's messages since the last assistant message (the whole window if the model
    /// has not spoken yet): tool results, notes, user input.
    pub tail: Vec<Message>,
    reply: oneshot::Sender<AssistantMessage>,
}

/// An answer no brain waits for any more: its turn was abandoned (the process ended, or its
/// runtime shut down).
#[derive(Debug, thiserror::Error)]
#[error(
    "failed to answer the turn of {pid}: its brain no longer waits for it (the process ended or its runtime shut down)"
)]
pub struct TurnAbandoned {
    /// The process whose turn it was.
    pub pid: Pid,
}

impl TurnAsk {
    /// Answers the turn with `message` (its text and tool calls).
    pub fn answer(self, message: AssistantMessage) -> Result<(), TurnAbandoned> {
        let pid = self.pid;
        self.reply.send(message).map_err(|_| TurnAbandoned { pid })
    }

    /// Whether the brain that asked has stopped waiting.
    pub fn is_abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

impl DrivenBrains {
    /// A provider and the driver of every brain it makes.
    pub fn new() -> (Arc<DrivenBrains>, DrivenDriver) {
        let shared = Arc::new(Shared::default());
        let alive = Arc::new(Liveness { shared: Arc::clone(&shared) });
        let driver = DrivenDriver { shared, alive: Arc::downgrade(&alive) };
        (Arc::new(DrivenBrains { alive }), driver)
    }
}

impl BrainProvider for DrivenBrains {
    fn brain(&self, identity: &AgentIdentity) -> Result<Arc<dyn Brain>, AgentError> {
        Ok(Arc::new(DrivenBrain {
            pid: identity.pid,
            agent_id: identity.agent_id.clone(),
            profile: identity.profile.clone(),
            brain: identity.brain.clone(),
            alive: Arc::clone(&self.alive),
        }))
    }
}

/// One incarnation's brain: publishes each request and waits for the driver's answer.
#[derive(Debug)]
struct DrivenBrain {
    pid: Pid,
    agent_id: String,
    profile: String,
    brain: String,
    alive: Arc<Liveness>,
}

impl DrivenBrain {
    fn driver_gone(&self) -> BrainError {
        BrainError::DriverGone { detail: format!("no driver answers the turns of {}", self.pid) }
    }
}

impl Brain for DrivenBrain {
    /// # Cancel safety
    ///
    /// Dropping the future abandons the ask: the driver skips it, and an answer given to it
    /// anyway is refused with [`TurnAbandoned`].
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        let tail: Vec<Message> = tail_since_assistant(request.window).into_iter().cloned().collect();
        let tools: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let input_tokens = tokens::request_tokens(&request);
        let system = request.system.to_string();
        Box::pin(async move {
            let shared = &self.alive.shared;
            let (reply, answered) = oneshot::channel();
            let ask = TurnAsk {
                pid: self.pid,
                agent_id: self.agent_id.clone(),
                profile: self.profile.clone(),
                brain: self.brain.clone(),
                tools,
                system,
                tail,
                reply,
            };
            {
                // Checked under the lock the driver's drop clears the queue under, so an ask
                // is never queued after that clear.
                let mut asks = shared.asks.lock();
                if shared.driver_gone.load(Ordering::Acquire) {
                    return Err(self.driver_gone());
                }
                asks.entry(self.pid).or_default().push_back(ask);
            }
            shared.published.notify_waiters();
            let message = answered.await.map_err(|_| self.driver_gone())?;
            let usage = Usage {
                input_tokens,
                output_tokens: tokens::assistant_tokens(&message),
                cached_tokens: 0,
                cache_write_tokens: 0,
                cost_micros: None,
            };
            let finish = FinishReason::inferred(&message);
            Ok(Turn { message, usage, finish })
        })
    }
}

impl DrivenDriver {
    /// The next turn request of `pid`, waiting for one if none is queued. `None` once no brain
    /// can ask any more (the provider and every brain it made are gone).
    ///
    /// It does not notice that the process ended: race it against the runtime's
    /// `wait_terminal`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an ask is taken from the queue only when the future returns it.
    pub async fn next_request(&self, pid: Pid) -> Option<TurnAsk> {
        loop {
            let notified = self.shared.published.notified();
            tokio::pin!(notified);
            // Registered before the check, so a publish between the check and the await is
            // not lost.
            notified.as_mut().enable();
            if let Some(ask) = self.try_next(pid) {
                return Some(ask);
            }
            if self.alive.strong_count() == 0 {
                return None;
            }
            notified.await;
        }
    }

    /// The next live turn request of `pid`, if one is queued now. Abandoned asks are dropped.
    pub fn try_next(&self, pid: Pid) -> Option<TurnAsk> {
        let mut asks = self.shared.asks.lock();
        let queue = asks.get_mut(&pid)?;
        let ask = std::iter::from_fn(|| queue.pop_front()).find(|ask| !ask.is_abandoned());
        if queue.is_empty() {
            asks.remove(&pid);
        }
        ask
    }

    /// Drops every queued ask: each waiting brain fails with [`BrainError::DriverGone`]. For a
    /// runtime that shuts down, whose processes will ask again after a reopen.
    pub fn abandon_all(&self) {
        let dropped: Vec<TurnAsk> = self.shared.asks.lock().drain().flat_map(|(_, q)| q).collect();
        drop(dropped);
    }
}

impl Drop for DrivenDriver {
    fn drop(&mut self) {
        let dropped: Vec<TurnAsk> = {
            let mut asks = self.shared.asks.lock();
            self.shared.driver_gone.store(true, Ordering::Release);
            asks.drain().flat_map(|(_, q)| q).collect()
        };
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::brain::ToolCall;
    use crate::agent::run::AgentLaunch;
    use serde_json::json;

    fn identity(pid: Pid) -> AgentIdentity {
        AgentIdentity {
            pid,
            agent_id: "a1".into(),
            profile: "lead".into(),
            brain: "b".into(),
            incarnation: 1,
            launch: AgentLaunch::new("lead", "go"),
            turns_taken: 0,
        }
    }

    #[tokio::test]
    async fn a_turn_is_published_and_answered_by_the_driver() {
        let (brains, driver) = DrivenBrains::new();
        let pid = Pid(uuid::Uuid::now_v7());
        let brain = brains.brain(&identity(pid)).expect("brain");
        let window = vec![Message::user("hello")];
        let tools = vec![];
        let asked = tokio::spawn(async move {
            let brain = brain;
            brain.turn(TurnRequest::new("sys", &window, &tools)).await
        });
        let ask = driver.next_request(pid).await.expect("an ask");
        assert_eq!(ask.profile, "lead");
        assert_eq!(ask.tail, vec![Message::user("hello")]);
        let call = ToolCall { id: "c0".into(), name: "finish".into(), arguments: json!({}) };
        ask.answer(AssistantMessage { text: None, tool_calls: vec![call] }).expect("answered");
        let turn = asked.await.expect("join").expect("turn");
        assert_eq!(turn.finish, FinishReason::ToolCalls);
        assert!(turn.usage.input_tokens > 0);
    }

    #[tokio::test]
    async fn next_request_ends_when_no_brain_is_left_and_asks_fail_without_a_driver() {
        let (brains, driver) = DrivenBrains::new();
        let pid = Pid(uuid::Uuid::now_v7());
        let brain = brains.brain(&identity(pid)).expect("brain");
        drop(brains);
        drop(brain);
        assert!(driver.next_request(pid).await.is_none());

        let (brains, driver) = DrivenBrains::new();
        let brain = brains.brain(&identity(pid)).expect("brain");
        drop(driver);
        let window: Vec<Message> = Vec::new();
        let err = brain.turn(TurnRequest::new("", &window, &[])).await.expect_err("no driver");
        assert_eq!(err.code(), "brain_driver_gone");
    }
}
