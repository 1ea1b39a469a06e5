//! Rooms come and go: an idle room unloads and loads again on use, with
//! its history and workspace as they were.

mod common;

use common::Server;
use serde_json::{Value, json};
use std::time::Duration;

/// Runs `cmd` in `room`; its stdout.
async fn exec(server: &Server, room: &str, cmd: &str) -> String {
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": cmd}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"]["stdout"].as_str().unwrap().to_string()
}

/// The room's state as a new socket receives it on connect.
async fn state(server: &Server, room: &str) -> Value {
    let mut ws = server.ws(room, "user=ada").await;
    assert_eq!(ws.next().await["type"], "cf_agent_identity");
    let state = ws.next().await;
    ws.close().await;
    state
}

#[tokio::test]
async fn an_idle_room_unloads_and_comes_back_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--room-idle-secs", "1"]).await;
    let (status, _) = server
        .post("/api/rooms/r1/message", json!({"text":"remember me"}))
        .await;
    assert_eq!(status, 200);
    // The shell's exports live as long as the loaded room's sandbox.
    assert_eq!(
        exec(&server, "r1", "export MARK=kept; echo data > f; echo ok").await,
        "ok\n"
    );

    // While someone is connected, the room stays, however long.
    let ada = server.joined("r1", "user=ada").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(exec(&server, "r1", "echo ${MARK:-gone}").await, "kept\n");
    ada.close().await;
    let before = state(&server, "r1").await;

    // Alone, it unloads: the next command runs in a fresh shell.
    let mut unloaded = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        if exec(&server, "r1", "echo ${MARK:-gone}").await == "gone\n" {
            unloaded = true;
            break;
        }
    }
    assert!(unloaded, "the room never unloaded");

    // Loaded again: the same history, the workspace, and commands work.
    let after = state(&server, "r1").await;
    assert_eq!(after["state"]["messages"], before["state"]["messages"]);
    let (old, new) = (
        before["state"]["execs"].as_array().unwrap(),
        after["state"]["execs"].as_array().unwrap(),
    );
    assert_eq!(new[..old.len()], old[..], "earlier commands are kept");
    assert_eq!(exec(&server, "r1", "cat f").await, "data\n");
}
