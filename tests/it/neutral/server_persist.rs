//! Persistence: after a restart no acknowledged message is lost and the
//! state a client receives is byte-identical to the one before.

use crate::common;
use crate::common::Server;
use serde_json::json;

#[tokio::test]
async fn the_state_survives_a_restart_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    for n in 0..3 {
        let (status, _) = server
            .post(
                "/api/rooms/keep/message",
                json!({"text": format!("note {n} ✓"), "userId": "ada"}),
            )
            .await;
        assert_eq!(status, 200);
    }
    server
        .post(
            "/api/rooms/keep/sandbox/exec",
            json!({"cmd":"echo persisted"}),
        )
        .await;
    let mut ws = server.ws("keep", "user=ada").await;
    ws.next().await;
    let before = ws.next_text().await;
    let state: serde_json::Value = serde_json::from_str(&before).unwrap();
    assert_eq!(state["state"]["execs"][0]["stdout"], "persisted\n");
    let (_, page_before) = server.get("/api/rooms/keep/messages").await;
    // The open socket does not hold the server up.
    server.stop().await;

    let server = Server::start(dir.path(), &[]).await;
    let mut ws = server.ws("keep", "user=bob").await;
    ws.next().await;
    let after = ws.next_text().await;
    assert_eq!(after, before);
    let (_, page_after) = server.get("/api/rooms/keep/messages").await;
    assert_eq!(page_after, page_before);
    assert_eq!(page_after["messages"].as_array().unwrap().len(), 6);
    // Ids go on from where they were.
    let (_, body) = server
        .post("/api/rooms/keep/message", json!({"text":"later"}))
        .await;
    assert_eq!(body["messages"][6]["id"], "000000000007");
}

#[tokio::test]
async fn a_command_running_at_sigterm_is_kept_with_its_output_and_end() {
    use common::cli::{duet, stdout};
    use common::ticks::{STOPPED, assert_cut_off, assert_state_cut_off, ticking, ticks_record};
    // The worker's local stack has no graceful stop of a room's object: it
    // keeps output as it streams, once a second (worker/test/storage.test.ts).
    if common::only_duet_serve("SIGTERM storing the running command's last output") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let mut ws = server.joined("cut", "user=ada").await;
    ticking(&server, &mut ws, "cut", 3).await;
    server.stop().await;

    let server = Server::start(dir.path(), &[]).await;
    assert_cut_off(&ticks_record(&server, "cut").await, 3);
    assert_state_cut_off(&server, "cut", 3).await;
    // And the export says how it ended.
    let out = duet(&server, "cut", &["export", "--format", "md"]);
    let md = stdout(&out);
    assert!(md.contains("tick 3") && md.contains(STOPPED), "{md}");
}
