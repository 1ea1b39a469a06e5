//! The socket's side of background processes: `process_follow` and
//! `process_unfollow`, and which output frames this socket gets
//! (docs/protocol.md "Background processes and ports"). Starting and
//! killing are room operations (`process_start`, `process_kill`).

use super::rpc::{failure, rpc_args, success_text};
use super::{Answered, Answers, Connection};
use crate::protocol::ops::Method;
use crate::protocol::{FollowResponse, ServerFrame};
use crate::server::errors::ApiError;
use crate::server::room::{Outgoing, frame_text};
use serde_json::Value;
use std::collections::HashMap;

/// The processes this socket follows: from which output frame on; and
/// those it asked to follow and has no answer for yet, whose frames wait
/// (an output frame may reach the socket before the answer does).
#[derive(Default)]
pub(super) struct Follows {
    since: HashMap<String, u64>,
    pending: HashMap<String, Vec<Outgoing>>,
}

impl Follows {
    /// Whether output frame `seq` of process `id` is for this socket.
    pub(super) fn wants(&self, id: &str, seq: u64) -> bool {
        self.since.get(id).is_some_and(|since| seq > *since)
    }

    /// Keeps `frame` for later when it is the output or the exit of a
    /// process whose follow is not answered yet; `true`: it was kept.
    pub(super) fn hold(&mut self, frame: &Outgoing) -> bool {
        let process = frame
            .process_output
            .as_ref()
            .map(|(id, _)| id)
            .or(frame.process_exit.as_ref());
        match process.and_then(|id| self.pending.get_mut(id)) {
            Some(held) => {
                held.push(frame.clone());
                true
            }
            None => false,
        }
    }

    /// The follow of `id` was answered: from output frame `since` on
    /// (`None`: it failed). Answers the frames held meanwhile.
    pub(super) fn settle(&mut self, id: &str, since: Option<u64>) -> Vec<Outgoing> {
        if let Some(since) = since {
            self.since.insert(id.to_string(), since);
        }
        self.pending.remove(id).unwrap_or_default()
    }
}

/// `args[0].processId`, or the 400 naming it.
fn process_id(value: &Value) -> Result<String, ApiError> {
    let args = rpc_args(value).map_err(|_| ApiError::field("args", "args[0] must be an object"))?;
    match args.get("processId").and_then(Value::as_str).map(str::trim) {
        Some(id) if !id.is_empty() => Ok(id.to_string()),
        Some(_) => Err(ApiError::field("processId", "must not be empty")),
        None => Err(ApiError::field("processId", "is required")),
    }
}

impl Connection {
    /// `process_follow` (answered through `answers`, with the log so far)
    /// and `process_unfollow` (answered now).
    pub(super) fn follow_rpc(
        &mut self,
        method: Method,
        id: Value,
        value: &Value,
        answers: &Answers,
    ) -> Option<axum::extract::ws::Utf8Bytes> {
        let process = match process_id(value) {
            Ok(process) => process,
            Err(e) => return Some(frame_text(&ServerFrame::Rpc(failure(e).with_id(id)))),
        };
        if method == Method::ProcessUnfollow {
            self.follows.since.remove(&process);
            return Some(success_text(&id, r#"{"unfollowed":true}"#));
        }
        self.follows.pending.entry(process.clone()).or_default();
        let (room, answers) = (self.handle.clone(), answers.clone());
        tokio::spawn(async move {
            let answer = match room.follow_process(process.clone()).await {
                Ok(followed) => {
                    let body = FollowResponse {
                        process_id: process.clone(),
                        stdout: followed.logs.stdout,
                        stderr: followed.logs.stderr,
                    };
                    let body = serde_json::to_string(&body).unwrap_or_else(|_| "null".into());
                    Answered {
                        text: Some(success_text(&id, &body)),
                        followed: Some((process, Some(followed.seq))),
                        ..Answered::default()
                    }
                }
                Err(e) => Answered {
                    text: Some(frame_text(&ServerFrame::Rpc(failure(e).with_id(id)))),
                    followed: Some((process, None)),
                    ..Answered::default()
                },
            };
            let _ = answers.send(answer).await;
        });
        None
    }
}
