//! Rooms come and go: an idle room unloads and loads again on use, with
//! its history and workspace as they were; the server's owner lists them
//! all (`GET /api/rooms`, a lobby's view).

use crate::common;
use crate::common::access::{TOKEN, guest, with_token};
use crate::common::apps::{self, exec_stdout as exec};
use crate::common::{Server, http};
use serde_json::{Value, json};
use std::time::Duration;

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
    if common::only_duet_serve("a room unloading when idle (--room-idle-secs)") {
        return;
    }
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

/// The rooms as the owner's client lists them.
async fn rooms(server: &Server) -> Vec<duet::protocol::RoomSummary> {
    duet::client::rooms::list(&server.url(""), server.token.as_deref())
        .await
        .expect("the owner lists the rooms")
}

/// `ts` of the newest message of `room`.
async fn newest_ts(server: &Server, room: &str) -> i64 {
    let (status, page) = server.get(&format!("/api/rooms/{room}/messages")).await;
    assert_eq!(status, 200, "{page}");
    let messages = page["messages"].as_array().unwrap();
    messages.last().unwrap()["ts"].as_i64().unwrap()
}

/// Ada says hello to the room `room` (a stored message).
async fn chat(server: &Server, room: &str) {
    let path = format!("/api/rooms/{room}/message");
    let (status, body) = server
        .post(&path, json!({"text":"hello","to":"room","userId":"ada"}))
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Waits until the clock is past `ts` (ms), so that what comes next is newer.
async fn after(ts: i64) {
    while (duet::protocol::now_ms()) <= ts {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Polls the list until `ok` holds of it (people leave as sockets close).
async fn rooms_until(
    server: &Server,
    ok: impl Fn(&[duet::protocol::RoomSummary]) -> bool,
) -> Vec<duet::protocol::RoomSummary> {
    for _ in 0..200 {
        let list = rooms(server).await;
        if ok(&list) {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the room list never got there: {:?}", rooms(server).await);
}

#[tokio::test]
async fn the_owner_lists_every_room_with_its_people_newest_change_first() {
    let (server, _dir) = with_token(&[]).await;
    assert!(rooms(&server).await.is_empty(), "no room was used yet");

    chat(&server, "older").await;
    after(newest_ts(&server, "older").await).await;
    chat(&server, "newer").await;
    // Two sockets of ada and one of bob: two people.
    let ada = server.joined("newer", "user=ada").await;
    let ada_again = server.joined("newer", "user=ada").await;
    let bob = server.joined("newer", "user=bob").await;

    let list = rooms(&server).await;
    let ids: Vec<&str> = list.iter().map(|r| r.room_id.as_str()).collect();
    assert_eq!(ids, ["newer", "older"], "newest change first: {list:?}");
    assert_eq!(list[0].people, 2, "ada twice and bob: {list:?}");
    assert_eq!(list[1].people, 0);
    assert_eq!(list[0].updated_at, newest_ts(&server, "newer").await);
    assert_eq!(list[1].updated_at, newest_ts(&server, "older").await);

    // The wire shape, as the contract writes it.
    let (status, body) = server.get("/api/rooms").await;
    assert_eq!(status, 200, "{body}");
    let first = &body["rooms"][0];
    assert_eq!(first["roomId"], "newer", "{body}");
    assert_eq!(first["people"], 2, "{body}");
    assert!(first["updatedAt"].is_i64(), "{body}");

    // People who leave are no longer counted.
    ada.close().await;
    bob.close().await;
    rooms_until(&server, |list| list[0].people == 1).await;
    ada_again.close().await;
    rooms_until(&server, |list| list.iter().all(|r| r.people == 0)).await;

    // A room with only a policy is listed too, as of when it was used.
    let before = duet::protocol::now_ms();
    let (status, body) = server
        .post("/api/rooms/quiet/policy", json!({"policy":"ask"}))
        .await;
    assert_eq!(status, 200, "{body}");
    let list = rooms(&server).await;
    let quiet = list.iter().find(|r| r.room_id == "quiet");
    let quiet = quiet.unwrap_or_else(|| panic!("the room with a policy is listed: {list:?}"));
    assert!(quiet.updated_at >= before, "{list:?}");
    assert_eq!(list[0].room_id, "quiet", "{list:?}");
}

/// A running command is the room's newest change in the list, and so is
/// one that waits behind it (the worker's room tells the list of the first
/// once it went to the sandbox, of the second at once).
#[tokio::test]
async fn running_and_waiting_commands_are_the_rooms_newest_change() {
    let (server, _dir) = with_token(&[]).await;
    chat(&server, "busy").await;
    let said = newest_ts(&server, "busy").await;
    after(said).await;
    let mut ws = server.joined("busy", "user=ada").await;
    let listed_newer_than = |ts: i64| {
        rooms_until(&server, move |list| {
            list.iter()
                .any(|r| r.room_id == "busy" && r.updated_at > ts)
        })
    };
    let watch = async {
        ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
            .await;
        listed_newer_than(said).await;
        // The second command starts after the first did: newer than it.
        let first_started = duet::protocol::now_ms();
        after(first_started).await;
        let waiting = apps::exec(&server, "busy", "true");
        let listed = async {
            ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
                .await;
            listed_newer_than(first_started).await;
            let (status, body) = server
                .post("/api/rooms/busy/sandbox/interrupt", json!({}))
                .await;
            assert_eq!(
                (status, &body["interrupted"]),
                (200, &json!(true)),
                "{body}"
            );
        };
        let (second, ()) = tokio::join!(waiting, listed);
        second
    };
    let (first, second) = tokio::join!(apps::exec(&server, "busy", "sleep 60"), watch);
    assert_eq!(first["interrupted"], true, "{first}");
    assert_eq!(second["exitCode"], 0, "{second}");
    ws.close().await;
}

#[tokio::test]
async fn only_the_servers_token_lists_rooms() {
    let (server, _dir) = with_token(&[]).await;
    chat(&server, "r1").await;
    let refused =
        json!({"error":"forbidden","details":{"role":["only the server's token may list rooms"]}});
    for role in ["owner", "writer", "viewer"] {
        let (guest, _) = guest(&server, "r1", role, None).await;
        let answer = common::answer(
            http()
                .get(server.url("/api/rooms"))
                .bearer_auth(&guest.token),
        )
        .await;
        assert_eq!(answer, (403, refused.clone()), "an invite's {role}");
        let err = duet::client::rooms::list(&server.url(""), Some(&guest.token))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("only the server's token may list rooms"),
            "{err}"
        );
    }
    let (status, _) = common::answer(http().get(server.url("/api/rooms"))).await;
    assert_eq!(status, 401, "no token");
    let (status, _) =
        common::answer(http().get(server.url("/api/rooms")).bearer_auth("not-it")).await;
    assert_eq!(status, 401, "a wrong token");
    let (status, _) = common::answer(
        http()
            .post(server.url("/api/rooms"))
            .bearer_auth(TOKEN)
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, 405, "only GET");

    // Without a token, anyone may.
    let (open, _dir) = Server::fresh().await;
    let (status, body) = open.get("/api/rooms").await;
    assert_eq!((status, body), (200, json!({"rooms": []})));
}

#[tokio::test]
async fn a_cleaned_room_is_still_listed() {
    let (server, _dir) = with_token(&[]).await;
    chat(&server, "tidy").await;
    let (status, body) = server.post("/api/rooms/tidy/cleanup", json!({})).await;
    assert!(status == 200 || status == 207, "{status} {body}");
    let list = rooms(&server).await;
    assert_eq!(
        list.iter().map(|r| r.room_id.as_str()).collect::<Vec<_>>(),
        ["tidy"],
        "{list:?}"
    );
}

/// `duet rooms ARGS…` against `server` with `token`.
fn duet_rooms(server: &Server, token: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["rooms", "--server", &server.url("")])
        .args(args)
        .env_remove("DUET_SERVER")
        .env_remove("DUET_ROOM")
        .env("DUET_TOKEN", token)
        .output()
        .unwrap()
}

#[tokio::test]
async fn duet_rooms_prints_them_for_the_owner_and_says_why_not_to_an_invite() {
    let (server, _dir) = with_token(&[]).await;
    let (status, _) = server
        .post(
            "/api/rooms/lobby-a/message",
            json!({"text":"hi","to":"room"}),
        )
        .await;
    assert_eq!(status, 200);

    let out = duet_rooms(&server, TOKEN, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let mut lines = text.lines();
    let head = lines.next().unwrap_or("");
    assert!(
        head.starts_with("ROOM") && head.contains("PEOPLE"),
        "{text}"
    );
    assert!(
        lines.any(|l| l.split_whitespace().take(2).eq(["lobby-a", "0"])),
        "{text}"
    );

    let out = duet_rooms(&server, TOKEN, &["--json"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        answer["rooms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["roomId"] == "lobby-a"),
        "{answer}"
    );

    let (guest, _) = guest(&server, "lobby-a", "owner", None).await;
    let out = duet_rooms(&server, &guest.token, &[]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("only the server's token may list rooms"),
        "{said}"
    );
    assert!(
        !said.contains(&guest.token),
        "the token is never printed: {said}"
    );
}
