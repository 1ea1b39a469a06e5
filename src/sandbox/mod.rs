//! The room's sandbox: one persistent shell per room inside Linux namespaces.
//!
//! `RoomSandbox` is the handle the room holds. Behind it a worker task owns
//! the sandbox process, starts it on first use, runs commands one at a time
//! in the order they were queued, stops it after an idle period and starts it
//! again on the next command. The workspace persists until `destroy`.

#[cfg(target_os = "linux")]
pub mod cgroups;
#[cfg(target_os = "linux")]
pub mod disk;
#[cfg(target_os = "linux")]
pub mod files;
#[cfg(target_os = "linux")]
mod helper;
#[cfg(target_os = "linux")]
mod procs;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod shell;
#[cfg(target_os = "linux")]
mod supervisor;
pub mod wire;
#[cfg(target_os = "linux")]
mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Limits applied to every room's sandbox.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Wall-clock timeout when a request names none.
    pub default_timeout: Duration,
    /// Largest timeout a request may ask for.
    pub max_timeout: Duration,
    /// Bytes captured per stream of one command; beyond it the command is
    /// cut and killed, and its result says `truncated`.
    pub output_cap: usize,
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

/// What a sandbox's network reaches.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// Only the sandbox's own loopback.
    #[default]
    None,
    /// Outside hosts through user-mode NAT (pasta); never the host's
    /// loopback services.
    Nat,
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
        #[cfg(target_os = "linux")]
        if self.network == Network::Nat && !tun_open_to_sandboxes() {
            return Err(
                "--sandbox-network nat needs /dev/net/tun usable by the sandboxes' users \
                 (pasta opens it as the room's uid), but it is not: make it mode 0666 as Debian's \
                 udev does (chmod 0666 /dev/net/tun), or use --sandbox-network none"
                    .into(),
            );
        }
        #[cfg(not(target_os = "linux"))]
        return Err("sandboxes need Linux: this backend runs on another system".into());
        #[cfg(target_os = "linux")]
        Ok(())
    }
}

/// Whether an unprivileged sandbox user may open `/dev/net/tun`.
#[cfg(target_os = "linux")]
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
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            output_cap: 1024 * 1024,
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
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
pub struct Enforcement {
    pub cgroups: cgroups::Flavor,
    pub quota: disk::Quota,
}

/// What this host lets us enforce (cgroups and quotas need root).
#[cfg(target_os = "linux")]
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
        #[cfg(target_os = "linux")]
        let how = {
            let e = enforcement();
            format!("{}; {}", e.cgroups.describe(), e.quota.describe())
        };
        #[cfg(not(target_os = "linux"))]
        let how = "no sandbox on this system".to_string();
        format!(
            "memory {} MiB, {} processes, timeout {} s (max {} s), CPU {} s per process, \
             output {} KiB per stream, disk {} MiB, {} open files, /tmp {} MiB, network {:?}; {how}",
            self.memory_bytes >> 20,
            self.processes,
            self.default_timeout.as_secs(),
            self.max_timeout.as_secs(),
            self.cpu_seconds,
            self.output_cap >> 10,
            self.disk_bytes >> 20,
            self.open_files,
            self.tmp_bytes >> 20,
            self.network,
        )
    }
}

/// One command to run.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    pub cmd: String,
    /// Working directory for this command only.
    pub cwd: Option<String>,
    /// Extra environment for this command only.
    pub env: BTreeMap<String, String>,
    /// Wall-clock timeout (already capped by `Limits::max_timeout`).
    pub timeout: Duration,
}

/// A piece of a command's output, as it comes, decoded as UTF-8 (a
/// character split between reads is held until it is whole).
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Stdout(String),
    Stderr(String),
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecOutcome {
    /// The exit code; `None` when the command was killed with its shell.
    pub exit_code: Option<i32>,
    /// Captured output, up to `Limits::output_cap` per stream.
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
    pub timed_out: bool,
    pub interrupted: bool,
    /// Set when the shell had to be restarted, or the command could not run.
    pub error: Option<String>,
    pub duration: Duration,
    /// Identifies the shell session that ran the command.
    pub session_id: String,
}

/// Why a command could not be run at all.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox could not start: {0}")]
    Start(String),
    #[error("the sandbox is being destroyed")]
    Destroyed,
    #[error("sandboxes need Linux; this backend runs on another system")]
    Unsupported,
}

/// Where a room's sandbox lives on the host and as whom it runs.
#[derive(Debug, Clone)]
pub struct SandboxPlace {
    /// The room id (for logs).
    pub room: String,
    /// Host directory mounted as `/workspace`.
    pub workspace: PathBuf,
    /// Host uid the sandbox runs as when the server is root.
    pub uid: Option<u32>,
}

/// Handle to a room's sandbox worker. Cheap to clone; the worker ends
/// when the last handle is dropped.
#[derive(Clone)]
pub struct RoomSandbox {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    control: tokio::sync::mpsc::UnboundedSender<Control>,
    place: Arc<SandboxPlace>,
    limits: Arc<Limits>,
}

#[cfg(target_os = "linux")]
use worker::{Control, Job};

impl RoomSandbox {
    /// A handle for the room; the sandbox itself starts on the first
    /// command. Must be called inside a Tokio runtime.
    pub fn new(place: SandboxPlace, limits: Arc<Limits>) -> Self {
        let (jobs, jobs_rx) = tokio::sync::mpsc::unbounded_channel();
        let (control, control_rx) = tokio::sync::mpsc::unbounded_channel();
        let place = Arc::new(place);
        tokio::spawn(worker::run(
            place.clone(),
            limits.clone(),
            jobs_rx,
            control_rx,
        ));
        RoomSandbox {
            jobs,
            control,
            place,
            limits,
        }
    }

    /// Reads a file of the workspace (`path` relative to `/workspace`).
    #[cfg(target_os = "linux")]
    pub async fn read_file(&self, path: String) -> Result<Vec<u8>, files::FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || {
            if !place.workspace.exists() {
                return Err(files::FileError::NotFound);
            }
            ready_workspace(&place, &limits).map_err(unavailable)?;
            files::read(&place.workspace, &path)
        })
        .await
        .map_err(|e| files::FileError::Io(e.to_string()))?
    }

    /// Writes a file of the workspace, creating its parent folders;
    /// answers its size.
    #[cfg(target_os = "linux")]
    pub async fn write_file(
        &self,
        path: String,
        bytes: bytes::Bytes,
    ) -> Result<u64, files::FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || {
            ready_workspace(&place, &limits).map_err(unavailable)?;
            files::write(&place.workspace, &path, &bytes, place.uid)
        })
        .await
        .map_err(|e| files::FileError::Io(e.to_string()))?
    }

    /// Queues a command behind those queued before it (the job is queued
    /// when `exec` is called, not when the future is first polled) and
    /// returns a future of its outcome. Output streams to `on_output` as it
    /// comes.
    pub fn exec(
        &self,
        exec_id: String,
        spec: ExecSpec,
        on_output: Box<dyn FnMut(Chunk) + Send>,
    ) -> impl std::future::Future<Output = Result<ExecOutcome, SandboxError>> + Send + 'static {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let queued = self.jobs.send(Job {
            exec_id,
            spec,
            on_output,
            reply,
        });
        async move {
            queued.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        }
    }

    /// Stops the running command (`exec_id`, or whichever runs): SIGINT,
    /// then SIGKILL 2 s later; with `hard`, SIGKILL at once. Answers whether
    /// a command was running.
    pub async fn interrupt(&self, exec_id: Option<String>, hard: bool) -> bool {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.control.send(Control::Interrupt {
            exec_id,
            hard,
            reply,
        });
        sent.is_ok() && answer.await.unwrap_or(false)
    }

    /// Kills every process of the room and deletes its workspace. Queued
    /// commands fail with `SandboxError::Destroyed`. The handle stays usable:
    /// the next command starts a fresh sandbox on an empty workspace.
    pub async fn destroy(&self) -> Result<(), String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.control
            .send(Control::Destroy { reply })
            .map_err(|_| "the sandbox worker is gone".to_string())?;
        answer
            .await
            .map_err(|_| "the sandbox worker is gone".to_string())?
    }
}

/// The workspace exists, with its quota mounted where there is one.
#[cfg(target_os = "linux")]
fn ready_workspace(place: &SandboxPlace, limits: &Limits) -> std::io::Result<()> {
    disk::prepare(
        enforcement().quota,
        &place.workspace,
        limits.disk_bytes,
        place.uid,
    )
}

/// The file error of a workspace that could not be readied.
#[cfg(target_os = "linux")]
fn unavailable(e: std::io::Error) -> files::FileError {
    files::FileError::Io(format!("the workspace is not available: {e}"))
}

/// The binary to start as `duet sandbox-init`: this one, unless
/// `DUET_HELPER_EXE` names another (tests of the library use the built
/// `duet` binary).
fn helper_exe() -> std::io::Result<PathBuf> {
    match std::env::var_os("DUET_HELPER_EXE") {
        Some(path) => Ok(PathBuf::from(path)),
        None => std::env::current_exe(),
    }
}

/// Deletes a workspace and the container root beside it, never following
/// a symlink out of them; directories a command made unreadable are
/// opened up first.
fn remove_workspace(workspace: &std::path::Path) -> Result<(), String> {
    let mut errors = Vec::new();
    let mut root_dir = workspace.as_os_str().to_os_string();
    root_dir.push(".root");
    for dir in [workspace.to_path_buf(), PathBuf::from(root_dir)] {
        if !dir.exists() {
            continue;
        }
        if std::fs::remove_dir_all(&dir).is_err() {
            open_up(&dir);
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                errors.push(format!("cannot delete {}: {e}", dir.display()));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Gives the owner rwx on every directory below `dir` (not following links).
fn open_up(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&entry.path());
            }
        }
    }
}

/// The host directory of a room's workspace: `opaque` is a random name kept
/// with the room, so that host paths (visible in the sandbox's mount table)
/// say nothing of the room.
pub fn workspace_dir(data_dir: &std::path::Path, opaque: &str) -> PathBuf {
    data_dir.join("workspaces").join(opaque)
}

/// Unmounts every workspace image of `data_dir` (the server stops; the
/// images stay and are mounted again when their rooms next run).
pub fn release_all(data_dir: &std::path::Path) {
    #[cfg(target_os = "linux")]
    {
        let root = workspace_dir(data_dir, "");
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
            return;
        };
        for target in mounts.lines().filter_map(|l| l.split_whitespace().nth(1)) {
            if std::path::Path::new(target).starts_with(&root) {
                let _ = nix::mount::umount2(target, nix::mount::MntFlags::MNT_DETACH);
            }
        }
    }
}

/// The host uid of a room's sandbox when the server runs as root: each room
/// has its own. `slot` is a number kept with the room, unique per server;
/// the data directory picks one of 60,000 ranges of 65,536 uids, so that
/// two servers on one machine (an embedded one beside `duet serve`) do not
/// share uids.
pub fn room_uid(data_dir: &std::path::Path, slot: u32) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    // FNV-1a: stable across builds and runs, unlike the std hasher.
    let hash = dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
    let range = (hash % 60_000) as u32;
    root.then(|| 200_000 + range * 65_536 + (slot % 65_536))
}

/// Entry of the hidden `duet sandbox-init` helper process.
#[cfg(target_os = "linux")]
pub fn helper_main() -> std::process::ExitCode {
    helper::main()
}

/// Entry of the hidden `duet sandbox-init` helper process.
#[cfg(not(target_os = "linux"))]
pub fn helper_main() -> std::process::ExitCode {
    eprintln!("duet: sandboxes need Linux");
    std::process::ExitCode::FAILURE
}
