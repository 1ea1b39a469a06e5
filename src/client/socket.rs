//! The room socket as an actor task: connects, reconnects with jittered
//! exponential backoff, measures the round trip with ping/pong, and reports
//! to the UI as messages. The UI never awaits the network. Our messages go
//! through an outbox, one at a time (the next once the last is stored or
//! answered), so that they are stored in the order written, also those
//! written while it is not connected, which go when it is again. Why it is
//! not connected is said as a sentence (`client::explain`); the technical
//! chain goes to the log.

use crate::client::deltas::Delta;
use crate::client::explain;
use crate::client::rpc::{Answer, Calls, RoomOp, not_sent};
use crate::client::term::link::{Attachment, input_frames};
use crate::client::tls::Ws;
use crate::protocol::{ClientFrame, ServerFrame, TermSize};
use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{self, Message};

/// How often the client pings to measure the round trip and detect a dead link.
const PING_EVERY: Duration = Duration::from_secs(5);
/// A link with no answer to pings for this long is dropped and reconnected.
const DEAD_AFTER: Duration = Duration::from_secs(20);
/// Longest wait between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection attempt that takes longer is abandoned.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and as whom the socket connects.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketParams {
    /// Backend base URL (`http://…` or `https://…`).
    pub base: String,
    pub room: String,
    pub name: String,
    pub token: Option<String>,
    /// This connection's id (`_pk`).
    pub connection_id: String,
    /// Ask for state deltas (`deltas=1`) instead of a full state after
    /// every change; they come as `SocketEvent::Delta`.
    pub deltas: bool,
}

/// The connection's state, as the status bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnState {
    Connecting,
    /// Connected; the last measured round trip, once one was measured.
    Connected {
        rtt_ms: Option<u64>,
    },
    /// Waiting before the next attempt; why the last one failed.
    Reconnecting {
        in_secs: u64,
        reason: String,
    },
    /// Not trying any more (refused by the backend, or closed).
    Offline(String),
}

/// What the actor tells the UI.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketEvent {
    State(ConnState),
    Frame(Box<ServerFrame>),
    /// A state delta (only when `SocketParams::deltas` asked for them).
    Delta(Box<Delta>),
    /// A room operation's answer, in order after the frames it caused
    /// (or why there is none).
    Answer(Box<Answer>),
    /// Our messages waiting to be sent, oldest first: written while not
    /// connected, in flight when it dropped, or written while an earlier
    /// one was on its way (one goes at a time, so they are stored in the
    /// order written). Sent every time the list changes; empty once they
    /// all went.
    Outbox(Vec<RoomOp>),
}

/// What the UI asks of the actor.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketCommand {
    /// Send `duet_typing`.
    Typing,
    /// Bytes typed or pasted into the shared terminal (`duet_term_input`,
    /// split into frames of at most 64 KiB). Not sent while not connected:
    /// keystrokes are not typed late, into a screen nobody sees.
    TermInput { term_id: String, data: Vec<u8> },
    /// This client's window for the terminal changed size
    /// (`duet_term_resize`); a re-attachment gives the new size.
    TermResize { term_id: String, size: TermSize },
    /// Send a room operation as an `rpc` frame; its answer comes back as
    /// `SocketEvent::Answer`. A message while not connected waits in the
    /// outbox (`SocketEvent::Outbox`); anything else is not sent.
    Call(RoomOp),
    /// Reconnect now under another name (`/name`).
    Rejoin { name: String },
    /// Reconnect now to another backend (the embedded one moved).
    Retarget { base: String },
    /// Close and stop.
    Close,
}

/// The UI's handle on the actor.
#[derive(Debug, Clone)]
pub struct SocketHandle {
    commands: mpsc::UnboundedSender<SocketCommand>,
}

impl SocketHandle {
    /// Queues a command; a stopped actor ignores it.
    pub fn send(&self, command: SocketCommand) {
        let _ = self.commands.send(command);
    }
}

/// Starts the actor; its events arrive on `events`.
pub fn spawn(
    params: SocketParams,
    events: mpsc::UnboundedSender<SocketEvent>,
) -> (SocketHandle, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(actor(params, events, rx));
    (SocketHandle { commands: tx }, task)
}

/// The socket URL of docs/protocol.md for `params`.
pub fn socket_url(params: &SocketParams) -> Result<url::Url, String> {
    let mut url = url::Url::parse(&params.base).map_err(|e| format!("{}: {e}", params.base))?;
    let scheme = match url.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        other => return Err(format!("unsupported scheme {other}")),
    };
    url.set_scheme(scheme)
        .map_err(|_| format!("cannot use {} as a socket URL", params.base))?;
    url.set_path(&format!("/api/rooms/{}/ws", params.room));
    {
        let mut q = url.query_pairs_mut();
        q.clear();
        q.append_pair("user", &params.name);
        q.append_pair("_pk", &params.connection_id);
        if params.deltas {
            q.append_pair("deltas", "1");
        }
        if let Some(token) = &params.token {
            q.append_pair("token", token);
        }
    }
    Ok(url)
}

/// The wait before attempt `attempt` (1-based): exponential from 500 ms,
/// capped, with the upper half jittered so clients do not reconnect in step.
pub fn backoff(attempt: u32, jitter: f64) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1u32 << attempt.min(10).saturating_sub(1));
    let capped = base.min(MAX_BACKOFF);
    capped.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// How one connection ended.
enum Ended {
    Dropped(String),
    /// Closed with 4401: the invite it came with was revoked or expired
    /// (why, as a sentence); it does not come back.
    Revoked(String),
    Rejoin(String),
    Retarget(String),
    Close,
}

async fn actor(
    mut params: SocketParams,
    events: mpsc::UnboundedSender<SocketEvent>,
    mut commands: mpsc::UnboundedReceiver<SocketCommand>,
) {
    crate::support::install_tls();
    let report = |state: ConnState| events.send(SocketEvent::State(state)).is_ok();
    let mut calls = Calls::default();
    let mut term = Attachment::default();
    let mut attempt: u32 = 0;
    loop {
        if !report(ConnState::Connecting) {
            return;
        }
        let reason = match connect(&params).await {
            Ok(ws) => {
                attempt = 0;
                let ended = connection(
                    ws,
                    &params.base,
                    &events,
                    &mut commands,
                    &mut calls,
                    &mut term,
                )
                .await;
                // A `rename` that worked: the next connection joins under it.
                if let Some(name) = calls.take_renamed() {
                    params.name = name;
                }
                let reason = match ended {
                    Ended::Close => return,
                    Ended::Rejoin(name) => {
                        calls.lose_all(&events, "you rejoined under another name");
                        params.name = name;
                        None
                    }
                    Ended::Retarget(base) => {
                        calls.lose_all(&events, "the backend moved");
                        params.base = base;
                        None
                    }
                    Ended::Dropped(reason) => {
                        calls.lose_all(&events, &reason);
                        Some(reason)
                    }
                    Ended::Revoked(reason) => {
                        calls.lose_all(&events, &reason);
                        calls.give_up_resends(&events, &reason);
                        tell_outbox(&events, &mut calls);
                        report(ConnState::Offline(reason.clone()));
                        if wait_for_person(&mut params, &mut commands, &events, &mut term, &reason)
                            .await
                        {
                            continue;
                        }
                        return;
                    }
                };
                tell_outbox(&events, &mut calls);
                match reason {
                    Some(reason) => reason,
                    None => continue,
                }
            }
            Err(ConnectError::Refused(reason)) => {
                report(ConnState::Offline(reason.clone()));
                calls.give_up_resends(&events, &reason);
                tell_outbox(&events, &mut calls);
                // Refused for good (bad token, bad room): wait for the person.
                if wait_for_person(&mut params, &mut commands, &events, &mut term, &reason).await {
                    continue;
                }
                return;
            }
            Err(ConnectError::Failed(reason)) => reason,
        };
        attempt = attempt.saturating_add(1);
        let wait = backoff(attempt, rand::random::<f64>());
        let deadline = tokio::time::Instant::now() + wait;
        tracing::info!(?wait, %reason, "socket reconnecting");
        // Count down whole seconds, listening for commands meanwhile.
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                break;
            }
            let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            if !report(ConnState::Reconnecting {
                in_secs: secs,
                reason: reason.clone(),
            }) {
                return;
            }
            let tick = left.min(left - Duration::from_secs(secs.saturating_sub(1)));
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                command = commands.recv() => match command {
                    None | Some(SocketCommand::Close) => return,
                    Some(SocketCommand::Rejoin { name }) => { params.name = name; break; }
                    Some(SocketCommand::Retarget { base }) => { params.base = base; break; }
                    // Attaching waits for the connection, which attaches.
                    Some(SocketCommand::Call(op)) if matches!(op, RoomOp::TermOpen(_)) => term.on_call(&op),
                    Some(SocketCommand::Call(op)) => {
                        term.on_call(&op);
                        match calls.queue(op) {
                            Ok(()) => tell_outbox(&events, &mut calls),
                            Err(op) => not_sent(&events, op, &reason),
                        }
                    }
                    Some(SocketCommand::TermResize { size, .. }) => term.resized(size),
                    Some(SocketCommand::Typing | SocketCommand::TermInput { .. }) => {}
                },
            }
        }
    }
}

/// Refused for good (a bad token, a revoked invite): nothing is tried
/// until the person asks (another name or backend: true, connect again);
/// false when the actor is to stop.
async fn wait_for_person(
    params: &mut SocketParams,
    commands: &mut mpsc::UnboundedReceiver<SocketCommand>,
    events: &mpsc::UnboundedSender<SocketEvent>,
    term: &mut Attachment,
    reason: &str,
) -> bool {
    loop {
        match commands.recv().await {
            None | Some(SocketCommand::Close) => return false,
            Some(SocketCommand::Rejoin { name }) => {
                params.name = name;
                return true;
            }
            Some(SocketCommand::Retarget { base }) => {
                params.base = base;
                return true;
            }
            Some(SocketCommand::Call(op)) => not_sent(events, op, reason),
            Some(SocketCommand::TermResize { size, .. }) => term.resized(size),
            Some(SocketCommand::Typing | SocketCommand::TermInput { .. }) => {}
        }
    }
}

/// The room's state as a socket gets it on connect, for a one-shot
/// command (`duet policy`): connects, reads the `cf_agent_state`, closes.
/// `Err` is a sentence.
pub async fn state_once(params: &SocketParams) -> Result<crate::protocol::RoomState, String> {
    let mut ws = connect(params).await.map_err(|err| match err {
        ConnectError::Refused(why) | ConnectError::Failed(why) => why,
    })?;
    let read = async {
        while let Some(message) = ws.next().await {
            let message = message.map_err(|err| broke(&params.base, &explain::cause(&err)))?;
            if let Message::Text(text) = message
                && let Ok(ServerFrame::State { state }) = serde_json::from_str(text.as_str())
            {
                return Ok(state);
            }
        }
        Err(closed(&params.base, None))
    };
    let state = tokio::time::timeout(CONNECT_TIMEOUT, read)
        .await
        .map_err(|_| explain::unreachable(&params.base, "timed out"))?;
    let _ = ws.close(None).await;
    state
}

/// Why a connection attempt failed.
enum ConnectError {
    /// The backend refused the socket (4xx): retrying will not help.
    Refused(String),
    Failed(String),
}

async fn connect(params: &SocketParams) -> Result<Ws, ConnectError> {
    let url = socket_url(params).map_err(ConnectError::Refused)?;
    let attempt = crate::client::tls::connect_ws(url.as_str());
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Err(_) => Err(ConnectError::Failed(explain::unreachable(
            &params.base,
            "timed out",
        ))),
        Ok(Ok((ws, _response))) => Ok(ws),
        Ok(Err(tungstenite::Error::Http(response))) => {
            let status = response.status();
            let body = response
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .unwrap_or_default();
            let shown = crate::client::http::StatusError::from_body(status.as_u16(), &body);
            tracing::info!(%shown, "the socket was refused");
            let invite = params
                .token
                .as_deref()
                .is_some_and(|t| t.starts_with(crate::client::access::INVITE_TOKEN_PREFIX));
            if status.as_u16() == 401 && invite {
                Err(ConnectError::Refused(explain::invite_refused(&shown)))
            } else if status.is_client_error() && status.as_u16() != 429 {
                Err(ConnectError::Refused(explain::status(&shown)))
            } else {
                Err(ConnectError::Failed(explain::status(&shown)))
            }
        }
        Ok(Err(err)) => {
            tracing::info!(error = %crate::support::error_chain(&err), "cannot connect the socket");
            Err(ConnectError::Failed(explain::unreachable(
                &params.base,
                &explain::cause(&err),
            )))
        }
    }
}

async fn connection(
    ws: Ws,
    base: &str,
    events: &mpsc::UnboundedSender<SocketEvent>,
    commands: &mut mpsc::UnboundedReceiver<SocketCommand>,
    calls: &mut Calls,
    term: &mut Attachment,
) -> Ended {
    let (mut sink, mut stream) = ws.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut sent_at: Option<(u64, Instant)> = None;
    let mut seq: u64 = 0;
    let mut last_heard = Instant::now();
    let _ = events.send(SocketEvent::State(ConnState::Connected { rtt_ms: None }));
    // The outbox goes first, one message at a time: those whose answers
    // the last connection lost, then those written while offline.
    if let Err(err) = next_message(&mut sink, events, calls).await {
        return Ended::Dropped(broke(base, &err));
    }
    // Attached before the drop (or asked to be while offline): attach
    // again; the answer and a fresh snapshot follow.
    if let Some(op) = term.reattach() {
        let (id, frame) = calls.start(op);
        if let Err(err) = send_frame(&mut sink, &frame).await {
            calls.forget(&id);
            return Ended::Dropped(broke(base, &err));
        }
    }
    loop {
        tokio::select! {
            message = stream.next() => {
                let message = match message {
                    None => return Ended::Dropped(closed(base, None)),
                    Some(Err(err)) => {
                        tracing::info!(error = %crate::support::error_chain(&err), "the socket broke");
                        return Ended::Dropped(broke(base, &explain::cause(&err)));
                    }
                    Some(Ok(m)) => m,
                };
                last_heard = Instant::now();
                match message {
                    Message::Text(text) => {
                        match serde_json::from_str::<ServerFrame>(text.as_str()) {
                            Ok(ServerFrame::Rpc(reply)) => {
                                if let Some(done) = calls.finish(reply, tokio::time::Instant::now()) {
                                    term.on_answer(&done);
                                    let _ = events.send(SocketEvent::Answer(Box::new(done)));
                                }
                            }
                            Ok(frame) => {
                                term.on_frame(&frame);
                                // The name the room knows us by (an invite
                                // may fix it): the next connection joins so.
                                if let ServerFrame::You { name, .. } = &frame {
                                    calls.named(name);
                                }
                                if let ServerFrame::State { state } = &frame
                                    && includes(&state.messages, calls.on_its_way())
                                {
                                    calls.stored();
                                }
                                if events.send(SocketEvent::Frame(Box::new(frame))).is_err() {
                                    return Ended::Close;
                                }
                            }
                            Err(err) => match serde_json::from_str::<Delta>(text.as_str()) {
                                Ok(delta) => {
                                    if let Delta::Message { message } = &delta
                                        && includes(std::slice::from_ref(message), calls.on_its_way())
                                    {
                                        calls.stored();
                                    }
                                    if events.send(SocketEvent::Delta(Box::new(delta))).is_err() {
                                        return Ended::Close;
                                    }
                                }
                                // Frames of types we do not know are ignored (docs/protocol.md).
                                Err(_) => tracing::debug!(%err, "ignored frame"),
                            },
                        }
                        // The message on its way was stored or answered:
                        // the next one goes.
                        if let Err(err) = next_message(&mut sink, events, calls).await {
                            return Ended::Dropped(broke(base, &err));
                        }
                    }
                    Message::Pong(payload) => {
                        if let Some((id, at)) = sent_at
                            && payload.as_ref() == id.to_be_bytes()
                        {
                            let rtt = at.elapsed().as_millis() as u64;
                            sent_at = None;
                            let _ = events.send(SocketEvent::State(ConnState::Connected { rtt_ms: Some(rtt) }));
                        }
                    }
                    Message::Close(frame) => {
                        let code = frame.as_ref().map(|f| u16::from(f.code));
                        let why = frame.map(|f| f.reason.to_string()).filter(|r| !r.is_empty());
                        if code == Some(crate::protocol::CLOSE_UNAUTHORIZED) {
                            return Ended::Revoked(explain::invite_ended(why.as_deref()));
                        }
                        return Ended::Dropped(closed(base, why.as_deref()));
                    }
                    _ => {}
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > DEAD_AFTER {
                    return Ended::Dropped(format!(
                        "No answer from the server at {} for {} s",
                        explain::server_name(base),
                        DEAD_AFTER.as_secs()
                    ));
                }
                seq += 1;
                sent_at = Some((seq, Instant::now()));
                if let Err(err) = sink.send(Message::Ping(seq.to_be_bytes().to_vec().into())).await {
                    return Ended::Dropped(broke(base, &explain::cause(&err)));
                }
            }
            _ = sleep_until(calls.next_retry()), if calls.next_retry().is_some() => {
                for (id, frame) in calls.due(tokio::time::Instant::now()) {
                    if let Err(err) = send_frame(&mut sink, &frame).await {
                        let why = broke(base, &err);
                        if let Some(op) = calls.forget(&id) {
                            not_sent(events, op, &why);
                        }
                        return Ended::Dropped(why);
                    }
                }
            }
            command = commands.recv() => {
                let frame = match command {
                    None | Some(SocketCommand::Close) => {
                        let _ = sink.send(Message::Close(None)).await;
                        return Ended::Close;
                    }
                    Some(SocketCommand::Rejoin { name }) => {
                        let _ = sink.send(Message::Close(None)).await;
                        return Ended::Rejoin(name);
                    }
                    Some(SocketCommand::Retarget { base }) => {
                        let _ = sink.send(Message::Close(None)).await;
                        return Ended::Retarget(base);
                    }
                    Some(SocketCommand::Typing) => (None, ClientFrame::Typing {}),
                    Some(SocketCommand::TermResize { term_id, size }) => {
                        term.resized(size);
                        (None, ClientFrame::TermResize { term_id, cols: size.cols, rows: size.rows })
                    }
                    Some(SocketCommand::TermInput { term_id, data }) => {
                        for frame in input_frames(&term_id, &data) {
                            if let Err(err) = send_frame(&mut sink, &frame).await {
                                return Ended::Dropped(broke(base, &err));
                            }
                        }
                        continue;
                    }
                    // A message joins the outbox: it goes after ours
                    // still on their way.
                    Some(SocketCommand::Call(op)) => {
                        term.on_call(&op);
                        match calls.queue(op) {
                            Ok(()) => {
                                if let Err(err) = next_message(&mut sink, events, calls).await {
                                    return Ended::Dropped(broke(base, &err));
                                }
                                continue;
                            }
                            Err(op) => {
                                let (id, frame) = calls.start(op);
                                (Some(id), frame)
                            }
                        }
                    }
                };
                let (call, frame) = frame;
                if let Err(err) = send_frame(&mut sink, &frame).await {
                    let why = broke(base, &err);
                    // A frame that could not be written was not sent.
                    if let Some(op) = call.and_then(|id| calls.forget(&id)) {
                        not_sent(events, op, &why);
                    }
                    return Ended::Dropped(why);
                }
            }
        }
    }
}

/// Sends the outbox's next message when none of ours is on its way, and
/// tells the UI what still waits; the error's gist when it cannot be
/// written (the message then waits again).
async fn next_message(
    sink: &mut futures_util::stream::SplitSink<Ws, Message>,
    events: &mpsc::UnboundedSender<SocketEvent>,
    calls: &mut Calls,
) -> Result<(), String> {
    let sent = match calls.next_message() {
        Some((id, frame)) => send_frame(sink, &frame)
            .await
            .inspect_err(|_| calls.unsend(&id)),
        None => Ok(()),
    };
    tell_outbox(events, calls);
    sent
}

/// Tells the UI the outbox, when it changed.
fn tell_outbox(events: &mpsc::UnboundedSender<SocketEvent>, calls: &mut Calls) {
    if let Some(ops) = calls.outbox_changed() {
        let _ = events.send(SocketEvent::Outbox(ops));
    }
}

/// Whether `messages` (as stored) include ours with `client_id`.
fn includes(messages: &[crate::protocol::DuetMessage], client_id: Option<&str>) -> bool {
    client_id.is_some_and(|id| messages.iter().any(|m| m.client_id.as_deref() == Some(id)))
}

/// "The connection to 127.0.0.1:7878 broke (the connection was reset)".
fn broke(base: &str, cause: &str) -> String {
    format!(
        "The connection to {} broke ({cause})",
        explain::server_name(base)
    )
}

/// "The server at 127.0.0.1:7878 closed the connection (going away)".
fn closed(base: &str, why: Option<&str>) -> String {
    let name = explain::server_name(base);
    match why {
        Some(why) => format!("The server at {name} closed the connection ({why})"),
        None => format!("The server at {name} closed the connection"),
    }
}

/// Writes one frame of ours; the error's gist when it cannot.
async fn send_frame(
    sink: &mut futures_util::stream::SplitSink<Ws, Message>,
    frame: &ClientFrame,
) -> Result<(), String> {
    let text = serde_json::to_string(frame).map_err(|err| err.to_string())?;
    sink.send(Message::text(text)).await.map_err(|err| {
        tracing::info!(error = %crate::support::error_chain(&err), "cannot write to the socket");
        explain::cause(&err)
    })
}

/// Sleeps until `at` (forever without one).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_url_follows_the_protocol() {
        let params = SocketParams {
            base: "https://duet.example/".into(),
            room: "r-1".into(),
            name: "ada lovelace".into(),
            token: Some("t&1".into()),
            connection_id: "c1".into(),
            deltas: false,
        };
        assert_eq!(
            socket_url(&params).unwrap().as_str(),
            "wss://duet.example/api/rooms/r-1/ws?user=ada+lovelace&_pk=c1&token=t%261"
        );
        let params = SocketParams {
            deltas: true,
            ..params
        };
        assert_eq!(
            socket_url(&params).unwrap().as_str(),
            "wss://duet.example/api/rooms/r-1/ws?user=ada+lovelace&_pk=c1&deltas=1&token=t%261"
        );
    }

    #[test]
    fn backoff_grows_jittered_and_capped() {
        assert_eq!(backoff(1, 1.0), Duration::from_millis(500));
        assert_eq!(backoff(1, 0.0), Duration::from_millis(250));
        assert_eq!(backoff(3, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(30, 1.0), MAX_BACKOFF);
        assert!(backoff(30, 0.0) >= MAX_BACKOFF / 2);
    }
}
