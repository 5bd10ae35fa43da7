//! The one command wrapper: every seat command (`claude`, `codex`, …) is built as a
//! [`SeatCommand`] and run by [`run`], which bounds its time and its output.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use super::capture::Capture;
use super::limits::{ARGUMENT_BYTES_MAX, DRAIN_AFTER_KILL, OUTPUT_BYTES_MAX};
use crate::agent::external::{ProcessGroup, own_group};

/// A seat command to run: a program, its arguments, where and with what environment, and how
/// long it may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatCommand {
    /// The program: a path, or a bare name looked up on `PATH` (the `PATH` in `env` if it sets
    /// one, else the inherited one).
    pub program: String,
    /// Its arguments, passed as they are (no shell).
    pub args: Vec<String>,
    /// The working directory; it must exist.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, String)>,
    /// How long the command may run, from spawn until it has exited and both of its output
    /// streams are closed.
    pub timeout: Duration,
}

/// What a finished command produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutput {
    /// The exit status: the exit code, or `128 + n` for a command ended by signal `n` (the
    /// shell's convention), so a non-zero status always means it did not succeed.
    pub status: i32,
    /// Its standard output, lossily decoded, cut at [`OUTPUT_BYTES_MAX`] with a marker.
    pub stdout: String,
    /// Its standard error, lossily decoded, cut at [`OUTPUT_BYTES_MAX`] with a marker.
    pub stderr: String,
}

impl CommandOutput {
    /// Whether the command exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.status == 0
    }
}

/// Why a seat command produced no [`CommandOutput`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The program does not exist (no such file, or no such name on `PATH`).
    #[error("failed to run `{program}`: the program was not found; install it or name its full path")]
    NotFound {
        /// The program as given.
        program: String,
    },
    /// The working directory does not exist or is not a directory.
    #[error("failed to run `{program}`: the working directory {} is not a directory", cwd.display())]
    CwdMissing {
        /// The program as given.
        program: String,
        /// The working directory as given.
        cwd: PathBuf,
    },
    /// One argument is longer than the operating system accepts.
    #[error(
        "failed to run `{program}`: argument {index} is {bytes} bytes, more than the \
         {max_bytes}-byte limit on one argument"
    )]
    ArgumentTooLong {
        /// The program as given.
        program: String,
        /// The argument's position in `args`, from 0.
        index: usize,
        /// Its length.
        bytes: usize,
        /// The limit, [`ARGUMENT_BYTES_MAX`].
        max_bytes: usize,
    },
    /// The program exists but could not be started (not executable, out of resources, …).
    #[error("failed to start `{program}`: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Reading its output or waiting for it failed.
    #[error("failed while running `{program}`: {source}")]
    Io {
        /// The program as given.
        program: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// It did not finish within its timeout; it was killed and reaped.
    #[error(
        "`{program}` did not finish within {} ms and was killed",
        timeout.as_millis()
    )]
    TimedOut {
        /// The program as given.
        program: String,
        /// The timeout that passed.
        timeout: Duration,
        /// What it wrote to standard error before it was killed.
        stderr_so_far: String,
    },
}

/// Runs a seat command to its end, or kills it at its timeout.
///
/// Its standard input is null; standard output and error are captured in full up to
/// [`OUTPUT_BYTES_MAX`] each. The command counts as finished when it has exited and both
/// streams have reached end of file, so a grandchild that keeps a stream open holds the
/// command until its timeout. The program leads a process group of its own, killed whole
/// once the command has finished, timed out or been dropped: nothing it started outlives it.
///
/// # Cancel safety
///
/// Dropping the returned future kills the child's whole process group; tokio reaps the child
/// in the background. Nothing else is left behind.
pub async fn run(command: &SeatCommand) -> Result<CommandOutput, CommandError> {
    check_arguments(command)?;
    if !command.cwd.is_dir() {
        return Err(CommandError::CwdMissing { program: command.program.clone(), cwd: command.cwd.clone() });
    }
    let mut child = spawn(command)?;
    let _group = ProcessGroup::of(&child);
    let io_error = |source| CommandError::Io { program: command.program.clone(), source };
    let (mut stdout, mut stderr) = match (child.stdout.take(), child.stderr.take()) {
        (Some(stdout), Some(stderr)) => (stdout, stderr),
        _ => {
            return Err(io_error(std::io::Error::other("the child's output pipes were not set up")));
        }
    };
    let mut out = Capture::new(OUTPUT_BYTES_MAX);
    let mut err = Capture::new(OUTPUT_BYTES_MAX);
    let finished = tokio::time::timeout(
        command.timeout,
        finish(&mut child, &mut stdout, &mut stderr, &mut out, &mut err),
    )
    .await;
    match finished {
        Ok(Ok(status)) => Ok(CommandOutput {
            status: status_code(status),
            stdout: out.into_text(),
            stderr: err.into_text(),
        }),
        Ok(Err(source)) => Err(io_error(source)),
        Err(_elapsed) => {
            kill(&mut child).await.map_err(io_error)?;
            // The child is gone, so its pipes end at once unless a grandchild holds them:
            // collect what was written before the kill, within a bound either way.
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, async {
                let _ = tokio::join!(out.read_to_end(&mut stdout), err.read_to_end(&mut stderr));
            })
            .await;
            Err(CommandError::TimedOut {
                program: command.program.clone(),
                timeout: command.timeout,
                stderr_so_far: err.into_text(),
            })
        }
    }
}

/// Refuses an argument the operating system would refuse, naming it.
fn check_arguments(command: &SeatCommand) -> Result<(), CommandError> {
    match command.args.iter().enumerate().find(|(_, arg)| arg.len() > ARGUMENT_BYTES_MAX) {
        Some((index, arg)) => Err(CommandError::ArgumentTooLong {
            program: command.program.clone(),
            index,
            bytes: arg.len(),
            max_bytes: ARGUMENT_BYTES_MAX,
        }),
        None => Ok(()),
    }
}

/// Builds and spawns the child. This is the only place a seat command's process is created.
fn spawn(command: &SeatCommand) -> Result<Child, CommandError> {
    let mut builder = Command::new(&command.program);
    own_group(&mut builder)
        .args(&command.args)
        .current_dir(&command.cwd)
        .envs(command.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    builder.spawn().map_err(|source| match source.kind() {
        // The working directory was checked above, so "not found" is the program.
        std::io::ErrorKind::NotFound => CommandError::NotFound { program: command.program.clone() },
        _ => CommandError::Spawn { program: command.program.clone(), source },
    })
}

/// Reads both streams to their end and waits for the child, all at once (reading while
/// waiting, so a child writing more than a pipe holds never blocks).
async fn finish(
    child: &mut Child,
    stdout: &mut ChildStdout,
    stderr: &mut ChildStderr,
    out: &mut Capture,
    err: &mut Capture,
) -> std::io::Result<ExitStatus> {
    let (read_out, read_err, status) =
        tokio::join!(out.read_to_end(stdout), err.read_to_end(stderr), child.wait());
    read_out?;
    read_err?;
    status
}

/// Kills the child unless it has already exited, and waits for it.
async fn kill(child: &mut Child) -> std::io::Result<()> {
    match child.try_wait()? {
        Some(_) => Ok(()),
        None => child.kill().await,
    }
}

/// The exit code, or `128 + signal` for a child ended by a signal.
fn status_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    // Neither a code nor a signal: report a failure rather than invent success.
    -1
}
