//! A PostgreSQL server for the tests of the PostgreSQL store, and a fresh database per test.
//!
//! [`fresh_database`] returns the URL of a new, empty database. Where it lives depends on
//! `AGENTVISOR_TEST_POSTGRES`:
//!
//! - unset (or empty): the first call in a test process starts a throwaway server for that process. It
//!   runs `initdb` into a temporary directory and `pg_ctl start -w` on it, listening only on a
//!   Unix socket in that directory (no TCP), with trust authentication and fsync left on: the
//!   tests check durability. `initdb` and `pg_ctl` come from `PATH`, else from the newest
//!   `/usr/lib/postgresql/*/bin/` (where Debian's `postgresql` package puts them). PostgreSQL
//!   refuses to run as root, so when the tests run as root the server runs as the `postgres`
//!   user, through `runuser`. A test process never runs static destructors, so a watchdog shell,
//!   in a process group of its own so that Ctrl-C does not end it first, checks once a second
//!   whether the test process is still alive; once it is gone, the watchdog stops the server
//!   (`pg_ctl stop -m immediate`) and deletes the directory. The watchdog starts before
//!   `initdb`, so a failed start is cleaned up too.
//! - `skip`: [`fresh_database`] returns `None`, and the tests that use it return early.
//! - anything else: the URL of an existing server, e.g.
//!   `postgresql://postgres@/postgres?host=/tmp/pg&port=5439` or
//!   `postgresql://postgres@127.0.0.1:5432/postgres`, on which the tests may create databases.
//!   The databases are left there. CI starts one server for the whole run and passes it this way.
//!
//! The databases are named `t_<pid>_<n>`. The blocking `postgres` client panics inside a tokio
//! runtime, so `CREATE DATABASE` runs on a thread of its own: [`fresh_database`] can be called
//! from `#[tokio::test]` functions.

#![allow(dead_code, reason = "each test file uses its own subset of these helpers")]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, OnceLock};

use postgres::error::SqlState;

/// The environment variable that chooses the server: unset, `skip`, or a URL.
const ENV: &str = "AGENTVISOR_TEST_POSTGRES";

/// The URL of a fresh, empty database on the test server, or None when the PostgreSQL tests are
/// skipped.
pub(crate) fn fresh_database() -> Option<String> {
    let server = server_url()?;
    let created = std::thread::spawn(move || create_database(&server)).join();
    Some(created.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}

/// The URL of the test server's `postgres` database, as its superuser, or None when the
/// PostgreSQL tests are skipped.
pub(crate) fn server_url() -> Option<String> {
    match std::env::var(ENV).as_deref() {
        Ok("skip") => {
            static NOTICE: Once = Once::new();
            NOTICE.call_once(|| eprintln!("PostgreSQL tests skipped: {ENV}=skip"));
            None
        }
        Ok("") | Err(std::env::VarError::NotPresent) => Some(throwaway_server().to_owned()),
        Ok(url) if url.starts_with("postgresql://") || url.starts_with("postgres://") => Some(url.to_owned()),
        Ok(other) => panic!("{ENV} must be `skip` or a postgresql:// URL, not {other:?}"),
        Err(std::env::VarError::NotUnicode(other)) => {
            panic!("{ENV} must be `skip` or a postgresql:// URL, not {other:?}")
        }
    }
}

/// Creates a database with a new name on the server at `server` and returns its URL.
fn create_database(server: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let config: postgres::Config =
        server.parse().unwrap_or_else(|e| panic!("parsing the PostgreSQL URL {server:?}: {}", causes(&e)));
    let mut client = config
        .connect(postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to the test PostgreSQL server at {server}: {}", causes(&e)));
    loop {
        let name = format!("t_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        match client.batch_execute(&format!("CREATE DATABASE {name}")) {
            Ok(()) => {
                client
                    .close()
                    .unwrap_or_else(|e| panic!("closing the connection to {server}: {}", causes(&e)));
                return with_database(server, &name);
            }
            // Left on a shared server by an earlier process that had the same pid.
            Err(e) if e.code() == Some(&SqlState::DUPLICATE_DATABASE) => continue,
            Err(e) => panic!("creating the test database {name} on {server}: {}", causes(&e)),
        }
    }
}

/// `error` and its causes: the `postgres` errors' own messages name only the kind of failure.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text = format!("{text}: {e}");
        cause = e.source();
    }
    text
}

/// `url` with its database (the URL's path) replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let authority = url.find("://").map(|i| i + 3).expect("the URL was checked to be postgresql://");
    let rest = &url[authority..];
    let query = rest.find('?').unwrap_or(rest.len());
    let path = rest[..query].find('/').unwrap_or(query);
    format!("{}{}/{name}{}", &url[..authority], &rest[..path], &rest[query..])
}

/// The URL of this process's throwaway server, started on the first call. A failed start is
/// remembered: every later call fails with the same message instead of trying again.
fn throwaway_server() -> &'static str {
    static SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    let started = SERVER.get_or_init(|| {
        std::panic::catch_unwind(start_server).map_err(|panic| {
            let message = panic.downcast_ref::<String>().map(String::as_str);
            message.or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or("(no message)").to_owned()
        })
    });
    match started {
        Ok(url) => url,
        Err(why) => panic!("the test PostgreSQL server did not start: {why}"),
    }
}

/// Starts a server in a new temporary directory, arranges for it to be stopped and the
/// directory deleted when this process exits, and returns the server's URL.
fn start_server() -> String {
    let bin = postgres_bin_dir();
    let (initdb, pg_ctl) = (bin.join("initdb"), bin.join("pg_ctl"));
    // PostgreSQL refuses to run as root: then the server runs as the `postgres` user.
    let runuser = is_root().then(runuser_path);
    let dir = tempfile::Builder::new()
        .prefix("agentvisor-pg-")
        .tempdir()
        .expect("creating a temporary directory for the test PostgreSQL server")
        .keep();
    if runuser.is_some() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("making {} world-traversable: {e}", dir.display()));
        run(
            Command::new("chown").arg("-R").arg("postgres").arg(&dir),
            "giving the server's directory to the postgres user",
        );
    }
    let (data, log) = (dir.join("data"), dir.join("log"));
    spawn_watchdog(&pg_ctl, &data, &dir, runuser.as_deref());

    run(
        as_postgres(runuser.as_deref(), &initdb)
            .args(["-U", "postgres", "--auth=trust", "--locale=C", "--encoding=UTF8", "-D"])
            .arg(&data)
            .current_dir(&dir),
        "creating the test server's data directory",
    );

    // The socket is `<dir>/.s.PGSQL.<port>`: a port derived from the pid gives two test
    // processes different socket names.
    let port = 20_000 + std::process::id() % 40_000;
    let options = format!(
        "-c listen_addresses='' -k '{}' -p {port} -c max_connections=400 -c shared_buffers=32MB",
        dir.display()
    );
    let mut start = as_postgres(runuser.as_deref(), &pg_ctl);
    start.arg("-D").arg(&data).arg("-l").arg(&log).args(["-w", "-o", &options, "start"]).current_dir(&dir);
    let started = start.output().unwrap_or_else(|e| panic!("running {start:?}: {e}"));
    if !started.status.success() {
        panic!(
            "starting the test PostgreSQL server: {start:?} failed ({}):\n{}\nlast lines of {}:\n{}",
            started.status,
            output_text(&started),
            log.display(),
            tail(&log, 30)
        );
    }
    format!("postgresql://postgres@/postgres?host={}&port={port}", dir.display())
}

/// The directory holding `initdb` and `pg_ctl`: the first on `PATH` that has both, else the
/// newest `/usr/lib/postgresql/<version>/bin`.
fn postgres_bin_dir() -> PathBuf {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(dir) = std::env::split_paths(&path).find(|dir| has_both(dir)) {
        return dir;
    }
    let installed = std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten();
    let mut versions: Vec<(Vec<u32>, PathBuf)> = installed
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.split('.').map(|n| n.parse().ok()).collect::<Option<Vec<u32>>>()?;
            let bin = entry.path().join("bin");
            has_both(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "the PostgreSQL tests need PostgreSQL's server binaries (initdb and pg_ctl), found neither \
             on PATH nor under /usr/lib/postgresql/*/bin: install them (on Debian: apt-get install \
             postgresql), or set {ENV}=skip to skip these tests, or {ENV}=postgresql://... to use a \
             running server"
        ),
    }
}

/// Whether this process runs as root (`id -u` prints 0).
fn is_root() -> bool {
    let id = Command::new("id").arg("-u").output().expect("running `id -u`");
    String::from_utf8_lossy(&id.stdout).trim() == "0"
}

/// `runuser`, from `PATH` or from where util-linux installs it (root's `sbin` directories are
/// not always on `PATH`).
fn runuser_path() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join("runuser"))
        .find(|runuser| runuser.is_file())
        .expect("finding runuser (util-linux): PostgreSQL refuses to run as root, so it runs as postgres")
}

/// A command running `program`, through `runuser` as the `postgres` user when it is given.
fn as_postgres(runuser: Option<&Path>, program: &Path) -> Command {
    let mut command = match runuser {
        Some(runuser) => {
            let mut command = Command::new(runuser);
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        }
        None => Command::new(program),
    };
    command.stdin(Stdio::null());
    command
}

/// Starts the watchdog: once this process is gone, it stops the server and deletes `dir`.
#[allow(clippy::zombie_processes, reason = "the watchdog outlives this process by design")]
fn spawn_watchdog(pg_ctl: &Path, data: &Path, dir: &Path, runuser: Option<&Path>) {
    // The watchdog keeps this process's user: `kill -0` may probe this process, and `rm` may
    // delete the directory from its parent, which the `postgres` user may not write to. `$5` is
    // `runuser` when the server runs as `postgres`.
    let as_postgres = if runuser.is_some() { r#""$5" -u postgres -- "# } else { "" };
    let script = format!(
        r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
        {as_postgres}"$2" -D "$3" stop -m immediate
        rm -rf "$4""#
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("agentvisor-pg-watchdog")
        .arg(std::process::id().to_string())
        .arg(pg_ctl)
        .arg(data)
        .arg(dir)
        .args(runuser)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("starting the watchdog that stops the test PostgreSQL server");
}

/// Runs `command` for `what`; panics with its output unless it succeeds.
fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: running {command:?}: {e}"));
    if !output.status.success() {
        panic!("{what}: {command:?} failed ({}):\n{}", output.status, output_text(&output));
    }
}

/// A command's stdout and stderr, as text.
fn output_text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The last `lines` lines of the file at `path`.
fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read it: {e})"),
    }
}
