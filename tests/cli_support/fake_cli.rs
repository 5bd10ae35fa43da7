//! A working directory for driving the `agentvisor` binary against the fake `claude` and
//! `codex` command-line tools (`tests/fixtures/fake_agent_cli.py`): the agent configuration,
//! the fake's plan, its log of invocations, and the pids it reports.

use super::text;
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A secret the profiles read by reference (`from_env: FAKE_SECRET`).
pub(crate) const SECRET: &str = "s3cret-token-value-0042";

pub(crate) fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent_cli.py")
}

/// A working directory with the configuration, the scripts, and the fake's plan and log.
pub(crate) struct Work {
    pub(crate) dir: tempfile::TempDir,
}

impl Work {
    pub(crate) fn new(profiles: &str) -> Work {
        let dir = tempfile::tempdir().expect("tempdir");
        let program = fixture().display().to_string();
        let config = format!(
            "brains:\n  - {{id: demo, kind: scripted, script: worker}}\nprofiles:\n{}\n  - id: worker\n    \
             description: counts things\n    brain: demo\n    window_tokens: 32000\n",
            profiles.replace("PROGRAM", &program)
        );
        std::fs::write(dir.path().join("agents.yaml"), config).expect("config");
        let scripts = json!({"worker": {"turns": [
            {"tool_calls": [{"name": "finish", "arguments": {"result": "42 items"}}]}
        ]}});
        std::fs::write(dir.path().join("scripts.json"), scripts.to_string()).expect("scripts");
        Work { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn state(&self) -> PathBuf {
        self.path("state")
    }

    pub(crate) fn plan(&self, plan: Value) {
        std::fs::write(self.path("plan.json"), plan.to_string()).expect("plan");
    }

    /// `agentvisor --state STATE ARGS…` in the work directory, with the fake's variables.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentvisor"));
        command
            .arg("--state")
            .arg(self.state())
            .args(args)
            .current_dir(self.dir.path())
            .env("FAKE_AGENT_PLAN", self.path("plan.json"))
            .env("FAKE_AGENT_LOG", self.path("log.jsonl"))
            .env("FAKE_AGENT_PIDS", self.path("pids"))
            .env("FAKE_SECRET", SECRET)
            .stdin(Stdio::null());
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("the binary runs")
    }

    pub(crate) fn agent(&self, profile: &str, prompt: &str) -> Output {
        self.run(&["agent", "agents.yaml", profile, prompt, "--scripts", "scripts.json"])
    }

    /// The fake's invocations, in order.
    pub(crate) fn invocations(&self) -> Vec<Value> {
        let log = std::fs::read_to_string(self.path("log.jsonl")).unwrap_or_default();
        log.lines().map(|l| serde_json::from_str(l).expect("a log line")).collect()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    pub(crate) fn rows(&self) -> Vec<Value> {
        self.json(&["ps", "--all", "--json"]).as_array().expect("rows").clone()
    }

    /// Makes `pids` a named pipe: the fake's write blocks until the test reads it.
    pub(crate) fn pids_pipe(&self) {
        let status = Command::new("mkfifo").arg(self.path("pids")).status().expect("mkfifo");
        assert!(status.success());
    }

    /// The pids the fake wrote (blocks until it has written them).
    pub(crate) fn read_pids(&self) -> Vec<u32> {
        let mut text = String::new();
        std::fs::File::open(self.path("pids")).expect("open pids").read_to_string(&mut text).expect("read");
        text.lines().map(|l| l.trim().parse().expect("a pid")).collect()
    }
}

pub(crate) fn args_of(invocation: &Value) -> Vec<String> {
    invocation["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| a.as_str().expect("text").to_string())
        .collect()
}

/// Whether `pid` is gone now: no such process, or a zombie nobody reaps here.
pub(crate) fn gone_now(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Whether `pid` is gone, waiting a bounded while for a SIGKILL already sent to land.
pub(crate) fn gone(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let dead = gone_now(pid);
        if dead || std::time::Instant::now() > deadline {
            return dead;
        }
        std::thread::yield_now();
    }
}
