//! Starts or reuses the official Firestore emulator, for this crate's tests, its CLI and
//! downstream users' own tests.
//!
//! [`Emulator::shared`] gives one emulator per process: the one named by
//! `FIRESTORE_EMULATOR_HOST` when that is set, otherwise a JVM started directly (never
//! through the wrapper script, which forks) on a free loopback port. A started JVM is
//! killed when its [`Emulator`] is dropped and, through `PR_SET_PDEATHSIG`, when the
//! process that started it dies for any reason, `SIGKILL` included. Tests isolate
//! themselves with a fresh project id each ([`Emulator::new_project_id`]).

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Environment variable naming a running emulator (`HOST:PORT`) to reuse.
pub const HOST_ENV: &str = "FIRESTORE_EMULATOR_HOST";
/// Environment variable naming a file to which the pid of every JVM started is
/// appended, one line each: how a CI run finds the JVMs its own tests started.
pub const PID_LOG_ENV: &str = "COMMAND_JOURNAL_EMULATOR_PIDS";
/// The crate's security rules (`firestore.rules`), loaded into every emulator it starts.
pub const RULES: &str = include_str!("../firestore.rules");
/// How long a started JVM may take to answer `Ok`.
pub const READY_DEADLINE: Duration = Duration::from_secs(90);
const MAIN_CLASS: &str = "com.google.cloud.datastore.emulator.firestore.CloudFirestore";

/// A running Firestore emulator: reused, or started and owned by this value.
#[derive(Debug)]
pub struct Emulator {
    host: String,
    process: Option<Process>,
}

/// The JVM this crate started, supervised by a dedicated thread that lives as long as
/// the value: `PR_SET_PDEATHSIG` fires when the *thread* that forked exits, so the
/// forking thread must not be a short-lived test thread.
#[derive(Debug)]
struct Process {
    pid: u32,
    log: PathBuf,
    rules: PathBuf,
    exit: Arc<Mutex<Option<ExitStatus>>>,
    stop: Option<mpsc::Sender<()>>,
    supervisor: Option<JoinHandle<()>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Closing the channel tells the supervisor to kill and reap the JVM.
        self.stop.take();
        if let Some(thread) = self.supervisor.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.rules);
    }
}

static SHARED: OnceLock<Result<Emulator, String>> = OnceLock::new();
static PROJECT_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Emulator {
    /// The process-wide emulator: `FIRESTORE_EMULATOR_HOST` when set, otherwise one JVM
    /// started on first use and killed when the process exits.
    pub fn shared() -> Result<&'static Emulator, EmulatorError> {
        SHARED
            .get_or_init(|| Self::from_env_or_start().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| EmulatorError::Shared(e.clone()))
    }

    /// Reuses `FIRESTORE_EMULATOR_HOST` when set, otherwise [`start`](Self::start)s one.
    pub fn from_env_or_start() -> Result<Self, EmulatorError> {
        match std::env::var(HOST_ENV) {
            Ok(host) if !host.trim().is_empty() => Ok(Self::existing(host.trim())),
            _ => Self::start(),
        }
    }

    /// An emulator somebody else runs at `host` (`HOST:PORT`).
    pub fn existing(host: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            process: None,
        }
    }

    /// Starts a new JVM on a free loopback port with [`RULES`] and waits until it
    /// answers `Ok`. Retries twice if the port was taken in the meantime. The jar is
    /// found as [`discovery`] describes.
    pub fn start() -> Result<Self, EmulatorError> {
        Self::start_with_rules(RULES)
    }

    /// [`start`](Self::start) with the security rules `rules` (the text of a rules
    /// file) instead of the crate's own.
    pub fn start_with_rules(rules: &str) -> Result<Self, EmulatorError> {
        let (java, jar) = java_and_jar()?;
        let mut last = None;
        for _ in 0..3 {
            let port = free_port()?;
            let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            match start_once(&java, &jar, address, rules) {
                Ok(emulator) => return Ok(emulator),
                Err(error @ EmulatorError::Exited { .. }) => last = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last.unwrap_or(EmulatorError::Http("no start attempt ran".into())))
    }

    /// Starts a new JVM listening on `address` with [`RULES`] and waits until it
    /// answers `Ok`. An address in use, or not this machine's, is
    /// [`EmulatorError::AddressUnavailable`], found before the JVM starts (or, if
    /// another process took the port meanwhile, when the JVM exits).
    pub fn start_on(address: SocketAddr) -> Result<Self, EmulatorError> {
        Self::start_on_with_rules(address, RULES)
    }

    /// [`start_on`](Self::start_on) with the security rules `rules` (the text of a
    /// rules file) instead of the crate's own.
    pub fn start_on_with_rules(address: SocketAddr, rules: &str) -> Result<Self, EmulatorError> {
        check_address(address)?;
        let (java, jar) = java_and_jar()?;
        let result = start_once(&java, &jar, address, rules);
        if matches!(result, Err(EmulatorError::Exited { .. })) {
            // Another process may have taken the port since the check.
            check_address(address)?;
        }
        result
    }

    /// `HOST:PORT` of the emulator's gRPC and REST endpoint.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The JVM's process id when this value started it.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// The emulator's log file when this value started it.
    pub fn log_path(&self) -> Option<&Path> {
        self.process.as_ref().map(|p| p.log.as_path())
    }

    /// A project id no other caller of this process (or, with high probability, of
    /// another process sharing the emulator) gets: each test uses its own.
    pub fn new_project_id(&self) -> String {
        let n = PROJECT_COUNTER.fetch_add(1, Ordering::Relaxed);
        format!("cj-{}-{n}-{:08x}", std::process::id(), fastrand::u32(..))
    }

    /// Loads `rules` for `project` (`PUT /emulator/v1/projects/{p}:securityRules`).
    pub async fn load_rules(&self, project: &str, rules: &str) -> Result<(), EmulatorError> {
        let body = serde_json::json!({"rules": {"files": [{"name": "firestore.rules", "content": rules}]}});
        let url = format!(
            "http://{}/emulator/v1/projects/{project}:securityRules",
            self.host
        );
        let response = reqwest::Client::new()
            .put(url)
            .json(&body)
            .send()
            .await
            .map_err(|e| EmulatorError::Http(e.to_string()))?;
        expect_success(response).await
    }

    /// Deletes every document of `project`'s default database.
    pub async fn clear(&self, project: &str) -> Result<(), EmulatorError> {
        self.clear_database(project, command_journal::connection::DEFAULT_DATABASE)
            .await
    }

    /// Deletes every document of database `database` of `project`.
    pub async fn clear_database(&self, project: &str, database: &str) -> Result<(), EmulatorError> {
        let url = format!(
            "http://{}/emulator/v1/projects/{project}/databases/{database}/documents",
            self.host
        );
        let response = reqwest::Client::new()
            .delete(url)
            .send()
            .await
            .map_err(|e| EmulatorError::Http(e.to_string()))?;
        expect_success(response).await
    }
}

async fn expect_success(response: reqwest::Response) -> Result<(), EmulatorError> {
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(EmulatorError::Http(format!("{status}: {body}")))
}

fn free_port() -> Result<u16, EmulatorError> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// `java` (under `JAVA_HOME` when that names one) and the emulator jar.
fn java_and_jar() -> Result<(PathBuf, PathBuf), EmulatorError> {
    let jar = discovery::Discovery::from_env().find()?;
    let java = std::env::var_os("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin").join("java"))
        .filter(|java| java.is_file())
        .unwrap_or_else(|| PathBuf::from("java"));
    Ok((java, jar))
}

/// Fails unless a listener could bind `address` now.
fn check_address(address: SocketAddr) -> Result<(), EmulatorError> {
    match TcpListener::bind(address) {
        Ok(_) => Ok(()),
        Err(error) => Err(EmulatorError::AddressUnavailable {
            address: address.to_string(),
            reason: match error.kind() {
                std::io::ErrorKind::AddrInUse => {
                    "the port is in use: choose another port, or none for a free one"
                }
                std::io::ErrorKind::AddrNotAvailable => {
                    "not an address of this machine: choose one of its addresses"
                }
                std::io::ErrorKind::PermissionDenied => {
                    "permission denied: choose a port above 1023"
                }
                _ => "the address cannot be listened on: choose another",
            },
        }),
    }
}

fn start_once(
    java: &Path,
    jar: &Path,
    address: SocketAddr,
    rules_text: &str,
) -> Result<Emulator, EmulatorError> {
    let port = address.port();
    let dir = std::env::temp_dir();
    let stem = format!("command-journal-emulator-{}-{port}", std::process::id());
    let log = dir.join(format!("{stem}.log"));
    let rules = dir.join(format!("{stem}.rules"));
    std::fs::write(&rules, rules_text)?;
    let log_file = std::fs::File::create(&log)?;
    let mut command = Command::new(java);
    command
        .arg("-cp")
        .arg(jar)
        .arg(MAIN_CLASS)
        .arg("start")
        .arg(format!("--host={}", address.ip()))
        .arg(format!("--port={port}"))
        .arg(format!("--rules={}", rules.display()))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    die_with_parent(&mut command);

    let (started_tx, started_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let exit = Arc::new(Mutex::new(None));
    let exit_seen = Arc::clone(&exit);
    let supervisor = std::thread::Builder::new()
        .name("firestore-emulator".into())
        .spawn(move || supervise(command, started_tx, stop_rx, exit_seen))?;
    let pid = match started_rx.recv() {
        Ok(Ok(pid)) => pid,
        Ok(Err(error)) => {
            let _ = supervisor.join();
            let _ = std::fs::remove_file(&rules);
            return Err(if error.kind() == std::io::ErrorKind::NotFound {
                EmulatorError::JavaMissing
            } else {
                EmulatorError::Io(error)
            });
        }
        Err(_) => return Err(EmulatorError::Http("emulator supervisor vanished".into())),
    };
    let process = Process {
        pid,
        log: log.clone(),
        rules,
        exit: Arc::clone(&exit),
        stop: Some(stop_tx),
        supervisor: Some(supervisor),
    };
    let host = address.to_string();
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        if let Some(status) = *process.exit.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(EmulatorError::Exited { status, log });
        }
        if answers_ok(&host) {
            tracing::debug!(%host, pid, "firestore emulator ready");
            return Ok(Emulator {
                host,
                process: Some(process),
            });
        }
        if Instant::now() >= deadline {
            return Err(EmulatorError::NotReady {
                deadline: READY_DEADLINE,
                log,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs on the supervisor thread: spawns the JVM, reports its pid, then waits until
/// the owner lets go (or the JVM exits) and kills and reaps it.
fn supervise(
    mut command: Command,
    started: mpsc::Sender<std::io::Result<u32>>,
    stop: mpsc::Receiver<()>,
    exit: Arc<Mutex<Option<ExitStatus>>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            let _ = started.send(Err(error));
            return;
        }
    };
    log_pid(child.id());
    let _ = started.send(Ok(child.id()));
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_millis(200)) {
        if let Ok(Some(status)) = child.try_wait() {
            *exit.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Appends `pid` to the file [`PID_LOG_ENV`] names, when it names one. A failed write
/// is only logged: the pid log serves a leak check, never the emulator.
fn log_pid(pid: u32) {
    let Some(path) = std::env::var_os(PID_LOG_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{pid}\n").as_bytes()));
    if let Err(error) = appended {
        tracing::warn!(%error, "the emulator's pid could not be logged");
    }
}

#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only makes the
    // async-signal-safe system calls prctl and getppid.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::other("parent exited before exec"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// True when `GET /` on `host` answers a body of `Ok`.
fn answers_ok(host: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(host) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200") && response.trim_end().ends_with("Ok")
}

#[cfg(feature = "testcontainers")]
pub mod container;
pub mod discovery;
mod error;

pub use discovery::{DEFAULT_JAR, JAR_ENV};
pub use error::EmulatorError;
