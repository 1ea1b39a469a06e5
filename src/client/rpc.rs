//! Room operations the terminal client sends as socket `rpc` frames, and
//! their answers. The socket orders an answer after the frames the
//! operation caused (docs/protocol.md), so the client never merges an
//! answer's body with the state it has: it only learns whether it worked.

use crate::client::access::{ApproveRequest, InviteRequest, PolicyRequest};
use crate::client::checkpoints::{CreateCheckpoint, Fork};
use crate::client::http::StatusError;
use crate::client::processes::StartProcess;
use crate::client::socket::SocketEvent;
use crate::protocol::ops::Method;
use crate::protocol::{
    Action, Addressee, ClientFrame, Details, ExecRequest, MessageRequest, Policy, RpcAnswer,
    TermSize,
};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// One room operation, as the rpc method and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomOp {
    /// `message [{text, to}]`: a message for the agent (it runs a turn)
    /// or for the people in the room (no turn).
    Message { text: String, to: Addressee },
    /// `exec [{cmd}]`: a command in the room's sandbox.
    Exec(String),
    /// `interrupt [{execId?}]`: the given command, else the running one.
    Interrupt(Option<String>),
    /// `cancel [{turnId?}]`: the given turn, else the current one.
    Cancel(Option<String>),
    /// `cleanup []`: history and sandbox, for everyone.
    Cleanup,
    /// `rename [{name}]`: this connection's name, without reconnecting.
    Rename(String),
    /// `term_open [{cols?, rows?}]`: attach this connection to the room's
    /// shared terminal (opening it), with its window's size; the socket
    /// attaches again after every reconnect until detached.
    TermOpen(Option<TermSize>),
    /// `term_detach [{termId?}]`: stop receiving the terminal; it runs on.
    TermDetach(Option<String>),
    /// `term_close [{termId?}]`: end the terminal for everyone.
    TermClose(Option<String>),
    /// `process_start [{cmd, name?}]`: a background process in the
    /// room's sandbox.
    ProcessStart { cmd: String, name: Option<String> },
    /// `process_kill [{processId}]`: stop one (TERM, then KILL).
    ProcessKill(String),
    /// `process_follow [{processId}]`: its log so far, then its output
    /// frames to this connection (until it ends or is unfollowed; a
    /// reconnect follows again).
    ProcessFollow(String),
    /// `process_unfollow [{processId}]`: no more of its output frames.
    ProcessUnfollow(String),
    /// `checkpoint_create [{name?}]`: a copy of /workspace now.
    CheckpointCreate(Option<String>),
    /// `checkpoint_restore [{checkpointId}]`: /workspace becomes that copy.
    CheckpointRestore(String),
    /// `checkpoint_delete [{checkpointId}]`.
    CheckpointDelete(String),
    /// `fork [{to, checkpointId?}]`: room `to` from this one's files.
    Fork {
        to: String,
        checkpoint_id: Option<String>,
    },
    /// `set_policy [{policy}]`: whether the agent's commands run, wait
    /// for a person, or do not run.
    SetPolicy(Policy),
    /// `approve [{approvalId, approved}]`: an answer to an agent's command
    /// waiting for a person.
    Approve { approval_id: String, approved: bool },
    /// `invite_create [{role, expiresIn?, name?}]`: a link for someone
    /// else, with a role.
    InviteCreate(InviteRequest),
    /// `set_model [{model}]`: the model of the room's agent.
    SetModel(String),
}

impl RoomOp {
    /// A question for the agent.
    pub fn to_agent(text: impl Into<String>) -> RoomOp {
        RoomOp::Message {
            text: text.into(),
            to: Addressee::Agent,
        }
    }

    /// A message for the people in the room.
    pub fn to_room(text: impl Into<String>) -> RoomOp {
        RoomOp::Message {
            text: text.into(),
            to: Addressee::Room,
        }
    }

    /// Its method in the protocol's table of operations.
    pub fn method(&self) -> Method {
        match self {
            RoomOp::Message { .. } => Method::Message,
            RoomOp::Exec(_) => Method::Exec,
            RoomOp::Interrupt(_) => Method::Interrupt,
            RoomOp::Cancel(_) => Method::Cancel,
            RoomOp::Cleanup => Method::Cleanup,
            RoomOp::Rename(_) => Method::Rename,
            RoomOp::TermOpen(_) => Method::TermOpen,
            RoomOp::TermDetach(_) => Method::TermDetach,
            RoomOp::TermClose(_) => Method::TermClose,
            RoomOp::ProcessStart { .. } => Method::ProcessStart,
            RoomOp::ProcessKill(_) => Method::ProcessKill,
            RoomOp::ProcessFollow(_) => Method::ProcessFollow,
            RoomOp::ProcessUnfollow(_) => Method::ProcessUnfollow,
            RoomOp::CheckpointCreate(_) => Method::CheckpointCreate,
            RoomOp::CheckpointRestore(_) => Method::CheckpointRestore,
            RoomOp::CheckpointDelete(_) => Method::CheckpointDelete,
            RoomOp::Fork { .. } => Method::Fork,
            RoomOp::SetPolicy(_) => Method::SetPolicy,
            RoomOp::Approve { .. } => Method::Approve,
            RoomOp::InviteCreate(_) => Method::InviteCreate,
            RoomOp::SetModel(_) => Method::SetModel,
        }
    }

    /// What it is, as the protocol's role table names it (a message: to
    /// the room or to the agent).
    pub fn action(&self) -> Action {
        match self {
            RoomOp::Message { to, .. } => to.action(),
            other => other.method().action(),
        }
    }

    /// The rpc arguments; `userId` is left to the connection's `user`.
    pub fn args(&self) -> Vec<Value> {
        self.args_as(None)
    }

    /// The rpc arguments, a message carrying `client_id` (which makes it
    /// safe to send again).
    fn args_as(&self, client_id: Option<&str>) -> Vec<Value> {
        match self {
            RoomOp::Message { text, to } => vec![to_arg(&MessageRequest {
                text: text.clone(),
                user_id: None,
                client_id: client_id.map(String::from),
                to: Some(*to),
            })],
            RoomOp::Exec(cmd) => vec![to_arg(&ExecRequest {
                cmd: cmd.clone(),
                ..ExecRequest::default()
            })],
            RoomOp::Interrupt(exec_id) => vec![optional("execId", exec_id)],
            RoomOp::Cancel(turn_id) => vec![optional("turnId", turn_id)],
            RoomOp::Cleanup => Vec::new(),
            RoomOp::Rename(name) => vec![serde_json::json!({ "name": name })],
            RoomOp::TermOpen(Some(size)) => vec![to_arg(size)],
            RoomOp::TermOpen(None) => vec![Value::Object(Default::default())],
            RoomOp::TermDetach(term_id) | RoomOp::TermClose(term_id) => {
                vec![optional("termId", term_id)]
            }
            RoomOp::ProcessStart { cmd, name } => vec![to_arg(&StartProcess {
                cmd: cmd.clone(),
                name: name.clone(),
                user_id: None,
            })],
            RoomOp::ProcessKill(id) | RoomOp::ProcessFollow(id) | RoomOp::ProcessUnfollow(id) => {
                vec![serde_json::json!({ "processId": id })]
            }
            RoomOp::CheckpointCreate(name) => vec![to_arg(&CreateCheckpoint {
                name: name.clone(),
                user_id: None,
            })],
            RoomOp::CheckpointRestore(id) | RoomOp::CheckpointDelete(id) => {
                vec![serde_json::json!({ "checkpointId": id })]
            }
            RoomOp::Fork { to, checkpoint_id } => vec![to_arg(&Fork {
                to: to.clone(),
                checkpoint_id: checkpoint_id.clone(),
                user_id: None,
            })],
            RoomOp::SetPolicy(policy) => vec![to_arg(&PolicyRequest {
                policy: *policy,
                allow: None,
            })],
            RoomOp::Approve {
                approval_id,
                approved,
            } => vec![to_arg(&ApproveRequest {
                approval_id: approval_id.clone(),
                approved: *approved,
            })],
            RoomOp::InviteCreate(request) => vec![to_arg(request)],
            RoomOp::SetModel(model) => vec![to_arg(&crate::protocol::ModelRequest {
                model: model.clone(),
                user_id: None,
            })],
        }
    }
}

/// A request body as an rpc argument (the same body HTTP sends).
fn to_arg(body: &impl serde::Serialize) -> Value {
    serde_json::to_value(body).unwrap_or_else(|_| Value::Object(Default::default()))
}

/// `{}` or `{key: value}`.
fn optional(key: &str, value: &Option<String>) -> Value {
    let mut obj = serde_json::Map::new();
    if let Some(value) = value {
        obj.insert(key.to_string(), Value::String(value.clone()));
    }
    Value::Object(obj)
}

/// Why an operation has no success answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcError {
    /// It never left: the socket was not connected (why).
    NotSent(String),
    /// It was sent, and the connection dropped before the answer (why):
    /// the backend may have done it.
    Lost(String),
    /// The backend refused or failed it, as HTTP would have.
    Failed(StatusError),
    /// The backend refused it without an HTTP status (an unknown method).
    Refused(String),
}

impl RpcError {
    /// Whether the backend surely did nothing (the person may send again).
    pub fn surely_not_done(&self) -> bool {
        !matches!(self, RpcError::Lost(_))
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::NotSent(why) => write!(f, "not connected to the backend ({why})"),
            RpcError::Lost(why) => write!(
                f,
                "the connection dropped before the backend answered ({why}); it may have been done"
            ),
            RpcError::Failed(status) => write!(f, "{status}"),
            RpcError::Refused(why) => write!(f, "{why}"),
        }
    }
}

/// The outcome of an rpc answer frame: the success body, or the failure
/// with the HTTP status and details it carries.
pub fn outcome(answer: RpcAnswer) -> Result<Value, RpcError> {
    if answer.success {
        return Ok(answer.result.unwrap_or(Value::Null));
    }
    let error = answer.error.unwrap_or_else(|| "failed".into());
    // An unknown method fails without a status.
    let Some(status) = answer.status else {
        return Err(RpcError::Refused(error));
    };
    let details: Option<Details> = answer.details.and_then(|d| serde_json::from_value(d).ok());
    Err(RpcError::Failed(StatusError {
        status,
        error,
        details,
    }))
}

/// An operation with its answer, as the socket reports it to the UI.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub op: RoomOp,
    pub result: Result<Value, RpcError>,
}

impl Answer {
    /// The success body read as `T`; a body that is not what
    /// docs/protocol.md says is an error to show.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        match &self.result {
            Ok(body) => serde_json::from_value(body.clone())
                .map_err(|err| format!("unexpected answer from the backend: {err}")),
            Err(err) => Err(err.to_string()),
        }
    }
}

/// How often a busy answer (503, 429) is tried again before it is shown,
/// as the HTTP client does (docs/protocol.md: clients retry them).
const MAX_RETRIES: u32 = 5;
/// The wait before trying a busy operation again (an rpc answer carries no
/// `Retry-After`).
const RETRY_WAIT: Duration = Duration::from_secs(1);
/// The longest wait a busy answer may ask for before it is tried again.
const MAX_RETRY_WAIT_MS: u64 = 60_000;

/// A fresh `clientId` for a message (docs/protocol.md: a repeat of it
/// stores nothing new and answers as the first did).
pub fn new_client_id() -> String {
    format!("m{:024x}", rand::random::<u128>() >> 32)
}

/// An operation sent, how many times it was tried before, and the
/// `clientId` a message carries across its tries and reconnects.
struct Pending {
    op: RoomOp,
    attempt: u32,
    client_id: Option<String>,
    /// Sent on a connection that dropped before its answer: the backend
    /// may have stored it.
    sent_before: bool,
}

impl Pending {
    fn new(op: RoomOp, client_id: Option<String>) -> Pending {
        Pending {
            op,
            attempt: 0,
            client_id,
            sent_before: false,
        }
    }
}

/// Room operations sent on the current connection, waiting for answers,
/// busy ones waiting to be sent again, and our messages waiting to go.
#[derive(Default)]
pub(crate) struct Calls {
    next: u64,
    waiting: HashMap<String, Pending>,
    /// When to send each busy operation again.
    retries: Vec<(Instant, Pending)>,
    /// Our messages not sent yet, oldest first: those a drop took the
    /// answer of (sent again with the same `clientId`: one the backend
    /// stored is then answered, not stored twice), those written while
    /// not connected, and those written while an earlier one was on its
    /// way. One goes at a time (`next_message`): the backend may take
    /// frames that come together in any order, and messages are stored in
    /// the order they were written.
    outbox: VecDeque<Pending>,
    /// The `clientId` of our message on its way: sent, and neither seen
    /// stored nor answered yet.
    on_its_way: Option<String>,
    /// The outbox as last reported (`outbox_changed`).
    reported: Vec<RoomOp>,
    /// The name a `rename` (or the room's `duet_you`) gave this
    /// connection: the next connection joins under it (the socket's
    /// `user`).
    renamed: Option<String>,
}

impl Calls {
    /// A fresh rpc id for `op`, remembered until its answer.
    pub(crate) fn start(&mut self, op: RoomOp) -> (String, ClientFrame) {
        let client_id = matches!(op, RoomOp::Message { .. }).then(new_client_id);
        self.send(Pending::new(op, client_id))
    }

    fn send(&mut self, pending: Pending) -> (String, ClientFrame) {
        self.next += 1;
        let id = format!("r{}", self.next);
        let frame = ClientFrame::Rpc {
            id: serde_json::Value::String(id.clone()),
            method: pending.op.method().name().to_string(),
            args: pending.op.args_as(pending.client_id.as_deref()),
        };
        self.waiting.insert(id.clone(), pending);
        (id, frame)
    }

    /// Puts a message in the outbox, with its own `clientId` (so that a
    /// repeat stores nothing new); `next_message` sends it in its turn.
    /// Only messages wait: any other operation is answered `Err` with it
    /// (while not connected, it is not run late, in a room that moved on).
    pub(crate) fn queue(&mut self, op: RoomOp) -> Result<(), RoomOp> {
        if !matches!(op, RoomOp::Message { .. }) {
            return Err(op);
        }
        self.outbox
            .push_back(Pending::new(op, Some(new_client_id())));
        Ok(())
    }

    /// The outbox's next message as a frame to send, when none is on its
    /// way.
    pub(crate) fn next_message(&mut self) -> Option<(String, ClientFrame)> {
        if self.on_its_way.is_some() {
            return None;
        }
        let pending = self.outbox.pop_front()?;
        self.on_its_way = pending.client_id.clone();
        Some(self.send(pending))
    }

    /// The `clientId` of the message on its way, if one is.
    pub(crate) fn on_its_way(&self) -> Option<&str> {
        self.on_its_way.as_deref()
    }

    /// The message on its way was seen stored: the next may go.
    pub(crate) fn stored(&mut self) {
        self.on_its_way = None;
    }

    /// A message whose frame could not be written goes back to the front
    /// of the outbox.
    pub(crate) fn unsend(&mut self, id: &str) {
        if let Some(pending) = self.waiting.remove(id) {
            self.on_its_way = None;
            self.outbox.push_front(pending);
        }
    }

    /// The outbox when it changed since the last call (to tell the UI).
    pub(crate) fn outbox_changed(&mut self) -> Option<Vec<RoomOp>> {
        let now: Vec<RoomOp> = self.outbox.iter().map(|p| p.op.clone()).collect();
        if now == self.reported {
            return None;
        }
        self.reported = now.clone();
        Some(now)
    }

    /// What an answer frame says, if it is for one of ours: the answer to
    /// report, or nothing yet when the backend was busy and it is tried
    /// again later.
    pub(crate) fn finish(&mut self, reply: RpcAnswer, now: Instant) -> Option<Answer> {
        let pending = self.waiting.remove(reply.id.as_str()?)?;
        let busy = !reply.success && matches!(reply.status, Some(503 | 429));
        if busy && pending.attempt < MAX_RETRIES {
            tracing::debug!(method = pending.op.method().name(), status = ?reply.status, "busy: trying again");
            // The backend says when (429 and 503 carry retryAfterMs).
            let wait = reply
                .retry_after_ms
                .map(|ms| Duration::from_millis(ms.min(MAX_RETRY_WAIT_MS)))
                .unwrap_or(RETRY_WAIT);
            self.retries.push((
                now + wait,
                Pending {
                    attempt: pending.attempt + 1,
                    ..pending
                },
            ));
            return None;
        }
        if pending.client_id.is_some() && pending.client_id == self.on_its_way {
            self.on_its_way = None;
        }
        let result = outcome(reply);
        if let (RoomOp::Rename(asked), Ok(body)) = (&pending.op, &result) {
            // The backend answers `{name}` as it stored it.
            let name = body.get("name").and_then(Value::as_str).unwrap_or(asked);
            self.renamed = Some(name.to_string());
        }
        Some(Answer {
            op: pending.op,
            result,
        })
    }

    /// The room named this connection (`duet_you`): the next connection
    /// joins under that name.
    pub(crate) fn named(&mut self, name: &str) {
        self.renamed = Some(name.to_string());
    }

    /// The name a `rename` answered (or `duet_you` said) since last
    /// asked, if any.
    pub(crate) fn take_renamed(&mut self) -> Option<String> {
        self.renamed.take()
    }

    /// When the next busy operation is due again.
    pub(crate) fn next_retry(&self) -> Option<Instant> {
        self.retries.iter().map(|(at, _)| *at).min()
    }

    /// The busy operations due at `now`, as frames to send (each waits
    /// for its answer again).
    pub(crate) fn due(&mut self, now: Instant) -> Vec<(String, ClientFrame)> {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retries)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.retries = later;
        due.into_iter()
            .map(|(_, pending)| self.send(pending))
            .collect()
    }

    /// Forgets a call whose frame could not be written.
    pub(crate) fn forget(&mut self, id: &str) -> Option<RoomOp> {
        self.waiting.remove(id).map(|p| p.op)
    }

    /// The connection ended: a message in flight goes back to the front
    /// of the outbox, to be sent again (its `clientId` makes that safe),
    /// and so does one the backend was too busy for; any other call in
    /// flight is lost, and said so; another busy one waiting to be sent
    /// again surely was not done.
    pub(crate) fn lose_all(&mut self, events: &mpsc::UnboundedSender<SocketEvent>, why: &str) {
        let mut lost: Vec<(String, Pending)> = self.waiting.drain().collect();
        lost.sort_by_key(|(id, _)| id[1..].parse::<u64>().unwrap_or(0));
        let mut again = Vec::new();
        for (_, pending) in lost {
            if pending.client_id.is_some() {
                again.push(Pending {
                    sent_before: true,
                    ..pending
                });
            } else {
                answer(events, pending.op, Err(RpcError::Lost(why.to_string())));
            }
        }
        for (_, pending) in std::mem::take(&mut self.retries) {
            if pending.client_id.is_some() {
                again.push(pending);
            } else {
                not_sent(events, pending.op, why);
            }
        }
        for pending in again.into_iter().rev() {
            self.outbox.push_front(pending);
        }
        self.on_its_way = None;
    }

    /// The backend refused the connection for good: messages of the
    /// outbox that went before are lost after all, and said so; those
    /// never sent were not.
    pub(crate) fn give_up_resends(
        &mut self,
        events: &mpsc::UnboundedSender<SocketEvent>,
        why: &str,
    ) {
        for pending in std::mem::take(&mut self.outbox) {
            if pending.sent_before {
                answer(events, pending.op, Err(RpcError::Lost(why.to_string())));
            } else {
                not_sent(events, pending.op, why);
            }
        }
    }
}

pub(crate) fn answer(
    events: &mpsc::UnboundedSender<SocketEvent>,
    op: RoomOp,
    result: Result<serde_json::Value, RpcError>,
) {
    let _ = events.send(SocketEvent::Answer(Box::new(Answer { op, result })));
}

/// An operation asked for while not connected: it is not sent.
pub(crate) fn not_sent(events: &mpsc::UnboundedSender<SocketEvent>, op: RoomOp, why: &str) {
    answer(events, op, Err(RpcError::NotSent(why.to_string())));
}

#[cfg(test)]
#[path = "rpc_tests.rs"]
mod tests;
