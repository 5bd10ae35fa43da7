//! The configuration most agent tests run: a lead that can delegate, exec and fork; a helper
//! it can become; a review machine whose states run a writer and a checker.

pub const TEAM: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: lead
    description: Leads.
    brain: s
    window_tokens: 100000
    roster: [helper, review, worker]
    capabilities:
      tasks: true
      notebook: true
      memories: {scope: isolated}
      program_library: {retention_entries: 16, id_length: 6}
      subagents: true
      exec: true
      fork: true
  - id: helper
    description: Helps.
    brain: s
    window_tokens: 100000
    roster: [lead]
    capabilities:
      notebook: true
      program_library: {retention_entries: 4, id_length: 8}
      exec: true
  - id: worker
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
  - id: writer
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
      subagents: true
      fork: true
      transition_state: true
  - id: checker
    brain: s
    window_tokens: 100000
    capabilities:
      transition_state: true
machines:
  - id: review
    entry: draft
    states:
      - {id: draft, profile: writer}
      - {id: check, profile: checker}
    transitions:
      - {from: draft, to: check}
      - {from: check, to: draft}
"#;

/// A three-state machine (`plan` → `build` → `ship`, `build` → `plan`) that a plain `boss` can
/// exec into or delegate to. `ship` is final: its profile ends the session with finish.
pub const PIPELINE: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: boss
    brain: s
    window_tokens: 100000
    roster: [pipeline]
    capabilities:
      tasks: true
      notebook: true
      program_library: {retention_entries: 8, id_length: 6}
      exec: true
  - id: planner
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
      subagents: true
      fork: true
      transition_state: true
  - id: builder
    brain: s
    window_tokens: 100000
    capabilities:
      notebook: true
      transition_state: true
  - id: shipper
    brain: s
    window_tokens: 100000
machines:
  - id: pipeline
    description: Plans, builds and ships.
    entry: plan
    states:
      - {id: plan, profile: planner}
      - {id: build, profile: builder}
      - {id: ship, profile: shipper}
    transitions:
      - {from: plan, to: build}
      - {from: build, to: ship}
      - {from: build, to: plan}
"#;

/// A profile with a large window that execs into ones with small windows: `narrow` truncates,
/// `squeezed` summarizes with the separate brain `sum`. `tight` is a small window of its own
/// that summarizes with `sum` as it goes.
pub const WINDOWS: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
  - {id: sum, kind: scripted, script: summaries}
profiles:
  - id: wide
    brain: s
    window_tokens: 100000
    roster: [narrow, squeezed]
    capabilities:
      notebook: true
      exec: true
  - id: narrow
    brain: s
    window_tokens: 1200
    compaction: {strategy: truncate}
  - id: squeezed
    brain: s
    window_tokens: 1200
    compaction: {strategy: summarize, summarizer: sum}
  - id: tight
    brain: s
    window_tokens: 3000
    capabilities:
      notebook: true
    compaction: {strategy: summarize, summarizer: sum}
"#;

/// Forks, memories and subagents: a lead that forks and delegates (memories isolated; see
/// [`forks_with_memories`] for the other scopes), a loner that delegates but may not fork, a
/// scout that messages its parent and delegates to the worker, and a worker with a task list.
pub const FORKS: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
profiles:
  - id: lead
    description: Leads.
    brain: s
    window_tokens: 100000
    roster: [scout, worker]
    capabilities:
      notebook: true
      memories: {scope: isolated}
      program_library: {retention_entries: 16, id_length: 6}
      subagents: true
      fork: true
  - id: loner
    brain: s
    window_tokens: 100000
    roster: [worker]
    capabilities:
      subagents: true
  - id: scout
    brain: s
    window_tokens: 100000
    roster: [worker]
    capabilities:
      subagents: true
  - id: worker
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
"#;

/// [`FORKS`] with the lead's memories in `scope` (`isolated`, `shared`, `inherited`,
/// `read-only`).
pub fn forks_with_memories(scope: &str) -> String {
    FORKS.replace("memories: {scope: isolated}", &format!("memories: {{scope: {scope}}}"))
}

/// Both execution paths and model-called compaction: a `lead` that writes notes, forks,
/// delegates, execs into `helper` and archives turns, with tool calls or with programs
/// (`code`), summarizing archived turns with `sum` when it writes no summary; a `tiny` whose
/// programs get little fuel, memory and output; a `plain` without `code` or `archive_thread`;
/// a `terse` that archives but has no summarizer (its compaction truncates).
pub const CODE: &str = r#"
brains:
  - {id: s, kind: scripted, script: any}
  - {id: sum, kind: scripted, script: summaries}
profiles:
  - id: lead
    brain: s
    window_tokens: 100000
    roster: [helper, worker]
    capabilities:
      notebook: true
      tasks: true
      program_library: {retention_entries: 16, id_length: 6}
      subagents: true
      exec: true
      fork: true
      code: true
      archive_thread: true
    compaction: {strategy: summarize, summarizer: sum}
  - id: helper
    brain: s
    window_tokens: 100000
    roster: [lead]
    capabilities:
      notebook: true
      subagents: true
      exec: true
      code: true
      archive_thread: true
  - id: worker
    brain: s
    window_tokens: 100000
    capabilities:
      tasks: true
  - id: tiny
    brain: s
    window_tokens: 100000
    capabilities:
      code: {fuel: 200000, memory_bytes: 4000000, output_bytes: 64}
  - id: plain
    brain: s
    window_tokens: 100000
  - id: terse
    brain: s
    window_tokens: 100000
    capabilities:
      notebook: true
      archive_thread: true
    compaction: {strategy: truncate}
"#;
