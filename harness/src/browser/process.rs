//! The Chromium process: found, started headless with a fresh profile in a process
//! group of its own, and killed with its whole group when dropped.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::BrowserError;

/// Environment variable naming the Chromium binary; without it, [`DEFAULT_BINARY`].
pub const CHROMIUM_ENV: &str = "CHROMIUM";
/// Where the Debian package `chromium` installs the browser.
pub const DEFAULT_BINARY: &str = "/usr/bin/chromium";
/// The flags Chromium is started with, besides `--user-data-dir=<fresh temp dir>` and
/// [`DRIVER_FLAGS`].
pub const FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];
/// The flag the driver adds: the DevTools endpoint on a free port, printed on stderr,
/// which is how the driver reaches it.
pub const DRIVER_FLAGS: [&str; 1] = ["--remote-debugging-port=0"];
/// Set to `<profile>/config` for the browser: its `chrome_crashpad_handler` daemons,
/// which leave the process group (a session of their own, parent init), then keep
/// their crash database there rather than under `~/.config/chromium`, and so name the
/// profile on their command line like every other process of the browser.
pub const CONFIG_HOME_ENV: &str = "XDG_CONFIG_HOME";
/// How long the browser's processes may take to be gone once killed.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(10);
/// How long a started Chromium may take to print its DevTools address.
pub const START_DEADLINE: Duration = Duration::from_secs(30);
const STDERR_TAIL: usize = 20;
const DEVTOOLS_LINE: &str = "DevTools listening on ";

/// The browser binary: `$CHROMIUM` when set and not empty, otherwise
/// [`DEFAULT_BINARY`]; an error naming the Debian package when no file is there.
pub fn binary() -> Result<PathBuf, BrowserError> {
    let path = std::env::var_os(CHROMIUM_ENV)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_BINARY), PathBuf::from);
    if path.is_file() {
        Ok(path)
    } else {
        Err(BrowserError::NotFound(path))
    }
}

/// A started Chromium. Dropping it kills with `SIGKILL` its whole process group and
/// every process naming its profile on the command line (the crash handlers outside
/// the group), reaps the browser process and returns once none of them is left
/// (zombies of the group included; [`EXIT_DEADLINE`] at most); the profile directory
/// is removed after.
#[derive(Debug)]
pub(super) struct Chromium {
    child: Child,
    // Declared after `child`: removed once the process is gone.
    profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts `binary` with [`FLAGS`] and a fresh profile; answers it with the
    /// browser's DevTools WebSocket address.
    pub(super) async fn start(binary: &Path) -> Result<(Self, String), BrowserError> {
        let profile = tempfile::Builder::new()
            .prefix("command-journal-chromium-")
            .tempdir()
            .map_err(BrowserError::Start)?;
        let mut command = Command::new(binary);
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(DRIVER_FLAGS)
            .env(CONFIG_HOME_ENV, profile.path().join("config"))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own group, so that its zygote and renderers die with it.
            .process_group(0);
        die_with_parent(&mut command);

        let (spawned_tx, spawned_rx) = oneshot::channel();
        let (address_tx, address_rx) = oneshot::channel();
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let reader_tail = Arc::clone(&tail);
        // The thread that forks also reads stderr until Chromium and its children close
        // it: `PR_SET_PDEATHSIG` fires when the forking thread exits, so it must outlive
        // the browser, and it does.
        std::thread::Builder::new()
            .name("chromium-stderr".into())
            .spawn(move || supervise(command, spawned_tx, address_tx, &reader_tail))
            .map_err(BrowserError::Start)?;
        let child = spawned_rx
            .await
            .map_err(|_| {
                BrowserError::Start(std::io::Error::other("the supervising thread ended"))
            })?
            .map_err(BrowserError::Start)?;
        let chromium = Self { child, profile };
        let tail_text = || {
            let lines = tail.lock().unwrap_or_else(|e| e.into_inner());
            lines.iter().cloned().collect::<Vec<String>>().join("\n")
        };
        match tokio::time::timeout(START_DEADLINE, address_rx).await {
            Ok(Ok(address)) => Ok((chromium, address)),
            Ok(Err(_)) => Err(BrowserError::NoDevTools {
                reason: "it closed stderr".into(),
                stderr: tail_text(),
            }),
            Err(_) => Err(BrowserError::NoDevTools {
                reason: format!("still silent after {START_DEADLINE:?}"),
                stderr: tail_text(),
            }),
        }
    }

    /// The browser process's id, which is also its process group's.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The fresh profile directory (`--user-data-dir`).
    pub(super) fn profile(&self) -> &Path {
        self.profile.path()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let group = i32::try_from(self.child.id()).ok();
        if let Some(group) = group {
            signal_group(group, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The zygotes' children, orphaned, are reaped by init, and the crash handlers
        // were never in the group: kill whatever still names the profile, and wait until
        // the kernel knows none of them, so that the browser is gone when drop returns.
        let profile = self.profile.path().as_os_str().as_encoded_bytes().to_vec();
        let deadline = Instant::now() + EXIT_DEADLINE;
        loop {
            let named = processes_naming(&profile);
            for &pid in &named {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            let grouped = group.is_some_and(|group| signal_group(group, 0));
            if (named.is_empty() && !grouped) || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Sends `signal` to every process of `group` (`0`: none, only the check); true when
/// at least one process, zombies included, is still in it.
fn signal_group(group: i32, signal: i32) -> bool {
    // SAFETY: kill has no memory-safety preconditions; a negative pid names the process
    // group the browser leads (`process_group(0)` above).
    unsafe { libc::kill(-group, signal) == 0 }
}

/// The live processes whose command line contains `needle` (a zombie's is empty).
fn processes_naming(needle: &[u8]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.windows(needle.len()).any(|w| w == needle))
        })
        .collect()
}

/// Spawns `command`, hands the child over, then reads its stderr to the end: the
/// DevTools address once, the last lines kept for an error message.
fn supervise(
    mut command: Command,
    spawned: oneshot::Sender<std::io::Result<Child>>,
    address: oneshot::Sender<String>,
    tail: &Mutex<VecDeque<String>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            let _ = spawned.send(Err(error));
            return;
        }
    };
    let stderr = child.stderr.take();
    if spawned.send(Ok(child)).is_err() {
        return;
    }
    let Some(stderr) = stderr else { return };
    let mut address = Some(address);
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if let Some(found) = line.strip_prefix(DEVTOOLS_LINE)
            && let Some(sender) = address.take()
        {
            let _ = sender.send(found.trim().to_owned());
        }
        let mut lines = tail.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_TAIL {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

/// Chromium gets `SIGKILL` when the thread that started it exits, should the test
/// process die without dropping the browser.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only makes the
    // async-signal-safe system calls prctl and getppid.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::other("parent exited before exec"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
