//! The socket actor's outbox against a real `duet serve` that is stopped
//! and started again on the same port and data: messages written while it
//! is down wait, said as a sentence a person understands, and go when it
//! is back, in order, once each; a command is not run late.

use crate::common;
use crate::common::Server;
use duet::client::rpc::{RoomOp, RpcError};
use duet::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use duet::protocol::ServerFrame;
use std::time::Duration;

/// Long enough for a reconnect after the backoff grew (up to 30 s).
const RECONNECT_WAIT: Duration = Duration::from_secs(90);

fn texts(ops: &[RoomOp]) -> Vec<&str> {
    ops.iter()
        .map(|op| match op {
            RoomOp::Message { text, .. } => text.as_str(),
            other => panic!("only messages wait: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn messages_written_offline_go_on_reconnect_in_order_once_each() {
    let port = common::free_port();
    let addr = format!("127.0.0.1:{port}");
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_at(&addr, data.path(), &[]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let params = SocketParams {
        base: format!("http://{addr}"),
        room: "outbox".into(),
        name: "ada".into(),
        token: None,
        connection_id: "c-ada".into(),
        deltas: true,
    };
    let (handle, _task) = socket::spawn(params, tx);
    common::next_matching_within(
        &mut rx,
        common::WAIT,
        "the room state",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. })),
    )
    .await;

    server.stop().await;
    let down = common::next_matching_within(&mut rx, common::WAIT, "reconnecting", |e| {
        matches!(e, SocketEvent::State(ConnState::Reconnecting { reason, .. })
            if reason.contains("connection refused"))
    })
    .await;
    let SocketEvent::State(ConnState::Reconnecting { reason, .. }) = down else {
        unreachable!()
    };
    assert_eq!(
        reason,
        format!("Can't reach the server at {addr} (connection refused)"),
        "a sentence, not an error chain"
    );

    handle.send(SocketCommand::Call(RoomOp::to_agent("first")));
    handle.send(SocketCommand::Call(RoomOp::to_agent("second")));
    handle.send(SocketCommand::Call(RoomOp::Exec("echo too-late".into())));
    let waiting = common::next_matching_within(
        &mut rx,
        common::WAIT,
        "both messages waiting",
        |e| matches!(e, SocketEvent::Outbox(ops) if ops.len() == 2),
    )
    .await;
    let SocketEvent::Outbox(ops) = waiting else {
        unreachable!()
    };
    assert_eq!(texts(&ops), ["first", "second"]);
    let refused =
        common::next_matching_within(&mut rx, common::WAIT, "the command's answer", |e| {
            matches!(e, SocketEvent::Answer(_))
        })
        .await;
    let SocketEvent::Answer(refused) = refused else {
        unreachable!()
    };
    assert_eq!(refused.op, RoomOp::Exec("echo too-late".into()));
    assert!(
        matches!(&refused.result, Err(RpcError::NotSent(why)) if why.contains("Can't reach")),
        "{:?}",
        refused.result
    );

    let server = Server::start_at(&addr, data.path(), &[]).await;
    common::next_matching_within(
        &mut rx,
        RECONNECT_WAIT,
        "the outbox emptied",
        |e| matches!(e, SocketEvent::Outbox(ops) if ops.is_empty()),
    )
    .await;
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let event =
            common::next_matching_within(&mut rx, common::WAIT, "the messages' answers", |e| {
                matches!(e, SocketEvent::Answer(_))
            })
            .await;
        let SocketEvent::Answer(answer) = event else {
            unreachable!()
        };
        assert!(answer.result.is_ok(), "{:?}", answer.result);
        answered.push(answer.op);
    }
    // Each is answered (in the order the backend's turns end).
    answered.sort_by_key(|op| format!("{op:?}"));
    assert_eq!(
        answered,
        [RoomOp::to_agent("first"), RoomOp::to_agent("second")]
    );

    // Stored once each, in order, and the command never ran.
    let (_, page) = server.get("/api/rooms/outbox/messages").await;
    let asked: Vec<&str> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["first", "second"], "{page}");
    let mut probe = server.ws("outbox", "user=probe").await;
    let state = probe.until_type("cf_agent_state").await;
    let execs = state["state"]["execs"].as_array().unwrap();
    assert!(execs.is_empty(), "{execs:?}");
    handle.send(SocketCommand::Close);
}

#[tokio::test]
async fn messages_written_in_a_burst_are_stored_in_the_order_written() {
    let (server, _data) = Server::fresh().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let params = SocketParams {
        base: server.url(""),
        room: "burst".into(),
        name: "ada".into(),
        token: None,
        connection_id: "c-ada".into(),
        deltas: true,
    };
    let (handle, _task) = socket::spawn(params, tx);
    common::next_matching_within(
        &mut rx,
        common::WAIT,
        "the room state",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::State { .. })),
    )
    .await;
    let written: Vec<String> = (1..=5).map(|i| format!("burst {i}")).collect();
    for text in &written {
        handle.send(SocketCommand::Call(RoomOp::to_agent(text.clone())));
    }
    for _ in &written {
        common::next_matching_within(
            &mut rx,
            RECONNECT_WAIT,
            "an answer",
            |e| matches!(e, SocketEvent::Answer(a) if a.result.is_ok()),
        )
        .await;
    }
    let (_, page) = server.get("/api/rooms/burst/messages").await;
    let stored: Vec<&str> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(stored, written, "{page}");
    handle.send(SocketCommand::Close);
}
