//! The session's subprocess: spawned in a process group of its own, read line by line, and
//! killed whole — the command-line tool and everything it started — when the session is
//! dropped (a cancel, a terminate, a budget exhausted, a failed process) or times out.
//!
//! It starts held: `/bin/sh` waits for one line on its standard input and only then becomes
//! the tool (`exec`: the same pid, the tool's own argv, standard input null). The supervisor
//! records the group's [`GroupMark`] durably first and then releases it
//! ([`SessionChild::release`]), so a runtime that reopens after a crash always knows which
//! orphaned group to end before it continues the session, and a supervisor that dies before
//! the record is written starts nothing (its end of the pipe closes, and the shell exits).

use super::group::{GroupMark, ProcessGroup, own_group};
use crate::agent::limits::{EXTERNAL_LINE_BYTES_MAX, EXTERNAL_STDERR_BYTES_MAX};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The shell that holds the tool until it is released: one line read, then `exec` of the tool
/// (`$0`) with its arguments and a null standard input. Input that ends first starts nothing.
const HOLD: &str = "read -r _ || exit 125; exec \"$0\" \"$@\" </dev/null";

/// The shell [`HOLD`] runs in.
const SHELL: &str = "/bin/sh";

/// A command line to run as a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionCommand {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: String,
    /// Its arguments, passed as they are (no shell).
    pub args: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, String)>,
}

/// Why a session's subprocess could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// The program is not there.
    #[error("cannot run `{program}`: the program was not found; install it or set the profile's cli.program")]
    NotFound {
        /// The program as given.
        program: String,
    },
    /// The working directory is not a directory.
    #[error("cannot run `{program}`: the working directory {} is not a directory", cwd.display())]
    CwdMissing {
        /// The program as given.
        program: String,
        /// The directory.
        cwd: PathBuf,
    },
    /// Starting it, or reading its output, failed.
    #[error("`{program}`: {source}")]
    Io {
        /// The program as given.
        program: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// It wrote a line longer than [`EXTERNAL_LINE_BYTES_MAX`].
    #[error(
        "`{program}` wrote an output line over {EXTERNAL_LINE_BYTES_MAX} bytes; a stream event is one JSON line"
    )]
    LineTooLong {
        /// The program as given.
        program: String,
    },
}

/// A running session subprocess. Dropping it kills its whole process group (its
/// [`ProcessGroup`] does).
pub struct SessionChild {
    program: String,
    child: Child,
    group: ProcessGroup,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
    /// The held shell's input, until [`SessionChild::release`].
    hold: Option<ChildStdin>,
}

impl SessionChild {
    /// Spawns `command` held (see the module documentation) in a new process group; nothing
    /// of the tool runs until [`SessionChild::release`].
    pub fn spawn(command: &SessionCommand) -> Result<SessionChild, ChildError> {
        if !command.cwd.is_dir() {
            return Err(ChildError::CwdMissing {
                program: command.program.clone(),
                cwd: command.cwd.clone(),
            });
        }
        let program = locate(&command.program, &command.cwd, &command.env)
            .ok_or_else(|| ChildError::NotFound { program: command.program.clone() })?;
        let mut builder = Command::new(SHELL);
        own_group(&mut builder)
            .arg("-c")
            .arg(HOLD)
            .arg(program)
            .args(&command.args)
            .current_dir(&command.cwd)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let io = |source| ChildError::Io { program: command.program.clone(), source };
        let mut child = builder.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ChildError::NotFound { program: command.program.clone() },
            _ => io(e),
        })?;
        let group = ProcessGroup::of(&child);
        let (Some(stdout), Some(mut stderr), Some(hold)) =
            (child.stdout.take(), child.stderr.take(), child.stdin.take())
        else {
            return Err(io(std::io::Error::other("the pipes were not set up")));
        };
        let stderr = tokio::spawn(async move {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > EXTERNAL_STDERR_BYTES_MAX {
                    // Keep the end: a failure's reason is last.
                    let cut = kept.len() - EXTERNAL_STDERR_BYTES_MAX;
                    kept.drain(..cut);
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        });
        let lines = BufReader::with_capacity(64 * 1024, stdout).lines();
        Ok(SessionChild { program: command.program.clone(), child, group, lines, stderr, hold: Some(hold) })
    }

    /// The mark of the session's process group, to record before [`SessionChild::release`].
    pub fn mark(&self) -> Option<GroupMark> {
        self.group.mark()
    }

    /// Lets the held tool start.
    pub async fn release(&mut self) -> Result<(), ChildError> {
        if let Some(mut hold) = self.hold.take() {
            hold.write_all(b"go\n")
                .await
                .map_err(|source| ChildError::Io { program: self.program.clone(), source })?;
        }
        Ok(())
    }

    /// The next line of standard output, `None` at its end.
    pub async fn next_line(&mut self) -> Result<Option<String>, ChildError> {
        match self.lines.next_line().await {
            Ok(Some(line)) if line.len() > EXTERNAL_LINE_BYTES_MAX => {
                Err(ChildError::LineTooLong { program: self.program.clone() })
            }
            Ok(line) => Ok(line),
            Err(source) => Err(ChildError::Io { program: self.program.clone(), source }),
        }
    }

    /// Waits for the program to exit (its output has ended) and returns its status — the
    /// exit code, or `128 + n` for signal `n` — and the end of its standard error. The rest
    /// of its group is killed: nothing it started outlives the session.
    pub async fn finish(mut self) -> Result<(i32, String), ChildError> {
        let status = self
            .child
            .wait()
            .await
            .map_err(|source| ChildError::Io { program: self.program.clone(), source })?;
        self.kill_group();
        let code = status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            status.signal().map_or(-1, |s| 128 + s)
        });
        let stderr = (&mut self.stderr).await.unwrap_or_default();
        Ok((code, stderr))
    }

    /// Kills the whole process group now (SIGKILL).
    pub fn kill_group(&mut self) {
        self.group.kill();
    }

    /// Kills the group and returns what the program wrote on standard error.
    pub async fn kill_and_collect(mut self) -> String {
        self.kill_group();
        let _ = self.child.wait().await;
        (&mut self.stderr).await.unwrap_or_default()
    }
}

/// Where `program` is: a path (with a `/`, against `cwd` when relative) naming a file, or the
/// first executable file of that name on the `PATH` (the one `env` sets, else the inherited
/// one). Found here so that a missing program is reported by name, not by the shell.
fn locate(program: &str, cwd: &std::path::Path, env: &[(String, String)]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = cwd.join(program);
        return executable(&path).then_some(path);
    }
    let path = env
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| std::ffi::OsString::from(value))
        .or_else(|| std::env::var_os("PATH"))?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| executable(candidate))
}
