//! Floods are answered, not obeyed: over a rate a request gets 429 with
//! Retry-After (an rpc `status:429`, any other frame `duet_error`), each
//! with `retryAfterMs`; over a socket cap an upgrade gets 503; a flooding
//! socket stays open and its neighbours are served.

use crate::common::{Server, WAIT, answer, http};
use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

async fn limited(flags: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--ai-url", "http://127.0.0.1:9/v1", "--ai-model", "m"];
    args.extend_from_slice(flags);
    (Server::start(dir.path(), &args).await, dir)
}

#[tokio::test]
async fn a_room_over_its_message_rate_answers_429() {
    let (server, _dir) = limited(&["--room-messages-per-min", "3"]).await;
    for i in 0..3 {
        let (status, body) = server
            .post("/api/rooms/r/message", json!({"text": format!("m{i}")}))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let res = http()
        .post(server.url("/api/rooms/r/message"))
        .json(&json!({"text":"one too many"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 429);
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1, "{retry}");
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["error"], "rate limited");
    assert!(
        body["details"]["limit"][0]
            .as_str()
            .unwrap()
            .contains("per minute"),
        "{body}"
    );
    assert!(body["retryAfterMs"].as_u64().unwrap() > 0, "{body}");
    // Another room is not affected; commands have their own rate.
    let (status, _) = server
        .post("/api/rooms/other/message", json!({"text":"hi"}))
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .post("/api/rooms/r/sandbox/exec", json!({"cmd":"true"}))
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_socket_over_its_rates_is_answered_and_stays_open() {
    let (server, _dir) = limited(&[
        "--socket-frames-per-sec",
        "20",
        "--socket-messages-per-min",
        "2",
    ])
    .await;
    let mut flooder = server.joined("f", "user=flood").await;
    let mut neighbour = server.joined("f", "user=calm").await;
    for _ in 0..200 {
        flooder.send(json!({"type":"duet_typing"})).await;
    }
    let limited = flooder.until_type("duet_error").await;
    assert_eq!(limited["error"], "rate limited", "{limited}");
    assert!(limited["retryAfterMs"].as_u64().unwrap() > 0, "{limited}");
    // The neighbour is served at once.
    let answer = neighbour.rpc(1, "exec", json!([{"cmd":"echo calm"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    // Once the flood has drained, the flooder works again: its socket stayed open.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let answer = flooder.rpc(2, "message", json!([{"text":"one"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    let answer = flooder.rpc(3, "message", json!([{"text":"two"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    let answer = flooder.rpc(4, "message", json!([{"text":"three"}])).await;
    assert_eq!(
        (answer["success"].clone(), answer["status"].clone()),
        (json!(false), json!(429)),
        "{answer}"
    );
    assert_eq!(answer["error"], "rate limited");
    assert!(answer["retryAfterMs"].as_u64().unwrap() > 1000, "{answer}");
}

/// The status of a socket upgrade to `room`.
async fn upgrade(
    server: &Server,
    room: &str,
) -> (
    u16,
    Option<
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
    >,
) {
    let req = format!("ws://{}/api/rooms/{room}/ws?user=x", server.addr)
        .into_client_request()
        .unwrap();
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .unwrap()
    {
        Ok((ws, res)) => (res.status().as_u16(), Some(ws)),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            assert!(res.headers().contains_key("retry-after"), "{res:?}");
            (res.status().as_u16(), None)
        }
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn sockets_are_capped_per_room_and_per_server() {
    let (server, _dir) = limited(&["--max-room-sockets", "2", "--max-sockets", "3"]).await;
    let (a, _a) = upgrade(&server, "one").await;
    let (b, b_ws) = upgrade(&server, "one").await;
    assert_eq!((a, b), (101, 101));
    assert_eq!(upgrade(&server, "one").await.0, 503, "the room's cap");
    let (c, _c) = upgrade(&server, "two").await;
    assert_eq!(c, 101);
    assert_eq!(upgrade(&server, "three").await.0, 503, "the server's cap");
    // A socket that closes gives its place back.
    drop(b_ws);
    let mut again = 0;
    for _ in 0..50 {
        again = upgrade(&server, "one").await.0;
        if again == 101 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(again, 101);
    let (status, body) = answer(http().get(server.url("/api/rooms/one/messages"))).await;
    assert_eq!(status, 200, "{body}");
}
