//! The emulator in a Docker container (cargo feature `testcontainers`), for machines
//! with a Docker engine but no local Java or emulator package: the Cloud SDK emulators
//! image of `testcontainers-modules`, started with a ruleset.

use super::{Emulator, EmulatorError, RULES};
use testcontainers_modules::google_cloud_sdk_emulators::{CloudSdk, FIRESTORE_PORT};
use testcontainers_modules::testcontainers::runners::AsyncRunner as _;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt as _};

/// The image tag: the newest Cloud SDK emulators image, whose `gcloud` takes
/// `--rules` (the module pins an older default).
pub const TAG: &str = "emulators";
/// Where the ruleset is copied inside the container.
const RULES_IN_CONTAINER: &str = "/etc/command-journal/firestore.rules";

/// An emulator running in a container; the container stops when this is dropped.
pub struct ContainerEmulator {
    emulator: Emulator,
    _container: ContainerAsync<CloudSdk>,
}

impl std::fmt::Debug for ContainerEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerEmulator")
            .field("host", &self.emulator.host())
            .finish()
    }
}

impl ContainerEmulator {
    /// The emulator, addressed at the host and mapped port testcontainers reports.
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }
}

/// True when a Docker engine socket or `DOCKER_HOST` is configured on this machine.
pub fn docker_configured() -> bool {
    std::env::var_os("DOCKER_HOST").is_some()
        || std::path::Path::new("/var/run/docker.sock").exists()
}

/// Starts the Firestore emulator image with the crate's [`RULES`] and waits until it
/// reports it is running.
pub async fn start() -> Result<ContainerEmulator, EmulatorError> {
    start_with_rules(RULES).await
}

/// Starts the Firestore emulator image with `rules` as every project's ruleset
/// (`gcloud emulators firestore start --rules`).
pub async fn start_with_rules(rules: &str) -> Result<ContainerEmulator, EmulatorError> {
    let container = CloudSdk::firestore()
        .with_tag(TAG)
        .with_copy_to(RULES_IN_CONTAINER, rules.as_bytes().to_vec())
        .with_cmd([
            "gcloud".to_owned(),
            "beta".to_owned(),
            "emulators".to_owned(),
            "firestore".to_owned(),
            "start".to_owned(),
            format!("--host-port=0.0.0.0:{FIRESTORE_PORT}"),
            format!("--rules={RULES_IN_CONTAINER}"),
        ])
        .start()
        .await
        .map_err(|e| EmulatorError::Http(e.to_string()))?;
    let host = container
        .get_host()
        .await
        .map_err(|e| EmulatorError::Http(e.to_string()))?;
    let port = container
        .get_host_port_ipv4(FIRESTORE_PORT)
        .await
        .map_err(|e| EmulatorError::Http(e.to_string()))?;
    Ok(ContainerEmulator {
        emulator: Emulator::existing(format!("{host}:{port}")),
        _container: container,
    })
}
