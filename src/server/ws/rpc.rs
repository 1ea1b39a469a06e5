//! The socket's `rpc` frames: each names an operation of the protocol's
//! table (`protocol::ops::Method`). The terminal's and the followed
//! processes' methods this socket answers itself (term.rs, process.rs);
//! the others are the room's operations, parsed and checked as over HTTP.

use super::{Answered, Answers, Connection, error_frame};
use crate::protocol::RpcAnswer;
use crate::protocol::ServerFrame;
use crate::protocol::ops::Method;
use crate::server::auth::Caller;
use crate::server::errors::ApiError;
use crate::server::ops;
use crate::server::room::frame_text;
use axum::extract::ws::Utf8Bytes;
use serde_json::{Map, Value};

impl Connection {
    /// Starts an rpc; its answer comes through `answers`.
    pub(super) fn rpc(&mut self, value: Value, answers: &Answers) -> Option<Utf8Bytes> {
        let Some(id) = value.get("id").cloned() else {
            return Some(error_frame("an rpc frame needs an \"id\""));
        };
        // The terminal's and the followed processes' methods are this
        // socket's to answer, not the room's.
        match value.get("method").and_then(Value::as_str).map(str::parse) {
            Some(Ok(method @ (Method::TermOpen | Method::TermDetach | Method::TermClose))) => {
                return self.term_rpc(method, id, &value, answers);
            }
            Some(Ok(method @ (Method::ProcessFollow | Method::ProcessUnfollow))) => {
                return self.follow_rpc(method, id, &value, answers);
            }
            _ => {}
        }
        let parsed = rpc_request(&value, self.caller.clone()).and_then(|request| {
            self.op_rates
                .admit(request.op.method())
                .map_err(failure)
                .map(|()| request)
        });
        let request = match parsed {
            Ok(request) => request,
            Err(answer) => return Some(frame_text(&ServerFrame::Rpc(answer.with_id(id)))),
        };
        let handle = self.handle.clone();
        let answers = answers.clone();
        let new_name = match &request.op {
            ops::Op::Rename(rename) => Some(rename.name.clone()),
            _ => None,
        };
        tokio::spawn(async move {
            let answer = match handle.perform(request).await {
                // The body keeps its field order: spliced in, not re-parsed.
                Ok(reply) => Answered {
                    text: Some(success_text(&id, &reply.body)),
                    renamed: new_name,
                    ..Answered::default()
                },
                Err(e) => Answered {
                    text: Some(frame_text(&ServerFrame::Rpc(failure(e).with_id(id)))),
                    ..Answered::default()
                },
            };
            let _ = answers.send(answer).await;
        });
        None
    }
}

/// A successful rpc answer around `body` (JSON text).
pub(super) fn success_text(id: &Value, body: &str) -> Utf8Bytes {
    Utf8Bytes::from(format!(
        r#"{{"type":"rpc","id":{},"success":true,"result":{},"done":true}}"#,
        serde_json::to_string(id).unwrap_or_else(|_| "null".into()),
        body
    ))
}

/// An rpc failure waiting for its id.
pub(super) struct Failure(Box<RpcAnswer>);

impl Failure {
    /// The answer, with the rpc's id.
    pub(super) fn with_id(mut self, id: Value) -> RpcAnswer {
        self.0.id = id;
        *self.0
    }
}

/// An error answer as a failed rpc.
pub(super) fn failure(e: ApiError) -> Failure {
    Failure(Box::new(RpcAnswer {
        id: Value::Null,
        success: false,
        result: None,
        error: Some(e.body.error),
        status: Some(e.status.as_u16()),
        details: e.body.details.and_then(|d| serde_json::to_value(d).ok()),
        retry_after_ms: e.body.retry_after_ms,
        done: true,
    }))
}

/// The operation an rpc frame asks for, for `caller`.
fn rpc_request(value: &Value, caller: Caller) -> Result<ops::Request, Failure> {
    let Some(name) = value.get("method").and_then(Value::as_str) else {
        return Err(failure(ApiError::field("method", "must be a string")));
    };
    let obj = &rpc_args(value)?;
    let Ok(method) = name.parse::<Method>() else {
        // Just the error: no status, no details.
        return Err(Failure(Box::new(RpcAnswer {
            id: Value::Null,
            success: false,
            result: None,
            error: Some(format!("unknown method {name:?}")),
            status: None,
            details: None,
            retry_after_ms: None,
            done: true,
        })));
    };
    ops::parse(method, obj, Default::default(), caller).map_err(failure)
}

/// An rpc's `args[0]`: an object, or nothing (`{}`).
pub(super) fn rpc_args(value: &Value) -> Result<Map<String, Value>, Failure> {
    match value.get("args") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Array(args)) => match args.first() {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(obj)) => Ok(obj.clone()),
            Some(_) => Err(failure(ApiError::field(
                "args",
                "args[0] must be an object",
            ))),
        },
        Some(_) => Err(failure(ApiError::field("args", "must be an array"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth::Access;
    use serde_json::json;

    fn caller(name: Option<&str>) -> Caller {
        Caller::new(name.map(str::to_string), Access::Server, None)
    }

    #[test]
    fn rpc_frames_name_their_problems() {
        let ok = rpc_request(
            &json!({"method":"exec","args":[{"cmd":"ls"}]}),
            caller(Some("ada")),
        )
        .ok()
        .unwrap();
        assert!(matches!(ok.op, ops::Op::Exec(_)));
        assert_eq!(ok.caller.name.as_deref(), Some("ada"));
        assert!(matches!(
            rpc_request(&json!({"method":"cleanup"}), caller(None)),
            Ok(ops::Request {
                op: ops::Op::Cleanup(_),
                ..
            })
        ));
        let bad = rpc_request(&json!({"method":"exec","args":[{}]}), caller(None))
            .err()
            .unwrap()
            .0;
        assert_eq!(bad.status, Some(400));
        assert!(bad.details.unwrap().get("cmd").is_some());
        let unknown = rpc_request(&json!({"method":"dance"}), caller(None))
            .err()
            .unwrap()
            .0;
        assert_eq!(unknown.error.as_deref(), Some("unknown method \"dance\""));
        assert_eq!((unknown.status, unknown.details), (None, None));
    }
}
