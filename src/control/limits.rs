//! The control socket's and the host sessions' bounds, each with why.

/// The longest request or answer line, in bytes. The largest thing a line carries is a tool
/// call's arguments or answer, and those are bounded by the kernel's payload limit (1 MiB
/// for an object or a result) plus the JSON around it; 8 MiB leaves room for a batch of
/// reads without letting one client make the owner buffer without bound.
pub const LINE_BYTES_MAX: usize = 8 * 1024 * 1024;

/// How often a waiting call reports progress. MCP clients reset their request timeout on a
/// progress notification, and a person watching a blocked call wants to know it still
/// waits; once a second costs nothing and is well under the usual client timeouts (tens of
/// seconds).
pub const PROGRESS_INTERVAL_MS: u64 = 1_000;

/// How many control connections an owner serves at once. Each is one task; a blocking wait
/// holds one for as long as it waits, so the bound is generous, but a client opening
/// connections in a loop must not exhaust the owner's memory or file descriptors.
pub const CONNECTIONS_MAX: usize = 256;

/// How long a command that found the state directory owned waits for the owner's control
/// socket to appear: an owner binds it right after opening the store, so a gap means the
/// owner is still recovering (bounded by the store's size) or does not listen at all.
pub const SOCKET_APPEAR_MS: u64 = 10_000;

/// How long a stopping owner lets the requests in flight finish before it closes their
/// connections. An answer already decided (a `cancel` whose commit also ended the tree the
/// owner was hosting) is written within it; a request that would block longer (a blocking
/// wait) is cut at it, so a command never hangs in its exit.
pub const STOP_GRACE_MS: u64 = 2_000;
