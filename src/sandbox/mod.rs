//! The room's sandbox as rooms see it: the `Sandbox` trait (commands with
//! streamed output, interrupt, destroy, files), the factory rooms get
//! theirs from, the request and result types, the errors, and the
//! per-command policy. A backend (the Linux namespace one in `local/`)
//! implements the traits and keeps its host details to itself.

mod error;
pub mod files;
pub mod folder;
pub mod gitdiff;
#[cfg(all(target_os = "linux", feature = "server"))]
pub mod local;
pub mod policy;

pub use error::SandboxError;
pub use policy::Policy;

pub use crate::support::BoxFuture;

use crate::protocol::{DirEntry, TermSize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where a command's output goes as it comes.
pub type OnOutput = Box<dyn FnMut(Chunk) + Send>;

/// One room's sandbox.
///
/// A new capability is further methods here, each answering
/// `Unsupported` from a backend that lacks it.
pub trait Sandbox: Send + Sync + 'static {
    /// Queues a command behind those queued before it (at the call, not
    /// when the future is first polled); its output streams to
    /// `on_output`; resolves when it ended.
    fn exec(
        &self,
        exec_id: String,
        spec: ExecSpec,
        on_output: OnOutput,
    ) -> BoxFuture<Result<ExecOutcome, SandboxError>>;

    /// Stops the running command (`exec_id`, or whichever runs): SIGINT,
    /// then SIGKILL 2 s later; with `hard`, SIGKILL at once. Answers
    /// whether a command was running.
    fn interrupt(&self, exec_id: Option<String>, hard: bool) -> BoxFuture<bool>;

    /// Kills everything the room runs and deletes its workspace; queued
    /// commands fail with `SandboxError::Destroyed`. The sandbox stays
    /// usable: the next command starts afresh on an empty workspace.
    fn destroy(&self) -> BoxFuture<Result<(), SandboxError>>;

    /// Reads a file of the workspace (`path` relative to `/workspace`)
    /// whole: small files (AGENTS.md, a question's `@path`).
    fn read_file(&self, path: String) -> BoxFuture<Result<Vec<u8>, SandboxError>>;

    /// Opens a regular file of the workspace to be read in chunks; a
    /// FIFO, socket or device is refused without waiting on it.
    fn open_file(&self, path: String) -> BoxFuture<Result<files::FileReader, SandboxError>>;

    /// Writes a file of the workspace from `body` as it comes, creating
    /// its parent folders; it replaces the old file only once all of
    /// `body` is written. Answers its size.
    fn write_file(
        &self,
        path: String,
        body: files::FileBody,
    ) -> BoxFuture<Result<u64, SandboxError>>;

    /// Whether it runs or holds anything for the room right now (a
    /// command; later a terminal or background processes): a busy
    /// sandbox keeps its room loaded.
    fn busy(&self) -> bool;

    /// Resolves when the sandbox next stops by itself (idle): its shell is
    /// gone, and the next command starts a fresh one in `/workspace`.
    /// Cancel-safe: a stop while nobody waits is kept for the next call.
    fn stopped(&self) -> BoxFuture<()>;

    /// Opens the room's shared terminal (starting the sandbox if need be):
    /// its output and its end come on the receiver, which ends after
    /// `TermEvent::Exit`. While it runs the sandbox does not stop for being
    /// idle.
    fn term_open(&self, size: TermSize) -> BoxFuture<Result<TermEvents, SandboxError>>;

    /// Sends the terminal these bytes, its new size, or its end (nothing
    /// when none runs).
    fn term_send(&self, request: TermRequest);

    /// Starts background process `id`: `bash -c cmd` in `/workspace`
    /// (starting the sandbox if need be). Its output and its end come on
    /// the receiver, which ends after `ProcEvent::Exit`. While one runs
    /// the sandbox does not stop for being idle.
    fn process_start(&self, id: String, cmd: String)
    -> BoxFuture<Result<ProcEvents, SandboxError>>;

    /// Sends `signal` to process `id`'s group (nothing when it does not
    /// run).
    fn process_signal(&self, id: String, signal: ProcSignal);

    /// The TCP ports something listens on inside the sandbox, sorted, as
    /// they change (empty while it is stopped).
    fn ports(&self) -> tokio::sync::watch::Receiver<Vec<u16>>;

    /// A connection to `port` on the sandbox's own loopback (never the
    /// host's). A sandbox that does not run is not started: nothing
    /// listens there.
    fn port_connect(&self, port: u16) -> BoxFuture<Result<tokio::net::TcpStream, SandboxError>>;

    /// Lists a folder of the workspace (`path` relative to `/workspace`,
    /// empty for the workspace itself), sorted by name.
    fn list_dir(&self, path: String) -> BoxFuture<Result<Vec<DirEntry>, SandboxError>>;

    /// Deletes a file, a symlink (itself) or a folder with everything in it.
    fn delete_path(&self, path: String) -> BoxFuture<Result<(), SandboxError>>;

    /// Copies the workspace as it is now into checkpoint `id` (refused
    /// when it does not fit the room's disk); answers its bytes.
    fn checkpoint_create(&self, id: String) -> BoxFuture<Result<u64, SandboxError>>;

    /// Queued behind the commands queued before it: stops the sandbox
    /// (its processes and terminal with it) and makes the workspace a copy
    /// of checkpoint `id`. The next command starts a fresh shell.
    fn checkpoint_restore(&self, id: String) -> BoxFuture<Result<(), SandboxError>>;

    /// Deletes checkpoint `id` (nothing when it is not there).
    fn checkpoint_delete(&self, id: String) -> BoxFuture<Result<(), SandboxError>>;

    /// Where a fork of this room starts: the workspace now, or checkpoint
    /// `id`; read by `fork_from` of a sandbox of the same backend.
    fn fork_source(
        &self,
        checkpoint: Option<String>,
    ) -> BoxFuture<Result<ForkSource, SandboxError>>;

    /// Fills this (new, empty) room's workspace from another room's `source`.
    fn fork_from(&self, source: ForkSource) -> BoxFuture<Result<(), SandboxError>>;

    /// Unpacks the tar (or gzipped tar) `body` beneath folder `path` of
    /// the workspace (empty: the workspace), all or nothing, as it
    /// arrives; with `mirror`, what the folder holds that the archive
    /// does not is deleted. A refused member is `Member`.
    fn archive_put(
        &self,
        path: String,
        body: files::FileBody,
        mirror: bool,
    ) -> BoxFuture<Result<Pushed, SandboxError>>;

    /// A tar of folder `path` of the workspace, made as it is read.
    fn archive_get(&self, path: String) -> BoxFuture<Result<files::FileBody, SandboxError>>;

    /// The git diff of the workspace against checkpoint `id`, limited to
    /// `paths` (none: everything).
    fn diff(&self, id: String, paths: Vec<String>) -> BoxFuture<Result<String, SandboxError>>;
}

/// What a push wrote: regular files and their bytes, and the paths
/// deleted to mirror the archive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pushed {
    pub files: u64,
    pub bytes: u64,
    pub deleted: u64,
}

/// What a fork copies from, as the backend that made it knows it.
pub struct ForkSource(pub Box<dyn std::any::Any + Send>);

/// A background process's output and end, as they come.
pub type ProcEvents = tokio::sync::mpsc::Receiver<ProcEvent>;

/// What a background process does.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcEvent {
    /// Bytes it wrote on stdout (`false`) or stderr (`true`).
    Output { stderr: bool, bytes: Vec<u8> },
    /// It ended: its exit status (128 + N for signal N; `None` when the
    /// sandbox went away under it), or why it could not start.
    Exit(Option<i32>, Option<String>),
}

/// The signals a background process is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcSignal {
    Term,
    Kill,
}

/// The terminal's output and end, as they come.
pub type TermEvents = tokio::sync::mpsc::Receiver<TermEvent>;

/// What the shared terminal says.
#[derive(Debug, Clone, PartialEq)]
pub enum TermEvent {
    /// Bytes, exactly as the programs wrote them.
    Output(Vec<u8>),
    /// The programs were given this size (the server's `Resize`): output
    /// before it was drawn for the old size, output after for this one.
    Resized(TermSize),
    /// It ended: its shell's exit code (`None`: closed or killed), or why
    /// it could not start.
    Exit(Option<i32>, Option<String>),
}

/// What the server tells the shared terminal.
#[derive(Debug, Clone, PartialEq)]
pub enum TermRequest {
    Input(Vec<u8>),
    Resize(TermSize),
    Close,
}

/// Which room a sandbox is for: its id and the names kept with the room
/// for its sandbox (a backend maps them to its own places).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxId {
    pub room: String,
    /// A random name kept with the room (the local backend's folder name).
    pub opaque: String,
    /// A number kept with the room, unique per server (the local
    /// backend's uid).
    pub slot: u32,
}

/// Where rooms get their sandboxes.
pub trait SandboxFactory: Send + Sync + 'static {
    /// The sandbox of a room; it starts on its first command.
    fn open(&self, id: &SandboxId) -> Arc<dyn Sandbox>;
    /// One line for the log: the limits in force and how they are held.
    fn describe(&self) -> String;
    /// The server stops: release what the backend holds for its rooms
    /// (blocking).
    fn shutdown(&self);
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

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    pub cmd: String,
    /// Working directory for this command only.
    pub cwd: Option<String>,
    /// Extra environment for this command only.
    pub env: BTreeMap<String, String>,
    /// Wall-clock timeout (already capped by the policy).
    pub timeout: Duration,
    /// Bytes captured per stream; beyond it the command is cut and
    /// killed, and its result says `truncated`.
    pub output_cap: usize,
    /// Whether it started, or was withdrawn while it waited.
    pub start: StartGate,
}

/// A command's start, settled once: the sandbox starts it, or an
/// interrupt withdraws it while it waits behind another (then it never
/// runs). Clones share it.
#[derive(Debug, Clone, Default)]
pub struct StartGate(std::sync::Arc<std::sync::atomic::AtomicU8>);

const WAITING: u8 = 0;
const STARTED: u8 = 1;
const WITHDRAWN: u8 = 2;

impl StartGate {
    /// The sandbox is about to run it: false when it was withdrawn.
    pub fn start(&self) -> bool {
        self.settle(STARTED)
    }

    /// It is not to run: false when it started already.
    pub fn withdraw(&self) -> bool {
        self.settle(WITHDRAWN)
    }

    fn settle(&self, to: u8) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.0.compare_exchange(WAITING, to, SeqCst, SeqCst).is_ok()
    }
}

impl Default for ExecSpec {
    fn default() -> Self {
        Policy::default().spec(String::new(), None, None, BTreeMap::new())
    }
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
    /// Captured output, up to the spec's `output_cap` per stream.
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
    /// The shell's working directory after the command: where the next
    /// one runs. `None` when the command could not run.
    pub cwd: Option<String>,
    /// Set when the shell was replaced after the command.
    pub restart: Option<ShellRestart>,
}

/// Why the shell that ran a command was replaced after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RestartReason {
    /// It exited (`exit`, `exec`, a signal).
    Exit,
    /// Its command ran out of time.
    Timeout,
    /// Its command was interrupted (or the agent's turn cancelled).
    Interrupt,
    /// It was stuck (a builtin loop, a stopped shell) or the sandbox
    /// stopped under it.
    Stopped,
}

impl RestartReason {
    /// Its name on the wire (a `shell` record's `reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            RestartReason::Exit => "exit",
            RestartReason::Timeout => "timeout",
            RestartReason::Interrupt => "interrupt",
            RestartReason::Stopped => "stopped",
        }
    }
}

/// A shell replaced after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShellRestart {
    pub reason: RestartReason,
    /// The new shell starts afresh: in `/workspace`, no exported
    /// variables. Otherwise it carries over the working directory and
    /// exports of the last command that finished.
    pub reset: bool,
}

/// Entry of the hidden `duet sandbox-init` helper process.
#[cfg(all(target_os = "linux", feature = "server"))]
pub fn helper_main() -> std::process::ExitCode {
    local::helper_main()
}

/// Entry of the hidden `duet sandbox-init` helper process.
#[cfg(not(all(target_os = "linux", feature = "server")))]
pub fn helper_main() -> std::process::ExitCode {
    eprintln!("duet: this duet has no sandboxes (they need Linux and the server feature)");
    std::process::ExitCode::FAILURE
}
