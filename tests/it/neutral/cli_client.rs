//! The client side of the protocol against real servers: the socket actor
//! (connect, frames, typing, round trip, drop and refusal) on `duet serve`,
//! and the HTTP client's retries of 503/429 on a server that answers them.

use crate::common::{Server, next_matching};
use duet::client::deltas::Delta;
use duet::client::http::{HttpClient, HttpError};
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use duet::protocol::{Role, ServerFrame};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

fn params(base: &str, room: &str, name: &str, token: Option<&str>) -> SocketParams {
    SocketParams {
        base: base.into(),
        room: room.into(),
        name: name.into(),
        token: token.map(str::to_string),
        connection_id: format!("c-{name}"),
        deltas: false,
    }
}

#[tokio::test]
async fn the_socket_joins_reports_frames_and_measures_the_round_trip() {
    let (server, _dir) = Server::fresh().await;
    let url = server.url("");
    let (tx, mut ada) = mpsc::unbounded_channel();
    let (ada_handle, _task) = socket::spawn(params(&url, "sock-1", "ada", None), tx);
    let first = next_matching(&mut ada, "a state", |_| true).await;
    assert_eq!(first, SocketEvent::State(ConnState::Connecting));
    next_matching(&mut ada, "connected", |e| {
        matches!(e, SocketEvent::State(ConnState::Connected { .. }))
    })
    .await;
    let state = next_matching(
        &mut ada,
        "the room state",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. })),
    )
    .await;
    assert!(matches!(state, SocketEvent::Frame(_)));

    let (tx, mut bob) = mpsc::unbounded_channel();
    let (bob_handle, _bob_task) = socket::spawn(params(&url, "sock-1", "bob", None), tx);
    next_matching(&mut ada, "bob's arrival", |e| {
        matches!(e, SocketEvent::Frame(f)
            if matches!(&**f, ServerFrame::Presence { users } if users.len() == 2))
    })
    .await;
    next_matching(&mut bob, "bob connected", |e| {
        matches!(e, SocketEvent::State(ConnState::Connected { .. }))
    })
    .await;
    bob_handle.send(SocketCommand::Typing);
    next_matching(&mut ada, "bob typing", |e| {
        matches!(e, SocketEvent::Frame(f)
            if matches!(&**f, ServerFrame::Typing { name, .. } if name == "bob"))
    })
    .await;
    // The first ping's answer gives a round trip.
    next_matching(&mut ada, "a measured round trip", |e| {
        matches!(
            e,
            SocketEvent::State(ConnState::Connected { rtt_ms: Some(_) })
        )
    })
    .await;
    // /name: the actor reconnects under the new name.
    ada_handle.send(SocketCommand::Rejoin {
        name: "ada2".into(),
    });
    next_matching(&mut bob, "ada's new name", |e| {
        matches!(e, SocketEvent::Frame(f)
            if matches!(&**f, ServerFrame::Presence { users }
                if users.iter().any(|u| u.name == "ada2")))
    })
    .await;

    // The backend goes away: the actor says it will try again.
    server.stop().await;
    next_matching(&mut ada, "reconnecting", |e| {
        matches!(e, SocketEvent::State(ConnState::Reconnecting { .. }))
    })
    .await;
    ada_handle.send(SocketCommand::Close);
}

#[tokio::test]
async fn a_refused_socket_is_offline_with_the_reason() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--token", "s3cret"]).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (handle, _task) = socket::spawn(params(&server.url(""), "sock-2", "ada", None), tx);
    let offline = next_matching(&mut rx, "offline", |e| {
        matches!(e, SocketEvent::State(ConnState::Offline(_)))
    })
    .await;
    let SocketEvent::State(ConnState::Offline(reason)) = offline else {
        unreachable!()
    };
    assert!(reason.contains("401"), "{reason}");
    handle.send(SocketCommand::Close);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (handle, _task) =
        socket::spawn(params(&server.url(""), "sock-2", "ada", Some("s3cret")), tx);
    next_matching(&mut rx, "connected with the token", |e| {
        matches!(e, SocketEvent::State(ConnState::Connected { .. }))
    })
    .await;
    handle.send(SocketCommand::Close);
}

#[tokio::test]
async fn room_operations_answer_after_the_frames_they_caused() {
    let (server, _dir) = Server::fresh().await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (handle, _task) = socket::spawn(params(&server.url(""), "sock-3", "ada", None), tx);
    next_matching(
        &mut rx,
        "the room state",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. })),
    )
    .await;
    handle.send(SocketCommand::Call(RoomOp::Exec("echo via-rpc".into())));
    let mut seen = Vec::new();
    let answer = next_matching(&mut rx, "the answer", |e| {
        if let SocketEvent::Frame(f) = e
            && let ServerFrame::Exec(exec) = &**f
        {
            seen.push(format!("{exec:?}"));
        }
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    let SocketEvent::Answer(answer) = answer else {
        unreachable!()
    };
    assert_eq!(answer.op, RoomOp::Exec("echo via-rpc".into()));
    let body = answer.result.as_ref().unwrap();
    assert_eq!(body["result"]["stdout"], "via-rpc\n");
    assert!(
        seen.iter().any(|f| f.starts_with("Complete")),
        "the command's frames came first: {seen:?}"
    );
    // A refused operation says why, as HTTP would.
    handle.send(SocketCommand::Call(RoomOp::Exec("   ".into())));
    let refused = next_matching(&mut rx, "the refusal", |e| {
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    let SocketEvent::Answer(refused) = refused else {
        unreachable!()
    };
    let shown = refused.result.unwrap_err().to_string();
    assert!(
        shown.starts_with("400 Bad Request: invalid request; cmd:"),
        "{shown}"
    );
    handle.send(SocketCommand::Close);
}

#[tokio::test]
async fn a_deltas_socket_gets_each_stored_message_once_as_a_delta() {
    let (server, _dir) = Server::fresh().await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut with_deltas = params(&server.url(""), "sock-5", "ada", None);
    with_deltas.deltas = true;
    let (handle, _task) = socket::spawn(with_deltas, tx);
    next_matching(
        &mut rx,
        "the full state on connect",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. })),
    )
    .await;
    handle.send(SocketCommand::Call(RoomOp::to_agent("hello deltas")));
    let mut full_states = 0;
    let mut stored = Vec::new();
    next_matching(&mut rx, "the answer", |e| {
        match e {
            SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. }) => full_states += 1,
            SocketEvent::Delta(d) => {
                if let Delta::Message { message } = &**d {
                    stored.push((message.role, message.text.clone()));
                }
            }
            _ => {}
        }
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    assert_eq!(full_states, 0, "no full state after a message");
    // The question, then the system message saying there is no model.
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(stored[0], (Role::User, "hello deltas".to_string()));
    assert_eq!(stored[1].0, Role::System);
    handle.send(SocketCommand::Close);
}

#[tokio::test]
async fn an_operation_while_refused_is_not_sent_and_says_why() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--token", "s3cret"]).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (handle, _task) = socket::spawn(params(&server.url(""), "sock-4", "ada", None), tx);
    next_matching(&mut rx, "offline", |e| {
        matches!(e, SocketEvent::State(ConnState::Offline(_)))
    })
    .await;
    handle.send(SocketCommand::Call(RoomOp::to_agent("hello?")));
    let answer = next_matching(&mut rx, "the answer", |e| {
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    let SocketEvent::Answer(answer) = answer else {
        unreachable!()
    };
    match &answer.result {
        Err(RpcError::NotSent(why)) => assert!(why.contains("401"), "{why}"),
        other => panic!("expected not sent, got {other:?}"),
    }
    handle.send(SocketCommand::Close);
}

/// Serves `app` on a loopback port; answers its base URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// A room socket that answers every rpc 503 `busy` times, then succeeds;
/// counts the rpc frames it got.
async fn busy_socket(busy: usize) -> (String, Arc<AtomicUsize>) {
    use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let app = axum::Router::new().route(
        "/api/rooms/{room}/ws",
        axum::routing::get(move |upgrade: WebSocketUpgrade| {
            let seen = seen.clone();
            async move {
                upgrade.on_upgrade(move |mut ws: WebSocket| async move {
                    let state = r#"{"type":"cf_agent_state","state":{"messages":[],"execs":[]}}"#;
                    let _ = ws.send(Message::Text(state.into())).await;
                    while let Some(Ok(message)) = ws.recv().await {
                        let Message::Text(text) = message else {
                            continue;
                        };
                        let frame: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let id = frame["id"].clone();
                        let answer = if seen.fetch_add(1, Ordering::SeqCst) < busy {
                            serde_json::json!({"type":"rpc","id":id,"success":false,
                                "error":"the sandbox is starting","status":503,"done":true})
                        } else {
                            serde_json::json!({"type":"rpc","id":id,"success":true,
                                "result":{"interrupted":true},"done":true})
                        };
                        let _ = ws.send(Message::Text(answer.to_string().into())).await;
                    }
                })
            }
        }),
    );
    (serve(app).await, calls)
}

#[tokio::test]
async fn a_busy_backend_is_asked_again_over_the_socket_too() {
    let (url, calls) = busy_socket(2).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (handle, _task) = socket::spawn(params(&url, "busy-room", "ada", None), tx);
    next_matching(&mut rx, "connected", |e| {
        matches!(e, SocketEvent::State(ConnState::Connected { .. }))
    })
    .await;
    handle.send(SocketCommand::Call(RoomOp::Interrupt(None)));
    let answer = next_matching(&mut rx, "the answer", |e| {
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    let SocketEvent::Answer(answer) = answer else {
        unreachable!()
    };
    assert_eq!(answer.result.unwrap()["interrupted"], true);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "two 503s, then the answer");
    handle.send(SocketCommand::Close);
}

/// A server that answers `/health` with `status` (and `Retry-After: 0`)
/// `failures` times, then `ok`.
async fn flaky(status: u16, failures: usize) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let app = axum::Router::new().route(
        "/health",
        axum::routing::get(move || {
            let seen = seen.clone();
            async move {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                if n < failures {
                    axum::response::Response::builder()
                        .status(status)
                        .header("Retry-After", "0")
                        .body(axum::body::Body::from(r#"{"error":"busy"}"#))
                        .unwrap()
                } else {
                    axum::response::Response::new(axum::body::Body::from("ok"))
                }
            }
        }),
    );
    (serve(app).await, calls)
}

#[tokio::test]
async fn busy_answers_are_retried_after_retry_after() {
    for status in [503, 429] {
        let (url, calls) = flaky(status, 2).await;
        let client = HttpClient::new(&url, "r", None, "ada").unwrap();
        client.health().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3, "{status}");
    }
}

#[tokio::test]
async fn other_errors_come_back_whole() {
    let (url, _calls) = flaky(500, 1).await;
    let client = HttpClient::new(&url, "r", None, "ada").unwrap();
    match client.health().await {
        Err(HttpError::Status(err)) => {
            assert_eq!(err.status, 500);
            assert_eq!(err.error, "busy");
        }
        other => panic!("expected a 500, got {other:?}"),
    }
    let (server, _dir) = Server::fresh().await;
    let client = HttpClient::new(&server.url(""), "r", None, "ada").unwrap();
    let err = client
        .exec(duet::protocol::ExecRequest {
            cmd: "   ".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.starts_with("400 Bad Request: invalid request; cmd:"),
        "{shown}"
    );
}
