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

mod connection;
use connection::*;

/// How often the client pings to measure the round trip and detect a dead link.
const PING_EVERY: Duration = Duration::from_secs(5);
/// A link with no answer to pings for this long is dropped and reconnected.
const DEAD_AFTER: Duration = Duration::from_secs(20);
/// Longest wait between two connection attempts: a restarted server has
/// its people back within 10 s (jitter spreads them over the last 5).
const MAX_BACKOFF: Duration = Duration::from_secs(10);
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
