//! The Linux namespace backend: one persistent shell per room inside
//! Linux namespaces, with the host details rooms never see (uids,
//! cgroups, quota images, workspace paths).
//!
//! `RoomSandbox` is a room's handle. Behind it a worker task owns the
//! sandbox process, starts it on first use, runs commands one at a time
//! in the order they were queued, stops it after an idle period and
//! starts it again on the next command. The workspace persists until
//! `destroy`.

mod background;
pub mod cgroups;
mod checkpoints;
mod connect;
pub mod disk;
pub mod files;
mod helper;
mod ports;
mod proc_slots;
mod procs;
mod pty;
mod seccomp;
mod session;
pub mod shell;
mod supervisor;
mod term_slot;
pub mod tree;
pub mod wire;
mod worker;

use super::files::{FileBody, FileError, FileReader};
pub(crate) use super::{
    BoxFuture, CheckpointError, Chunk, ExecOutcome, ExecSpec, ForkSource, Network, OnOutput,
    PortError, ProcEvent, ProcEvents, ProcSignal, RestartReason, Sandbox, SandboxError,
    SandboxFactory, SandboxId, ShellRestart, TermEvent, TermEvents, TermRequest,
};
use crate::protocol::TermSize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    jobs: tokio::sync::mpsc::UnboundedSender<Work>,
    control: tokio::sync::mpsc::UnboundedSender<Control>,
    /// Commands queued or running (the worker counts them down).
    pending: Arc<AtomicUsize>,
    /// Told by the worker when the sandbox stopped for being idle.
    stopped: Arc<tokio::sync::Notify>,
    /// What the running sandbox reports into (its terminal, processes,
    /// ports) and the way into its ports.
    feeds: worker::Feeds,
    place: Arc<SandboxPlace>,
    limits: Arc<Limits>,
    /// One change of the room's disk at a time (checkpoints, restores).
    disk_lock: Arc<tokio::sync::Mutex<()>>,
}

use worker::{Control, Job, Work};

impl RoomSandbox {
    /// A handle for the room; the sandbox itself starts on the first
    /// command. Must be called inside a Tokio runtime.
    pub fn new(place: SandboxPlace, limits: Arc<Limits>) -> Self {
        let (jobs, jobs_rx) = tokio::sync::mpsc::unbounded_channel();
        let (control, control_rx) = tokio::sync::mpsc::unbounded_channel();
        let place = Arc::new(place);
        let pending = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(tokio::sync::Notify::new());
        let feeds = worker::Feeds::default();
        let shared = worker::Shared {
            place: place.clone(),
            limits: limits.clone(),
            pending: pending.clone(),
            stopped: stopped.clone(),
            feeds: feeds.clone(),
        };
        tokio::spawn(worker::run(shared, jobs_rx, control_rx));
        RoomSandbox {
            jobs,
            control,
            pending,
            stopped,
            feeds,
            place,
            limits,
            disk_lock: Arc::default(),
        }
    }

    /// Reads a file of the workspace (`path` relative to `/workspace`).
    pub async fn read_file(&self, path: String) -> Result<Vec<u8>, FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || {
            if !place.workspace.exists() {
                return Err(FileError::NotFound);
            }
            ready_workspace(&place, &limits).map_err(unavailable)?;
            files::read(&place.workspace, &path)
        })
        .await
        .map_err(|e| FileError::Io(e.to_string()))?
    }

    /// Opens a regular file of the workspace to be read in chunks.
    pub async fn open_file(&self, path: String) -> Result<FileReader, FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || {
            if !place.workspace.exists() {
                return Err(FileError::NotFound);
            }
            ready_workspace(&place, &limits).map_err(unavailable)?;
            files::open_regular(&place.workspace, &path)
        })
        .await
        .map_err(|e| FileError::Io(e.to_string()))?
    }

    /// Writes a file of the workspace from `body` as it arrives, beside
    /// the old one, and renames it over it at the end; answers its size.
    pub async fn write_file(&self, path: String, mut body: FileBody) -> Result<u64, FileError> {
        use futures_util::StreamExt;
        use tokio::io::AsyncWriteExt;
        let (place, limits) = (self.place.clone(), self.limits.clone());
        let upload = tokio::task::spawn_blocking(move || {
            ready_workspace(&place, &limits).map_err(unavailable)?;
            files::Upload::create(&place.workspace, &path, place.uid)
        })
        .await
        .map_err(|e| FileError::Io(e.to_string()))??;
        let written = upload
            .file()
            .try_clone()
            .map_err(|e| FileError::Io(e.to_string()))?;
        let mut out = tokio::fs::File::from_std(written);
        let mut size = 0u64;
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            size += chunk.len() as u64;
            out.write_all(&chunk).await.map_err(files::io_error)?;
        }
        out.flush().await.map_err(files::io_error)?;
        drop(out);
        // An error or a dropped request before here removes the new file.
        tokio::task::spawn_blocking(move || upload.finish())
            .await
            .map_err(|e| FileError::Io(e.to_string()))??;
        Ok(size)
    }

    /// Queues a command behind those queued before it (the job is queued
    /// when `exec` is called, not when the future is first polled) and
    /// returns a future of its outcome. Output streams to `on_output` as it
    /// comes.
    pub fn exec(
        &self,
        exec_id: String,
        spec: ExecSpec,
        on_output: OnOutput,
    ) -> impl std::future::Future<Output = Result<ExecOutcome, SandboxError>> + Send + 'static {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.pending.fetch_add(1, Ordering::SeqCst);
        let queued = self.jobs.send(Work::Exec(Job {
            exec_id,
            spec,
            on_output,
            reply,
        }));
        if queued.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
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
fn ready_workspace(place: &SandboxPlace, limits: &Limits) -> std::io::Result<()> {
    disk::prepare(
        enforcement().quota,
        &place.workspace,
        limits.disk_bytes,
        place.uid,
    )
}

/// The file error of a workspace that could not be readied.
fn unavailable(e: std::io::Error) -> FileError {
    FileError::Io(format!("the workspace is not available: {e}"))
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
    let beside = |suffix: &str| {
        let mut name = workspace.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    for dir in [
        workspace.to_path_buf(),
        beside(".root"),
        beside(".checkpoints"),
    ] {
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

/// The host uid of a room's sandbox when the server runs as root: each room
/// has its own. `slot` is a number kept with the room, unique per server;
/// the data directory picks one of 60,000 ranges of 65,536 uids, so that
/// two servers on one machine (an embedded one beside `duet serve`) do not
/// share uids.
pub fn room_uid(data_dir: &std::path::Path, slot: u32) -> Option<u32> {
    let root = nix::unistd::geteuid().is_root();
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
pub fn helper_main() -> std::process::ExitCode {
    helper::main()
}

impl Sandbox for RoomSandbox {
    fn exec(
        &self,
        exec_id: String,
        spec: ExecSpec,
        on_output: OnOutput,
    ) -> BoxFuture<Result<ExecOutcome, SandboxError>> {
        Box::pin(RoomSandbox::exec(self, exec_id, spec, on_output))
    }

    fn interrupt(&self, exec_id: Option<String>, hard: bool) -> BoxFuture<bool> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::interrupt(&sandbox, exec_id, hard).await })
    }

    fn destroy(&self) -> BoxFuture<Result<(), String>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::destroy(&sandbox).await })
    }

    fn read_file(&self, path: String) -> BoxFuture<Result<Vec<u8>, FileError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::read_file(&sandbox, path).await })
    }

    fn open_file(&self, path: String) -> BoxFuture<Result<FileReader, FileError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::open_file(&sandbox, path).await })
    }

    fn write_file(&self, path: String, body: FileBody) -> BoxFuture<Result<u64, FileError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::write_file(&sandbox, path, body).await })
    }

    fn busy(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0
            || self.feeds.terminal.running()
            || self.feeds.procs.running() > 0
    }

    fn stopped(&self) -> BoxFuture<()> {
        // One waiter (the room): a stop nobody awaited is kept as a permit.
        let stopped = self.stopped.clone();
        Box::pin(async move { stopped.notified().await })
    }

    fn term_open(&self, size: TermSize) -> BoxFuture<Result<TermEvents, SandboxError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.control.send(Control::TermOpen { size, reply });
        Box::pin(async move {
            sent.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        })
    }

    fn term_send(&self, request: TermRequest) {
        let _ = self.control.send(Control::Term(request));
    }

    fn process_start(
        &self,
        id: String,
        cmd: String,
    ) -> BoxFuture<Result<ProcEvents, SandboxError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.control.send(Control::ProcStart { id, cmd, reply });
        Box::pin(async move {
            sent.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        })
    }

    fn process_signal(&self, id: String, signal: ProcSignal) {
        let _ = self.control.send(Control::ProcSignal { id, signal });
    }

    fn ports(&self) -> tokio::sync::watch::Receiver<Vec<u16>> {
        self.feeds.ports.subscribe()
    }

    fn port_connect(&self, port: u16) -> BoxFuture<Result<tokio::net::TcpStream, PortError>> {
        let link = self.feeds.link.clone();
        Box::pin(async move { link.connect(port).await })
    }

    fn list_dir(
        &self,
        path: String,
    ) -> BoxFuture<Result<Vec<crate::protocol::DirEntry>, FileError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::list_dir(&sandbox, path).await })
    }

    fn delete_path(&self, path: String) -> BoxFuture<Result<(), FileError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::delete_path(&sandbox, path).await })
    }

    fn checkpoint_create(&self, id: String) -> BoxFuture<Result<u64, CheckpointError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::checkpoint_create(&sandbox, id).await })
    }

    fn checkpoint_restore(&self, id: String) -> BoxFuture<Result<(), CheckpointError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::checkpoint_restore(&sandbox, id).await })
    }

    fn checkpoint_delete(&self, id: String) -> BoxFuture<Result<(), CheckpointError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::checkpoint_delete(&sandbox, id).await })
    }

    fn fork_source(
        &self,
        checkpoint: Option<String>,
    ) -> BoxFuture<Result<ForkSource, CheckpointError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::fork_source(&sandbox, checkpoint).await })
    }

    fn fork_from(&self, source: ForkSource) -> BoxFuture<Result<(), CheckpointError>> {
        let sandbox = self.clone();
        Box::pin(async move { RoomSandbox::fork_from(&sandbox, source).await })
    }
}

/// The sandboxes of one data directory on this host.
pub struct LocalFactory {
    data_dir: PathBuf,
    limits: Arc<Limits>,
}

impl LocalFactory {
    /// Sandboxes under `data_dir` with `limits`; fails, saying what to
    /// install, when the limits cannot work on this host.
    pub fn new(data_dir: PathBuf, limits: Limits) -> Result<Self, String> {
        limits.check()?;
        // A server killed with SIGKILL leaves its rooms' quota images
        // mounted: unmount this data directory's (never another server's).
        release_all(&data_dir);
        Ok(LocalFactory {
            data_dir,
            limits: Arc::new(limits),
        })
    }
}

impl SandboxFactory for LocalFactory {
    fn open(&self, id: &SandboxId) -> Arc<dyn Sandbox> {
        let place = SandboxPlace {
            room: id.room.clone(),
            workspace: workspace_dir(&self.data_dir, &id.opaque),
            uid: room_uid(&self.data_dir, id.slot),
        };
        Arc::new(RoomSandbox::new(place, self.limits.clone()))
    }

    fn describe(&self) -> String {
        self.limits.describe()
    }

    fn shutdown(&self) {
        release_all(&self.data_dir);
    }
}
