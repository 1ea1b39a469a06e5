//! Wire types and frames of docs/protocol.md: the one place where the
//! client and the backend agree on names and shapes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod access;
mod agent;
mod checkpoint;
mod frames;
pub mod link;
mod names;
pub mod ops;
mod process;
mod rooms;
mod screen;
mod terminal;
pub use access::*;
pub use agent::*;
pub use checkpoint::*;
pub use frames::*;
pub use names::*;
pub use process::*;
pub use rooms::*;
pub use screen::*;
pub use terminal::*;

/// Messages kept in a room's state.
pub const STATE_MESSAGES: usize = 100;
/// Commands kept in a room's state.
pub const STATE_EXECS: usize = 20;
/// Bytes kept per stream of a stored output (`Run`, `ExecRecord`).
pub const STORED_OUTPUT_CAP: usize = 16 * 1024;
/// Largest JSON body accepted.
pub const MAX_BODY: usize = 1024 * 1024;
/// Largest file upload accepted.
pub const MAX_FILE_BODY: usize = 64 * 1024 * 1024;
/// Longest chat message, in characters.
pub const MAX_TEXT_CHARS: usize = 8_000;
/// Default and largest page of `/messages`.
pub const PAGE_DEFAULT: usize = 50;
pub const PAGE_MAX: usize = 100;
/// The agent's name on the socket (`cf_agent_identity`).
pub const AGENT_NAME: &str = "duet-agent";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    User,
    Agent,
    System,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Agent => "agent",
            Role::System => "system",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "agent" => Some(Role::Agent),
            "system" => Some(Role::System),
            _ => None,
        }
    }
}

/// A chat message of a room.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DuetMessage {
    pub id: String,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub text: String,
    pub ts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<Run>>,
    /// The sender's own id for this message (`clientId`): a repeat of it
    /// stores nothing new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// User messages: whom they are for (absent: the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Addressee>,
    /// System records: what happened in the room, and who did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// Agent messages of a cancelled turn: who cancelled it (the text is
    /// what had streamed by then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<String>,
    /// Agent messages: what the turn cost (absent from older replies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Whom a person's message is for: the agent runs a turn for it, the
/// room only stores and broadcasts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addressee {
    #[default]
    Agent,
    Room,
}

/// What a system record (`role: "system"` with `event`) says happened.
/// `by` is the person who did it, or `"duet"` when the backend did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The room was cleaned up: the one message an emptied room holds.
    Cleanup { by: String },
    /// The agent's turn was cancelled.
    #[serde(rename_all = "camelCase")]
    Cancel { by: String, turn_id: String },
    /// A running command was interrupted.
    #[serde(rename_all = "camelCase")]
    Interrupt {
        by: String,
        exec_id: String,
        cmd: String,
    },
    /// A file was uploaded into `/workspace`.
    Upload { by: String, path: String, size: u64 },
    /// A connection changed its name from `from` to `to` (`by` is `from`).
    Rename {
        by: String,
        from: String,
        to: String,
    },
    /// The shell was replaced: `reason` is `exit` (it ended: the new shell
    /// starts afresh in `/workspace`, `reset: true`), `timeout` or
    /// `stopped` (working directory and exports kept, `reset: false`);
    /// `cwd` is where the next command runs.
    #[serde(rename_all = "camelCase")]
    Shell {
        by: String,
        reason: String,
        cwd: String,
        reset: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exec_id: Option<String>,
    },
    /// A file or folder of `/workspace` was deleted.
    Delete { by: String, path: String },
    /// A person took a checkpoint.
    #[serde(rename_all = "camelCase")]
    Checkpoint {
        by: String,
        checkpoint_id: String,
        name: String,
    },
    /// A checkpoint was restored.
    #[serde(rename_all = "camelCase")]
    Restore {
        by: String,
        checkpoint_id: String,
        name: String,
    },
    /// Room `from` was forked into room `to` (in both rooms).
    #[serde(rename_all = "camelCase")]
    Fork {
        by: String,
        from: String,
        to: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint_id: Option<String>,
    },
    /// The room's approval policy for the agent's commands was changed.
    Policy { by: String, policy: Policy },
    /// A person started a background process.
    #[serde(rename_all = "camelCase")]
    Process {
        by: String,
        process_id: String,
        name: String,
        cmd: String,
    },
    /// A folder was pushed into `/workspace` (`PUT /archive/{path}`):
    /// `path` is the folder (`""` for `/workspace`), `checkpoint_id` the
    /// `push-N` checkpoint taken after it (`None`: it did not fit).
    #[serde(rename_all = "camelCase")]
    Push {
        by: String,
        path: String,
        files: u64,
        bytes: u64,
        deleted: u64,
        checkpoint_id: Option<String>,
    },
    /// An owner chose the model of the room's agent.
    Model { by: String, model: String },
    /// The agent wrote or edited a workspace file in turn `turn_id`
    /// (`by` is "agent"): `added` and `removed` lines.
    #[serde(rename_all = "camelCase")]
    Edit {
        by: String,
        turn_id: String,
        path: String,
        added: u64,
        removed: u64,
    },
    /// A kind this client does not know: show the record's `text`.
    #[serde(other)]
    Other,
}

impl Event {
    /// Who did it, where the kind is known.
    pub fn by(&self) -> Option<&str> {
        match self {
            Event::Cleanup { by }
            | Event::Cancel { by, .. }
            | Event::Interrupt { by, .. }
            | Event::Upload { by, .. }
            | Event::Rename { by, .. }
            | Event::Shell { by, .. }
            | Event::Delete { by, .. }
            | Event::Checkpoint { by, .. }
            | Event::Restore { by, .. }
            | Event::Fork { by, .. }
            | Event::Policy { by, .. }
            | Event::Process { by, .. }
            | Event::Push { by, .. }
            | Event::Model { by, .. }
            | Event::Edit { by, .. } => Some(by),
            Event::Other => None,
        }
    }
}

/// One command an agent reply ran.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub cmd: String,
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Where the model asked for it: an offset in characters into the
    /// message's `text`, in its prose (docs/protocol.md "Output blocks"),
    /// so that clients show the block there (absent from older replies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

impl Run {
    /// A command that could not run: no output, no exit code, `error`.
    pub fn failed(cmd: String, error: impl Into<String>) -> Run {
        Run {
            cmd,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: None,
            error: Some(error.into()),
            ..Run::default()
        }
    }
}

/// The answer of `POST /sandbox/exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecResult {
    pub success: bool,
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub command: String,
    pub duration: u64,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
    /// Beyond docs/protocol.md: what went wrong around the command, e.g. its
    /// shell had to be restarted (working directory and exports reset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecSource {
    User,
    Agent,
}

impl ExecSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecSource::User => "user",
            ExecSource::Agent => "agent",
        }
    }
}

/// A command run in the room, as kept in its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRecord {
    pub exec_id: String,
    pub cmd: String,
    pub by: String,
    pub source: ExecSource,
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub duration: u64,
    pub ts: i64,
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Why it has no exit code when it could not end by itself (the
    /// server stopped while it ran, the sandbox failed), or, beside one,
    /// what happened to its shell: what its `duet_exec complete` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// It was stopped at its timeout, as its `duet_exec complete` said.
    #[serde(default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
    /// It was interrupted, or its turn cancelled, as its `duet_exec
    /// complete` said.
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
}

/// What a command still running when its server stopped (SIGTERM, a
/// crash, a restart) is stored with as its `error`.
pub const SERVER_STOPPED: &str = "the server stopped while it ran";

/// What a client receives on connect and after every change of messages.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoomState {
    pub messages: Vec<DuetMessage>,
    pub execs: Vec<ExecRecord>,
    /// The shell that runs people's and the agent's commands (absent from
    /// backends older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellState>,
    /// The room's shared terminal, while one runs.
    #[serde(default)]
    pub terminal: Option<TerminalState>,
    /// The room's background processes: those that run and the last ended.
    #[serde(default)]
    pub processes: Vec<Process>,
    /// The ports something listens on inside the sandbox.
    #[serde(default)]
    pub ports: Vec<PortState>,
    /// The room's checkpoints, oldest first.
    #[serde(default)]
    pub checkpoints: Vec<Checkpoint>,
    /// Whether the agent's commands run by themselves, ask, or do not run.
    #[serde(default)]
    pub policy: Policy,
    /// The agent's commands waiting for a person, oldest first.
    #[serde(default)]
    pub approvals: Vec<Approval>,
    /// The commands that never ask: the server's entries, then the room's.
    #[serde(default)]
    pub allow: Vec<String>,
    /// The room's agent: its model, the models it may use, its bounds
    /// (absent from backends older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentState>,
}

/// `shell` of the room state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShellState {
    /// Where the next command runs.
    pub cwd: String,
}

/// The working directory of a fresh shell.
pub const WORKSPACE: &str = "/workspace";

/// Per-field validation messages: the `details` of a 400.
pub type Details = BTreeMap<String, Vec<String>>;

/// The body of every error answer: `{"error", "details"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    /// Over a limit: when to try again.
    #[serde(
        default,
        rename = "retryAfterMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after_ms: Option<u64>,
}

/// Body of `POST /message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRequest {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Makes the request safe to repeat (docs/protocol.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Whom it is for (absent: the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Addressee>,
}

/// Answer of `POST /message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageResponse {
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub messages: Vec<DuetMessage>,
}

/// Body of `POST /sandbox/exec`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRequest {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Names the command for an `interrupt` until it ends (1 to 64
    /// printable characters, made up by the client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// Answer of `POST /sandbox/exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecResponse {
    pub result: ExecResult,
    pub sandbox_name: String,
}

/// Answer of `GET /messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesPage {
    pub messages: Vec<DuetMessage>,
    pub has_more: bool,
}

/// Answer of `GET /execs`: a page of the room's commands, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecsPage {
    pub execs: Vec<ExecRecord>,
    pub has_more: bool,
}

/// Answer of `PUT /files/{path}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileResponse {
    pub path: String,
    pub size: u64,
}

/// Answer of `PUT /archive/{path}` (a push).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushResponse {
    /// Regular files written, and their bytes.
    pub files: u64,
    pub bytes: u64,
    /// Paths deleted by `delete=1`.
    pub deleted: u64,
    /// The `push-N` checkpoint taken after it (`None`: it did not fit).
    pub checkpoint: Option<Checkpoint>,
}

/// Answer of `POST /sandbox/interrupt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptResponse {
    pub interrupted: bool,
    /// The command was still waiting behind another: it never runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
}

impl InterruptResponse {
    /// Whether one was interrupted (a running one, or none: `false`).
    pub fn stopped(interrupted: bool) -> InterruptResponse {
        InterruptResponse {
            interrupted,
            withdrawn: false,
        }
    }
}

/// Answer of `POST /cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelResponse {
    pub cancelled: bool,
}

/// Answer of `POST /cleanup` (200, or 207 with `errors`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CleanupResponse {
    pub cleaned: bool,
    pub room_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// ISO 8601 (UTC, milliseconds) for a `ts`.
pub fn iso_timestamp(ts_ms: i64) -> String {
    let nanos = i128::from(ts_ms) * 1_000_000;
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// Cut `text` to at most `cap` bytes on a character boundary; says whether
/// anything was cut.
pub fn cap_text(text: &str, cap: usize) -> (String, bool) {
    if text.len() <= cap {
        return (text.to_string(), false);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests;
