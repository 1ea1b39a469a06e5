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
    refused_status, set_role, start_with_token, with_token,
};
use crate::common::apps::messages;
use crate::common::apps::{
    TCP_ECHO_PY, Tunnel, WS_ECHO_PY, delete, exec, preview_url, put_file, python_app, room_path,
    start, tunnel,
};
use crate::common::{Server, WAIT, Ws, http};
use crate::common::{b64, now_ms, unb64};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

mod cut;
mod invites;
mod viewer;
mod writer;

/// The owner's list of the room's invites.
async fn invites(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/invites")).await;
    assert_eq!(status, 200, "{body}");
    body["invites"].as_array().unwrap().clone()
}

fn unknown_invite(id: &str) -> Value {
    json!({"error":"no such invite","details":{"inviteId":[format!("no invite \"{id}\" in this room")]}})
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
