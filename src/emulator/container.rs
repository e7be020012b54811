//! The emulator in a Docker container (cargo feature `testcontainers`), for machines
//! with a Docker engine but no local Java or emulator package.

use super::{Emulator, EmulatorError};
use testcontainers::core::{IntoContainerPort as _, WaitFor};
use testcontainers::runners::AsyncRunner as _;
use testcontainers::{ContainerAsync, GenericImage, ImageExt as _};

/// The Google Cloud CLI image that carries the emulators.
pub const IMAGE: &str = "gcr.io/google.com/cloudsdktool/google-cloud-cli";
/// Its tag.
pub const TAG: &str = "emulators";
const PORT: u16 = 8080;

/// An emulator running in a container; the container stops when this is dropped.
pub struct ContainerEmulator {
    emulator: Emulator,
    _container: ContainerAsync<GenericImage>,
}

impl std::fmt::Debug for ContainerEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerEmulator")
            .field("host", &self.emulator.host())
            .finish()
    }
}

impl ContainerEmulator {
    /// The emulator, addressed at its mapped loopback port.
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }
}

/// True when a Docker engine socket or `DOCKER_HOST` is configured on this machine.
pub fn docker_configured() -> bool {
    std::env::var_os("DOCKER_HOST").is_some()
        || std::path::Path::new("/var/run/docker.sock").exists()
}

/// Starts the emulator image and waits until it reports it is running.
pub async fn start() -> Result<ContainerEmulator, EmulatorError> {
    let container = GenericImage::new(IMAGE, TAG)
        .with_exposed_port(PORT.tcp())
        .with_wait_for(WaitFor::message_on_either_std(
            "Dev App Server is now running",
        ))
        .with_cmd([
            "gcloud",
            "emulators",
            "firestore",
            "start",
            "--host-port=0.0.0.0:8080",
        ])
        .start()
        .await
        .map_err(|e| EmulatorError::Http(e.to_string()))?;
    let port = container
        .get_host_port_ipv4(PORT)
        .await
        .map_err(|e| EmulatorError::Http(e.to_string()))?;
    Ok(ContainerEmulator {
        emulator: Emulator::existing(format!("127.0.0.1:{port}")),
        _container: container,
    })
}
