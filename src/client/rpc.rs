//! Room operations the terminal client sends as socket `rpc` frames, and
//! their answers. The socket orders an answer after the frames the
//! operation caused (docs/protocol.md), so the client never merges an
//! answer's body with the state it has: it only learns whether it worked.

use crate::client::http::StatusError;
use crate::client::socket::SocketEvent;
use crate::protocol::{ClientFrame, Details, RpcAnswer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use tokio::sync::mpsc;

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
        match self {
            RoomOp::Message(text) => vec![json!({ "text": text })],
            RoomOp::Exec(cmd) => vec![json!({ "cmd": cmd })],
            RoomOp::Interrupt(exec_id) => vec![optional("execId", exec_id)],
            RoomOp::Cancel(turn_id) => vec![optional("turnId", turn_id)],
            RoomOp::Cleanup => Vec::new(),
        }
    }
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

/// Room operations sent on the current connection, waiting for answers.
#[derive(Default)]
pub(crate) struct Calls {
    next: u64,
    pub(crate) waiting: HashMap<String, RoomOp>,
}

impl Calls {
    /// A fresh rpc id for `op`, remembered until its answer.
    pub(crate) fn start(&mut self, op: RoomOp) -> (String, ClientFrame) {
        self.next += 1;
        let id = format!("r{}", self.next);
        let frame = ClientFrame::Rpc {
            id: serde_json::Value::String(id.clone()),
            method: op.method().to_string(),
            args: op.args(),
        };
        self.waiting.insert(id.clone(), op);
        (id, frame)
    }

    /// The operation an answer frame is for, if it is one of ours.
    pub(crate) fn finish(&mut self, id: &serde_json::Value) -> Option<RoomOp> {
        self.waiting.remove(id.as_str()?)
    }

    /// The connection ended: every call in flight is lost, and said so.
    pub(crate) fn lose_all(&mut self, events: &mpsc::UnboundedSender<SocketEvent>, why: &str) {
        let mut lost: Vec<(String, RoomOp)> = self.waiting.drain().collect();
        lost.sort_by_key(|(id, _)| id[1..].parse::<u64>().unwrap_or(0));
        for (_, op) in lost {
            answer(events, op, Err(RpcError::Lost(why.to_string())));
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
