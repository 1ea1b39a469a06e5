//! The one error of the sandbox seam: every way a request to a room's
//! sandbox fails, each variant carrying what the server needs to answer
//! it with the status and words of docs/protocol.md (the server's
//! `From<SandboxError> for ApiError` is the one place that decides).

/// Why the sandbox could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox (its shell, terminal or a process) could not start.
    #[error("the sandbox could not start: {0}")]
    Start(String),
    /// The room's sandbox was destroyed (a cleanup) under the request.
    #[error("the sandbox is being destroyed")]
    Destroyed,
    /// The backend has no sandboxes here.
    #[error("sandboxes need Linux; this backend runs on another system")]
    Unsupported,
    /// A workspace path that is not acceptable (the `details.path`
    /// message).
    #[error("{0}")]
    BadPath(String),
    /// A member of a pushed archive that is refused: its name, then why
    /// (the `details.member` message).
    #[error("{0}")]
    Member(String),
    /// No such file or folder in the workspace.
    #[error("no such file")]
    NoFile,
    /// No such checkpoint on the room's disk.
    #[error("no such checkpoint")]
    NoCheckpoint,
    /// A write ran out of the room's disk.
    #[error("the room's disk is full")]
    DiskFull,
    /// A copy (a checkpoint, a fork) does not fit the room's disk: it
    /// needs `need` bytes, `free` are.
    #[error("it needs {need} bytes; {free} are free")]
    WontFit { need: u64, free: u64 },
    /// An upload's body was larger than a file may be.
    #[error("body too large")]
    TooLarge,
    /// Nothing listens on the port (or the sandbox does not run).
    #[error("nothing listens on port {0} in the sandbox")]
    NotListening(u16),
    /// The port could not be reached for another reason.
    #[error("the sandbox's port {port} could not be reached: {why}")]
    PortUnreachable { port: u16, why: String },
    /// Anything else the host failed at, saying what.
    #[error("{0}")]
    Failed(String),
}

impl SandboxError {
    /// This error as the failure of `what` ("the checkpoint", "the
    /// restore"): a host failure says which step failed first; the others
    /// say enough by themselves.
    pub fn failing(self, what: &str) -> Self {
        match self {
            SandboxError::Failed(why) => SandboxError::Failed(format!("{what} failed: {why}")),
            other => other,
        }
    }
}
