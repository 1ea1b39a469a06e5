//! The room's sandbox: one persistent shell per room inside Linux namespaces.
//!
//! `RoomSandbox` is the handle the room holds. Behind it a worker task owns
//! the sandbox process, starts it on first use, runs commands one at a time
//! in the order they were queued, stops it after an idle period and starts it
//! again on the next command. The workspace persists until `destroy`.

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
        }
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

/// Handle to a room's sandbox worker. Cheap to clone.
#[derive(Clone)]
pub struct RoomSandbox {
    place: Arc<SandboxPlace>,
    limits: Arc<Limits>,
}

impl RoomSandbox {
    /// A handle for the room; the sandbox itself starts on the first command.
    pub fn new(place: SandboxPlace, limits: Arc<Limits>) -> Self {
        RoomSandbox {
            place: Arc::new(place),
            limits,
        }
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
        let _ = (exec_id, spec, on_output, &self.place, &self.limits);
        async { Err(SandboxError::Start("not built yet".into())) }
    }

    /// Stops the running command (`exec_id`, or whichever runs): SIGINT,
    /// then SIGKILL 2 s later; with `hard`, SIGKILL at once. Answers whether
    /// a command was running.
    pub async fn interrupt(&self, exec_id: Option<String>, hard: bool) -> bool {
        let _ = (exec_id, hard);
        false
    }

    /// Kills every process of the room and deletes its workspace. Queued
    /// commands fail with `SandboxError::Destroyed`. The handle stays usable:
    /// the next command starts a fresh sandbox on an empty workspace.
    pub async fn destroy(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Entry of the hidden `duet sandbox-init` helper process.
pub fn helper_main() -> std::process::ExitCode {
    std::process::ExitCode::FAILURE
}

/// The host directory of a room's workspace: `opaque` is a random name kept
/// with the room, so that host paths (visible in the sandbox's mount table)
/// say nothing of the room.
pub fn workspace_dir(data_dir: &std::path::Path, opaque: &str) -> PathBuf {
    data_dir.join("workspaces").join(opaque)
}

/// The host uid of a room's sandbox when the server runs as root: each room
/// has its own (`slot` is a number kept with the room, unique per server).
pub fn room_uid(slot: u32) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root.then(|| 200_000 + slot)
}
