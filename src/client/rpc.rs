//! Room operations the terminal client sends as socket `rpc` frames, and
//! their answers. The socket orders an answer after the frames the
//! operation caused (docs/protocol.md), so the client never merges an
//! answer's body with the state it has: it only learns whether it worked.

use crate::client::http::StatusError;
use crate::client::socket::SocketEvent;
use crate::protocol::{ClientFrame, Details, ExecRequest, MessageRequest, RpcAnswer};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// One room operation, as the rpc method and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomOp {
    /// `message [{text}]`: a message to the agent (and the room).
    Message(String),
    /// `exec [{cmd}]`: a command in the room's sandbox.
    Exec(String),
    /// `interrupt [{execId?}]`: the given command, else the running one.
    Interrupt(Option<String>),
    /// `cancel [{turnId?}]`: the given turn, else the current one.
    Cancel(Option<String>),
    /// `cleanup []`: history and sandbox, for everyone.
    Cleanup,
}

impl RoomOp {
    /// The rpc method name.
    pub fn method(&self) -> &'static str {
        match self {
            RoomOp::Message(_) => "message",
            RoomOp::Exec(_) => "exec",
            RoomOp::Interrupt(_) => "interrupt",
            RoomOp::Cancel(_) => "cancel",
            RoomOp::Cleanup => "cleanup",
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
            RoomOp::Message(text) => vec![to_arg(&MessageRequest {
                text: text.clone(),
                user_id: None,
                client_id: client_id.map(String::from),
                to: None,
            })],
            RoomOp::Exec(cmd) => vec![to_arg(&ExecRequest {
                cmd: cmd.clone(),
                ..ExecRequest::default()
            })],
            RoomOp::Interrupt(exec_id) => vec![optional("execId", exec_id)],
            RoomOp::Cancel(turn_id) => vec![optional("turnId", turn_id)],
            RoomOp::Cleanup => Vec::new(),
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
}

/// Room operations sent on the current connection, waiting for answers,
/// and busy ones waiting to be sent again.
#[derive(Default)]
pub(crate) struct Calls {
    next: u64,
    waiting: HashMap<String, Pending>,
    /// When to send each busy operation again.
    retries: Vec<(Instant, Pending)>,
    /// Messages in flight when the connection dropped: sent again, with
    /// the same `clientId`, once connected (a message the backend stored
    /// is then answered, not stored twice).
    resend: Vec<Pending>,
    /// Messages written while not connected: sent, after `resend`, once
    /// connected; never sent yet, so surely not done.
    outbox: Vec<Pending>,
}

impl Calls {
    /// A fresh rpc id for `op`, remembered until its answer.
    pub(crate) fn start(&mut self, op: RoomOp) -> (String, ClientFrame) {
        let client_id = matches!(op, RoomOp::Message(_)).then(new_client_id);
        self.send(Pending {
            op,
            attempt: 0,
            client_id,
        })
    }

    fn send(&mut self, pending: Pending) -> (String, ClientFrame) {
        self.next += 1;
        let id = format!("r{}", self.next);
        let frame = ClientFrame::Rpc {
            id: serde_json::Value::String(id.clone()),
            method: pending.op.method().to_string(),
            args: pending.op.args_as(pending.client_id.as_deref()),
        };
        self.waiting.insert(id.clone(), pending);
        (id, frame)
    }

    /// The messages to send on a new connection, oldest first: those a
    /// drop took the answer of, then those written while offline.
    pub(crate) fn resends(&mut self) -> Vec<(String, ClientFrame)> {
        let waiting: Vec<Pending> = std::mem::take(&mut self.resend)
            .into_iter()
            .chain(std::mem::take(&mut self.outbox))
            .collect();
        waiting
            .into_iter()
            .map(|pending| self.send(pending))
            .collect()
    }

    /// Keeps a message written while not connected, to send once connected
    /// (with its own `clientId`, so that a repeat stores nothing new).
    /// Answers whether it was kept: only messages wait; other operations
    /// are not run late, in a room that moved on.
    pub(crate) fn queue(&mut self, op: RoomOp) -> Result<(), RoomOp> {
        if !matches!(op, RoomOp::Message(_)) {
            return Err(op);
        }
        self.outbox.push(Pending {
            op,
            attempt: 0,
            client_id: Some(new_client_id()),
        });
        Ok(())
    }

    /// The messages waiting for a connection, oldest first.
    pub(crate) fn unsent(&self) -> Vec<RoomOp> {
        self.resend
            .iter()
            .chain(&self.outbox)
            .map(|pending| pending.op.clone())
            .collect()
    }

    /// What an answer frame says, if it is for one of ours: the answer to
    /// report, or nothing yet when the backend was busy and it is tried
    /// again later.
    pub(crate) fn finish(&mut self, reply: RpcAnswer, now: Instant) -> Option<Answer> {
        let pending = self.waiting.remove(reply.id.as_str()?)?;
        let busy = !reply.success && matches!(reply.status, Some(503 | 429));
        if busy && pending.attempt < MAX_RETRIES {
            tracing::debug!(method = pending.op.method(), status = ?reply.status, "busy: trying again");
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
        Some(Answer {
            op: pending.op,
            result: outcome(reply),
        })
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

    /// The connection ended: a message in flight is kept to send again
    /// (its `clientId` makes that safe); any other call in flight is lost,
    /// and said so; a busy one waiting to be sent again surely was not done.
    pub(crate) fn lose_all(&mut self, events: &mpsc::UnboundedSender<SocketEvent>, why: &str) {
        let mut lost: Vec<(String, Pending)> = self.waiting.drain().collect();
        lost.sort_by_key(|(id, _)| id[1..].parse::<u64>().unwrap_or(0));
        for (_, pending) in lost {
            if pending.client_id.is_some() {
                self.resend.push(pending);
            } else {
                answer(events, pending.op, Err(RpcError::Lost(why.to_string())));
            }
        }
        for (_, pending) in std::mem::take(&mut self.retries) {
            not_sent(events, pending.op, why);
        }
    }

    /// The backend refused the connection for good: messages kept to send
    /// again are lost after all, and said so; those never sent were not.
    pub(crate) fn give_up_resends(
        &mut self,
        events: &mpsc::UnboundedSender<SocketEvent>,
        why: &str,
    ) {
        for pending in std::mem::take(&mut self.resend) {
            answer(events, pending.op, Err(RpcError::Lost(why.to_string())));
        }
        for pending in std::mem::take(&mut self.outbox) {
            not_sent(events, pending.op, why);
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_have_the_wire_shape() {
        assert_eq!(
            RoomOp::Message("hi".into()).args(),
            vec![json!({"text":"hi"})]
        );
        assert_eq!(RoomOp::Interrupt(None).args(), vec![json!({})]);
        assert_eq!(
            RoomOp::Cancel(Some("t1".into())).args(),
            vec![json!({"turnId":"t1"})]
        );
        assert!(RoomOp::Cleanup.args().is_empty());
        assert_eq!(RoomOp::Exec("ls".into()).method(), "exec");
    }

    fn reply(id: &str, status: Option<u16>) -> RpcAnswer {
        RpcAnswer {
            id: Value::String(id.into()),
            success: status.is_none(),
            result: status.is_none().then(|| json!({"ok": true})),
            error: status.map(|_| "busy".to_string()),
            status,
            details: None,
            retry_after_ms: None,
            done: true,
        }
    }

    #[test]
    fn busy_answers_are_tried_again_then_shown() {
        let mut calls = Calls::default();
        let now = Instant::now();
        let (id, _) = calls.start(RoomOp::Exec("ls".into()));
        assert!(calls.finish(reply(&id, Some(503)), now).is_none());
        assert!(calls.due(now).is_empty(), "not yet");
        let later = calls.next_retry().unwrap();
        let mut again = calls.due(later);
        assert_eq!(again.len(), 1);
        for _ in 1..MAX_RETRIES {
            let (id, _) = again.remove(0);
            assert!(calls.finish(reply(&id, Some(429)), later).is_none());
            again = calls.due(calls.next_retry().unwrap());
        }
        let (id, _) = again.remove(0);
        let shown = calls.finish(reply(&id, Some(429)), later).unwrap();
        assert_eq!(shown.op, RoomOp::Exec("ls".into()));
        assert!(matches!(shown.result, Err(RpcError::Failed(ref s)) if s.status == 429));
        // Another answer is reported at once.
        let (id, _) = calls.start(RoomOp::Cleanup);
        assert!(
            calls
                .finish(reply(&id, None), later)
                .unwrap()
                .result
                .is_ok()
        );
        assert!(
            calls.finish(reply("r999", None), later).is_none(),
            "not ours"
        );
    }

    #[test]
    fn failures_read_as_http_errors() {
        let answer: RpcAnswer = serde_json::from_value(json!({
            "id": "1", "success": false, "error": "invalid request", "status": 400,
            "details": {"text": ["must not be empty"]}, "done": true
        }))
        .unwrap();
        let err = outcome(answer).unwrap_err();
        assert_eq!(
            err.to_string(),
            "400 Bad Request: invalid request; text: must not be empty"
        );
        let unknown: RpcAnswer = serde_json::from_value(json!({
            "id": "2", "success": false, "error": "unknown method \"x\"", "done": true
        }))
        .unwrap();
        assert_eq!(
            outcome(unknown).unwrap_err().to_string(),
            "unknown method \"x\""
        );
    }
}
