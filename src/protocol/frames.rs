//! The socket's frames (docs/protocol.md "The socket"): what the server
//! sends, what a client sends, and an rpc's answer.

use super::{ApprovalFrame, ExecSource, ProcessFrame, RoomRole, RoomState, TermFrame, is_false};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One connection in the presence list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PresenceUser {
    pub id: String,
    pub name: String,
    pub since: i64,
    /// What this connection may do (backends older than roles: owner).
    #[serde(default = "owner")]
    pub role: RoomRole,
}

fn owner() -> RoomRole {
    RoomRole::Owner
}

/// `duet_presence_delta` (docs/protocol.md "State deltas"): what changed in
/// the presence list since the last full `duet_presence` or delta, for
/// sockets opened with `deltas=1`. Applied in order: `left`, `joined`,
/// `changed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PresenceDelta {
    /// New entries, appended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joined: Vec<PresenceUser>,
    /// Ids whose entries are removed (all of them: an id still on another
    /// connection comes back in `joined`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<String>,
    /// Entries renamed or with a new role, replacing the entry of that id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<PresenceUser>,
}

impl PresenceDelta {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.joined.is_empty() && self.left.is_empty() && self.changed.is_empty()
    }

    /// Applies it to a presence list.
    pub fn apply(&self, users: &mut Vec<PresenceUser>) {
        users.retain(|u| !self.left.contains(&u.id));
        users.extend(self.joined.iter().cloned());
        for user in &self.changed {
            match users.iter_mut().find(|u| u.id == user.id) {
                Some(entry) => *entry = user.clone(),
                None => users.push(user.clone()),
            }
        }
    }
}

/// Phases of `duet_ai`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AiPhase {
    Start,
    Delta,
    End,
    Error,
}

/// Frames the server sends on the socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ServerFrame {
    #[serde(rename = "cf_agent_identity")]
    Identity { name: String, agent: String },
    #[serde(rename = "cf_agent_state")]
    State { state: RoomState },
    #[serde(rename = "cf_agent_state_error")]
    StateError { error: String },
    #[serde(rename = "duet_presence")]
    Presence { users: Vec<PresenceUser> },
    /// Deltas sockets, after the first `duet_presence`.
    #[serde(rename = "duet_presence_delta")]
    PresenceDelta(PresenceDelta),
    #[serde(rename = "duet_typing")]
    Typing {
        id: String,
        name: String,
        /// Set when the typing is into the shared terminal.
        #[serde(default, rename = "termId", skip_serializing_if = "Option::is_none")]
        term_id: Option<String>,
    },
    #[serde(rename = "duet_term")]
    Term(TermFrame),
    #[serde(rename = "duet_process")]
    Process(ProcessFrame),
    #[serde(rename = "duet_approval")]
    Approval(ApprovalFrame),
    /// This socket's own connection: on connect, and when its name or
    /// role changes.
    #[serde(rename = "duet_you")]
    You {
        id: String,
        name: String,
        role: RoomRole,
        /// The invite this socket joined with (none: the server's token).
        #[serde(default, rename = "inviteId", skip_serializing_if = "Option::is_none")]
        invite_id: Option<String>,
    },
    #[serde(rename = "duet_ai")]
    Ai {
        phase: AiPhase,
        #[serde(rename = "turnId")]
        turn_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// `start` only: the `_pk` of the socket whose message began the
        /// turn, when a socket did.
        #[serde(
            default,
            rename = "byConnection",
            skip_serializing_if = "Option::is_none"
        )]
        by_connection: Option<String>,
    },
    #[serde(rename = "duet_exec")]
    Exec(ExecFrame),
    #[serde(rename = "duet_cleanup")]
    Cleanup { by: String },
    #[serde(rename = "rpc")]
    Rpc(RpcAnswer),
    #[serde(rename = "duet_error")]
    Error {
        error: String,
        /// Over a limit: when to try again.
        #[serde(
            default,
            rename = "retryAfterMs",
            skip_serializing_if = "Option::is_none"
        )]
        retry_after_ms: Option<u64>,
    },
}

/// `duet_exec`, by phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum ExecFrame {
    #[serde(rename_all = "camelCase")]
    Start {
        exec_id: String,
        cmd: String,
        by: String,
        source: ExecSource,
        /// The `_pk` of the socket that caused it (its rpc, or the message
        /// that began the agent's turn), when a socket did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by_connection: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Stdout { exec_id: String, data: String },
    #[serde(rename_all = "camelCase")]
    Stderr { exec_id: String, data: String },
    #[serde(rename_all = "camelCase")]
    Complete {
        exec_id: String,
        exit_code: Option<i32>,
        duration: u64,
        #[serde(default, skip_serializing_if = "is_false")]
        timed_out: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        truncated: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        interrupted: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The shell's working directory after the command.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
}

/// The answer to a client's `rpc` frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcAnswer {
    pub id: Value,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(
        default,
        rename = "retryAfterMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after_ms: Option<u64>,
    pub done: bool,
}

/// Frames a client sends on the socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ClientFrame {
    #[serde(rename = "duet_typing")]
    Typing {},
    /// Bytes for the shared terminal, base64.
    #[serde(rename = "duet_term_input")]
    TermInput {
        #[serde(rename = "termId")]
        term_id: String,
        data: String,
    },
    /// This socket's window changed size.
    #[serde(rename = "duet_term_resize")]
    TermResize {
        #[serde(rename = "termId")]
        term_id: String,
        cols: u16,
        rows: u16,
    },
    #[serde(rename = "rpc")]
    Rpc {
        id: Value,
        method: String,
        #[serde(default)]
        args: Vec<Value>,
    },
}
