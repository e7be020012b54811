//! Where the Firestore emulator jar is found, in this order:
//!
//! 1. `COMMAND_JOURNAL_EMULATOR_JAR`, a jar path;
//! 2. `FIRESTORE_EMULATOR_BINARY_PATH`, the jar path the Firebase CLI honours;
//! 3. the Google Cloud SDK: `CLOUDSDK_ROOT_DIR`, or else the root the `gcloud` on
//!    `PATH` reports (`gcloud info --format=value(installation.sdk_root)`; when `gcloud`
//!    is the SDK's own `bin/gcloud` the root is read from its location without
//!    running it), holding `platform/cloud-firestore-emulator/cloud-firestore-emulator.jar`;
//! 4. the Firebase CLI's download cache, `FIREBASE_EMULATORS_PATH` or
//!    `~/.cache/firebase/emulators`: `cloud-firestore-emulator-v*.jar`, newest version
//!    first;
//! 5. the Debian package's path, [`DEFAULT_JAR`].
//!
//! A variable of steps 1 and 2 that is set but names no file is an error: a chosen
//! jar is never silently replaced by another. When nothing is found, the error lists
//! every place looked and how to install an emulator.

use super::error::EmulatorError;
pub use super::error::INSTALL_HINT;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The jar path the Firebase CLI honours instead of its own download.
pub const BINARY_PATH_ENV: &str = "FIRESTORE_EMULATOR_BINARY_PATH";
/// The Google Cloud SDK's root directory.
pub const CLOUDSDK_ROOT_ENV: &str = "CLOUDSDK_ROOT_DIR";
/// The Firebase CLI's emulator download directory, when not the default.
pub const FIREBASE_CACHE_ENV: &str = "FIREBASE_EMULATORS_PATH";
/// The jar's place inside a Google Cloud SDK root.
pub const SDK_JAR: &str = "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar";
/// How long `gcloud info` may take.
const GCLOUD_DEADLINE: Duration = Duration::from_secs(60);

/// Where the Debian package `google-cloud-cli-firestore-emulator` installs the jar.
pub const DEFAULT_JAR: &str =
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar";
/// Environment variable naming another emulator jar to run.
pub const JAR_ENV: &str = "COMMAND_JOURNAL_EMULATOR_JAR";

/// The places to look, read from the environment by [`Discovery::from_env`] or set
/// directly (tests point them at temporary directories).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// `COMMAND_JOURNAL_EMULATOR_JAR`.
    pub jar: Option<PathBuf>,
    /// `FIRESTORE_EMULATOR_BINARY_PATH`.
    pub binary_path: Option<PathBuf>,
    /// `CLOUDSDK_ROOT_DIR`.
    pub cloudsdk_root: Option<PathBuf>,
    /// The `gcloud` program to ask for its SDK root (found on `PATH`).
    pub gcloud: Option<PathBuf>,
    /// The Firebase CLI's emulator download directory.
    pub firebase_cache: Option<PathBuf>,
    /// The Debian package's jar.
    pub debian: PathBuf,
}

fn non_empty(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

impl Discovery {
    /// The places this process's environment names.
    pub fn from_env() -> Self {
        let firebase_cache = non_empty(FIREBASE_CACHE_ENV)
            .map(PathBuf::from)
            .or_else(|| {
                non_empty("HOME").map(|home| Path::new(&home).join(".cache/firebase/emulators"))
            });
        Self {
            jar: non_empty(JAR_ENV).map(PathBuf::from),
            binary_path: non_empty(BINARY_PATH_ENV).map(PathBuf::from),
            cloudsdk_root: non_empty(CLOUDSDK_ROOT_ENV).map(PathBuf::from),
            gcloud: on_path("gcloud"),
            firebase_cache,
            debian: PathBuf::from(DEFAULT_JAR),
        }
    }

    /// The first jar found, in the documented order.
    pub fn find(&self) -> Result<PathBuf, EmulatorError> {
        let mut looked = Vec::new();
        for (name, value) in [(JAR_ENV, &self.jar), (BINARY_PATH_ENV, &self.binary_path)] {
            match value {
                Some(path) if path.is_file() => return Ok(path.clone()),
                Some(path) => {
                    looked.push(format!("{name}={} (no such file)", path.display()));
                    return Err(EmulatorError::JarMissing { looked });
                }
                None => looked.push(format!("{name} (unset)")),
            }
        }

        match (&self.cloudsdk_root, &self.gcloud) {
            (Some(root), _) => {
                let jar = root.join(SDK_JAR);
                if jar.is_file() {
                    return Ok(jar);
                }
                looked.push(format!("{CLOUDSDK_ROOT_ENV}: {} (missing)", jar.display()));
            }
            (None, Some(gcloud)) => match sdk_root_of(gcloud) {
                Ok(root) => {
                    let jar = root.join(SDK_JAR);
                    if jar.is_file() {
                        return Ok(jar);
                    }
                    looked.push(format!(
                        "the SDK of {}: {} (missing)",
                        gcloud.display(),
                        jar.display()
                    ));
                }
                Err(why) => looked.push(format!("{}: {why}", gcloud.display())),
            },
            (None, None) => {
                looked.push(format!("{CLOUDSDK_ROOT_ENV} (unset) and no gcloud on PATH"));
            }
        }

        match &self.firebase_cache {
            Some(dir) => {
                if let Some(jar) = newest_firebase_jar(dir) {
                    return Ok(jar);
                }
                looked.push(format!(
                    "{}/cloud-firestore-emulator-v*.jar (none)",
                    dir.display()
                ));
            }
            None => looked.push(format!(
                "the Firebase CLI cache ({FIREBASE_CACHE_ENV} and HOME unset)"
            )),
        }

        if self.debian.is_file() {
            return Ok(self.debian.clone());
        }
        looked.push(format!("{} (missing)", self.debian.display()));
        Err(EmulatorError::JarMissing { looked })
    }
}

/// The first `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The SDK root of `gcloud`: read from its location when it is the SDK's own
/// `bin/gcloud` (symbolic links followed), otherwise asked of the program.
fn sdk_root_of(gcloud: &Path) -> Result<PathBuf, String> {
    if let Ok(real) = gcloud.canonicalize()
        && let Some(root) = real.parent().and_then(Path::parent)
        && real.parent().and_then(Path::file_name) == Some("bin".as_ref())
        && root.join(SDK_JAR).is_file()
    {
        return Ok(root.to_path_buf());
    }
    let spawn = || {
        Command::new(gcloud)
            .args(["info", "--format=value(installation.sdk_root)"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
    };
    // A program written a moment ago can be briefly busy (ETXTBSY) while another
    // thread's fork still holds it open: try again a few times.
    let mut attempt = 0;
    let mut child = loop {
        match spawn() {
            Ok(child) => break child,
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt < 5 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("could not run it ({e})")),
        }
    };
    let deadline = Instant::now() + GCLOUD_DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`gcloud info` gave no answer within {GCLOUD_DEADLINE:?}"
                ));
            }
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    }
    let root = out.trim();
    if root.is_empty() {
        return Err("`gcloud info` reported no SDK root".into());
    }
    Ok(PathBuf::from(root))
}

/// The newest `cloud-firestore-emulator-v{version}.jar` in `dir`, by numeric version.
fn newest_firebase_jar(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name
                .strip_prefix("cloud-firestore-emulator-v")?
                .strip_suffix(".jar")?;
            let parts: Vec<u64> = version
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<_>>()?;
            let path = entry.path();
            path.is_file().then_some((parts, path))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn jar_at(path: &Path) -> PathBuf {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create the jar's directory");
        }
        fs::write(path, b"jar").expect("write a jar");
        path.to_path_buf()
    }

    fn nowhere(dir: &Path) -> Discovery {
        Discovery {
            debian: dir.join("debian/missing.jar"),
            ..Discovery::default()
        }
    }

    fn looked(discovery: &Discovery) -> Vec<String> {
        match discovery.find() {
            Err(EmulatorError::JarMissing { looked }) => looked,
            other => panic!("expected JarMissing, got {other:?}"),
        }
    }

    #[test]
    fn the_crate_variable_comes_first_and_a_wrong_one_is_an_error() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let jar = jar_at(&dir.path().join("mine.jar"));
        let discovery = Discovery {
            jar: Some(jar.clone()),
            binary_path: Some(jar_at(&dir.path().join("firebase.jar"))),
            debian: jar_at(&dir.path().join("debian.jar")),
            ..Discovery::default()
        };
        assert_eq!(discovery.find().expect("found"), jar);
        let wrong = Discovery {
            jar: Some(dir.path().join("absent.jar")),
            ..discovery
        };
        let looked = looked(&wrong);
        assert_eq!(looked.len(), 1, "{looked:?}");
        assert!(looked[0].contains("absent.jar"), "{looked:?}");
    }

    #[test]
    fn the_firebase_binary_path_comes_second() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let jar = jar_at(&dir.path().join("firebase.jar"));
        let discovery = Discovery {
            binary_path: Some(jar.clone()),
            cloudsdk_root: Some(dir.path().to_path_buf()),
            debian: jar_at(&dir.path().join("debian.jar")),
            ..Discovery::default()
        };
        assert_eq!(discovery.find().expect("found"), jar);
    }

    #[test]
    fn the_cloud_sdk_root_variable_names_the_sdk() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let jar = jar_at(&dir.path().join("sdk").join(SDK_JAR));
        let discovery = Discovery {
            cloudsdk_root: Some(dir.path().join("sdk")),
            debian: jar_at(&dir.path().join("debian.jar")),
            ..Discovery::default()
        };
        assert_eq!(discovery.find().expect("found"), jar);
    }

    #[test]
    fn gcloud_is_asked_for_its_root_or_read_from_its_location() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temporary directory");
        let jar = jar_at(&dir.path().join("reported").join(SDK_JAR));
        // A gcloud outside any SDK layout: it must be run and asked.
        let gcloud = dir.path().join("tools/gcloud");
        fs::create_dir_all(gcloud.parent().expect("parent")).expect("mkdir");
        let script = format!(
            "#!/bin/sh\n[ \"$1 $2\" = 'info --format=value(installation.sdk_root)' ] && echo '{}'\n",
            dir.path().join("reported").display()
        );
        fs::write(&gcloud, script).expect("write the fake gcloud");
        fs::set_permissions(&gcloud, fs::Permissions::from_mode(0o755)).expect("chmod");
        let discovery = Discovery {
            gcloud: Some(gcloud),
            debian: jar_at(&dir.path().join("debian.jar")),
            ..Discovery::default()
        };
        assert_eq!(discovery.find().expect("found"), jar);

        // The SDK's own bin/gcloud, reached through a symbolic link: never run.
        let sdk = dir.path().join("sdk");
        let sdk_jar = jar_at(&sdk.join(SDK_JAR));
        fs::create_dir_all(sdk.join("bin")).expect("mkdir");
        fs::write(sdk.join("bin/gcloud"), "#!/bin/sh\nexit 1\n").expect("write");
        let link = dir.path().join("gcloud-link");
        std::os::unix::fs::symlink(sdk.join("bin/gcloud"), &link).expect("symlink");
        let discovery = Discovery {
            gcloud: Some(link),
            ..discovery
        };
        assert_eq!(discovery.find().expect("found"), sdk_jar);
    }

    #[test]
    fn the_firebase_cache_gives_its_newest_version() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let cache = dir.path().join("emulators");
        for version in ["1.9.0", "1.19.7", "1.19.10", "1.2.99"] {
            jar_at(&cache.join(format!("cloud-firestore-emulator-v{version}.jar")));
        }
        jar_at(&cache.join("cloud-firestore-emulator-vlatest.jar"));
        jar_at(&cache.join("pubsub-emulator-9.9.9.jar"));
        let discovery = Discovery {
            firebase_cache: Some(cache.clone()),
            debian: jar_at(&dir.path().join("debian.jar")),
            ..Discovery::default()
        };
        assert_eq!(
            discovery.find().expect("found"),
            cache.join("cloud-firestore-emulator-v1.19.10.jar")
        );
    }

    #[test]
    fn the_debian_path_comes_last() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let debian = jar_at(&dir.path().join("debian.jar"));
        let discovery = Discovery {
            cloudsdk_root: Some(dir.path().join("empty-sdk")),
            firebase_cache: Some(dir.path().join("no-cache")),
            debian: debian.clone(),
            ..Discovery::default()
        };
        assert_eq!(discovery.find().expect("found"), debian);
    }

    #[test]
    fn nothing_found_lists_every_place_looked_and_how_to_install() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let discovery = Discovery {
            cloudsdk_root: Some(dir.path().join("sdk")),
            firebase_cache: Some(dir.path().join("cache")),
            ..nowhere(dir.path())
        };
        let looked = looked(&discovery);
        assert_eq!(looked.len(), 5, "{looked:?}");
        let message = EmulatorError::JarMissing { looked }.to_string();
        for place in [
            JAR_ENV,
            BINARY_PATH_ENV,
            CLOUDSDK_ROOT_ENV,
            "cloud-firestore-emulator-v*.jar",
            "debian/missing.jar",
            "google-cloud-cli-firestore-emulator",
            "gcloud components install cloud-firestore-emulator",
            "firebase setup:emulators:firestore",
        ] {
            assert!(message.contains(place), "{place} missing from: {message}");
        }
    }
}
