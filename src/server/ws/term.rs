//! The socket's shared-terminal requests: the `term_*` rpcs and the
//! `duet_term_input` / `duet_term_resize` frames (docs/protocol.md "The
//! shared terminal").

use super::rpc::{failure, rpc_args, success_text};
use super::{Answered, Answers, Connection, error_frame};
use crate::protocol::ops::Method;
use crate::protocol::{RoomRole, ServerFrame, TermSize};
use crate::server::access::{self, Action};
use crate::server::errors::ApiError;
use crate::server::room::RoomHandle;
use crate::server::room::{frame_text, send_frame};
use crate::server::terminal::socket::{input_bytes, open_args, term_id};
use crate::server::terminal::{Attached, TermHandle, ended_meanwhile};
use axum::extract::ws::Utf8Bytes;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How many times `term_open` tries again when the terminal ended as it
/// attached (the room opens a new one once it heard), and how long apart.
const ENDED_RETRIES: u32 = 50;
const ENDED_RETRY_EVERY: Duration = Duration::from_millis(100);

/// The room's terminal (opened by `by` if none runs), with `conn` attached.
async fn attach_to_terminal(
    room: &RoomHandle,
    by: Option<String>,
    size: Option<TermSize>,
    screen: bool,
    conn: u64,
    role: RoomRole,
) -> Result<(TermHandle, Attached), ApiError> {
    let mut tries = 0;
    loop {
        let handle = match room.terminal(by.clone(), size).await? {
            Some(handle) => handle,
            None => {
                // Only a role that may not open one gets none.
                access::check(role, Action::OpenTerminal)?;
                return Err(ApiError::internal("the terminal did not open"));
            }
        };
        match handle.attach(conn, size, screen).await {
            Ok(attached) => return Ok((handle, attached)),
            Err(e) if ended_meanwhile(&e) && tries < ENDED_RETRIES => {
                tries += 1;
                tokio::time::sleep(ENDED_RETRY_EVERY).await;
            }
            Err(e) => return Err(e),
        }
    }
}

impl Connection {
    /// `term_open`, `term_detach`, `term_close`: the answer now, or later
    /// through `answers`.
    pub(super) fn term_rpc(
        &mut self,
        method: Method,
        id: Value,
        value: &Value,
        answers: &Answers,
    ) -> Option<Utf8Bytes> {
        let failed =
            |e: ApiError, id: Value| Some(frame_text(&ServerFrame::Rpc(failure(e).with_id(id))));
        let args = match rpc_args(value) {
            Ok(args) => args,
            Err(e) => return Some(frame_text(&ServerFrame::Rpc(e.with_id(id)))),
        };
        match method {
            Method::TermOpen => {
                let (size, screen) = match open_args(&args) {
                    Ok(open) => open,
                    Err(e) => return failed(e, id),
                };
                // A viewer watches a running terminal; its size never counts.
                let role = self.caller.role();
                let opens = access::may(role, Action::OpenTerminal);
                let size = size.filter(|_| opens);
                let by = opens.then(|| self.name.clone());
                let (room, conn) = (self.handle.clone(), self.number);
                let answers = answers.clone();
                tokio::spawn(async move {
                    let attached = attach_to_terminal(&room, by, size, screen, conn, role);
                    let answer = match attached.await {
                        Ok((handle, attached)) => {
                            let body = json!({
                                "termId": attached.term_id,
                                "cols": attached.size.cols,
                                "rows": attached.size.rows,
                            });
                            Answered {
                                text: Some(success_text(&id, &body.to_string())),
                                attached: Some((handle, attached)),
                                ..Answered::default()
                            }
                        }
                        Err(e) => Answered {
                            text: Some(frame_text(&ServerFrame::Rpc(failure(e).with_id(id)))),
                            ..Answered::default()
                        },
                    };
                    let _ = answers.send(answer).await;
                });
                None
            }
            Method::TermDetach => {
                let term_id = match term_id(&args) {
                    Ok(term_id) => term_id,
                    Err(e) => return failed(e, id),
                };
                if self.term.detach(self.number, Some(&term_id)) {
                    Some(success_text(&id, r#"{"detached":true}"#))
                } else {
                    let e = ApiError::not_found(
                        "not attached to that terminal",
                        "termId",
                        "this socket is not attached to a terminal with this id",
                    );
                    failed(e, id)
                }
            }
            Method::TermClose => {
                let term_id = match term_id(&args) {
                    Ok(term_id) => term_id,
                    Err(e) => return failed(e, id),
                };
                if let Err(e) = self.caller.may(Method::TermClose.action()) {
                    return failed(e, id);
                }
                let room = self.handle.clone();
                let answers = answers.clone();
                tokio::spawn(async move {
                    let text = match room.close_terminal(term_id).await {
                        Ok(()) => success_text(&id, r#"{"closed":true}"#),
                        Err(e) => frame_text(&ServerFrame::Rpc(failure(e).with_id(id))),
                    };
                    let answer = Answered {
                        text: Some(text),
                        ..Answered::default()
                    };
                    let _ = answers.send(answer).await;
                });
                None
            }
            // Only the three above come here.
            _ => None,
        }
    }

    /// `duet_term_input` and `duet_term_resize`: refused unless this
    /// socket is attached to the terminal they name.
    pub(super) fn term_frame(&mut self, value: Value) -> Option<Utf8Bytes> {
        let kind = value["type"].as_str().unwrap_or_default();
        let action = if kind == "duet_term_resize" {
            Action::ResizeTerminal
        } else {
            Action::TypeIntoTerminal
        };
        if !access::may(self.caller.role(), action) {
            return Some(error_frame("forbidden"));
        }
        let Some(term_id) = value.get("termId").and_then(Value::as_str) else {
            return Some(error_frame(format!("{kind}: needs a \"termId\"")));
        };
        let Some(handle) = self.term.handle(term_id).cloned() else {
            return Some(error_frame(format!(
                "{kind}: this socket is not attached to terminal {term_id:?} (term_open first)"
            )));
        };
        if kind == "duet_term_resize" {
            let number = |field: &str| value.get(field).and_then(Value::as_i64);
            let (cols, rows) = (number("cols"), number("rows"));
            let problems = TermSize::problems(cols, rows);
            if let Some((field, problem)) = problems.first() {
                return Some(error_frame(format!("{kind}: {field} {problem}")));
            }
            let size = TermSize::clamped(cols.unwrap_or(0), rows.unwrap_or(0));
            handle.resize(self.number, size);
            return None;
        }
        let Some(data) = value.get("data").and_then(Value::as_str) else {
            return Some(error_frame(format!("{kind}: needs \"data\" (base64)")));
        };
        let bytes = match input_bytes(data) {
            Ok(bytes) => bytes,
            Err(e) => return Some(error_frame(e)),
        };
        handle.input(bytes);
        self.typed_into(term_id);
        None
    }

    /// Tells the others who types into the terminal, at most every 2 s.
    fn typed_into(&mut self, term_id: &str) {
        if self
            .last_term_typing
            .is_some_and(|t| t.elapsed() < super::TYPING_EVERY)
        {
            return;
        }
        self.last_term_typing = Some(Instant::now());
        let frame = ServerFrame::Typing {
            id: self.peer.id.clone(),
            name: self.name.clone(),
            term_id: Some(term_id.to_string()),
        };
        send_frame(&self.handle.frames, &frame, Some(self.number));
    }

    /// Attaches again after falling behind: a fresh snapshot (a `full`
    /// screen frame for `screen`), no answer.
    pub(super) fn reattach(&mut self, handle: TermHandle, screen: bool, answers: &Answers) {
        // Not a detach: the terminal keeps this socket and its size (a
        // detach would drop the size, and the terminal would grow to the
        // others' windows).
        self.term.drop_feed();
        let (conn, answers) = (self.number, answers.clone());
        tokio::spawn(async move {
            // Without a size: the one this socket gave stays counted.
            if let Ok(attached) = handle.attach(conn, None, screen).await {
                let answer = Answered {
                    attached: Some((handle, attached)),
                    ..Answered::default()
                };
                let _ = answers.send(answer).await;
            }
        });
    }
}
