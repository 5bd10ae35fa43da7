//! Every bound the agent layer's configuration enforces, in one place, each with the reason for
//! its value. The kernel's own bounds are in [`crate::actors::limits`].

/// Largest configuration file accepted, in bytes. A team of agents is a page of YAML, not a
/// data set; the bound keeps a mistaken path (a log, a binary) from reaching the parsers.
pub const CONFIG_BYTES_MAX: usize = 1024 * 1024;

/// Longest id of a brain, profile, machine or state, in bytes. Ids are what a model says in
/// an `exec` or `spawn_subagent` call and what a refusal lists; they stay short words.
pub const ID_BYTES_MAX: usize = 64;

/// Most brains one configuration declares.
pub const BRAINS_MAX: usize = 256;

/// Most profiles one configuration declares. Every profile is checked against every roster
/// and machine, so this bounds the launch check's work.
pub const PROFILES_MAX: usize = 1024;

/// Most machines one configuration declares.
pub const MACHINES_MAX: usize = 256;

/// Most ids on one delegation roster. A roster is rendered into the system prompt, so a
/// longer one costs every request of the agent that holds it.
pub const ROSTER_MAX: usize = 256;

/// Most states in one declared machine.
pub const STATES_MAX: usize = 256;

/// Most transitions in one declared machine: every ordered pair of [`STATES_MAX`] states
/// would be 65,280; a process is a sparse graph, so a tenth of that is generous.
pub const TRANSITIONS_MAX: usize = 4096;

/// Largest window a profile may declare, in tokens. Above every model window announced so
/// far (10M); a larger value is a typo (an extra zero), and the bound keeps token
/// arithmetic on windows far from overflow.
pub const WINDOW_TOKENS_MAX: u64 = 1 << 24;

/// Longest system-prompt template, in bytes. The prompt is sent on every request; 64 KiB is
/// about 16k tokens, already more than most agents should spend before their first word.
pub const SYSTEM_PROMPT_BYTES_MAX: usize = 64 * 1024;

/// Longest description of a profile or machine, in bytes. A description is rendered into
/// every roster that names the profile; it is a sentence or two.
pub const DESCRIPTION_BYTES_MAX: usize = 1024;

/// Longest brain field (script name, base URL, model name, environment variable name), in
/// bytes.
pub const BRAIN_FIELD_BYTES_MAX: usize = 2048;

/// Smallest program id length, in characters. Ids are never re-issued, not even after their
/// program is evicted or across a fork, so the id space must outlast a long session: 4
/// characters of a 32-letter alphabet give about a million ids.
pub const PROGRAM_ID_LENGTH_MIN: u64 = 4;

/// Largest program id length, in characters. A model repeats the id to fetch a program;
/// past 16 characters an id costs tokens and buys nothing.
pub const PROGRAM_ID_LENGTH_MAX: u64 = 16;

/// Program id length when a profile does not set one: about 10⁹ ids, still short to say.
pub const PROGRAM_ID_LENGTH_DEFAULT: u8 = 6;

/// Most programs a program library retains. Retained programs are listed to the model and
/// copied by every fork; beyond this the library is a store, not a working set.
pub const PROGRAM_RETENTION_ENTRIES_MAX: u64 = 4096;

/// Programs a library retains when a profile does not say.
pub const PROGRAM_RETENTION_ENTRIES_DEFAULT: u32 = 64;

/// Window fill, in percent of the window limit, at which compaction runs when a profile does
/// not say: leaves a fifth of the window for the turn that is about to be produced.
pub const COMPACTION_TRIGGER_PERCENT_DEFAULT: u8 = 80;

/// Turns one agent process takes before it is failed: a runaway loop (a model that never
/// ends its session) is stopped rather than spending its whole budget. Budgets bound cost;
/// this bounds a brain that costs nothing, such as a scripted one that loops.
pub const AGENT_TURNS_MAX: u64 = 100_000;

/// Messages picked up from the mailbox at the start of one turn; more wait for the next.
pub const INBOX_PAGE: usize = 50;

/// Consecutive turns with a malformed tool call (arguments that are not JSON, a tool that does
/// not exist) after which an agent fails, when its profile does not say: each such call is
/// answered with an error the model can correct, and three turns in a row without a correct
/// call means it is not correcting.
pub const MALFORMED_TURNS_DEFAULT: u32 = 3;

/// The same tool call with the same arguments this many times in a row draws a warning to the
/// model, and once more fails the agent, when its profile does not say: a model that sends an
/// identical call a fifth time is looping, not waiting (a poll changes nothing between calls
/// of a well-behaved agent only when it should back off).
pub const REPEATED_CALLS_DEFAULT: u32 = 5;

/// The largest guard a profile may set, 1000: past that a guard guards nothing.
pub const GUARD_MAX: u32 = 1000;

/// The budget a root agent launches with where neither its profile nor a flag sets a
/// dimension, so that nothing runs unlimited by accident (`--unlimited` opts out): 2,000,000
/// tokens (a long working session on a hosted model), $5.00 where cost is reported or
/// priced, 500 turns. Tool calls, wall time and live children are left open: the token and
/// turn caps already end a runaway loop.
pub const DEFAULT_ROOT_BUDGET: crate::agent::config::AgentBudget = crate::agent::config::AgentBudget {
    kernel: crate::actors::kernel::budget::Budget {
        tokens: Some(2_000_000),
        cost_micros: Some(5_000_000),
        tool_calls: None,
        wall_time_ms: None,
        live_children: None,
    },
    turns: Some(500),
};

/// Longest assistant text a window records, in bytes. Past it the text is cut on a character
/// boundary and ends with a note saying how much was cut (`… [N bytes cut: …]`), which the
/// model reads on its next turn. The largest output a model is announced to write in one
/// turn, 128k tokens, is about 512 KiB of text; the bound is that, and it keeps a turn well
/// inside the checkpoint that carries the window's newest items inline
/// ([`CHECKPOINT_BYTES_MAX`](crate::actors::limits::CHECKPOINT_BYTES_MAX), 16 MiB), so a
/// runaway answer costs the agent the end of its text, not its life. Below a result's bound
/// too, so a turn that ends the session with its text always makes a result.
pub const ASSISTANT_TEXT_BYTES_MAX: usize = 512 * 1024;

/// Largest assistant message a window records, text and calls (id, name and arguments as
/// JSON) together, in bytes. A call that would take the message past it is recorded with its
/// arguments left out and answered `arguments_too_large` without running. A quarter of the
/// checkpoint bound leaves room for the turn's results and the rest of the tail, and fits
/// several calls at the largest argument a tool takes (an object payload of
/// [`OBJECT_BYTES_MAX`](crate::actors::limits::OBJECT_BYTES_MAX), 1 MiB).
pub const ASSISTANT_MESSAGE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Longest piece of what the model said and did that an agent event carries, in characters:
/// a turn's assistant text, one call's arguments, its result or its refusal's message (a JSON
/// value is measured as its JSON text). Past it the text is cut and ends with a marker naming
/// how many characters were cut (`… [1234 chars cut]`). 16 Ki characters keeps a whole
/// ordinary answer or result readable in `agentvisor transcript` while a tool that returns a
/// megabyte (a large object read) cannot make every event line that large; the event file is
/// an observer's log, not the window, which keeps everything.
pub const EVENT_FIELD_CHARS_MAX: usize = 16 * 1024;

/// Most entries a configuration's `telemetry.redact` and `telemetry.redact_env` lists hold,
/// together. Every event is scanned for every entry, so the list bounds that work; secrets are
/// a handful of keys and tokens.
pub const REDACT_ENTRIES_MAX: usize = 256;

/// Shortest literal `telemetry.redact` accepts, in characters. A one- or two-character
/// "secret" would blank out ordinary words in every event; a real secret is longer.
pub const REDACT_LITERAL_CHARS_MIN: usize = 4;

/// The longest text in a profile's `cli` table (program, model, one tool name or argument):
/// far above any real value, small enough that a configuration cannot hide a payload in one
/// command-line argument.
pub const CLI_TEXT_BYTES_MAX: usize = 4096;

/// The most tools an `allowed_tools` or `disallowed_tools` list names.
pub const CLI_TOOLS_MAX: usize = 256;

/// The most `extra_args` entries.
pub const CLI_ARGS_MAX: usize = 256;

/// The most variables a `cli.env` table sets.
pub const CLI_ENV_MAX: usize = 256;

/// The largest `cli.max_turns`: a bound on agentic turns well beyond any session's.
pub const CLI_MAX_TURNS_MAX: u64 = 100_000;

/// The largest `cli.timeout_ms`: one week.
pub const CLI_TIMEOUT_MS_MAX: u64 = 7 * 24 * 3600 * 1000;

/// The most bytes of an external session's standard error kept for its outcome: the end of a
/// failure report, bounded so a runaway tool cannot fill the state.
pub const EXTERNAL_STDERR_BYTES_MAX: usize = 16 * 1024;

/// The longest line an external session may write on standard output. Stream events are
/// one JSON object per line; a longer line is refused as malformed rather than buffered.
pub const EXTERNAL_LINE_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Fuel a program may burn when its profile does not say. Fuel counts the interpreter's
/// interrupt polls (it polls on calls and backward jumps, and reports every
/// [`CODE_FUEL_PER_POLL`]): about a second of pure computation on this class of machine,
/// far more than orchestrating tool calls needs, and a loop that never ends is stopped by it
/// deterministically, whatever the machine's load.
pub const CODE_FUEL_DEFAULT: u64 = 500_000_000;

/// The most fuel a profile may give a program: a hundred times the default.
pub const CODE_FUEL_MAX: u64 = 50_000_000_000;

/// Interpreter steps between two interrupt polls: the engine's own counter (QuickJS's
/// `JS_INTERRUPT_COUNTER_INIT`), so fuel is spent in steps of this size.
pub const CODE_FUEL_PER_POLL: u64 = 10_000;

/// The memory a program's interpreter may allocate when its profile does not say: its heap,
/// its strings and the values tools returned. 64 MiB holds any result a tool gives.
pub const CODE_MEMORY_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

/// The most memory a profile may give a program's interpreter, 1 GiB.
pub const CODE_MEMORY_BYTES_MAX: u64 = 1024 * 1024 * 1024;

/// The least memory a program's interpreter may be given, 1 MiB: the engine's own start
/// takes a few hundred KiB.
pub const CODE_MEMORY_BYTES_MIN: u64 = 1024 * 1024;

/// Wall time a program may compute when its profile does not say, in milliseconds. Time spent
/// waiting for its tool calls (a blocking wait on subagents, a model call of theirs) is not
/// counted: fuel bounds the work, this bounds a slow machine.
pub const CODE_TIME_MS_DEFAULT: u64 = 10_000;

/// The most compute time a profile may give a program: ten minutes.
pub const CODE_TIME_MS_MAX: u64 = 600_000;

/// Bytes of console output a program may write when its profile does not say. The output is
/// part of the program's result in the window, so it is bounded like a tool result.
pub const CODE_OUTPUT_BYTES_DEFAULT: u64 = 64 * 1024;

/// The most console output a profile may allow a program, 1 MiB.
pub const CODE_OUTPUT_BYTES_MAX: u64 = 1024 * 1024;

/// The largest value a program may return, as JSON: a result enters the window as a tool
/// result does.
pub const CODE_RESULT_BYTES_MAX: usize = 256 * 1024;

/// Tool calls one program may make: a loop that calls a tool forever is stopped here rather
/// than by the budget alone (each call is also charged like a call of the turn).
pub const CODE_CALLS_MAX: u32 = 10_000;

/// The largest program source `run_code` accepts; a saved program is bounded by the library's
/// own limit.
pub const CODE_SOURCE_BYTES_MAX: usize = 256 * 1024;

/// The interpreter's stack: deep recursion in a program ends in a `RangeError`-like
/// exception at this depth instead of overflowing the thread.
pub const CODE_STACK_BYTES: usize = 1024 * 1024;

/// The program thread's own stack: the interpreter's stack plus room for the engine's native
/// frames above it.
pub const CODE_THREAD_STACK_BYTES: usize = 4 * 1024 * 1024;

/// The longest summary `archive_thread` takes from the model: the summary stands in the window
/// for the turns it replaces, so it must be much smaller than they are to be worth it.
pub const ARCHIVE_SUMMARY_BYTES_MAX: usize = 16 * 1024;

/// The most archived ranges an agent keeps track of: each is a line of its durable state. An
/// archive past this is refused; compaction still works.
pub const ARCHIVE_RANGES_MAX: usize = 4096;
