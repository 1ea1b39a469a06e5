//! A message whose answer a crash took away is sent again on reconnect with
//! its `clientId`: the person is told what became of it, never that it was
//! not sent, and the room holds it once.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, next_matching};
use duet::client::rpc::RoomOp;
use duet::client::socket::{self, SocketCommand, SocketEvent, SocketParams};
use duet::protocol::ServerFrame;
use tokio::sync::mpsc;

#[tokio::test]
async fn a_message_lost_to_a_crash_is_sent_again_and_stored_once() {
    let model = FakeModel::start(vec![Script::Hang(vec!["thinking".into()])]).await;
    let port = common::free_port();
    let addr = format!("127.0.0.1:{port}");
    let data = tempfile::tempdir().unwrap();
    let args = model.one_round_args();
    let server = Server::start_at(&addr, data.path(), &args).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let params = SocketParams {
        base: format!("http://{addr}"),
        room: "resend".into(),
        name: "ada".into(),
        token: None,
        connection_id: "c-ada".into(),
        deltas: true,
    };
    let (handle, _task) = socket::spawn(params, tx);
    handle.send(SocketCommand::Call(RoomOp::to_agent("are you there?")));
    next_matching(
        &mut rx,
        "the agent starting",
        |e| matches!(e, SocketEvent::Frame(f) if matches!(**f, ServerFrame::Ai { .. })),
    )
    .await;
    server.crash().await;
    let server = Server::start_at(&addr, data.path(), &args).await;
    let answer = next_matching(&mut rx, "the message's answer", |e| {
        matches!(e, SocketEvent::Answer(_))
    })
    .await;
    let SocketEvent::Answer(answer) = answer else {
        unreachable!()
    };
    assert_eq!(answer.op, RoomOp::to_agent("are you there?"));
    let body = answer.result.as_ref().expect("answered, not lost");
    assert_eq!(body["reply"], serde_json::Value::Null, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("restarted"),
        "{body}"
    );
    let (_, page) = server.get("/api/rooms/resend/messages").await;
    let asked = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(asked, 1, "stored once: {page}");
    handle.send(SocketCommand::Close);
}
