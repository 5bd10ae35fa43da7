//! Every bound the kernel enforces, in one place, each with the reason for its value.

/// Deepest process tree allowed below a root (a root has depth 0).
/// Deep chains are a smell in delegation and every level costs a supervisor hop on each
/// terminal notice; 64 is far beyond any real swarm yet small enough to bound recursion.
pub const DEPTH_MAX: u32 = 64;

/// Most direct children one process may have over its lifetime, terminal ones included.
/// Terminal rows are kept for `list_child_processes`; this bounds the parent's child table.
pub const CHILDREN_MAX: usize = 100_000;

/// Longest goal text accepted at launch, in bytes. A goal is a brief, not a payload.
pub const GOAL_BYTES_MAX: usize = 64 * 1024;

/// Longest path accepted for a working directory or an inherited path, in bytes.
pub const PATH_BYTES_MAX: usize = 4096;

/// Most capability entries in one launch request.
pub const CAPABILITY_ENTRIES_MAX: usize = 256;

/// Most inherited paths in one launch request.
pub const INHERITED_PATHS_MAX: usize = 256;

/// Longest resource name of a capability grant, in bytes.
pub const RESOURCE_BYTES_MAX: usize = 1024;

/// Longest signal or failure reason kept in an outcome, in bytes (longer text is cut on a
/// character boundary). Reasons are for people; they must not become a storage channel.
pub const REASON_BYTES_MAX: usize = 4096;

/// Largest result payload accepted by `process_exit`, in bytes of JSON.
pub const RESULT_BYTES_MAX: usize = 1024 * 1024;

/// The largest object payload (`create_object`, `write_object`), as serialized JSON: the same
/// bound as a result, since a result is an object too.
pub const OBJECT_BYTES_MAX: usize = RESULT_BYTES_MAX;

/// Largest program checkpoint, in bytes.
pub const CHECKPOINT_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Most tool calls in one batch.
pub const BATCH_CALLS_MAX: usize = 128;

/// Most changes the store writer folds into one transaction (group commit). Bounds the time
/// a group of small commits holds the write lock and the memory a batch pins. A single change
/// set larger than this (a merge of many objects, a fork of many roots) is never split, since
/// it must be atomic: it commits alone, and commits queued behind it wait for it.
pub const GROUP_COMMIT_CHANGES_MAX: usize = 4096;

/// Size of the SQLite store's WAL, in frames (one 4 KiB page each), from which the writer
/// checkpoints it into the main file after a commit; the WAL file grows to about this (4 MiB)
/// plus one group. SQLite's default, set explicitly: rarer checkpoints copy fewer pages in
/// all (spawns and messages rewrite the same leaves, and a checkpoint copies each page once),
/// and 4,000 sustained durable spawns under load 15 % faster, but a commit that meets a
/// checkpoint waits for it, and a fork of a 10,000-message conversation took 1.7 ms more
/// (docs/performance.md).
pub const WAL_CHECKPOINT_PAGES: u32 = 1_000;

/// Capacity of the telemetry broadcast ring. A subscriber that falls further behind is told how
/// many events it missed (tokio's `Lagged`) instead of slowing the runtime down.
pub const TELEMETRY_BUFFER: usize = 16 * 1024;

/// Rows returned by one `list_child_processes` call.
pub const LIST_ROWS_MAX: usize = 10_000;

/// Largest message (body plus payload JSON), in bytes. Messages are for coordination; bulk data
/// belongs in objects.
pub const MESSAGE_BYTES_MAX: usize = 64 * 1024;

/// Longest channel name or correlation id, in bytes.
pub const MESSAGE_TAG_BYTES_MAX: usize = 256;

/// Longest idempotency key (`launch_key`, `message_key`), in bytes. A key names one call of
/// one caller (a folder entry, a step number); 256 bytes is room for any such name, and every
/// key is stored forever beside its answer.
pub const IDEMPOTENCY_KEY_BYTES_MAX: usize = 256;

/// Most unacknowledged messages one mailbox holds. A sender past it is refused
/// (`mailbox_full`); nothing already accepted is ever dropped.
pub const MAILBOX_UNACKED_MAX: usize = 10_000;

/// Messages one read or receive returns when no limit is given.
pub const MAILBOX_PAGE_DEFAULT: usize = 20;

/// Most messages one read or receive returns.
pub const MAILBOX_PAGE_MAX: usize = 500;

// Object memory.

/// Longest name in a process namespace, in bytes. A name is a handle for a model to say,
/// not a storage channel.
pub const NAME_BYTES_MAX: usize = 256;

/// Most names one process namespace holds. Merge never renames, so names grow only by
/// `create` and a fork's carried names; this bounds what a view listing must show.
pub const NAMES_PER_PROCESS_MAX: usize = 10_000;

/// Longest data-flow label, in bytes. Labels are short policy words (`pii`, `tenant:acme`).
pub const LABEL_BYTES_MAX: usize = 128;

/// Most labels on one object, in one clearance, or in one context. Every grant compares
/// label sets, so this bounds the cost of each data-flow check.
pub const LABELS_MAX: usize = 64;

/// Most entries in a fork's `root_oids`. A fork is an attenuated view of named objects; a
/// view of more than this is a sign the child should be told to look things up instead.
pub const ROOT_OIDS_MAX: usize = 1024;

/// Most skills in one loaded skill snapshot (a parent's, an image's defaults, a child's).
pub const SKILLS_MAX: usize = 256;

/// Most allowed tools named by one skill. The tool surface itself is far smaller.
pub const SKILL_TOOLS_MAX: usize = 256;

/// Longest skill or tool name, in bytes.
pub const SKILL_NAME_BYTES_MAX: usize = 256;

/// How many characters of a caller's input an error message quotes: enough to recognise it,
/// never a huge input echoed back whole.
pub const QUOTED_INPUT_CHARS_MAX: usize = 64;

/// Most tools a `load_skills` refusal names one by one (each quoted in part); it counts the
/// rest. A skill may list [`SKILL_TOOLS_MAX`] tools and a call [`SKILLS_MAX`] skills, so
/// naming them all could make a refusal of megabytes.
pub const UNOFFERED_TOOLS_NAMED_MAX: usize = 16;

/// Longest detail a parser's own message adds to an error, in bytes. A deserializer's message
/// may quote the value it could not read (`invalid type: string "…"`), which can be as large
/// as the input; the field it names and what it expected come first and fit.
pub const ERROR_DETAIL_BYTES_MAX: usize = 512;

/// The first [`QUOTED_INPUT_CHARS_MAX`] characters of `input`, and its full length in
/// characters when that cut it.
pub fn excerpt_parts(input: &str) -> (&str, Option<usize>) {
    match crate::text::prefix_chars(input, QUOTED_INPUT_CHARS_MAX) {
        (all, None) => (all, None),
        (kept, Some(_)) => (kept, Some(input.chars().count())),
    }
}

/// `input` cut to [`QUOTED_INPUT_CHARS_MAX`] characters for an error message, with `…` and its
/// full length when cut.
pub fn excerpt(input: &str) -> String {
    match excerpt_parts(input) {
        (all, None) => all.to_string(),
        (prefix, Some(count)) => format!("{prefix}… ({count} characters)"),
    }
}

/// Restart records kept on a supervisor's row, newest kept. The intensity only needs the ones
/// within its period; the rest are history for `inspect`, so a long-lived supervisor's row
/// stays small.
pub const RESTART_HISTORY_MAX: usize = 64;
