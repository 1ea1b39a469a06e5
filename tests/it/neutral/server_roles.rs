//! Invites and roles, as docs/protocol.md "Invites, roles and approvals"
//! says, over real sockets and HTTP to a real backend: an invite's shape,
//! token and link; listing and revoking; who may do what (a viewer's every
//! forbidden call, a writer's allowed ones and owner-only refusals); the
//! room an invite is for; expiry and revocation closing sockets with 4401
//! and cutting its tunnels and previews (demotion too, where the role no
//! longer allows them);
//! a role changed live (a demoted writer's window no longer sizes the
//! terminal); names an invite fixes; the connect frames; the
//! tokenless server; and invites kept across a restart. Backend-neutral.

use crate::common;
use crate::common::access::{
    Guest, assert_forbidden, assert_rpc_forbidden, enter, guest, invite, owner_joins,
    refused_status, start_with_token, with_token,
};
use crate::common::apps::{
    TCP_ECHO_PY, Tunnel, WS_ECHO_PY, delete, exec, preview_url, put_file, python_app, room_path,
    start, tunnel,
};
use crate::common::{Server, WAIT, Ws, http};
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.as_str().unwrap())
        .unwrap()
}

/// The owner's list of the room's invites.
async fn invites(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/invites")).await;
    assert_eq!(status, 200, "{body}");
    body["invites"].as_array().unwrap().clone()
}

fn unknown_invite(id: &str) -> Value {
    json!({"error":"no such invite","details":{"inviteId":[format!("no invite \"{id}\" in this room")]}})
}

/// The room's messages, oldest first (by the owner).
async fn messages(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/messages")).await;
    assert_eq!(status, 200, "{body}");
    body["messages"].as_array().unwrap().clone()
}

/// Whether a file exists in the room's workspace (asked by the owner).
async fn exists(server: &Server, room: &str, path: &str) -> bool {
    let (status, _) = server
        .get(&room_path(room, &format!("/files/{path}")))
        .await;
    assert!(status == 200 || status == 404, "{path}: {status}");
    status == 200
}

/// Opens the room's terminal from `ws` at `cols`×`rows`; its `termId`.
/// Reads the answer and the snapshot after it.
async fn open_terminal(ws: &mut Ws, id: u64, cols: u16, rows: u16) -> Value {
    let answer = ws
        .rpc(id, "term_open", json!([{"cols": cols, "rows": rows}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let snapshot = ws.next().await;
    assert_eq!(
        (&snapshot["type"], &snapshot["snapshot"]),
        (&json!("duet_term"), &json!(true)),
        "{snapshot}"
    );
    answer["result"].clone()
}

/// Reads `ws`'s terminal output until it holds `what`; answers it all.
async fn terminal_until(ws: &mut Ws, term_id: &Value, what: &str) -> String {
    let mut out = String::new();
    while !out.contains(what) {
        let f = ws.next().await;
        if f["type"] == "duet_term" && f["phase"] == "data" && f["termId"] == *term_id {
            out.push_str(&String::from_utf8_lossy(&unb64(&f["data"])));
        }
    }
    out
}

#[tokio::test]
async fn an_invite_has_the_contract_s_shape_and_its_link_joins_the_room() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-shape";
    let before = now_ms();
    let created = invite(
        &server,
        room,
        json!({"role":"viewer","name":"vera","userId":"olga"}),
    )
    .await;
    let after = now_ms();
    let mut keys: Vec<&String> = created.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["invite", "token", "url"], "{created}");
    let inv = &created["invite"];
    assert_eq!(inv["id"], "i1", "{inv}");
    assert_eq!(inv["role"], "viewer");
    assert_eq!(inv["name"], "vera");
    assert_eq!(inv["by"], "olga");
    let created_at = inv["createdAt"].as_u64().unwrap();
    assert!(
        (before.saturating_sub(2000)..=after + 2000).contains(&created_at),
        "{inv}"
    );
    // The default lifetime is a day.
    let expires_at = inv["expiresAt"].as_u64().unwrap();
    assert!(
        expires_at.abs_diff(created_at + 86_400_000) <= 2000,
        "{inv}"
    );
    // The token: `duet_inv_` and 40 hex digits, unlike the server's.
    let token = created["token"].as_str().unwrap();
    let hex = token.strip_prefix("duet_inv_").expect(token);
    assert!(
        hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    // The link is `duet join`'s: this backend, this room, this token.
    let url = created["url"].as_str().unwrap();
    assert_eq!(url, format!("http://{token}@{}/{room}", server.addr));
    let link = duet::client::join::parse_link(url).unwrap();
    assert_eq!(link.server, format!("http://{}", server.addr));
    assert_eq!(link.room, room);
    assert_eq!(link.token.as_deref(), Some(token));
    let joined = Guest {
        addr: server.addr.clone(),
        room: link.room.clone(),
        token: link.token.clone().unwrap(),
    };
    let (status, body) = joined.get("/messages").await;
    assert_eq!(status, 200, "{body}");

    // A second one: its own id and token; `expiresIn` is honoured.
    let second = invite(&server, room, json!({"role":"writer","expiresIn":60})).await;
    let inv2 = &second["invite"];
    assert_eq!(inv2["id"], "i2");
    assert!(inv2.get("name").is_none(), "{inv2}");
    assert_ne!(second["token"], created["token"]);
    let made = inv2["createdAt"].as_u64().unwrap();
    assert!(
        inv2["expiresAt"].as_u64().unwrap().abs_diff(made + 60_000) <= 2000,
        "{inv2}"
    );

    // The list: oldest first, the same invites, never a token.
    let listed = invites(&server, room).await;
    assert_eq!(listed, vec![inv.clone(), inv2.clone()]);
    let text = serde_json::to_string(&listed).unwrap();
    assert!(
        !text.contains(token) && !text.contains("duet_inv_"),
        "{text}"
    );
    // Another room has its own (none).
    assert_eq!(invites(&server, "inv-other").await, Vec::<Value>::new());
}

#[tokio::test]
async fn bad_invite_bodies_are_400s_with_the_field_named() {
    let (server, _dir) = with_token(&[]).await;
    let path = room_path("inv-bad", "/invites");
    for (body, field) in [
        (json!({}), "role"),
        (json!({"role":"admin"}), "role"),
        (json!({"role":"viewer","expiresIn":0}), "expiresIn"),
        (json!({"role":"viewer","expiresIn":31_536_001}), "expiresIn"),
        (json!({"role":"viewer","expiresIn":"soon"}), "expiresIn"),
        (json!({"role":"viewer","name":""}), "name"),
        (json!({"role":"viewer","name":"x".repeat(33)}), "name"),
    ] {
        let (status, answer) = server.post(&path, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], "invalid request", "{body}: {answer}");
        assert!(
            answer["details"][field]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{body}: {answer}"
        );
    }
    assert_eq!(
        server.post(&path, json!({"role":"admin"})).await.1["details"]["role"],
        json!(["must be owner, writer or viewer"])
    );
    // The longest lifetime is a year; nothing bad was made.
    invite(
        &server,
        "inv-bad",
        json!({"role":"viewer","expiresIn":31_536_000}),
    )
    .await;
    assert_eq!(invites(&server, "inv-bad").await.len(), 1);
}

#[tokio::test]
async fn a_revoked_invite_answers_401_at_once_and_its_sockets_close_with_4401() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-revoke";
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let (kept, kept_inv) = guest(&server, room, "viewer", None).await;
    let mut socket = vera.joins("user=vera").await;
    let mut other = kept.joins("user=kim").await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!((status, body), (200, json!({"revoked": true})));
    // At once: no request or new socket gets in with it.
    let (status, body) = vera.get("/messages").await;
    assert_eq!((status, body), (401, json!({"error":"unauthorized"})));
    assert_eq!(vera.upgrade_refused("/ws?user=vera").await, 401);
    assert_eq!(
        socket.ws.closed().await,
        Some((4401, "the invite was revoked".to_string()))
    );
    // The other invite's socket stays, and sees vera leave.
    let left = other
        .ws
        .until(|f| {
            f["type"] == "duet_presence"
                && !f["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|u| u["name"] == "vera")
        })
        .await;
    assert!(
        left["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["name"] == "kim")
    );
    assert_eq!(kept.get("/messages").await.0, 200);
    // It is gone from the list; a second revoke does not know it.
    assert_eq!(invites(&server, room).await, vec![kept_inv]);
    let again = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(again, (404, unknown_invite(id)));
    let (status, body) = delete(&server, &room_path(room, "/invites/i9")).await;
    assert_eq!((status, body), (404, unknown_invite("i9")));
}

#[tokio::test]
async fn an_expired_invite_answers_401_and_its_socket_closes_with_4401_when_it_expires() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-expire";
    let created = invite(&server, room, json!({"role":"writer","expiresIn":3})).await;
    let wes = Guest {
        addr: server.addr.clone(),
        room: room.to_string(),
        token: created["token"].as_str().unwrap().to_string(),
    };
    let mut socket = wes.joins("user=wes").await;
    assert_eq!(socket.you["role"], "writer");
    // The socket is closed when the invite expires, without a request.
    assert_eq!(
        socket.ws.closed().await,
        Some((4401, "the invite expired".to_string()))
    );
    assert!(now_ms() + 1000 >= created["invite"]["expiresAt"].as_u64().unwrap());
    let (status, body) = wes.get("/messages").await;
    assert_eq!((status, body), (401, json!({"error":"unauthorized"})));
    let (status, _) = wes.post("/sandbox/exec", json!({"cmd":"true"})).await;
    assert_eq!(status, 401);
    assert_eq!(wes.upgrade_refused("/ws?user=wes").await, 401);
    assert_eq!(invites(&server, room).await, Vec::<Value>::new());
    let id = created["invite"]["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!((status, body), (404, unknown_invite(id)));
}

#[tokio::test]
async fn an_invite_opens_its_own_room_only() {
    let (server, _dir) = with_token(&[]).await;
    let (ann, _) = guest(&server, "room-a", "owner", None).await;
    assert_eq!(ann.get("/messages").await.0, 200);
    let elsewhere = ann.in_room("room-b");
    for answer in [
        elsewhere.get("/messages").await,
        elsewhere.post("/sandbox/exec", json!({"cmd":"true"})).await,
        elsewhere
            .post("/message", json!({"text":"hi","to":"room"}))
            .await,
        elsewhere.get("/invites").await,
    ] {
        assert_eq!(answer, (401, json!({"error":"unauthorized"})));
    }
    assert_eq!(elsewhere.upgrade_refused("/ws?user=ann").await, 401);
    // The Agents SDK path of the other room is refused too.
    let url = format!(
        "ws://{}/agents/duet-agent/room-b?user=ann&token={}",
        server.addr, ann.token
    );
    assert_eq!(refused_status(&url).await, 401);
    // Nothing was stored there.
    assert_eq!(messages(&server, "room-b").await, Vec::<Value>::new());
}

#[tokio::test]
async fn on_connect_duet_you_comes_right_after_presence_with_the_role() {
    let (server, _dir) = with_token(&[]).await;
    let room = "you-order";
    let owner = owner_joins(&server, room, "user=olga&_pk=pk-olga").await;
    assert_eq!(
        owner.you,
        json!({"type":"duet_you","id":"pk-olga","name":"olga","role":"owner"})
    );
    let olga = &owner.users[0];
    assert_eq!(
        (&olga["id"], &olga["name"], &olga["role"]),
        (&json!("pk-olga"), &json!("olga"), &json!("owner"))
    );
    assert!(olga["since"].is_number(), "{olga}");
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let viewer = vera.joins("user=vera&_pk=pk-vera").await;
    assert_eq!(
        viewer.you,
        json!({"type":"duet_you","id":"pk-vera","name":"vera","role":"viewer","inviteId":inv["id"]})
    );
    let users = viewer.users.as_array().unwrap();
    let role_of = |id: &str| users.iter().find(|u| u["id"] == id).unwrap()["role"].clone();
    assert_eq!(role_of("pk-olga"), "owner");
    assert_eq!(role_of("pk-vera"), "viewer");
    // The viewer's state is the room's, in full.
    assert_eq!(viewer.state["policy"], "auto");
    assert_eq!(viewer.state["approvals"], json!([]));
    assert!(viewer.state["allow"].is_array(), "{}", viewer.state);
}

#[tokio::test]
async fn a_tokenless_server_makes_everyone_owner_and_refuses_invites_with_409() {
    let (server, _dir) = Server::fresh().await;
    let room = "no-token";
    let refusal = json!({"error":"invites need a token","details":{"token":["this server has no token, so everyone in it is an owner: start it with --token (or DUET_TOKEN) to invite people with roles"]}});
    let answer = server
        .post(&room_path(room, "/invites"), json!({"role":"viewer"}))
        .await;
    assert_eq!(answer, (409, refusal.clone()));
    let mut joined = enter(server.ws(room, "user=ada&_pk=pk-ada").await).await;
    assert_eq!(
        joined.you,
        json!({"type":"duet_you","id":"pk-ada","name":"ada","role":"owner"})
    );
    let frame = joined
        .ws
        .rpc(1, "invite_create", json!([{"role":"writer"}]))
        .await;
    assert_eq!(frame["success"], false, "{frame}");
    assert_eq!(frame["status"], 409);
    assert_eq!(frame["error"], refusal["error"]);
    assert_eq!(frame["details"], refusal["details"]);
}

/// A room where the owner has set up one of everything a viewer might
/// touch: a file, a running process, a checkpoint, an invite.
struct Furnished {
    process: String,
    checkpoint: String,
    invite: String,
}

async fn furnish(server: &Server, room: &str) -> Furnished {
    put_file(server, room, "kept.txt", b"the owner's".to_vec()).await;
    let process = start(server, room, json!({"cmd":"sleep 600"})).await;
    let (status, checkpoint) = server
        .post(&room_path(room, "/checkpoints"), json!({"name":"before"}))
        .await;
    assert_eq!(status, 200, "{checkpoint}");
    let created = invite(server, room, json!({"role":"writer"})).await;
    Furnished {
        process: process["id"].as_str().unwrap().to_string(),
        checkpoint: checkpoint["checkpoint"]["id"].as_str().unwrap().to_string(),
        invite: created["invite"]["id"].as_str().unwrap().to_string(),
    }
}

/// That nothing a refused call would have done was done.
async fn still_furnished(server: &Server, room: &str, f: &Furnished, invites_before: usize) {
    assert!(exists(server, room, "kept.txt").await);
    assert!(!exists(server, room, "intruder.txt").await);
    let (_, p) = server
        .get(&room_path(room, &format!("/processes/{}", f.process)))
        .await;
    assert_eq!(p["process"]["status"], "running", "{p}");
    let (_, list) = server.get(&room_path(room, "/checkpoints")).await;
    let names: Vec<&Value> = list["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("before")]);
    let listed = invites(server, room).await;
    assert_eq!(listed.len(), invites_before);
    let writer = listed
        .iter()
        .find(|i| i["id"] == f.invite.as_str())
        .unwrap();
    assert_eq!(writer["role"], "writer");
    let (_, execs) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(execs["processes"].as_array().unwrap().len(), 1, "{execs}");
    // No command ran, no message reached the agent, the room was not cleaned.
    let texts: Vec<Value> = messages(server, room)
        .await
        .iter()
        .map(|m| m["text"].clone())
        .collect();
    assert!(
        !texts
            .iter()
            .any(|t| t.as_str().unwrap().contains("agent, please")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_viewer_s_every_forbidden_call_over_http_is_a_403_and_does_nothing() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-http";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let invites_before = invites(&server, room).await.len();
    let (p, c, i) = (&f.process, &f.checkpoint, &f.invite);
    let calls: Vec<(&str, (u16, Value))> = vec![
        (
            "ask the agent",
            vera.post("/message", json!({"text":"agent, please rm -rf /"}))
                .await,
        ),
        (
            "ask the agent (to: agent)",
            vera.post("/message", json!({"text":"agent, please","to":"agent"}))
                .await,
        ),
        (
            "exec",
            vera.post("/sandbox/exec", json!({"cmd":"touch intruder.txt"}))
                .await,
        ),
        (
            "interrupt",
            vera.post("/sandbox/interrupt", json!({})).await,
        ),
        ("cancel", vera.post("/cancel", json!({})).await),
        (
            "PUT a file",
            vera.put("/files/intruder.txt?userId=vera", b"x").await,
        ),
        (
            "DELETE a file",
            vera.delete("/files/kept.txt?userId=vera").await,
        ),
        (
            "start a process",
            vera.post("/processes", json!({"cmd":"touch intruder.txt"}))
                .await,
        ),
        (
            "kill a process",
            vera.delete(&format!("/processes/{p}")).await,
        ),
        (
            "POST to a preview",
            common::answer(
                vera.request(reqwest::Method::POST, "/ports/8000/")
                    .body("x"),
            )
            .await,
        ),
        (
            "DELETE on a preview",
            common::answer(vera.request(reqwest::Method::DELETE, "/ports/8000/x")).await,
        ),
        (
            "take a checkpoint",
            vera.post("/checkpoints", json!({})).await,
        ),
        (
            "restore a checkpoint",
            vera.post(&format!("/checkpoints/{c}/restore"), json!({}))
                .await,
        ),
        (
            "delete a checkpoint",
            vera.delete(&format!("/checkpoints/{c}")).await,
        ),
        (
            "fork",
            vera.post("/fork", json!({"to":"viewer-http-fork"})).await,
        ),
        ("cleanup", vera.post("/cleanup", json!({})).await),
        (
            "set the policy",
            vera.post("/policy", json!({"policy":"off"})).await,
        ),
        (
            "approve",
            vera.post("/approve", json!({"approvalId":"a1","approved":true}))
                .await,
        ),
        (
            "create an invite",
            vera.post("/invites", json!({"role":"owner"})).await,
        ),
        ("list the invites", vera.get("/invites").await),
        (
            "revoke an invite",
            vera.delete(&format!("/invites/{i}")).await,
        ),
        (
            "set a role",
            vera.post(&format!("/invites/{i}/role"), json!({"role":"viewer"}))
                .await,
        ),
    ];
    for (what, answer) in &calls {
        assert_forbidden(what, answer, "viewer");
    }
    // A WebSocket to a preview, and a tunnel, are refused before they upgrade.
    assert_eq!(vera.upgrade_refused("/ports/8000/").await, 403);
    assert_eq!(vera.upgrade_refused("/tunnel/8000").await, 403);
    // The check comes after the body's own problems.
    let (status, body) = vera.post("/sandbox/exec", json!({"cmd": 7})).await;
    assert_eq!(status, 400, "{body}");
    still_furnished(&server, room, &f, invites_before).await;
    let cleaned = messages(&server, room)
        .await
        .iter()
        .any(|m| m["event"]["kind"] == "cleanup");
    assert!(!cleaned, "the room was not cleaned up");
    let (_, state) = server
        .get(&room_path("viewer-http-fork", "/messages"))
        .await;
    assert_eq!(state["messages"], json!([]), "no fork was made");
}

#[tokio::test]
async fn a_viewer_s_every_forbidden_rpc_is_a_403_and_terminal_frames_are_refused() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-rpc";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let invites_before = invites(&server, room).await.len();
    let mut viewer = vera.joins("user=vera").await;
    let (p, c, i) = (&f.process, &f.checkpoint, &f.invite);
    let calls = [
        ("message", json!([{"text":"agent, please rm -rf /"}])),
        ("exec", json!([{"cmd":"touch intruder.txt"}])),
        ("interrupt", json!([{}])),
        ("cancel", json!([{}])),
        ("cleanup", json!([])),
        ("process_start", json!([{"cmd":"touch intruder.txt"}])),
        ("process_kill", json!([{"processId": p}])),
        ("term_open", json!([{"cols":80,"rows":24}])),
        ("checkpoint_create", json!([{}])),
        ("checkpoint_restore", json!([{"checkpointId": c}])),
        ("checkpoint_delete", json!([{"checkpointId": c}])),
        ("fork", json!([{"to":"viewer-rpc-fork"}])),
        ("set_policy", json!([{"policy":"off"}])),
        ("approve", json!([{"approvalId":"a1","approved":true}])),
        ("set_role", json!([{"inviteId": i, "role":"viewer"}])),
        ("invite_create", json!([{"role":"owner"}])),
        ("invite_revoke", json!([{"inviteId": i}])),
    ];
    for (n, (method, args)) in calls.iter().enumerate() {
        let answer = viewer.ws.rpc(100 + n as u64, method, args.clone()).await;
        assert_rpc_forbidden(method, &answer, "viewer");
    }
    // No terminal was opened by the viewer's term_open.
    let state = owner_joins(&server, room, "user=olga").await;
    assert_eq!(state.state["terminal"], Value::Null);

    // Once the owner runs one, the viewer may watch it, but not type into
    // it, size it or close it.
    let mut owner = state.ws;
    let term = open_terminal(&mut owner, 1, 100, 30).await;
    let term_id = term["termId"].clone();
    let watched = open_terminal(&mut viewer.ws, 2, 40, 10).await;
    assert_eq!(watched, json!({"termId": term_id, "cols": 100, "rows": 30}));
    viewer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"touch intruder.txt; echo VIEWER-TYPED\r")}))
        .await;
    let refused = viewer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));
    viewer
        .ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":20,"rows":5}))
        .await;
    let refused = viewer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));
    let close = viewer
        .ws
        .rpc(3, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_rpc_forbidden("term_close", &close, "viewer");
    // The owner's keys reach the shell; the viewer's never did.
    owner
        .send(
            json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo OWNER-$((6*7))\r")}),
        )
        .await;
    let screen = terminal_until(&mut owner, &term_id, "OWNER-42").await;
    assert!(!screen.contains("VIEWER-TYPED"), "{screen}");
    let viewer_saw = terminal_until(&mut viewer.ws, &term_id, "OWNER-42").await;
    assert!(!viewer_saw.contains("VIEWER-TYPED"), "{viewer_saw}");
    let me = owner_joins(&server, room, "user=check").await;
    assert_eq!(
        me.state["terminal"],
        json!({"termId": term_id, "cols": 100, "rows": 30}),
        "the viewer's size never counted and the terminal runs"
    );
    still_furnished(&server, room, &f, invites_before).await;
}

#[tokio::test]
async fn a_viewer_reads_everything_chats_follows_and_watches() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-may";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let mut viewer = vera.joins("user=vera").await;
    // Reads.
    for rest in [
        "/messages".to_string(),
        "/files/kept.txt".to_string(),
        "/files/".to_string(),
        "/processes".to_string(),
        format!("/processes/{}", f.process),
        format!("/processes/{}/logs", f.process),
        "/ports".to_string(),
        "/checkpoints".to_string(),
    ] {
        let (status, body) = vera.get(&rest).await;
        assert_eq!(status, 200, "GET {rest}: {body}");
    }
    assert_eq!(vera.get("/files/kept.txt").await.1, "the owner's");
    // A preview's GET is no refusal (nothing listens there: 502).
    let (status, body) = vera.get("/ports/8000/").await;
    assert_eq!(status, 502, "{body}");
    // Chat to the room, over HTTP and rpc; typing; rename.
    let (status, body) = vera
        .post(
            "/message",
            json!({"text":"hello room","to":"room","userId":"vera"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null);
    assert!(body.get("error").is_none(), "{body}");
    let said = viewer
        .ws
        .rpc(1, "message", json!([{"text":"and again","to":"room"}]))
        .await;
    assert_eq!(said["success"], true, "{said}");
    let texts: Vec<Value> = messages(&server, room)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| json!([m["userId"], m["text"], m["to"]]))
        .collect();
    assert_eq!(
        texts,
        [
            json!(["vera", "hello room", "room"]),
            json!(["vera", "and again", "room"])
        ]
    );
    viewer.ws.send(json!({"type":"duet_typing"})).await;
    let typing = owner.ws.until_type("duet_typing").await;
    assert_eq!(typing["name"], "vera");
    let renamed = viewer.ws.rpc(2, "rename", json!([{"name":"vee"}])).await;
    assert_eq!(renamed["result"], json!({"name":"vee"}), "{renamed}");
    // Follow a process's output, and stop.
    let follow = viewer
        .ws
        .rpc(3, "process_follow", json!([{"processId": f.process}]))
        .await;
    assert_eq!(follow["success"], true, "{follow}");
    assert_eq!(follow["result"]["processId"], f.process.as_str());
    let unfollow = viewer
        .ws
        .rpc(4, "process_unfollow", json!([{"processId": f.process}]))
        .await;
    assert_eq!(unfollow["result"], json!({"unfollowed": true}));
    // Watch a running terminal, its size not counted; then detach.
    let term = open_terminal(&mut owner.ws, 5, 90, 25).await;
    let term_id = term["termId"].clone();
    let watched = open_terminal(&mut viewer.ws, 6, 30, 8).await;
    assert_eq!(watched, json!({"termId": term_id, "cols": 90, "rows": 25}));
    let detached = viewer
        .ws
        .rpc(7, "term_detach", json!([{"termId": term_id}]))
        .await;
    assert_eq!(detached["result"], json!({"detached": true}), "{detached}");
    // The viewer is sent everything: a command's stream.
    exec(&server, room, "echo for-everyone").await;
    let out = viewer
        .ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    assert_eq!(out["data"], "for-everyone\n");
}

#[tokio::test]
async fn a_writer_may_act_but_not_clean_up_fork_invite_or_set_roles() {
    let (server, _dir) = with_token(&[]).await;
    let room = "writer";
    let f = furnish(&server, room).await;
    let (wes, _) = guest(&server, room, "writer", None).await;
    let ok = |what: &str, (status, body): &(u16, Value)| {
        assert_eq!(*status, 200, "{what}: {body}");
    };
    let ran = wes
        .post("/sandbox/exec", json!({"cmd":"echo by-the-writer"}))
        .await;
    ok("exec", &ran);
    assert_eq!(ran.1["result"]["stdout"], "by-the-writer\n");
    ok(
        "interrupt",
        &wes.post("/sandbox/interrupt", json!({})).await,
    );
    ok("cancel", &wes.post("/cancel", json!({})).await);
    // Asking the agent is allowed (this backend has no model: it says so).
    let asked = wes.post("/message", json!({"text":"hello agent"})).await;
    ok("ask the agent", &asked);
    assert_eq!(asked.1["reply"], Value::Null);
    ok(
        "PUT a file",
        &wes.put("/files/w.txt?userId=wes", b"w").await,
    );
    ok(
        "DELETE a file",
        &wes.delete("/files/w.txt?userId=wes").await,
    );
    let started = wes.post("/processes", json!({"cmd":"sleep 600"})).await;
    ok("start a process", &started);
    let pid = started.1["process"]["id"].as_str().unwrap().to_string();
    ok(
        "kill a process",
        &wes.delete(&format!("/processes/{pid}")).await,
    );
    let taken = wes.post("/checkpoints", json!({"name":"w1"})).await;
    ok("take a checkpoint", &taken);
    let cid = taken.1["checkpoint"]["id"].as_str().unwrap().to_string();
    ok(
        "restore a checkpoint",
        &wes.post(&format!("/checkpoints/{cid}/restore"), json!({}))
            .await,
    );
    ok(
        "delete a checkpoint",
        &wes.delete(&format!("/checkpoints/{cid}")).await,
    );
    let policy = wes.post("/policy", json!({"policy":"ask"})).await;
    assert_eq!(policy, (200, json!({"policy":"ask"})));
    // Over the socket: open, type into, resize and close the terminal.
    let mut writer = wes.joins("user=wes").await;
    let term = open_terminal(&mut writer.ws, 1, 80, 24).await;
    let term_id = term["termId"].clone();
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo W-$((2*21))\r")}))
        .await;
    terminal_until(&mut writer.ws, &term_id, "W-42").await;
    writer
        .ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":70,"rows":20}))
        .await;
    let resized = writer
        .ws
        .until(|f| f["type"] == "duet_term" && f["phase"] == "resize")
        .await;
    assert_eq!(
        (&resized["cols"], &resized["rows"]),
        (&json!(70), &json!(20))
    );
    let closed = writer
        .ws
        .rpc(2, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_eq!(closed["result"], json!({"closed": true}), "{closed}");
    let set = writer
        .ws
        .rpc(3, "set_policy", json!([{"policy":"auto"}]))
        .await;
    assert_eq!(set["result"], json!({"policy":"auto"}), "{set}");

    // What only an owner may do.
    let i = &f.invite;
    for (what, answer) in [
        ("cleanup", wes.post("/cleanup", json!({})).await),
        ("fork", wes.post("/fork", json!({"to":"writer-fork"})).await),
        (
            "create an invite",
            wes.post("/invites", json!({"role":"viewer"})).await,
        ),
        ("list the invites", wes.get("/invites").await),
        (
            "revoke an invite",
            wes.delete(&format!("/invites/{i}")).await,
        ),
        (
            "set a role",
            wes.post(&format!("/invites/{i}/role"), json!({"role":"owner"}))
                .await,
        ),
    ] {
        assert_forbidden(what, &answer, "writer");
    }
    for (n, (method, args)) in [
        ("cleanup", json!([])),
        ("fork", json!([{"to":"writer-fork"}])),
        ("invite_create", json!([{"role":"viewer"}])),
        ("invite_revoke", json!([{"inviteId": i}])),
        ("set_role", json!([{"inviteId": i, "role":"owner"}])),
    ]
    .iter()
    .enumerate()
    {
        let answer = writer.ws.rpc(10 + n as u64, method, args.clone()).await;
        assert_rpc_forbidden(method, &answer, "writer");
    }
    // The room kept its history and invites; the writer is still a writer.
    assert!(exists(&server, room, "kept.txt").await);
    assert_eq!(invites(&server, room).await.len(), 2);
    assert_eq!(
        server.get(&room_path("writer-fork", "/messages")).await.1["messages"],
        json!([])
    );
}

#[tokio::test]
async fn a_role_change_is_seen_live_and_judges_the_next_call() {
    let (server, _dir) = with_token(&[]).await;
    let room = "live-role";
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let id = inv["id"].as_str().unwrap().to_string();
    let mut owner = owner_joins(&server, room, "user=olga&_pk=pk-olga").await;
    let mut viewer = vera.joins("user=vera&_pk=pk-vera").await;
    let refused = viewer.ws.rpc(1, "exec", json!([{"cmd":"echo no"}])).await;
    assert_rpc_forbidden("exec", &refused, "viewer");

    let (answer, before) = owner
        .ws
        .rpc_keeping(2, "set_role", json!([{"inviteId": id, "role":"writer"}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let changed = &answer["result"]["invite"];
    assert_eq!(
        (&changed["id"], &changed["role"]),
        (&json!(id), &json!("writer"))
    );
    let you = viewer.ws.until_type("duet_you").await;
    assert_eq!(
        you,
        json!({"type":"duet_you","id":"pk-vera","name":"vera","role":"writer","inviteId":id})
    );
    let role_in = |f: &Value| {
        f["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["id"] == "pk-vera")
            .map(|u| u["role"].clone())
    };
    let now_writer =
        |f: &Value| f["type"] == "duet_presence" && role_in(f) == Some(json!("writer"));
    if !before.iter().any(now_writer) {
        owner.ws.until(now_writer).await;
    }
    let ran = viewer
        .ws
        .rpc(3, "exec", json!([{"cmd":"echo now-a-writer"}]))
        .await;
    assert_eq!(ran["success"], true, "{ran}");
    assert_eq!(ran["result"]["result"]["stdout"], "now-a-writer\n");
    assert_eq!(
        vera.post("/sandbox/exec", json!({"cmd":"true"})).await.0,
        200
    );

    // Back to viewer over HTTP: the next call is refused again.
    let (status, body) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"viewer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["invite"]["role"], "viewer");
    let you = viewer.ws.until_type("duet_you").await;
    assert_eq!(you["role"], "viewer");
    let refused = viewer.ws.rpc(4, "exec", json!([{"cmd":"echo no"}])).await;
    assert_rpc_forbidden("exec", &refused, "viewer");
    assert_forbidden(
        "exec over HTTP",
        &vera.post("/sandbox/exec", json!({"cmd":"true"})).await,
        "viewer",
    );
    assert_eq!(invites(&server, room).await[0]["role"], "viewer");

    // Bad role, unknown invite.
    let bad = owner
        .ws
        .rpc(5, "set_role", json!([{"inviteId": id, "role":"boss"}]))
        .await;
    assert_eq!(
        (&bad["status"], &bad["error"]),
        (&json!(400), &json!("invalid request")),
        "{bad}"
    );
    assert!(bad["details"]["role"].is_array(), "{bad}");
    let unknown = owner
        .ws
        .rpc(6, "set_role", json!([{"inviteId":"i9","role":"writer"}]))
        .await;
    assert_eq!(unknown["status"], 404, "{unknown}");
    assert_eq!(
        json!({"error": unknown["error"], "details": unknown["details"]}),
        unknown_invite("i9")
    );
    // Revoking over rpc closes the socket.
    let revoked = owner
        .ws
        .rpc(7, "invite_revoke", json!([{"inviteId": id}]))
        .await;
    assert_eq!(revoked["result"], json!({"revoked": true}), "{revoked}");
    assert_eq!(
        viewer.ws.closed().await,
        Some((4401, "the invite was revoked".to_string()))
    );
}

#[tokio::test]
async fn an_invite_s_name_is_fixed_in_records_whatever_the_client_says() {
    let (server, _dir) = with_token(&[]).await;
    let room = "fixed-name";
    let (ann, _) = guest(&server, room, "writer", Some("ann")).await;
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let mut joined = ann.joins("user=mallory&_pk=pk-ann").await;
    assert_eq!(joined.you["name"], "ann", "{}", joined.you);
    let me = joined
        .users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == "pk-ann")
        .unwrap()
        .clone();
    assert_eq!(me["name"], "ann");
    // Bodies' userId and the socket's user give way to the invite's name.
    let said = joined
        .ws
        .rpc(
            1,
            "message",
            json!([{"text":"from the socket","to":"room","userId":"mallory"}]),
        )
        .await;
    assert_eq!(said["success"], true, "{said}");
    let (status, _) = ann
        .post(
            "/message",
            json!({"text":"over http","to":"room","userId":"mallory"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = ann.put("/files/a.txt?userId=mallory", b"a").await;
    assert_eq!(status, 200);
    let (status, _) = ann
        .post("/sandbox/exec", json!({"cmd":"true","userId":"mallory"}))
        .await;
    assert_eq!(status, 200);
    let start = owner
        .ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    assert_eq!(start["by"], "ann");
    let ran = joined.ws.rpc(2, "exec", json!([{"cmd":"true"}])).await;
    assert_eq!(ran["success"], true);
    let (_, cp) = ann.post("/checkpoints", json!({"userId":"mallory"})).await;
    assert_eq!(cp["checkpoint"]["by"], "ann", "{cp}");
    let all = messages(&server, room).await;
    let names: Vec<(Value, Value)> = all
        .iter()
        .map(|m| (m["userId"].clone(), m["event"]["by"].clone()))
        .collect();
    assert!(!names.is_empty());
    for (user, by) in &names {
        assert_eq!(user, "ann", "{names:?}");
        assert!(by.is_null() || by == "ann", "{names:?}");
    }
    let upload = all.iter().find(|m| m["event"]["kind"] == "upload").unwrap();
    assert_eq!(upload["event"]["by"], "ann");
    let state = owner_joins(&server, room, "user=check").await.state;
    for e in state["execs"].as_array().unwrap() {
        assert_eq!(e["by"], "ann", "{e}");
    }
    // Renaming is refused; the name stays.
    let rename = joined
        .ws
        .rpc(3, "rename", json!([{"name":"mallory"}]))
        .await;
    assert_eq!(rename["success"], false, "{rename}");
    assert_eq!(rename["status"], 403);
    assert!(rename["details"]["name"].is_array(), "{rename}");
    let again = joined
        .ws
        .rpc(4, "message", json!([{"text":"still me","to":"room"}]))
        .await;
    assert_eq!(again["success"], true);
    assert_eq!(
        messages(&server, room).await.last().unwrap()["userId"],
        "ann"
    );
    // An invite without a name leaves names to the client.
    let (kim, _) = guest(&server, room, "viewer", None).await;
    let kim = kim.joins("user=kimberly").await;
    assert_eq!(kim.you["name"], "kimberly");
}

#[tokio::test]
async fn invites_roles_and_revocations_are_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let room = "kept";
    let server = start_with_token(dir.path(), &listen, &[]).await;
    let (vera, _) = guest(&server, room, "viewer", Some("vera")).await;
    let (wes, wes_inv) = guest(&server, room, "viewer", None).await;
    let (gone, gone_inv) = guest(&server, room, "writer", None).await;
    let wes_id = wes_inv["id"].as_str().unwrap();
    let (status, _) = server
        .post(
            &room_path(room, &format!("/invites/{wes_id}/role")),
            json!({"role":"writer"}),
        )
        .await;
    assert_eq!(status, 200);
    let gone_id = gone_inv["id"].as_str().unwrap();
    assert_eq!(
        delete(&server, &room_path(room, &format!("/invites/{gone_id}")))
            .await
            .0,
        200
    );
    let listed = invites(&server, room).await;
    server.stop().await;

    let server = start_with_token(dir.path(), &listen, &[]).await;
    assert_eq!(invites(&server, room).await, listed);
    assert_eq!(listed[1]["role"], "writer");
    // The viewer is still a viewer, with its name.
    assert_eq!(vera.get("/messages").await.0, 200);
    assert_forbidden(
        "exec after a restart",
        &vera.post("/sandbox/exec", json!({"cmd":"true"})).await,
        "viewer",
    );
    let joined = vera.joins("user=someone").await;
    assert_eq!(joined.you["name"], "vera");
    assert_eq!(joined.you["role"], "viewer");
    // The role change held; the revoked token stays revoked.
    let ran = wes
        .post("/sandbox/exec", json!({"cmd":"echo still-writer"}))
        .await;
    assert_eq!(ran.0, 200, "{}", ran.1);
    assert_eq!(
        gone.get("/messages").await,
        (401, json!({"error":"unauthorized"}))
    );
    // Ids go on: a new invite is not given an old one's id.
    let next = invite(&server, room, json!({"role":"viewer"})).await;
    assert_eq!(next["invite"]["id"], "i4");
    // The server's token is still the owner.
    let (status, _) = server.get(&room_path(room, "/invites")).await;
    assert_eq!(status, 200);
}

/// An app that answers every GET with a body that never ends: a line
/// every 100 ms (an event stream, a log tail).
const DRIP_PY: &str = r#"
import http.server, sys, time

class Drip(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        n = 0
        while True:
            n += 1
            self.wfile.write(b"drip %d\n" % n)
            self.wfile.flush()
            time.sleep(0.1)

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Drip).serve_forever()
"#;

/// Sends `bytes` through a tunnel to the echo app and reads them back.
async fn echoed(t: &mut Tunnel, bytes: &[u8]) {
    t.send(Message::binary(bytes.to_vec())).await.unwrap();
    let mut got = Vec::new();
    while got.len() < bytes.len() {
        match tokio::time::timeout(WAIT, t.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert_eq!(got, bytes);
}

/// Reads a tunnel (or a preview's socket) until the server ends it: its
/// close code and reason, or `None` when the connection was just cut.
async fn cut(t: &mut Tunnel) -> Option<(u16, String)> {
    let read = async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(frame))) => {
                    return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("the server ends the channel in time")
}

#[tokio::test]
async fn a_revoked_demoted_or_expired_invite_s_open_tunnel_is_cut() {
    let (server, _dir) = with_token(&[]).await;
    let room = "cut-tunnel";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut owners = tunnel(&server, room, 9000).await;
    echoed(&mut owners, b"owner first").await;

    // Revoked: the open tunnel closes as the invite's sockets do.
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut t = wes.tunnel(9000).await;
    echoed(&mut t, b"echo before the revoke").await;
    let id = inv["id"].as_str().unwrap();
    let (status, _) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200);
    assert_eq!(
        cut(&mut t).await,
        Some((4401, "the invite was revoked".to_string()))
    );

    // Demoted to viewer, who may not use a tunnel: it closes with 4403.
    let (wen, inv) = guest(&server, room, "writer", None).await;
    let mut t = wen.tunnel(9000).await;
    echoed(&mut t, b"echo before the demotion").await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"viewer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        cut(&mut t).await,
        Some((4403, "the invite's role is viewer now".to_string()))
    );
    // Made owner, the same invite keeps its tunnel.
    let (wyn, inv) = guest(&server, room, "writer", None).await;
    let mut kept = wyn.tunnel(9000).await;
    let id = inv["id"].as_str().unwrap();
    let (status, _) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"owner"}),
        )
        .await;
    assert_eq!(status, 200);

    // Expired: closed at the moment it expires, without a request.
    let created = invite(&server, room, json!({"role":"writer","expiresIn":3})).await;
    let wex = Guest {
        addr: server.addr.clone(),
        room: room.to_string(),
        token: created["token"].as_str().unwrap().to_string(),
    };
    let mut t = wex.tunnel(9000).await;
    echoed(&mut t, b"echo before it expires").await;
    assert_eq!(
        cut(&mut t).await,
        Some((4401, "the invite expired".to_string()))
    );
    assert!(now_ms() + 1000 >= created["invite"]["expiresAt"].as_u64().unwrap());

    // The server's token and the promoted invite were never cut.
    echoed(&mut owners, b"owner still here").await;
    echoed(&mut kept, b"owner by invite still here").await;
}

#[tokio::test]
async fn a_revoked_or_demoted_invite_s_open_preview_is_cut() {
    let (server, _dir) = with_token(&[]).await;
    let room = "cut-preview";
    python_app(&server, room, "drip.py", DRIP_PY, 8300).await;
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8301).await;

    // A viewer's GET whose body never ends stops when the invite is revoked.
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    // A client without a time limit: only the server may end the body.
    let _ = http();
    let mut res = reqwest::Client::new()
        .get(preview_url(&server, room, 8300, "/feed"))
        .bearer_auth(&vera.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let first = tokio::time::timeout(WAIT, res.chunk()).await.unwrap();
    assert!(first.unwrap().unwrap().starts_with(b"drip "));
    let id = inv["id"].as_str().unwrap();
    let (status, _) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match res.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the preview's body ends once the invite is revoked"
    );

    // A writer's WebSocket through the preview ends when the writer
    // becomes a viewer (who may not open one).
    // A client that sends its token (not a browser, which is sent to the
    // preview's own origin).
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let url = format!(
        "ws://{}{}",
        server.addr,
        room_path(room, "/ports/8301/live")
    );
    let with_bearer = || {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = url.as_str().into_client_request().unwrap();
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", wes.token).parse().unwrap(),
        );
        req
    };
    let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(with_bearer()))
        .await
        .expect("upgrades in time")
        .expect("a writer's socket goes through the preview");
    let first = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), Message::text("path:/live"));
    let id = inv["id"].as_str().unwrap();
    let (status, _) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"viewer"}),
        )
        .await;
    assert_eq!(status, 200);
    let _ = cut(&mut ws).await;
    let again = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(with_bearer()))
        .await
        .expect("the server answers the upgrade in time");
    match again {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            assert_eq!(res.status().as_u16(), 403, "a viewer opens no socket")
        }
        Ok(_) => panic!("a viewer's socket went through the preview"),
        Err(e) => panic!("{url}: {e}"),
    }
}

#[tokio::test]
async fn a_writer_demoted_while_attached_to_the_terminal_types_nothing_more() {
    let (server, _dir) = with_token(&[]).await;
    let room = "demoted-term";
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut writer = wes.joins("user=wes").await;
    let term = open_terminal(&mut writer.ws, 1, 100, 30).await;
    let term_id = term["termId"].clone();
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo W-$((2*21))\r")}))
        .await;
    terminal_until(&mut writer.ws, &term_id, "W-42").await;

    let id = inv["id"].as_str().unwrap();
    let (status, body) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"viewer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(writer.ws.until_type("duet_you").await["role"], "viewer");
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"touch demoted.txt; echo DEMOTED-TYPED\r")}))
        .await;
    let refused = writer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));

    // The owner's keys still reach the shell; the demoted ones never did.
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let owned = open_terminal(&mut owner.ws, 2, 100, 30).await;
    assert_eq!(owned["termId"], term_id);
    owner
        .ws
        .send(
            json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo OWNER-$((6*7))\r")}),
        )
        .await;
    let screen = terminal_until(&mut owner.ws, &term_id, "OWNER-42").await;
    assert!(!screen.contains("DEMOTED-TYPED"), "{screen}");
    let watched = terminal_until(&mut writer.ws, &term_id, "OWNER-42").await;
    assert!(!watched.contains("DEMOTED-TYPED"), "{watched}");
    assert!(!exists(&server, room, "demoted.txt").await);
}

/// Reads `ws` until the terminal's `resize` to `cols`×`rows`.
async fn resized_to(ws: &mut Ws, term_id: &Value, cols: u16, rows: u16) {
    ws.until(|f| {
        f["type"] == "duet_term"
            && f["phase"] == "resize"
            && f["termId"] == *term_id
            && f["cols"] == cols
            && f["rows"] == rows
    })
    .await;
}

#[tokio::test]
async fn a_demoted_or_revoked_writer_s_window_stops_counting_for_the_terminal_s_size() {
    let (server, _dir) = with_token(&[]).await;
    let room = "demoted-size";
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let opened = open_terminal(&mut owner.ws, 1, 120, 40).await;
    let term_id = opened["termId"].clone();
    assert_eq!(
        (opened["cols"].clone(), opened["rows"].clone()),
        (json!(120), json!(40))
    );

    // A writer's smaller window narrows it; demoted, the writer watches on
    // (still attached) and the terminal is the owner's size again.
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut writer = wes.joins("user=wes").await;
    let attached = open_terminal(&mut writer.ws, 1, 60, 20).await;
    assert_eq!(
        (attached["cols"].clone(), attached["rows"].clone()),
        (json!(60), json!(20))
    );
    resized_to(&mut owner.ws, &term_id, 60, 20).await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = server
        .post(
            &room_path(room, &format!("/invites/{id}/role")),
            json!({"role":"viewer"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    resized_to(&mut owner.ws, &term_id, 120, 40).await;
    resized_to(&mut writer.ws, &term_id, 120, 40).await;

    // A revoked writer's window stops counting too.
    let (rita, inv) = guest(&server, room, "writer", None).await;
    let mut revoked = rita.joins("user=rita").await;
    open_terminal(&mut revoked.ws, 1, 50, 15).await;
    resized_to(&mut owner.ws, &term_id, 50, 15).await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200, "{body}");
    resized_to(&mut owner.ws, &term_id, 120, 40).await;
}
