//! A "scripted" image for supervision tests: each process takes its next action from a queue
//! named by its goal, so every incarnation of a child (the same goal) plays the next step the
//! test pushed, and a test decides exactly when and how a child ends.

use agentvisor_actors::kernel::budget::Usage;
use agentvisor_actors::runtime::calls::Call;
use agentvisor_actors::runtime::program::{Image, ProgramError, program_fn};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// How a scripted process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// Panics (`failed`, `panic`).
    Panic,
    /// Returns an error (`failed`, `program_error`).
    Fail,
    /// Returns normally (`exited`).
    Exit,
    /// Charges this many tokens, then panics.
    SpendThenPanic(u64),
}

type Queue = (mpsc::UnboundedSender<Act>, Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Act>>>);

/// The queues, by goal.
#[derive(Clone, Default)]
pub(crate) struct Script {
    queues: Arc<Mutex<HashMap<String, Queue>>>,
}

/// The scripted image's id.
pub(crate) const SCRIPTED: &str = "scripted";

impl Script {
    fn queue(&self, goal: &str) -> Queue {
        let mut queues = self.queues.lock().expect("queues");
        queues
            .entry(goal.to_string())
            .or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                (tx, Arc::new(tokio::sync::Mutex::new(rx)))
            })
            .clone()
    }

    /// Queues the next action of the process (any incarnation) whose goal is `goal`.
    pub(crate) fn push(&self, goal: &str, act: Act) {
        self.queue(goal).0.send(act).expect("queue open");
    }

    /// The image: each execution waits for its goal's next action and plays it.
    pub(crate) fn image(&self) -> Image {
        quiet_scripted_panics();
        let script = self.clone();
        Image::new(SCRIPTED, move |start| {
            let rx = script.queue(&start.goal).1;
            program_fn(move |ctx| async move {
                let act = rx.lock().await.recv().await;
                match act {
                    Some(Act::Panic) => panic!("scripted panic"),
                    Some(Act::Fail) => Err(ProgramError::new("scripted failure")),
                    Some(Act::SpendThenPanic(tokens)) => {
                        let _ = ctx.call(Call::Charge(Usage { tokens, ..Usage::default() })).await;
                        panic!("scripted panic after spending {tokens} tokens")
                    }
                    Some(Act::Exit) | None => Ok(()),
                }
            })
        })
    }
}

/// Scripted panics are expected: keep the default panic report for every other panic only.
fn quiet_scripted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let scripted = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.starts_with("scripted panic"))
                .or_else(|| info.payload().downcast_ref::<String>().map(|s| s.starts_with("scripted panic")))
                .unwrap_or(false);
            if !scripted {
                default(info);
            }
        }));
    });
}
