//! The limits of every room's sandbox on this host, checked when the
//! server starts, and how this host enforces them (cgroups, quotas).

use super::{Network, cgroups, disk};
use std::time::Duration;

/// Limits of every room's sandbox on this host.
#[derive(Debug, Clone)]
pub struct Limits {
    /// A sandbox with no command for this long is stopped (its workspace stays).
    pub idle_stop: Duration,
    /// Memory per room, in bytes.
    pub memory_bytes: u64,
    /// Processes per room.
    pub processes: u64,
    /// CPU seconds per process.
    pub cpu_seconds: u64,
    /// Largest file a command may write, in bytes.
    pub file_size: u64,
    /// Open files per process.
    pub open_files: u64,
    /// Size of the sandbox's `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// Size of a room's workspace, in bytes (a quota where the host allows
    /// one, otherwise the largest file).
    pub disk_bytes: u64,
    /// What the sandbox's network reaches.
    pub network: Network,
}

impl Limits {
    /// Fails, saying what to install, when the settings cannot work on this
    /// host (checked when the server starts, not at a room's first command).
    pub fn check(&self) -> Result<(), String> {
        if self.network == Network::Nat && !program_exists("pasta") {
            return Err("--sandbox-network nat needs pasta, which is not installed: \
                 install the Debian package `passt` (apt-get install passt), or use --sandbox-network none"
                .into());
        }
        if self.network == Network::Nat && !tun_open_to_sandboxes() {
            return Err(
                "--sandbox-network nat needs /dev/net/tun usable by the sandboxes' users \
                 (pasta opens it as the room's uid), but it is not: make it mode 0666 as Debian's \
                 udev does (chmod 0666 /dev/net/tun), or use --sandbox-network none"
                    .into(),
            );
        }
        Ok(())
    }
}

/// Whether an unprivileged sandbox user may open `/dev/net/tun`.
fn tun_open_to_sandboxes() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata("/dev/net/tun") else {
        return false;
    };
    if nix::unistd::geteuid().is_root() {
        meta.permissions().mode() & 0o006 == 0o006
    } else {
        nix::unistd::access(
            "/dev/net/tun",
            nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::W_OK,
        )
        .is_ok()
    }
}

/// Whether `program` is on the usual system paths.
pub(crate) fn program_exists(program: &str) -> bool {
    find_program(program).is_some()
}

/// Where a host tool is: on PATH, else wherever Debian puts it (root's
/// tools live in sbin, which cron's and `env -i`'s PATH lack).
pub(crate) fn find_program(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(
            [
                "/usr/local/sbin",
                "/usr/local/bin",
                "/usr/sbin",
                "/usr/bin",
                "/sbin",
                "/bin",
            ]
            .map(std::path::PathBuf::from),
        )
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_stop: Duration::from_secs(600),
            memory_bytes: 512 * 1024 * 1024,
            processes: 256,
            cpu_seconds: 600,
            file_size: 1024 * 1024 * 1024,
            open_files: 1024,
            tmp_bytes: 256 * 1024 * 1024,
            disk_bytes: 1024 * 1024 * 1024,
            network: Network::None,
        }
    }
}

/// How this host enforces the limits, found once.
#[derive(Debug, Clone, Copy)]
pub struct Enforcement {
    pub cgroups: cgroups::Flavor,
    pub quota: disk::Quota,
}

/// What this host lets us enforce (cgroups and quotas need root).
pub fn enforcement() -> Enforcement {
    static FOUND: std::sync::OnceLock<Enforcement> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let root = nix::unistd::geteuid().is_root();
        Enforcement {
            cgroups: if root {
                cgroups::Flavor::detect()
            } else {
                cgroups::Flavor::None
            },
            quota: disk::Quota::detect(),
        }
    })
}

impl Limits {
    /// One line for the log at start: the limits and how they are enforced.
    pub fn describe(&self) -> String {
        let e = enforcement();
        let how = format!("{}; {}", e.cgroups.describe(), e.quota.describe());
        format!(
            "memory {} MiB, {} processes, CPU {} s per process, \
             disk {} MiB, {} open files, /tmp {} MiB, network {:?}; {how}",
            self.memory_bytes >> 20,
            self.processes,
            self.cpu_seconds,
            self.disk_bytes >> 20,
            self.open_files,
            self.tmp_bytes >> 20,
            self.network,
        )
    }
}
