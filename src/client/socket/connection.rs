//! One connection of the room's socket: connecting (and why it failed),
//! then carrying frames both ways until it drops or the person leaves:
//! pings, the outbox's calls, the terminal's input.

use super::*;

/// Why a connection attempt failed.
pub(super) enum ConnectError {
    /// The backend refused the socket (4xx): retrying will not help.
    Refused(String),
    Failed(String),
}

pub(super) async fn connect(params: &SocketParams) -> Result<Ws, ConnectError> {
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

pub(super) async fn connection(
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
    // The room's people as of the last full list and the deltas since: the
    // App always gets whole lists.
    let mut people: Vec<crate::protocol::PresenceUser> = Vec::new();
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
                                let frame = match frame {
                                    ServerFrame::Presence { users } => {
                                        people.clone_from(&users);
                                        ServerFrame::Presence { users }
                                    }
                                    ServerFrame::PresenceDelta(delta) => {
                                        delta.apply(&mut people);
                                        ServerFrame::Presence { users: people.clone() }
                                    }
                                    frame => frame,
                                };
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
pub(super) async fn next_message(
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
pub(super) fn tell_outbox(events: &mpsc::UnboundedSender<SocketEvent>, calls: &mut Calls) {
    if let Some(ops) = calls.outbox_changed() {
        let _ = events.send(SocketEvent::Outbox(ops));
    }
}

/// Whether `messages` (as stored) include ours with `client_id`.
pub(super) fn includes(messages: &[crate::protocol::DuetMessage], client_id: Option<&str>) -> bool {
    client_id.is_some_and(|id| messages.iter().any(|m| m.client_id.as_deref() == Some(id)))
}

/// "The connection to 127.0.0.1:7878 broke (the connection was reset)".
pub(super) fn broke(base: &str, cause: &str) -> String {
    format!(
        "The connection to {} broke ({cause})",
        explain::server_name(base)
    )
}

/// "The server at 127.0.0.1:7878 closed the connection (going away)".
pub(super) fn closed(base: &str, why: Option<&str>) -> String {
    let name = explain::server_name(base);
    match why {
        Some(why) => format!("The server at {name} closed the connection ({why})"),
        None => format!("The server at {name} closed the connection"),
    }
}

/// Writes one frame of ours; the error's gist when it cannot.
pub(super) async fn send_frame(
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
pub(super) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
