//! A client that breaks the WebSocket protocol gets a proper close frame,
//! not a dropped TCP connection.

use crate::common::{Server, WAIT};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};

#[tokio::test]
async fn invalid_utf8_in_a_text_frame_closes_with_1007() {
    let (server, _dir) = Server::fresh().await;
    let url = format!("ws://{}/api/rooms/r/ws?user=ada", server.addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let bad = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    ws.send(Message::Frame(bad)).await.unwrap();
    let close = tokio::time::timeout(WAIT, async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Close(frame)) => return frame,
                Ok(_) => continue,
                Err(e) => panic!("the connection broke without a close frame: {e}"),
            }
        }
        panic!("the connection ended without a close frame")
    })
    .await
    .expect("a close frame in time");
    assert_eq!(close.map(|f| f.code), Some(CloseCode::Invalid));
    // The room still answers others.
    let (status, _) = server.get("/api/rooms/r/messages").await;
    assert_eq!(status, 200);
}
