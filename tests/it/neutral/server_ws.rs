//! The room's WebSocket against the real binary: connect sequence,
//! presence, typing, state frames, rpc, refused and malformed frames,
//! cleanup.

use crate::common;
use crate::common::{Server, Ws};
use serde_json::{Value, json};

fn names(presence: &Value) -> Vec<(String, String)> {
    assert_eq!(presence["type"], "duet_presence", "{presence}");
    presence["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            assert!(u["since"].as_i64().unwrap() > 0);
            (
                u["id"].as_str().unwrap().to_string(),
                u["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(id: &str, name: &str) -> (String, String) {
    (id.to_string(), name.to_string())
}

#[tokio::test]
async fn connecting_sends_identity_state_then_presence() {
    let (server, _dir) = Server::fresh().await;
    for (room, path) in [
        ("w1", "/api/rooms/w1/ws"),
        ("w1b", "/agents/duet-agent/w1b"),
    ] {
        let (status, _) = server
            .post(
                &format!("/api/rooms/{room}/message"),
                json!({"text":"earlier"}),
            )
            .await;
        assert_eq!(status, 200);
        let url = format!("ws://{}{path}?user=ada&_pk=p1", server.addr);
        let mut ws = Ws::connect(&url).await;
        assert_eq!(
            ws.next().await,
            json!({"type":"cf_agent_identity","name":room,"agent":"duet-agent"})
        );
        let state = ws.next().await;
        assert_eq!(state["type"], "cf_agent_state");
        assert_eq!(state["state"]["messages"][0]["text"], "earlier");
        assert_eq!(state["state"]["messages"].as_array().unwrap().len(), 2);
        assert_eq!(state["state"]["execs"], json!([]));
        assert_eq!(names(&ws.next().await), [pair("p1", "ada")]);
        ws.close().await;
    }
    // Without user or _pk: "anonymous" and an id the server assigns.
    let mut ws = server.ws("w2", "").await;
    ws.next().await;
    ws.next().await;
    let users = names(&ws.next().await);
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].1, "anonymous");
    assert!(!users[0].0.is_empty());
}

#[tokio::test]
async fn a_bad_room_or_user_is_refused_before_the_upgrade() {
    let (server, _dir) = Server::fresh().await;
    for path in [
        "/api/rooms/-x/ws",
        &format!("/api/rooms/r1/ws?user={}", "x".repeat(33)),
    ] {
        let err = tokio_tungstenite::connect_async(format!("ws://{}{path}", server.addr))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("400"), "{path}: {err}");
    }
}

#[tokio::test]
async fn two_clients_see_each_other_join_type_and_leave() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w3", "user=ada&_pk=a").await;
    let mut bob = server.joined("w3", "user=bob&_pk=b").await;
    assert_eq!(
        names(&ada.next().await),
        [pair("a", "ada"), pair("b", "bob")]
    );
    // Typing reaches the others only, at most every 2 s per connection.
    bob.send(json!({"type":"duet_typing"})).await;
    bob.send(json!({"type":"duet_typing"})).await;
    assert_eq!(
        ada.next().await,
        json!({"type":"duet_typing","id":"b","name":"bob"})
    );
    // Bob sees neither his own typing nor a second one: the next frame he
    // and Ada get is the state of this message.
    server
        .post("/api/rooms/w3/message", json!({"text":"hi","userId":"bob"}))
        .await;
    for ws in [&mut ada, &mut bob] {
        let frame = ws.next().await;
        assert_eq!(frame["type"], "cf_agent_state", "{frame}");
        assert_eq!(frame["state"]["messages"][0]["text"], "hi");
    }
    bob.close().await;
    let left = ada.until_type("duet_presence").await;
    assert_eq!(names(&left), [pair("a", "ada")]);
}

#[tokio::test]
async fn every_message_is_a_state_frame_to_everyone() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w4", "user=ada").await;
    let mut bob = server.joined("w4", "user=bob").await;
    ada.until_type("duet_presence").await;
    let (status, body) = server
        .post(
            "/api/rooms/w4/message",
            json!({"text":"hello","userId":"ada"}),
        )
        .await;
    assert_eq!(status, 200);
    for ws in [&mut ada, &mut bob] {
        // 1. the user message, 2. the system message (no model).
        let first = ws.until_type("cf_agent_state").await;
        assert_eq!(first["state"]["messages"].as_array().unwrap().len(), 1);
        assert_eq!(first["state"]["messages"][0]["role"], "user");
        let second = ws.until_type("cf_agent_state").await;
        assert_eq!(second["state"]["messages"], body["messages"]);
        assert_eq!(second["state"]["messages"][1]["role"], "system");
    }
}

#[tokio::test]
async fn rpc_methods_answer_like_http() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w5", "user=ada").await;
    let answer = ada.rpc(1, "message", json!([{"text":"via rpc"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["done"], true);
    assert_eq!(answer["result"]["reply"], Value::Null);
    let messages = answer["result"]["messages"].as_array().unwrap();
    // userId defaults to the connection's user.
    assert_eq!(messages[0]["userId"], "ada");
    assert_eq!(messages[1]["role"], "system");
    let answer = ada.rpc(2, "exec", json!([{"cmd":""}])).await;
    assert_eq!(answer["success"], false);
    assert_eq!(answer["status"], 400);
    assert_eq!(answer["error"], "invalid request");
    assert_eq!(answer["details"]["cmd"], json!(["must not be empty"]));
    let answer = ada.rpc(3, "dance", json!([])).await;
    assert_eq!(answer["success"], false);
    assert!(answer["error"].as_str().unwrap().contains("dance"));
    let answer = ada.rpc(4, "cancel", json!([{}])).await;
    assert_eq!(answer["result"], json!({"cancelled":false}));
    let answer = ada.rpc(5, "interrupt", json!([])).await;
    assert_eq!(answer["result"], json!({"interrupted":false}));
    let answer = ada.rpc(6, "exec", json!("not a list")).await;
    assert_eq!(answer["details"]["args"], json!(["must be an array"]));
    // String ids come back as they went.
    ada.send(json!({"type":"rpc","id":"abc","method":"cancel","args":[]}))
        .await;
    let answer = ada.until_type("rpc").await;
    assert_eq!(
        answer,
        json!({"type":"rpc","id":"abc","success":true,"result":{"cancelled":false},"done":true})
    );
}

#[tokio::test]
async fn refused_and_malformed_frames_leave_the_socket_open() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w6", "user=ada").await;
    ada.send(json!({"type":"cf_agent_state","state":{"messages":[],"execs":[]}}))
        .await;
    assert_eq!(
        ada.next().await,
        json!({"type":"cf_agent_state_error","error":"Connection is readonly"})
    );
    for garbage in [
        "not json",
        "[1]",
        r#"{"type":"dance"}"#,
        r#"{"type":5}"#,
        r#"{"type":"rpc"}"#,
    ] {
        ada.send_text(garbage).await;
        let frame = ada.next().await;
        assert_eq!(frame["type"], "duet_error", "{garbage}: {frame}");
        assert!(frame["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    // Nested past what JSON readers take (128 deep): refused alike.
    let deep = format!(
        r#"{{"type":"rpc","id":9,"method":"cancel","args":{}{}}}"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    ada.send_text(&deep).await;
    let frame = ada.next().await;
    assert_eq!(frame["type"], "duet_error", "{frame}");
    // A number beyond a double's range: refused alike (not an answer with `id: null`).
    ada.send_text(r#"{"type":"rpc","id":1e400,"method":"cancel","args":[]}"#)
        .await;
    let frame = ada.next().await;
    assert_eq!(frame["type"], "duet_error", "{frame}");
    // A size written as floats is no whole number.
    ada.send_text(r#"{"type":"rpc","id":8,"method":"term_open","args":[{"cols":80.0,"rows":24}]}"#)
        .await;
    let frame = ada.next().await;
    assert_eq!(frame["status"], 400, "{frame}");
    assert!(frame["details"]["cols"].is_array(), "{frame}");
    // Still open and serving.
    let answer = ada.rpc(7, "cancel", json!([])).await;
    assert_eq!(answer["success"], true);
}

#[tokio::test]
async fn a_frame_over_a_mebibyte_closes_the_socket_with_1009() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w7", "user=ada").await;
    // 1 MiB of padding: refused as a frame, the socket stays.
    let frame = |pad: usize| format!(r#"{{"type":"dance","pad":"{}"}}"#, "a".repeat(pad));
    ada.send_text(&frame(1024 * 1024)).await;
    assert_eq!(ada.next().await["type"], "duet_error");
    // Over 1 MiB and 4 KiB: closed, with its reason when the close frame
    // gets through (the server may cut the connection while the frame is
    // still being sent).
    ada.try_send_text(&frame(1024 * 1024 + 4096)).await;
    if let Some(close) = ada.closed().await {
        assert_eq!(close, (1009, "a frame is at most 1 MiB".to_string()));
    }
    // The room serves on.
    let mut bob = server.joined("w7", "user=bob").await;
    assert_eq!(bob.rpc(1, "cancel", json!([])).await["success"], true);
}

#[tokio::test]
async fn cleanup_empties_every_client() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w7", "user=ada").await;
    let mut bob = server.joined("w7", "user=bob").await;
    server
        .post("/api/rooms/w7/message", json!({"text":"to be forgotten"}))
        .await;
    bob.send(json!({"type":"rpc","id":1,"method":"cleanup","args":[]}))
        .await;
    for ws in [&mut ada, &mut bob] {
        let cleanup = ws.until_type("duet_cleanup").await;
        assert_eq!(cleanup, json!({"type":"duet_cleanup","by":"bob"}));
        let state = ws.next().await;
        assert_eq!(state["type"], "cf_agent_state");
        assert_only_the_cleanup_record(&state["state"], "bob");
    }
    // The answer comes after the frames.
    let answer = bob.next().await;
    assert_eq!(
        answer["result"],
        json!({"cleaned":true,"roomId":"w7"}),
        "{answer}"
    );
    let mut carl = server.ws("w7", "").await;
    carl.next().await;
    assert_only_the_cleanup_record(&carl.next().await["state"], "bob");
}

/// An emptied room's state: one record saying who cleaned it up, no
/// command, a fresh shell.
fn assert_only_the_cleanup_record(state: &Value, by: &str) {
    let messages = state["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{state}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["event"], json!({"kind":"cleanup","by":by}));
    assert_eq!(messages[0]["text"], format!("{by} cleaned up the room"));
    assert_eq!(state["execs"], json!([]));
    assert_eq!(state["shell"], json!({"cwd":"/workspace"}));
}

#[tokio::test]
async fn the_server_pings_every_twenty_seconds() {
    if common::only_duet_serve("WebSocket ping frames (a Worker cannot send them)") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("w8", "user=ada").await;
    assert!(ada.ping(std::time::Duration::from_secs(45)).await);
    // Reading answered the ping (tungstenite pongs): the socket stays open.
    let answer = ada.rpc(1, "cancel", json!([])).await;
    assert_eq!(answer["success"], true);
}

#[tokio::test]
async fn deltas_sockets_get_messages_and_others_keep_full_states() {
    let (server, _dir) = Server::fresh().await;
    server
        .post("/api/rooms/w9/message", json!({"text":"before"}))
        .await;
    let mut ada = server.ws("w9", "user=ada&deltas=1").await;
    assert_eq!(ada.next().await["type"], "cf_agent_identity");
    // On connect, the full state, deltas or not.
    let first = ada.next().await;
    assert_eq!(first["type"], "cf_agent_state");
    assert_eq!(first["state"]["messages"].as_array().unwrap().len(), 2);
    ada.until_type("duet_presence").await;
    let mut bob = server.joined("w9", "user=bob").await;
    // Bob's arrival, as a delta (see server_presence).
    ada.until_type("duet_presence_delta").await;

    let (status, body) = server
        .post(
            "/api/rooms/w9/message",
            json!({"text":"hello","userId":"bob"}),
        )
        .await;
    assert_eq!(status, 200);
    let stored = body["messages"].as_array().unwrap();
    let (question, answer) = (&stored[2], &stored[3]);
    // Ada: one frame per stored message, never a full state.
    for expected in [question, answer] {
        let frame = ada
            .until(|f| f["type"] == "duet_message" || f["type"] == "cf_agent_state")
            .await;
        assert_eq!(frame, json!({"type":"duet_message","message":expected}));
    }
    // Bob: the full state after each.
    for len in [3, 4] {
        let frame = bob.until_type("cf_agent_state").await;
        assert_eq!(frame["state"]["messages"].as_array().unwrap().len(), len);
        assert_eq!(frame["state"]["messages"][len - 1], stored[len - 1]);
    }

    // A cleanup: the emptied full state to both kinds, before the answer.
    ada.send(json!({"type":"rpc","id":1,"method":"cleanup","args":[]}))
        .await;
    for ws in [&mut ada, &mut bob] {
        assert_eq!(ws.until_type("duet_cleanup").await["by"], "ada");
        let emptied = ws.next().await;
        assert_eq!(emptied["type"], "cf_agent_state");
        assert_only_the_cleanup_record(&emptied["state"], "ada");
    }
    let answer = ada.next().await;
    assert_eq!(answer["type"], "rpc");
    assert_eq!(answer["success"], true, "{answer}");
}
