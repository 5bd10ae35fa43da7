//! Programs and images: what a process executes.
//!
//! An [`Image`] names a program factory plus defaults. The factory is called each time a
//! process's execution starts — at launch, and again when a suspended or paused process is
//! restarted from durable state after a reopen. A program never runs inside an actor's
//! `handle`: it runs in its own task and talks to its process actor through a
//! [`ProcessContext`].

use super::calls::WaitResult;
use super::context::ProcessContext;
use crate::kernel::ids::ImageId;
use crate::kernel::launch::ImageInfo;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a program run ends when it does not call `process_exit`.
pub type ProgramResult = Result<(), ProgramError>;

/// A program's own failure; the process ends `failed` with kind `program_error`, or with
/// `budget_exhausted` for a limit the program keeps itself ([`ProgramError::budget_exhausted`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProgramError(pub String, pub ProgramFailure);

/// The failure kind a [`ProgramError`] ends its process with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgramFailure {
    /// `program_error`.
    #[default]
    Error,
    /// `budget_exhausted`: a limit the program keeps itself (an agent's turns) ran out.
    BudgetExhausted,
}

impl ProgramError {
    /// A new error.
    pub fn new(message: impl Into<String>) -> Self {
        ProgramError(message.into(), ProgramFailure::Error)
    }

    /// A limit the program keeps itself ran out: the process ends `budget_exhausted`.
    pub fn budget_exhausted(message: impl Into<String>) -> Self {
        ProgramError(message.into(), ProgramFailure::BudgetExhausted)
    }
}

impl From<super::calls::ToolError> for ProgramError {
    fn from(e: super::calls::ToolError) -> Self {
        ProgramError::new(e.to_string())
    }
}

/// Why an execution is starting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartKind {
    /// The first start after launch.
    Fresh,
    /// A restart from durable state: after a reopen, or a resume of a stale execution. The
    /// program should continue from its checkpoint, not replay effects.
    Restarted {
        /// The saved child wait that completed while no execution was live, if any (boxed:
        /// a wait result is large and most starts carry none).
        completed_wait: Option<Box<WaitResult>>,
        /// The saved receive that completed while no execution was live, if any.
        completed_receive: Option<super::calls::MessagesReceived>,
    },
}

/// What a program is started with.
#[derive(Clone, Debug)]
pub struct ProgramStart {
    /// The process's goal.
    pub goal: String,
    /// The process's working directory (absolute, as the kernel resolved it).
    pub cwd: String,
    /// Fresh or restarted.
    pub kind: StartKind,
    /// The last checkpoint the program stored, if any.
    pub checkpoint: Option<Vec<u8>>,
}

/// What a process executes.
pub trait Program: Send + 'static {
    /// Runs the program to its end. Returning `Ok(())` without calling `process_exit` exits
    /// with no result; returning `Err` fails the process with kind `program_error`; a panic
    /// fails it with kind `panic`.
    fn run(self: Box<Self>, ctx: ProcessContext) -> BoxFuture<ProgramResult>;
}

struct FnProgram<F>(F);

impl<F, Fut> Program for FnProgram<F>
where
    F: FnOnce(ProcessContext) -> Fut + Send + 'static,
    Fut: Future<Output = ProgramResult> + Send + 'static,
{
    fn run(self: Box<Self>, ctx: ProcessContext) -> BoxFuture<ProgramResult> {
        Box::pin((self.0)(ctx))
    }
}

/// A program from an async closure.
pub fn program_fn<F, Fut>(f: F) -> Box<dyn Program>
where
    F: FnOnce(ProcessContext) -> Fut + Send + 'static,
    Fut: Future<Output = ProgramResult> + Send + 'static,
{
    Box::new(FnProgram(f))
}

/// Makes a program for each execution of a process on an image.
pub type ProgramFactory = Arc<dyn Fn(&ProgramStart) -> Result<Box<dyn Program>, ProgramError> + Send + Sync>;

/// An image: a program factory, defaults, and declared needs.
#[derive(Clone)]
pub struct Image {
    /// Its id.
    pub id: ImageId,
    /// Makes its program.
    pub factory: ProgramFactory,
    /// The tools it offers. A cross-image fork keeps a parent skill only if this image offers
    /// every tool the skill allows.
    pub tools: std::collections::BTreeSet<String>,
    /// The skill snapshot a process starts from on a spawn, a root launch or a restricted fork.
    pub skills: Vec<crate::kernel::objects::Skill>,
    /// Capabilities its program needs. These declare needs and grant nothing: delegate them
    /// explicitly at launch.
    pub required_capabilities: Vec<String>,
    /// Set for an image whose program cannot be paused safely (it drives a foreign program
    /// the kernel cannot hold still): a `pause` signal is refused with this reason.
    pub pause_refusal: Option<String>,
}

impl Image {
    /// An image whose every execution runs `program_for(start)`.
    pub fn new<F>(id: &str, program_for: F) -> Image
    where
        F: Fn(&ProgramStart) -> Box<dyn Program> + Send + Sync + 'static,
    {
        Image {
            id: ImageId(id.to_string()),
            factory: Arc::new(move |start| Ok(program_for(start))),
            tools: Default::default(),
            skills: Vec::new(),
            required_capabilities: Vec::new(),
            pause_refusal: None,
        }
    }

    /// Declares that its processes cannot be paused: a `pause` signal is refused
    /// (`pause_unsupported`) with `reason`.
    pub fn refuses_pause(mut self, reason: impl Into<String>) -> Image {
        self.pause_refusal = Some(reason.into());
        self
    }

    /// Declares a needed capability (grants nothing).
    pub fn requires(mut self, resource: &str) -> Image {
        self.required_capabilities.push(resource.to_string());
        self
    }

    /// Declares tools it offers.
    pub fn offers<'a>(mut self, tools: impl IntoIterator<Item = &'a str>) -> Image {
        self.tools.extend(tools.into_iter().map(String::from));
        self
    }

    /// Adds a default skill (a name and the tools it allows).
    pub fn default_skill<'a>(
        mut self,
        name: &str,
        allowed_tools: impl IntoIterator<Item = &'a str>,
    ) -> Image {
        let allowed_tools = allowed_tools.into_iter().map(String::from).collect();
        self.skills.push(crate::kernel::objects::Skill { name: name.to_string(), allowed_tools });
        self
    }

    /// What the kernel knows of it.
    pub fn info(&self) -> ImageInfo {
        ImageInfo { id: self.id.clone(), required_capabilities: self.required_capabilities.clone() }
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("id", &self.id)
            .field("required_capabilities", &self.required_capabilities)
            .finish_non_exhaustive()
    }
}

/// Image id → image. Fixed when the runtime opens, so recovery can restart any process.
#[derive(Clone, Debug, Default)]
pub struct ImageRegistry {
    images: HashMap<ImageId, Image>,
}

impl ImageRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an image.
    pub fn register(&mut self, image: Image) {
        self.images.insert(image.id.clone(), image);
    }

    /// Looks an image up.
    pub fn get(&self, id: &ImageId) -> Option<&Image> {
        self.images.get(id)
    }

    /// Whether an image is registered.
    pub fn contains(&self, id: &ImageId) -> bool {
        self.images.contains_key(id)
    }

    /// What a launch's memory view needs to know of `child`, launched by a process on
    /// `parent`. An unknown image offers nothing (the launch itself is then refused).
    pub fn child_image(&self, parent: &ImageId, child: &ImageId) -> crate::kernel::objects::ChildImage {
        let image = self.images.get(child);
        crate::kernel::objects::ChildImage {
            same_as_parent: parent == child,
            tools: image.map(|i| i.tools.clone()).unwrap_or_default(),
            default_skills: image.map(|i| i.skills.clone()).unwrap_or_default(),
        }
    }

    /// Whether some registered image offers `tool`.
    pub fn offered_anywhere(&self, tool: &str) -> bool {
        self.images.values().any(|i| i.tools.contains(tool))
    }

    /// Registered image ids, sorted.
    pub fn ids(&self) -> Vec<ImageId> {
        let mut ids: Vec<ImageId> = self.images.keys().cloned().collect();
        ids.sort();
        ids
    }
}
