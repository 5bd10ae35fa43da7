//! Built-in images.
//!
//! - [`PUPPET_IMAGE`]: a program that does nothing by itself. Its process is driven from
//!   outside with [`Runtime::call_as`](crate::actors::runtime::Runtime::call_as), which is how
//!   the scenario runner and the JSON tool tests act as a process. It offers every kernel
//!   tool and has no default skills.
//! - [`OTHER_PUPPET_IMAGE`]: the same program under a second id, so that a scenario can
//!   launch a child on an image other than its parent's (which needs read authority on it).
//!
//! [`builtin_images`] registers them all, with the demo's images ([`crate::demo`]); it is what
//! the command line opens runtimes with.

use crate::actors::Pid;
use crate::actors::runtime::RuntimeOptions;
use crate::actors::runtime::calls::CallOk;
use crate::actors::runtime::program::{Image, StartKind, program_fn};
use crate::tools::ToolName;
use tokio::sync::mpsc;

/// The puppet image's id.
pub const PUPPET_IMAGE: &str = "puppet";

/// The second puppet image's id.
pub const OTHER_PUPPET_IMAGE: &str = "puppet.other";

fn idle_image(id: &str) -> Image {
    Image::new(id, |_start| {
        program_fn(|_ctx| async move {
            std::future::pending::<()>().await;
            Ok(())
        })
    })
    .offers(kernel_tools())
}

/// Every kernel tool's name: what a puppet offers, since it can be driven to call any of them
/// (a cross-image fork keeps a loaded skill whose allowed tools are all among these).
fn kernel_tools() -> impl Iterator<Item = &'static str> {
    ToolName::ALL.into_iter().map(ToolName::as_str)
}

/// An image whose program never acts and never returns: every call its process makes comes
/// from the host through `Runtime::call_as`. It ends only by a `process_exit` made for it, a
/// kill, or a failure.
pub fn puppet() -> Image {
    idle_image(PUPPET_IMAGE)
}

/// [`puppet`] under the id [`OTHER_PUPPET_IMAGE`].
pub fn other_puppet() -> Image {
    idle_image(OTHER_PUPPET_IMAGE)
}

/// What an observed puppet reports when one of its executions is restarted from durable
/// state (after a reopen, or a resume of an execution that was stopped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PuppetRestart {
    /// The restarted process.
    pub pid: Pid,
    /// The saved wait or receive that completed while no execution was live, if any: the
    /// answer the interrupted `wait_child_process` or `receive_process_messages` call would
    /// have received.
    pub completed: Option<CallOk>,
}

/// Both puppets (same ids, same behaviour), each also sending a [`PuppetRestart`] to `sink`
/// each time one of its executions is restarted, so a driver can collect the answer of a
/// blocking wait that outlived a restart. Fresh starts are not reported.
///
/// The channel is unbounded because a report is sent once per restarted execution, and
/// executions restart only on a reopen or a resume that the driver itself performs; a
/// closed receiver is ignored.
pub fn observed_puppets(sink: &mpsc::UnboundedSender<PuppetRestart>) -> Vec<Image> {
    [PUPPET_IMAGE, OTHER_PUPPET_IMAGE].into_iter().map(|id| observed(id, sink.clone())).collect()
}

fn observed(id: &str, sink: mpsc::UnboundedSender<PuppetRestart>) -> Image {
    Image::new(id, move |_start| {
        let sink = sink.clone();
        program_fn(move |ctx| async move {
            if let StartKind::Restarted { completed_wait, completed_receive } = ctx.start_kind() {
                let completed = match (completed_wait, completed_receive) {
                    (Some(w), _) => Some(CallOk::Waited((**w).clone())),
                    (None, Some(r)) => Some(CallOk::Received(r.clone())),
                    (None, None) => None,
                };
                let _ = sink.send(PuppetRestart { pid: ctx.pid(), completed });
            }
            std::future::pending::<()>().await;
            Ok(())
        })
    })
    .offers(kernel_tools())
}

/// Every built-in image, as runtime options: the puppets and the demo's images. Every
/// command opens its runtime with these, so a state directory written by one command can be
/// reopened (and its processes resumed) by any other.
pub fn builtin_images() -> RuntimeOptions {
    crate::demo::images()
        .into_iter()
        .fold(RuntimeOptions::new().image(puppet()).image(other_puppet()), RuntimeOptions::image)
}
