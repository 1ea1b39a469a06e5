//! The room's WebSocket: the connect sequence, the room's frames out, the
//! client's frames in (typing, rpc, refused state), keepalive, and dropping
//! a client that cannot keep up.

use super::auth::{Access, Caller, SocketRef};
use super::errors::ApiError;
use super::errors::Path;
use super::fanout;
use super::http::room_details;
use super::limits::{FrameRates, OpRates, SocketCount, SocketSlot};
use super::room::{Joined, Outgoing, RoomHandle, frame_text, send_frame};
use super::router::App;
use super::terminal::TermHandle;
use super::terminal::socket::{Feed, TermSide};
use crate::protocol::{AGENT_NAME, PresenceUser, ServerFrame, now_ms};
use axum::Extension;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod answers;
mod peer;
mod process;
mod rpc;
mod term;

use answers::{Answered, Answers, Replies};
use peer::{Peer, peer};
use rpc::failure;

/// How long a stopping server's sockets wait for their room's last frames.
const LAST_FRAMES: Duration = Duration::from_secs(5);
/// How often the server pings.
const PING_EVERY: Duration = Duration::from_secs(20);
/// A connection silent for this long is closed.
const SILENT_LIMIT: Duration = Duration::from_secs(60);
/// A send that takes longer drops the connection.
const SEND_LIMIT: Duration = Duration::from_secs(5);
/// Typing is relayed at most this often per connection.
const TYPING_EVERY: Duration = Duration::from_secs(2);
/// What a socket reads into at first, and at most per read.
const READ_BUFFER: usize = 256;
/// Largest frame a client may send.
const MAX_FRAME: usize = crate::protocol::MAX_BODY + 4096;
/// The reason of the close (1009) of a socket that sent a bigger frame.
const FRAME_TOO_BIG: &str = "a frame is at most 1 MiB";

/// Numbers connections within the process (to skip one's own typing).
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// `GET /api/rooms/{room}/ws` and `/agents/duet-agent/{room}` (upgrade).
pub(crate) async fn socket(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path(room): Path<String>,
    RawQuery(query): RawQuery,
    headers: axum::http::HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let mut details = room_details(&room);
    let peer = peer(query.as_deref(), &mut details);
    if !details.is_empty() {
        return ApiError::invalid(details).into_response();
    }
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => return ApiError::field("upgrade", e.body_text()).into_response(),
    };
    let limits = app.registry.shared.limits;
    let slot = match SocketCount::admit(&app.sockets, &room, &limits) {
        Ok(slot) => slot,
        Err(e) => return e.into_response(),
    };
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let shutdown = app.registry.shared.shutdown.clone();
    // Only what the socket needs of the request is kept: a header map
    // would hold the connection's whole read buffer (its values share it)
    // for as long as the socket lives.
    let base = super::auth::base_url(&headers);
    drop(headers);
    let number = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
    let socket_ref = SocketRef {
        number,
        id: peer.id.clone(),
    };
    let mut caller = Caller::new(peer.user.clone(), access, Some(socket_ref));
    caller.base = base;
    // Boxed until the upgrade: what the upgrade's task holds besides the
    // connection's own future is then a pointer.
    let conn = Box::new(Connection {
        number,
        name: caller.name_or_anonymous(),
        caller,
        peer,
        room,
        handle,
        last_typing: None,
        last_term_typing: None,
        term: TermSide::default(),
        follows: process::Follows::default(),
        frame_rates: FrameRates::new(&limits),
        op_rates: OpRates::new(
            "per socket",
            limits.socket_messages_per_min,
            limits.socket_commands_per_min,
        ),
        _slot: slot,
    });
    upgrade
        // Clients send small frames; a large one is read into a buffer
        // reserved for its length, at this many bytes a read. An idle
        // socket holds this much (measured: 1,024 was a tenth of what a
        // socket of an idle crowd cost).
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(4 * 1024 * 1024)
        .max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .on_upgrade(move |socket| async move {
            (*conn).run(socket, shutdown).await;
        })
}

/// One client's connection to a room.
struct Connection {
    number: u64,
    peer: Peer,
    /// The presence name: `user` (or the last `rename`) or "anonymous".
    name: String,
    /// Who calls this connection's rpcs (unless one says `userId`).
    caller: Caller,
    room: String,
    handle: RoomHandle,
    last_typing: Option<Instant>,
    /// When typing into the terminal was last relayed.
    last_term_typing: Option<Instant>,
    /// The shared terminal, when this socket attached to it.
    term: TermSide,
    /// The background processes whose output this socket gets.
    follows: process::Follows,
    /// Frames and bytes this socket sends per second.
    frame_rates: FrameRates,
    /// Messages and commands this socket asks for per minute.
    op_rates: OpRates,
    /// Its place in the socket count, given back when it closes.
    _slot: SocketSlot,
}

/// Sends `msg` unless it takes too long; `false` means drop the connection.
async fn send(socket: &mut WebSocket, msg: Message) -> bool {
    let sending = socket.send(msg);
    tokio::pin!(sending);
    // Most sends complete at once (the kernel takes the frame): the timer
    // is set only for one that has to wait, so a crowd's fan-out sets no
    // timer per socket and frame.
    if let std::task::Poll::Ready(sent) = futures_util::poll!(sending.as_mut()) {
        return sent.is_ok();
    }
    matches!(tokio::time::timeout(SEND_LIMIT, sending).await, Ok(Ok(())))
}

/// Sends each of `texts` but empty ones; `false` means drop the connection.
async fn send_all(socket: &mut WebSocket, texts: &[Utf8Bytes]) -> bool {
    for text in texts {
        if !text.is_empty() && !send(socket, Message::Text(text.clone())).await {
            return false;
        }
    }
    true
}

/// Closes a socket whose credential stopped working (4401).
async fn close_unauthorized(socket: &mut WebSocket, reason: &'static str) {
    let frame = axum::extract::ws::CloseFrame {
        code: crate::protocol::CLOSE_UNAUTHORIZED,
        reason: reason.into(),
    };
    let _ = send(socket, Message::Close(Some(frame))).await;
}

/// A `duet_error` frame.
fn error_frame(error: impl Into<String>) -> Utf8Bytes {
    frame_text(&ServerFrame::Error {
        error: error.into(),
        retry_after_ms: None,
    })
}

impl Connection {
    /// Joins the room, sends the connect sequence, serves, then leaves.
    async fn run(mut self, mut socket: WebSocket, shutdown: CancellationToken) {
        let user = PresenceUser {
            id: self.peer.id.clone(),
            name: self.name.clone(),
            since: now_ms(),
            role: self.caller.role(),
        };
        let invite = self.caller.access.invite_id().map(str::to_string);
        let Some(Joined {
            state,
            presence,
            mut frames,
        }) = self
            .handle
            .join(self.number, user, self.peer.deltas, invite)
            .await
        else {
            return;
        };
        let identity = frame_text(&ServerFrame::Identity {
            name: self.room.clone(),
            agent: AGENT_NAME.into(),
        });
        let mut ok = true;
        for text in [identity, state, presence, self.you()] {
            ok = ok && send(&mut socket, Message::Text(text)).await;
        }
        if ok {
            self.serve(&mut socket, &mut frames, &shutdown).await;
        }
        self.term.detach(self.number, None);
        self.handle.leave(self.number).await;
    }

    /// The connection's loop, until the client leaves or is dropped.
    /// Forwards the frames the room broadcast so far; false when the
    /// socket is done (it broke, or fell behind).
    async fn flush_frames(
        &mut self,
        socket: &mut WebSocket,
        frames: &mut fanout::Receiver<Outgoing>,
    ) -> bool {
        loop {
            match frames.try_recv() {
                Ok(f) => {
                    if !self.forward(socket, &f).await {
                        return false;
                    }
                }
                Err(fanout::TryRecvError::Empty) => return true,
                Err(fanout::TryRecvError::Lagged(n)) => {
                    tracing::info!(room = %self.room, "dropping a client {n} frames behind");
                    return false;
                }
                Err(fanout::TryRecvError::Closed) => return false,
            }
        }
    }

    async fn serve(
        &mut self,
        socket: &mut WebSocket,
        frames: &mut fanout::Receiver<Outgoing>,
        shutdown: &CancellationToken,
    ) {
        let mut replies = Replies::default();
        let mut ping =
            tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_seen = Instant::now();
        // Made once, not per turn of the loop: each registers a waiter or a timer.
        let stopping = shutdown.cancelled();
        tokio::pin!(stopping);
        let mut closing = false;
        let close_at = tokio::time::sleep(LAST_FRAMES);
        tokio::pin!(close_at);
        let expired = crate::server::room::sleep_until(self.expiry());
        tokio::pin!(expired);
        loop {
            let out = tokio::select! {
                // The server stops: the room's last frames and answers go
                // out before the socket closes (a command the stop cut off
                // ends with its `duet_exec complete`), until the room
                // stopped or LAST_FRAMES passed.
                () = &mut stopping, if !closing => {
                    closing = true;
                    close_at.as_mut().reset(tokio::time::Instant::now() + LAST_FRAMES);
                    None
                }
                () = self.handle.stopped(), if closing => {
                    self.flush_frames(socket, frames).await;
                    let _ = send(socket, Message::Close(None)).await;
                    return;
                }
                () = &mut close_at, if closing => {
                    let _ = send(socket, Message::Close(None)).await;
                    return;
                }
                () = &mut expired => {
                    close_unauthorized(socket, "the invite expired").await;
                    return;
                }
                incoming = socket.recv() => {
                    let msg = match incoming {
                        Some(Ok(msg)) => msg,
                        Some(Err(e)) => {
                            close_on_error(socket, e).await;
                            return;
                        }
                        None => return,
                    };
                    last_seen = Instant::now();
                    match msg {
                        Message::Text(text) => self.on_text(&text, &mut replies).map(Message::Text),
                        Message::Binary(_) => Some(Message::Text(error_frame("binary frames are not supported"))),
                        Message::Close(_) => return,
                        Message::Ping(_) | Message::Pong(_) => None,
                    }
                }
                frame = frames.recv() => match frame {
                    Ok(f) => {
                        if !self.forward(socket, &f).await {
                            return;
                        }
                        None
                    }
                    Err(fanout::RecvError::Lagged(n)) => {
                        tracing::info!(room = %self.room, "dropping a client {n} frames behind");
                        return;
                    }
                    Err(fanout::RecvError::Closed) => return,
                },
                feed = self.term.next() => match feed {
                    Feed::Send(text) => Some(Message::Text(text)),
                    Feed::Ended(text) => text.map(Message::Text),
                    Feed::Behind(handle, screen) => {
                        self.reattach(handle, screen, &replies.sender());
                        None
                    }
                },
                Some(answer) = replies.recv() => {
                    let Answered { text, renamed, attached, followed } = *answer;
                    // Frames read after the client has this answer carry the new name.
                    let renamed = renamed.is_some_and(|name| {
                        self.caller.name = Some(name.clone());
                        self.name = name;
                        true
                    });
                    // What the room broadcast before answering goes first:
                    // a command's frames, a cleanup's emptied state.
                    if !self.flush_frames(socket, frames).await {
                        return;
                    }
                    if let Some((process, since)) = followed {
                        // The answer, then what the process said past its log.
                        let held = self.follows.settle(&process, since);
                        if let Some(text) = text
                            && !send(socket, Message::Text(text)).await
                        {
                            return;
                        }
                        for f in held {
                            if !self.forward(socket, &f).await {
                                return;
                            }
                        }
                        None
                    } else if let Some((handle, attached)) = attached {
                        // The answer (attaching again after falling
                        // behind: the size now), then the screen, then
                        // what comes.
                        let snapshot = attached.snapshot.clone();
                        let first = text.unwrap_or_else(|| attached.size_frame());
                        self.term.attach(handle, attached);
                        if !send(socket, Message::Text(first)).await {
                            return;
                        }
                        Some(Message::Text(snapshot))
                    } else if renamed {
                        // The answer, then who this socket is now.
                        if let Some(text) = text
                            && !send(socket, Message::Text(text)).await
                        {
                            return;
                        }
                        Some(Message::Text(self.you()))
                    } else {
                        text.map(Message::Text)
                    }
                }
                _ = ping.tick() => {
                    if last_seen.elapsed() > SILENT_LIMIT {
                        tracing::info!(room = %self.room, "closing a silent connection");
                        return;
                    }
                    Some(Message::Ping(bytes::Bytes::new()))
                }
            };
            if let Some(msg) = out
                && !send(socket, msg).await
            {
                return;
            }
        }
    }

    /// Sends this connection its part of a room frame; `false` means drop
    /// the connection.
    async fn forward(&mut self, socket: &mut WebSocket, frame: &Outgoing) -> bool {
        if frame.skip == Some(self.number) || self.follows.hold(frame) {
            return true;
        }
        if let Some(news) = &frame.access {
            return self
                .on_access(socket, news, frame.texts(self.peer.deltas))
                .await;
        }
        if let Some((process, seq)) = &frame.process_output
            && !self.follows.wants(process, *seq)
        {
            return true;
        }
        if let Some(term_id) = &frame.term_exit {
            for text in self.term.room_exit(term_id, &frame.text) {
                if !send(socket, Message::Text(text)).await {
                    return false;
                }
            }
            return true;
        }
        send_all(socket, frame.texts(self.peer.deltas)).await
    }

    /// `duet_you`: this socket as the room knows it.
    fn you(&self) -> Utf8Bytes {
        frame_text(&ServerFrame::You {
            id: self.peer.id.clone(),
            name: self.name.clone(),
            role: self.caller.role(),
            invite_id: self.caller.access.invite_id().map(str::to_string),
        })
    }

    /// When this socket's invite expires, if it came with one.
    fn expiry(&self) -> Option<tokio::time::Instant> {
        let Access::Invite(invite) = &self.caller.access else {
            return None;
        };
        let left = invite.expires_at.saturating_sub(now_ms() as u64);
        Some(tokio::time::Instant::now() + Duration::from_millis(left))
    }

    /// An invite changed: this socket's own takes effect (a new role, or
    /// the close of a revoked one); `texts` go to everyone.
    async fn on_access(
        &mut self,
        socket: &mut WebSocket,
        news: &super::room::AccessNews,
        texts: &[Utf8Bytes],
    ) -> bool {
        use super::room::AccessNews;
        let mine = |id: &String| self.caller.access.invite_id() == Some(id.as_str());
        match news {
            AccessNews::Revoked { invite_id } if mine(invite_id) => {
                close_unauthorized(socket, "the invite was revoked").await;
                return false;
            }
            AccessNews::Role { invite_id, role } if mine(invite_id) => {
                if let Access::Invite(invite) = &mut self.caller.access {
                    invite.role = *role;
                }
                // A viewer watches on; its window no longer sizes the terminal.
                if !super::access::may(*role, super::access::Action::ResizeTerminal) {
                    self.term.forget_size(self.number);
                }
                if !send_all(socket, texts).await {
                    return false;
                }
                return send(socket, Message::Text(self.you())).await;
            }
            _ => {}
        }
        send_all(socket, texts).await
    }

    /// Handles a client's text frame; returns a frame for this client alone.
    fn on_text(&mut self, text: &str, replies: &mut Replies) -> Option<Utf8Bytes> {
        let parsed = serde_json::from_str::<Value>(text);
        // Terminal input counts in bytes only: a keystroke is a frame.
        let terminal = parsed.as_ref().is_ok_and(|v| {
            matches!(
                v.get("type").and_then(Value::as_str),
                Some("duet_term_input" | "duet_term_resize")
            )
        });
        let over = if terminal {
            self.frame_rates.admit_bytes(text.len()).err()
        } else {
            self.frame_rates.admit(text.len()).err()
        };
        let value: Value = match parsed {
            Ok(v) => v,
            Err(_) if over.is_some() => return over.map(limited_frame),
            Err(e) => return Some(error_frame(format!("the frame is not JSON: {e}"))),
        };
        if let Some(e) = over {
            // An rpc is answered as one, so its caller's promise settles.
            return Some(match value.get("id").filter(|_| value["type"] == "rpc") {
                Some(id) => frame_text(&ServerFrame::Rpc(failure(e).with_id(id.clone()))),
                None => limited_frame(e),
            });
        }
        let Some(kind) = value.get("type").and_then(Value::as_str) else {
            return Some(error_frame("a frame needs a string \"type\""));
        };
        match kind {
            "duet_typing" => {
                if self.last_typing.is_none_or(|t| t.elapsed() >= TYPING_EVERY) {
                    self.last_typing = Some(Instant::now());
                    let frame = ServerFrame::Typing {
                        id: self.peer.id.clone(),
                        name: self.name.clone(),
                        term_id: None,
                    };
                    send_frame(&self.handle.frames, &frame, Some(self.number));
                }
                None
            }
            "duet_term_input" | "duet_term_resize" => self.term_frame(value),
            "cf_agent_state" => Some(frame_text(&ServerFrame::StateError {
                error: "Connection is readonly".into(),
            })),
            "rpc" => self.rpc(value, &replies.sender()),
            other => Some(error_frame(format!("unknown frame type {other:?}"))),
        }
    }
}

/// The `duet_error` of a frame over this socket's rates.
fn limited_frame(e: ApiError) -> Utf8Bytes {
    frame_text(&ServerFrame::Error {
        error: e.body.error,
        retry_after_ms: e.body.retry_after_ms,
    })
}

/// Ends a socket whose client broke the protocol. Invalid UTF-8 in a text
/// frame gets the close code RFC 6455 names for it (1007), as any
/// WebSocket server should, instead of a silently dropped connection.
async fn close_on_error(socket: &mut WebSocket, err: axum::Error) {
    use tokio_tungstenite::tungstenite::Error;
    let inner = err.into_inner();
    let (code, reason) = match inner.downcast_ref::<Error>() {
        Some(Error::Utf8(_)) => (
            axum::extract::ws::close_code::INVALID,
            "text frames must be valid UTF-8",
        ),
        Some(Error::Capacity(_)) => (axum::extract::ws::close_code::SIZE, FRAME_TOO_BIG),
        _ => {
            tracing::debug!("socket error: {inner}");
            return;
        }
    };
    let frame = axum::extract::ws::CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = send(socket, Message::Close(Some(frame))).await;
}
