//! Checkpoints, restore and fork, as docs/protocol.md "Checkpoints,
//! restore and fork" says, over HTTP and real sockets to a real backend
//! and sandbox, with a fake model for the agent's turns: a checkpoint, a
//! change and a restore (files back, later ones gone, twice), the answer
//! and error shapes over HTTP and rpc, the state's `checkpoints` (full
//! states and patches), the records, what a restore stops and in which
//! order, the automatic checkpoint before a turn and how many are kept,
//! fork (from now and from a checkpoint; separate rooms afterwards), the
//! disk quota and cleanup. Backend-neutral: only the protocol, and the
//! flags `--disk-mb` and `--auto-checkpoints`, which `duet serve` and
//! worker/dev.sh both take.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::apps::messages;
use crate::common::apps::{delete, exec, put_file, room_path, start, wait_for, with_token};
use crate::common::now_ms;
use crate::common::{Server, answer, http};
use serde_json::{Value, json};

mod auto;
mod basics;
mod fork;
mod restore;

/// A server whose agent is `model`, with the `duet serve` flags `extra`.
async fn with_model(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    Server::fresh_with(&[model.one_round_args(), extra.to_vec()].concat()).await
}

/// `POST …/checkpoints` with `body`; answers the `Checkpoint`.
async fn create(server: &Server, room: &str, body: Value) -> Value {
    let (status, answer) = server.post(&room_path(room, "/checkpoints"), body).await;
    assert_eq!(status, 200, "{answer}");
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["checkpoint"], "{answer}");
    answer["checkpoint"].clone()
}

/// `GET …/checkpoints`: the list.
async fn list(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/checkpoints")).await;
    assert_eq!(status, 200, "{body}");
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["checkpoints"], "{body}");
    body["checkpoints"].as_array().unwrap().clone()
}

/// `POST …/checkpoints/{id}/restore` with `body`: status and answer.
async fn restore(server: &Server, room: &str, id: &str, body: Value) -> (u16, Value) {
    server
        .post(
            &room_path(room, &format!("/checkpoints/{id}/restore")),
            body,
        )
        .await
}

/// A restore that must succeed.
async fn restored(server: &Server, room: &str, id: &str) {
    let got = restore(server, room, id, json!({})).await;
    assert_eq!(got, (200, json!({"restored": true})));
}

/// `POST …/fork` with `body`: status and answer.
async fn fork(server: &Server, room: &str, body: Value) -> (u16, Value) {
    server.post(&room_path(room, "/fork"), body).await
}

/// A file of the workspace: its text, or `None` when absent (404).
async fn read(server: &Server, room: &str, path: &str) -> Option<String> {
    let url = server.url(&room_path(room, &format!("/files/{path}")));
    let res = with_token(server, http().get(url))
        .send()
        .await
        .expect("the server answers");
    match res.status().as_u16() {
        200 => Some(res.text().await.unwrap()),
        404 => None,
        other => panic!("GET files/{path}: {other}"),
    }
}

/// The stdout of `cmd` in the room's shell.
async fn sh(server: &Server, room: &str, cmd: &str) -> String {
    let r = exec(server, room, cmd).await;
    r["stdout"].as_str().unwrap().to_string()
}

/// The records of `kind` among `messages`.
fn records(messages: &[Value], kind: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "system" && m["event"]["kind"] == kind)
        .cloned()
        .collect()
}

/// The one record of `kind` in the room, checked to be readable and to
/// name who did it.
async fn the_record(server: &Server, room: &str, kind: &str) -> Value {
    let found = records(&messages(server, room).await, kind);
    assert_eq!(found.len(), 1, "one {kind} record: {found:?}");
    let record = found[0].clone();
    let by = record["event"]["by"].as_str().unwrap();
    assert_eq!(record["userId"], by, "{record}");
    assert!(
        record["text"].as_str().unwrap().contains(by),
        "the text names {by}: {record}"
    );
    record
}

fn id_of(checkpoint: &Value) -> String {
    checkpoint["id"]
        .as_str()
        .expect("a checkpoint id")
        .to_string()
}

/// The number in an id `cN`.
fn number(id: &str) -> u64 {
    id.strip_prefix('c')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("ids are c1, c2, …: {id}"))
}

/// Checks a checkpoint's shape: the contract's fields, no others.
fn check_shape(c: &Value) {
    let allowed = [
        "id",
        "name",
        "ts",
        "by",
        "size",
        "auto",
        "turnId",
        "expiresAt",
    ];
    for key in c.as_object().expect("an object").keys() {
        assert!(allowed.contains(&key.as_str()), "field {key}: {c}");
    }
    number(c["id"].as_str().unwrap());
    assert!(c["name"].is_string() && c["by"].is_string(), "{c}");
    assert!(
        c["ts"].is_u64() && c["size"].is_u64() && c["auto"].is_boolean(),
        "{c}"
    );
    match c.get("expiresAt") {
        // duet serve's never expire.
        None => {}
        Some(at) => {
            assert_eq!(common::backend(), common::Backend::Worker, "{c}");
            assert!(at.as_u64().unwrap() > c["ts"].as_u64().unwrap(), "{c}");
        }
    }
}

/// The 404 of an unknown checkpoint id.
fn unknown(id: &str) -> Value {
    json!({"error":"no such checkpoint","details":{"checkpointId":[format!("no checkpoint \"{id}\" in this room")]}})
}

/// The 409 of a fork into a room that exists.
fn exists(to: &str) -> Value {
    json!({"error":"the room exists","details":{"to":[format!("room \"{to}\" exists already")]}})
}

/// The index of the first of `frames` that `ok` accepts.
fn position(frames: &[Value], what: &str, ok: impl Fn(&Value) -> bool) -> usize {
    frames
        .iter()
        .position(ok)
        .unwrap_or_else(|| panic!("no {what} among {frames:#?}"))
}

/// A `duet_message` frame of a record of `kind`.
fn record_frame(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |f| f["type"] == "duet_message" && f["message"]["event"]["kind"] == kind
}
