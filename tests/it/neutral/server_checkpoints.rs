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
use crate::common::apps::{delete, exec, put_file, room_path, start, wait_for, with_token};
use crate::common::{Server, Ws, answer, http};
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A server whose agent is `model`, with the `duet serve` flags `extra`.
async fn with_model(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    Server::fresh_with(&[model.server_args(), extra.to_vec()].concat()).await
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

/// The room's stored messages (`GET /messages`).
async fn messages(server: &Server, room: &str) -> Vec<Value> {
    let (status, page) = server.get(&room_path(room, "/messages")).await;
    assert_eq!(status, 200, "{page}");
    page["messages"].as_array().unwrap().clone()
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

/// Sends an rpc; answers its answer and the frames that came before it.
async fn rpc_keeping(ws: &mut Ws, id: u64, method: &str, args: Value) -> (Value, Vec<Value>) {
    ws.send(json!({"type":"rpc","id":id,"method":method,"args":args}))
        .await;
    let mut before = Vec::new();
    loop {
        let frame = ws.next().await;
        if frame["type"] == "rpc" && frame["id"] == id {
            return (frame, before);
        }
        before.push(frame);
    }
}

/// Reads frames until one matching `a` and one matching `b` came, in
/// either order; answers the first of each.
async fn frames_until_both(
    ws: &mut Ws,
    a: impl Fn(&Value) -> bool,
    b: impl Fn(&Value) -> bool,
) -> (Value, Value) {
    let (mut first, mut second) = (None, None);
    while first.is_none() || second.is_none() {
        let frame = ws.next().await;
        if first.is_none() && a(&frame) {
            first = Some(frame);
        } else if second.is_none() && b(&frame) {
            second = Some(frame);
        }
    }
    (first.unwrap(), second.unwrap())
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

/// A room with files of every kind copied: a file with a mode and an mtime
/// of its own, a folder, a symlink, a FIFO (left out of a checkpoint).
const TREE: &str = "set -e; cd /workspace; printf hello > a.txt; mkdir -p d/e; \
    printf 'echo run' > d/run.sh; chmod 750 d/run.sh; touch -d @1500000000 d/run.sh; \
    printf 1234567 > d/e/b.txt; ln -s a.txt link; mkfifo pipe";

/// What the shell says of TREE's files: contents, modes, mtimes, the link.
const LOOK: &str = "cd /workspace; cat a.txt; echo; cat d/e/b.txt; echo; \
    stat -c '%a %Y' d/run.sh; readlink link; ls -A | tr '\\n' ' '";

#[tokio::test]
async fn a_checkpoint_a_change_and_a_restore_bring_the_files_back_and_the_later_ones_go() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-basic";
    let made = exec(&server, room, TREE).await;
    assert_eq!(made["exitCode"], 0, "{made}");
    let before = sh(&server, room, LOOK).await;
    assert_eq!(
        before,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link pipe "
    );
    let asked = now_ms();
    let c = create(&server, room, json!({"userId": "ada"})).await;
    check_shape(&c);
    assert_eq!(c["id"], "c1", "{c}");
    assert_eq!(c["name"], "checkpoint-1", "the default name: {c}");
    assert_eq!(c["by"], "ada");
    assert_eq!(c["auto"], false);
    assert!(c.get("turnId").is_none(), "a person's has no turn: {c}");
    // hello (5) + echo run (8) + 1234567 (7) + the link's target a.txt (5).
    assert_eq!(c["size"], 25, "{c}");
    let ts = c["ts"].as_u64().unwrap();
    assert!(ts + 60_000 >= asked && ts <= now_ms() + 60_000, "{c}");
    assert_eq!(list(&server, room).await, vec![c.clone()]);

    // Change everything: in place (the same inode), modes, the link, new files.
    exec(
        &server,
        room,
        "set -e; echo more >> a.txt; printf X > d/e/b.txt; chmod 600 d/run.sh; touch d/run.sh; \
         rm link; ln -s d/e/b.txt link; mkdir later; echo new > later/new.txt; echo top > top.txt; \
         rm pipe",
    )
    .await;
    restored(&server, room, "c1").await;
    assert_eq!(
        sh(&server, room, LOOK).await,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link ",
        "the files as they were; the later ones gone; no FIFO"
    );
    assert_eq!(read(&server, room, "top.txt").await, None);
    assert_eq!(read(&server, room, "later/new.txt").await, None);
    // The checkpoint stays, and can be restored again.
    assert_eq!(list(&server, room).await, vec![c.clone()]);

    // A later write in the room does not touch the checkpoint: the restored
    // files are copies too.
    exec(
        &server,
        room,
        "set -e; echo again >> a.txt; : > d/e/b.txt; rm -r d/e; echo 2 > top.txt",
    )
    .await;
    restored(&server, room, "c1").await;
    assert_eq!(
        sh(&server, room, LOOK).await,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link "
    );
    assert_eq!(read(&server, room, "top.txt").await, None);
    assert_eq!(list(&server, room).await, vec![c]);
}

#[tokio::test]
async fn checkpoints_are_listed_oldest_first_named_and_deleted() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-list";
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
    put_file(&server, room, "f.txt", b"one".to_vec()).await;
    let first = create(&server, room, json!({"name": "before-refactor"})).await;
    assert_eq!(first["name"], "before-refactor");
    assert_eq!(first["by"], "anonymous", "no userId: {first}");
    let second = create(&server, room, json!({})).await;
    let third = create(
        &server,
        room,
        json!({"name": "v1.2_final-x", "userId": "bob"}),
    )
    .await;
    for c in [&first, &second, &third] {
        check_shape(c);
    }
    assert!(number(&id_of(&first)) < number(&id_of(&second)));
    assert!(number(&id_of(&second)) < number(&id_of(&third)));
    assert_eq!(
        second["name"],
        format!("checkpoint-{}", number(&id_of(&second))),
        "{second}"
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone(), second.clone(), third.clone()]
    );
    // Deleting one: answered, unlisted, unknown afterwards.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&second)));
    assert_eq!(
        delete(&server, &path).await,
        (200, json!({"deleted": true}))
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone(), third.clone()]
    );
    assert_eq!(
        delete(&server, &path).await,
        (404, unknown(&id_of(&second)))
    );
    assert_eq!(
        restore(&server, room, &id_of(&second), json!({})).await,
        (404, unknown(&id_of(&second)))
    );
    // Its name is free again; its id is never reused.
    let again = create(&server, room, json!({"name": second["name"]})).await;
    assert!(number(&id_of(&again)) > number(&id_of(&third)), "{again}");
    // Each took the workspace as it was.
    assert_eq!(first["size"], 3);
    let records = records(&messages(&server, room).await, "checkpoint");
    let events: Vec<Value> = records.iter().map(|r| r["event"].clone()).collect();
    assert_eq!(
        events,
        vec![
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&first),"name":"before-refactor"}),
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&second),"name":second["name"]}),
            json!({"kind":"checkpoint","by":"bob","checkpointId":id_of(&third),"name":"v1.2_final-x"}),
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&again),"name":second["name"]}),
        ]
    );
    assert!(records[2]["text"].as_str().unwrap().contains("bob"));
    assert_eq!(records[2]["userId"], "bob");
}

#[tokio::test]
async fn bad_names_taken_names_and_unknown_ids_are_answered_in_the_protocol_s_shapes() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-errors";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let path = room_path(room, "/checkpoints");
    for name in [
        json!(""),
        json!("-a"),
        json!(".hidden"),
        json!("a b"),
        json!("a/b"),
        json!("é"),
        json!("x".repeat(65)),
        json!(42),
    ] {
        let (status, body) = server.post(&path, json!({ "name": name })).await;
        assert_eq!(status, 400, "{name}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        let fields: Vec<&String> = body["details"].as_object().unwrap().keys().collect();
        assert_eq!(fields, ["name"], "{name}: {body}");
        assert!(body["details"]["name"][0].is_string(), "{body}");
    }
    let (status, body) = server.post(&path, json!({"userId": "x".repeat(33)})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["userId"][0].is_string(), "{body}");
    let (status, body) = server
        .post("/api/rooms/bad!room/checkpoints", json!({}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["room"][0].is_string(), "{body}");
    // None of those took one.
    assert_eq!(list(&server, room).await, Vec::<Value>::new());

    let taken = create(&server, room, json!({"name": "x".repeat(64)})).await;
    let (status, body) = server.post(&path, json!({"name": "x".repeat(64)})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "a checkpoint has that name");
    let fields: Vec<&String> = body["details"].as_object().unwrap().keys().collect();
    assert_eq!(fields, ["name"], "{body}");
    assert!(body["details"]["name"][0].is_string(), "{body}");
    assert_eq!(taken["name"], "x".repeat(64));
    // A default name is taken like any other.
    let default = create(&server, room, json!({})).await;
    let (status, body) = server.post(&path, json!({"name": default["name"]})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "a checkpoint has that name");
    assert_eq!(list(&server, room).await, vec![taken.clone(), default]);

    // Unknown ids: 404 with the id, on every route.
    for (status, body) in [
        restore(&server, room, "c99", json!({})).await,
        delete(&server, &room_path(room, "/checkpoints/c99")).await,
        fork(
            &server,
            room,
            json!({"to": "cp-errors-fork", "checkpointId": "c99"}),
        )
        .await,
    ] {
        assert_eq!((status, body), (404, unknown("c99")));
    }
    // The same over rpc.
    let mut ws = server.joined(room, "user=ada").await;
    for (i, (method, args)) in [
        ("checkpoint_restore", json!([{"checkpointId": "c99"}])),
        ("checkpoint_delete", json!([{"checkpointId": "c99"}])),
        (
            "fork",
            json!([{"to": "cp-errors-fork", "checkpointId": "c99"}]),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let got = ws.rpc(i as u64 + 1, method, args).await;
        assert_eq!(got["success"], false, "{method}: {got}");
        assert_eq!(got["status"], 404, "{method}: {got}");
        assert_eq!(got["error"], "no such checkpoint", "{method}: {got}");
        assert_eq!(got["details"], unknown("c99")["details"], "{method}: {got}");
    }
    let got = ws
        .rpc(10, "checkpoint_create", json!([{"name": "a b"}]))
        .await;
    assert_eq!(
        (got["success"].clone(), got["status"].clone()),
        (json!(false), json!(400)),
        "{got}"
    );
    assert!(got["details"]["name"][0].is_string(), "{got}");
    let got = ws
        .rpc(11, "checkpoint_create", json!([{"name": "x".repeat(64)}]))
        .await;
    assert_eq!(got["status"], 409, "{got}");
    assert_eq!(got["error"], "a checkpoint has that name");
    assert!(got["details"]["name"][0].is_string(), "{got}");
    // The fork that failed made no room.
    assert_eq!(
        messages(&server, "cp-errors-fork").await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn over_rpc_the_answers_are_the_http_ones_and_the_socket_s_user_is_by() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-rpc";
    put_file(&server, room, "f.txt", b"first".to_vec()).await;
    let mut ws = server.joined(room, "user=bob").await;
    let got = ws
        .rpc(1, "checkpoint_create", json!([{"name": "mine"}]))
        .await;
    assert_eq!(got["success"], true, "{got}");
    let c = got["result"]["checkpoint"].clone();
    check_shape(&c);
    assert_eq!(
        (c["name"].clone(), c["by"].clone()),
        (json!("mine"), json!("bob"))
    );
    let got = ws.rpc(2, "checkpoint_create", json!([{}])).await;
    let other = got["result"]["checkpoint"].clone();
    assert_eq!(
        other["name"],
        format!("checkpoint-{}", number(&id_of(&other)))
    );
    assert_eq!(list(&server, room).await, vec![c.clone(), other.clone()]);

    put_file(&server, room, "f.txt", b"second".to_vec()).await;
    let got = ws
        .rpc(
            3,
            "checkpoint_restore",
            json!([{"checkpointId": id_of(&c)}]),
        )
        .await;
    assert_eq!(got["success"], true, "{got}");
    assert_eq!(got["result"], json!({"restored": true}));
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("first"));
    let got = ws
        .rpc(
            4,
            "checkpoint_delete",
            json!([{"checkpointId": id_of(&other)}]),
        )
        .await;
    assert_eq!(got["result"], json!({"deleted": true}), "{got}");
    assert_eq!(list(&server, room).await, vec![c.clone()]);
    let got = ws.rpc(5, "fork", json!([{"to": "cp-rpc-b"}])).await;
    assert_eq!(got["result"], json!({"roomId": "cp-rpc-b"}), "{got}");
    let stored = messages(&server, room).await;
    assert_eq!(
        records(&stored, "checkpoint")[0]["event"],
        json!({"kind":"checkpoint","by":"bob","checkpointId":id_of(&c),"name":"mine"})
    );
    assert_eq!(
        the_record(&server, room, "restore").await["event"],
        json!({"kind":"restore","by":"bob","checkpointId":id_of(&c),"name":"mine"})
    );
    assert_eq!(
        the_record(&server, room, "fork").await["event"],
        json!({"kind":"fork","by":"bob","from":room,"to":"cp-rpc-b"})
    );
}

#[tokio::test]
async fn the_state_lists_the_checkpoints_in_full_states_and_patches() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-state";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let mut full = server.ws(room, "user=bob").await;
    let state = full.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], json!([]), "{state}");
    full.until_type("duet_presence").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let c = create(&server, room, json!({"name": "one", "userId": "ada"})).await;
    let listed = |c: &Value| json!([c]);
    let last_is_the_record = |state: &Value| {
        state["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["event"]["kind"] == "checkpoint")
    };
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["checkpoints"] == listed(&c)
                && last_is_the_record(&f["state"])
        })
        .await;
    let last = state["state"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    // A patch and the record's message, in either order.
    let (patch, record) = frames_until_both(
        &mut deltas,
        |f| f["type"] == "duet_state" && f["patch"].get("checkpoints").is_some(),
        record_frame("checkpoint"),
    )
    .await;
    assert_eq!(patch["patch"]["checkpoints"], listed(&c), "{patch}");
    assert_eq!(record["message"], last);
    // A socket that joins now reads it on connect.
    let mut late = server.ws(room, "user=cy").await;
    let state = late.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], listed(&c));
    // Deleting it: both kinds of socket see the list empty.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&c)));
    assert_eq!(delete(&server, &path).await.0, 200);
    full.until(|f| f["type"] == "cf_agent_state" && f["state"]["checkpoints"] == json!([]))
        .await;
    let patch = deltas
        .until(|f| f["type"] == "duet_state" && f["patch"].get("checkpoints").is_some())
        .await;
    assert_eq!(patch["patch"]["checkpoints"], json!([]), "{patch}");
}

#[tokio::test]
async fn a_restore_stops_the_command_the_processes_and_the_terminal_then_records_then_answers() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-order";
    put_file(&server, room, "f.txt", b"kept".to_vec()).await;
    let c = create(&server, room, json!({"name": "base"})).await;
    let mut ann = server.joined(room, "user=ann&deltas=1").await;
    let mut full = server.joined(room, "user=bob").await;
    // A terminal, a background process and a running command.
    let term = ann
        .rpc(1, "term_open", json!([{"cols": 80, "rows": 24}]))
        .await;
    assert_eq!(term["success"], true, "{term}");
    let term_id = term["result"]["termId"].clone();
    let process = start(&server, room, json!({"cmd": "sleep 300"})).await;
    let process_id = process["id"].clone();
    let running = tokio::spawn(answer(with_token(
        &server,
        http()
            .post(server.url(&room_path(room, "/sandbox/exec")))
            .json(&json!({"cmd": "sleep 600", "userId": "bob"})),
    )));
    let started = ann
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["cmd"] == "sleep 600")
        .await;
    let exec_id = started["execId"].clone();
    exec_later_write(&server, room).await;

    let (answer, frames) = rpc_keeping(
        &mut ann,
        2,
        "checkpoint_restore",
        json!([{"checkpointId": id_of(&c)}]),
    )
    .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"restored": true}));
    let interrupted = position(&frames, "the command's end", |f| {
        f["type"] == "duet_exec" && f["phase"] == "complete" && f["execId"] == exec_id
    });
    assert_eq!(
        frames[interrupted]["interrupted"], true,
        "{}",
        frames[interrupted]
    );
    let process_exit = position(&frames, "the process's exit", |f| {
        f["type"] == "duet_process" && f["phase"] == "exit" && f["processId"] == process_id
    });
    assert_eq!(
        frames[process_exit]["status"], "killed",
        "{}",
        frames[process_exit]
    );
    let term_exit = position(&frames, "the terminal's exit", |f| {
        f["type"] == "duet_term" && f["phase"] == "exit" && f["termId"] == term_id
    });
    let record = position(&frames, "the restore record", record_frame("restore"));
    assert!(
        interrupted < record && process_exit < record && term_exit < record,
        "the command, the process and the terminal end before the record: {frames:#?}"
    );
    assert_eq!(
        frames[record]["message"]["event"],
        json!({"kind":"restore","by":"ann","checkpointId":id_of(&c),"name":"base"})
    );
    // The command's own answer says it was interrupted.
    let (status, body) = running.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["interrupted"], true, "{body}");
    assert_eq!(body["result"]["success"], false, "{body}");

    // Everyone's view: the full state ends with the record, nothing runs,
    // the next command runs in /workspace; the checkpoint is kept.
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .is_some_and(|m| m["event"]["kind"] == "restore")
        })
        .await;
    let state = &state["state"];
    assert_eq!(state["shell"]["cwd"], "/workspace", "{state}");
    assert_eq!(state["checkpoints"], json!([c]));
    let mut late = server.ws(room, "user=cy").await;
    let now = late.until_type("cf_agent_state").await;
    let now = &now["state"];
    assert_eq!(now["terminal"], Value::Null, "{now}");
    assert_eq!(now["shell"]["cwd"], "/workspace");
    for p in now["processes"].as_array().unwrap() {
        assert_ne!(p["status"], "running", "{p}");
    }
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("kept"));
    assert_eq!(read(&server, room, "later.txt").await, None);
}

/// A file written after the checkpoint (while the command runs, through
/// the files route).
async fn exec_later_write(server: &Server, room: &str) {
    put_file(server, room, "later.txt", b"later".to_vec()).await;
    put_file(server, room, "f.txt", b"changed".to_vec()).await;
}

#[tokio::test]
async fn a_restore_during_a_turn_cancels_it_first() {
    let model =
        FakeModel::start(vec![Script::chunked("Let me wait.<run>sleep 600</run>", 4)]).await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "cp-turn";
    put_file(&server, room, "f.txt", b"kept".to_vec()).await;
    let c = create(&server, room, json!({"name": "safe"})).await;
    let mut ann = server.joined(room, "user=ann&deltas=1").await;
    let asked = tokio::spawn(answer(with_token(
        &server,
        http()
            .post(server.url(&room_path(room, "/message")))
            .json(&json!({"text": "wait a bit", "userId": "ada"})),
    )));
    let started = ann
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["source"] == "agent")
        .await;
    let exec_id = started["execId"].clone();
    let (answer, frames) = rpc_keeping(
        &mut ann,
        1,
        "checkpoint_restore",
        json!([{"checkpointId": id_of(&c)}]),
    )
    .await;
    assert_eq!(answer["result"], json!({"restored": true}), "{answer}");
    let agent = position(&frames, "the cancelled agent message", |f| {
        f["type"] == "duet_message"
            && f["message"]["role"] == "agent"
            && f["message"]["cancelledBy"] == "ann"
    });
    let cancel = position(&frames, "the cancel record", record_frame("cancel"));
    let record = position(&frames, "the restore record", record_frame("restore"));
    let interrupted = position(&frames, "the command's end", |f| {
        f["type"] == "duet_exec" && f["phase"] == "complete" && f["execId"] == exec_id
    });
    assert!(
        agent < cancel && cancel < record && interrupted < record,
        "the turn's message, its cancel, then the restore: {frames:#?}"
    );
    assert_eq!(frames[interrupted]["interrupted"], true);
    assert_eq!(frames[cancel]["message"]["event"]["by"], "ann");
    // The turn's own request is answered as a cancelled one.
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null, "{body}");
    assert!(body["error"].is_string(), "{body}");
    // Stored in that order: the agent's message, the cancel, the restore last.
    let stored = messages(&server, room).await;
    let at = |ok: &dyn Fn(&Value) -> bool| stored.iter().position(ok).expect("stored");
    let agent = at(&|m| m["role"] == "agent" && m["cancelledBy"] == "ann");
    let cancel = at(&|m| m["event"]["kind"] == "cancel");
    let record = at(&|m| m["event"]["kind"] == "restore");
    assert!(agent < cancel && cancel < record, "{stored:?}");
    assert_eq!(record, stored.len() - 1, "{stored:?}");
    // The automatic checkpoint of the turn and the person's are both kept.
    let kept = list(&server, room).await;
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0], c);
    assert_eq!(kept[1]["auto"], true);
}

#[tokio::test]
async fn commands_after_a_restore_run_in_a_fresh_shell_in_the_workspace() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-cwd";
    exec(&server, room, "mkdir -p sub").await;
    let c = create(&server, room, json!({})).await;
    exec(&server, room, "cd sub && export DUET_VAR=set").await;
    assert_eq!(
        sh(&server, room, "pwd; echo \"[$DUET_VAR]\"").await,
        "/workspace/sub\n[set]\n"
    );
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    restored(&server, room, &id_of(&c)).await;
    let patch = deltas
        .until(|f| f["type"] == "duet_state" && f["patch"]["shell"]["cwd"] == "/workspace")
        .await;
    assert_eq!(patch["patch"]["shell"], json!({"cwd": "/workspace"}));
    assert_eq!(
        sh(&server, room, "pwd; echo \"[$DUET_VAR]\"").await,
        "/workspace\n[]\n"
    );
}

#[tokio::test]
async fn an_automatic_checkpoint_before_a_turn_undoes_the_file_it_deleted() {
    let model = FakeModel::start(vec![
        Script::chunked("Tidying up.<run>rm notes.txt</run>", 5),
        Script::chunked("Nothing to run.", 5),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "cp-auto";
    put_file(&server, room, "notes.txt", b"keep me\n".to_vec()).await;
    let mut ws = server.joined(room, "user=bob").await;
    let (status, body) = server
        .post(
            &room_path(room, "/message"),
            json!({"text": "tidy up", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn = ws
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    assert_eq!(
        read(&server, room, "notes.txt").await,
        None,
        "the turn deleted it"
    );
    let kept = list(&server, room).await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    let auto = &kept[0];
    check_shape(auto);
    assert_eq!(auto["auto"], true);
    assert_eq!(auto["by"], "duet");
    assert_eq!(auto["turnId"], turn["turnId"], "{auto}");
    assert_eq!(auto["name"], format!("auto-{}", number(&id_of(auto))));
    assert_eq!(auto["size"], 8, "taken before the command: {auto}");
    // Automatic ones store no record.
    assert_eq!(
        records(&messages(&server, room).await, "checkpoint"),
        Vec::<Value>::new()
    );

    // A turn that runs no command takes none.
    let (status, _) = server
        .post(&room_path(room, "/message"), json!({"text": "and now?"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(list(&server, room).await.len(), 1);

    // Undo: restoring it brings the file back.
    let got = restore(&server, room, &id_of(auto), json!({"userId": "ada"})).await;
    assert_eq!(got, (200, json!({"restored": true})));
    assert_eq!(
        read(&server, room, "notes.txt").await.as_deref(),
        Some("keep me\n")
    );
    assert_eq!(
        the_record(&server, room, "restore").await["event"],
        json!({"kind":"restore","by":"ada","checkpointId":id_of(auto),"name":auto["name"]})
    );
}

#[tokio::test]
async fn only_the_last_auto_checkpoints_are_kept_and_people_s_stay() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::chunked(
        "Again.<run>echo $RANDOM >> runs.txt</run>",
        4,
    ));
    let (server, _dir) = with_model(&model, &["--auto-checkpoints", "2"]).await;
    let room = "cp-keep";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let mine = create(&server, room, json!({"name": "mine"})).await;
    let mut ws = server.joined(room, "user=bob").await;
    let mut turns = Vec::new();
    for i in 0..3 {
        let (status, body) = server
            .post(
                &room_path(room, "/message"),
                json!({"text": format!("run {i}")}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let start = ws
            .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
            .await;
        turns.push(start["turnId"].clone());
    }
    let kept = list(&server, room).await;
    assert_eq!(
        kept.len(),
        3,
        "mine and the last two automatic ones: {kept:?}"
    );
    assert_eq!(kept[0], mine);
    assert_eq!(
        (kept[1]["turnId"].clone(), kept[2]["turnId"].clone()),
        (turns[1].clone(), turns[2].clone()),
        "the last two turns' ones, oldest first: {kept:?}"
    );
    for auto in &kept[1..] {
        assert_eq!(auto["auto"], true);
        assert_eq!(auto["name"], format!("auto-{}", number(&id_of(auto))));
    }
    assert!(number(&id_of(&kept[1])) < number(&id_of(&kept[2])));
}

#[tokio::test]
async fn no_automatic_checkpoint_is_taken_with_auto_checkpoints_0() {
    let model = FakeModel::start(vec![Script::chunked("Sure.<run>rm f.txt</run>", 4)]).await;
    let (server, _dir) = with_model(&model, &["--auto-checkpoints", "0"]).await;
    let room = "cp-none";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let (status, body) = server
        .post(&room_path(room, "/message"), json!({"text": "go"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&server, room, "f.txt").await, None, "the command ran");
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
}

#[tokio::test]
async fn a_fork_from_now_and_from_a_checkpoint_starts_separate_rooms() {
    let (server, _dir) = Server::fresh().await;
    let (a, b, c) = ("cp-fork-a", "cp-fork-b", "cp-fork-c");
    put_file(&server, a, "f.txt", b"v1".to_vec()).await;
    let v1 = create(&server, a, json!({"name": "v1"})).await;
    put_file(&server, a, "f.txt", b"v2".to_vec()).await;
    put_file(&server, a, "sub/g.txt", b"g".to_vec()).await;
    start(&server, a, json!({"cmd": "sleep 300"})).await;

    let got = fork(&server, a, json!({"to": b, "userId": "ada"})).await;
    assert_eq!(got, (200, json!({"roomId": b})));
    let got = fork(&server, a, json!({"to": c, "checkpointId": id_of(&v1)})).await;
    assert_eq!(got, (200, json!({"roomId": c})));
    assert_eq!(read(&server, b, "f.txt").await.as_deref(), Some("v2"));
    assert_eq!(read(&server, b, "sub/g.txt").await.as_deref(), Some("g"));
    assert_eq!(read(&server, c, "f.txt").await.as_deref(), Some("v1"));
    assert_eq!(read(&server, c, "sub/g.txt").await, None);

    // The new rooms: one fork record each, no checkpoints, no processes.
    let from_now = json!({"kind":"fork","by":"ada","from":a,"to":b});
    let from_v1 = json!({"kind":"fork","by":"anonymous","from":a,"to":c,"checkpointId":id_of(&v1)});
    for (room, event) in [(b, &from_now), (c, &from_v1)] {
        let history = messages(&server, room).await;
        assert_eq!(history.len(), 1, "{room}: {history:?}");
        assert_eq!(history[0]["role"], "system");
        assert_eq!(&history[0]["event"], event, "{room}");
        let mut ws = server.ws(room, "user=cy").await;
        let state = ws.until_type("cf_agent_state").await;
        let state = &state["state"];
        assert_eq!(state["messages"], json!(history), "{room}");
        assert_eq!(state["checkpoints"], json!([]), "{room}");
        assert_eq!(state["processes"], json!([]), "{room}");
        assert_eq!(state["execs"], json!([]), "{room}");
        assert_eq!(list(&server, room).await, Vec::<Value>::new());
    }
    // The room it came from holds both records.
    let events: Vec<Value> = records(&messages(&server, a).await, "fork")
        .iter()
        .map(|r| r["event"].clone())
        .collect();
    assert_eq!(events, vec![from_now.clone(), from_v1]);
    assert!(
        records(&messages(&server, b).await, "fork")[0]["text"]
            .as_str()
            .unwrap()
            .contains("ada")
    );

    // Separate: a write in one is not in the other, either way, through
    // the files route and the shells.
    put_file(&server, b, "f.txt", b"b's".to_vec()).await;
    assert_eq!(read(&server, a, "f.txt").await.as_deref(), Some("v2"));
    exec(&server, a, "echo a > only-a.txt; echo a2 > sub/g.txt").await;
    assert_eq!(read(&server, b, "only-a.txt").await, None);
    assert_eq!(read(&server, b, "sub/g.txt").await.as_deref(), Some("g"));
    assert_eq!(
        sh(&server, b, "cat f.txt; echo; ls").await,
        "b's\nf.txt\nsub\n"
    );
    assert_eq!(read(&server, c, "f.txt").await.as_deref(), Some("v1"));
    // A checkpoint of the new room is its own.
    create(&server, b, json!({"name": "b-only"})).await;
    assert_eq!(list(&server, a).await, vec![v1.clone()]);
    // The checkpoint a room was forked from still restores in its own room.
    restored(&server, a, &id_of(&v1)).await;
    assert_eq!(read(&server, a, "f.txt").await.as_deref(), Some("v1"));
    assert_eq!(read(&server, b, "f.txt").await.as_deref(), Some("b's"));
}

#[tokio::test]
async fn a_fork_into_a_room_that_exists_or_a_bad_room_id_is_refused() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-fork-err";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    // A room exists once something is stored in it.
    let (status, body) = server
        .post(
            "/api/rooms/cp-fork-taken/message",
            json!({"text": "here", "to": "room"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for to in [room, "cp-fork-taken"] {
        assert_eq!(
            fork(&server, room, json!({ "to": to })).await,
            (409, exists(to))
        );
    }
    let mut ws = server.joined(room, "user=ada").await;
    let got = ws.rpc(1, "fork", json!([{"to": room}])).await;
    assert_eq!(got["success"], false, "{got}");
    assert_eq!(got["status"], 409);
    assert_eq!(got["error"], "the room exists");
    assert_eq!(got["details"], exists(room)["details"]);
    // A room someone joined exists too.
    let _joined = server.joined("cp-fork-joined", "user=bob").await;
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-joined"})).await,
        (409, exists("cp-fork-joined"))
    );
    // A room made by a fork exists.
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-new"})).await.0,
        200
    );
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-new"})).await,
        (409, exists("cp-fork-new"))
    );
    // `to` missing or not a room id.
    for body in [
        json!({}),
        json!({"to": ""}),
        json!({"to": "bad room"}),
        json!({"to": "-x"}),
        json!({"to": "x-"}),
        json!({"to": "x".repeat(64)}),
        json!({"to": 7}),
    ] {
        let (status, got) = fork(&server, room, body.clone()).await;
        assert_eq!(status, 400, "{body}: {got}");
        assert_eq!(got["error"], "invalid request", "{got}");
        assert!(got["details"]["to"][0].is_string(), "{body}: {got}");
    }
    let got = ws.rpc(2, "fork", json!([{"to": "no/pe"}])).await;
    assert_eq!(got["status"], 400, "{got}");
    assert!(got["details"]["to"][0].is_string(), "{got}");
    // Only the one good fork is recorded.
    assert_eq!(records(&messages(&server, room).await, "fork").len(), 1);
}

#[tokio::test]
async fn a_checkpoint_that_does_not_fit_the_disk_is_a_507_and_deleting_one_frees_its_room() {
    // `--disk-mb` holds the workspace and its checkpoints together (the
    // worker's disk budget is the same flag of worker/dev.sh).
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--disk-mb", "8"]).await;
    let room = "cp-quota";
    let mib = 1024 * 1024;
    put_file(&server, room, "big.bin", vec![7u8; 3 * mib]).await;
    let first = create(&server, room, json!({"name": "first"})).await;
    assert_eq!(first["size"], 3 * mib);
    // 3 MiB of workspace and 3 of checkpoint: the next 3 do not fit in 8.
    let (status, body) = server
        .post(&room_path(room, "/checkpoints"), json!({"name": "second"}))
        .await;
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"], "the room's disk is full", "{body}");
    let said = body["details"]["checkpoint"][0]
        .as_str()
        .expect("details.checkpoint");
    let numbers: Vec<u64> = said
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        said.starts_with("it needs ") && said.contains(" bytes; ") && said.ends_with(" are free"),
        "{said}"
    );
    assert!(
        numbers.len() == 2 && numbers[0] >= 3 * mib as u64 && numbers[1] < numbers[0],
        "{said}"
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone()],
        "nothing listed"
    );
    assert_eq!(
        records(&messages(&server, room).await, "checkpoint").len(),
        1
    );
    // The workspace still works.
    assert_eq!(sh(&server, room, "echo ok").await, "ok\n");
    // Deleting the first frees its room.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&first)));
    assert_eq!(delete(&server, &path).await.0, 200);
    let second = create(&server, room, json!({"name": "second"})).await;
    assert_eq!(list(&server, room).await, vec![second]);
}

#[tokio::test]
async fn cleanup_deletes_the_checkpoints() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-cleanup";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let c = create(&server, room, json!({})).await;
    let mut ws = server.joined(room, "user=bob").await;
    let (status, body) = server
        .post(&room_path(room, "/cleanup"), json!({"userId": "bob"}))
        .await;
    assert_eq!(status, 200, "{body}");
    ws.until_type("duet_cleanup").await;
    let state = ws.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], json!([]), "{state}");
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
    assert_eq!(
        restore(&server, room, &id_of(&c), json!({})).await,
        (404, unknown(&id_of(&c)))
    );
    assert_eq!(read(&server, room, "f.txt").await, None);
}

#[tokio::test]
async fn a_restore_is_seen_by_everyone_with_who_did_it() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-seen";
    put_file(&server, room, "f.txt", b"one".to_vec()).await;
    let c = create(&server, room, json!({"name": "one"})).await;
    put_file(&server, room, "f.txt", b"two".to_vec()).await;
    let mut full = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let got = restore(&server, room, &id_of(&c), json!({"userId": "ann"})).await;
    assert_eq!(got, (200, json!({"restored": true})));
    let record = the_record(&server, room, "restore").await;
    assert_eq!(
        record["event"],
        json!({"kind":"restore","by":"ann","checkpointId":id_of(&c),"name":"one"})
    );
    full.until(|f| {
        f["type"] == "cf_agent_state"
            && f["state"]["messages"]
                .as_array()
                .is_some_and(|m| m.contains(&record))
    })
    .await;
    let seen = deltas.until(record_frame("restore")).await;
    assert_eq!(seen["message"], record);
    wait_for("the restored file", || async {
        (read(&server, room, "f.txt").await.as_deref() == Some("one")).then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_automatic_checkpoint_that_does_not_fit_is_skipped_and_the_turn_runs_on() {
    let model = FakeModel::start(vec![Script::chunked(
        "Freeing space.<run>rm big.bin</run>",
        6,
    )])
    .await;
    let (server, _dir) = with_model(&model, &["--disk-mb", "8"]).await;
    let room = "cp-auto-full";
    put_file(&server, room, "big.bin", vec![1u8; 5 * 1024 * 1024]).await;
    let (status, body) = server
        .post(&room_path(room, "/message"), json!({"text": "make room"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["reply"]
            .as_str()
            .is_some_and(|r| r.contains("Output (rm big.bin)")),
        "{body}"
    );
    assert_eq!(
        read(&server, room, "big.bin").await,
        None,
        "the command ran"
    );
    assert_eq!(
        list(&server, room).await,
        Vec::<Value>::new(),
        "none was taken"
    );
}

#[tokio::test]
async fn checkpoints_outlive_a_restart_and_their_ids_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_at(&listen, dir.path(), &[]).await;
    let room = "cp-restart";
    put_file(&server, room, "f.txt", b"saved".to_vec()).await;
    let kept = create(&server, room, json!({"name": "kept"})).await;
    let gone = create(&server, room, json!({})).await;
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&gone)));
    assert_eq!(delete(&server, &path).await.0, 200);
    server.stop().await;

    let server = Server::start_at(&listen, dir.path(), &[]).await;
    assert_eq!(list(&server, room).await, vec![kept.clone()]);
    put_file(&server, room, "f.txt", b"changed".to_vec()).await;
    restored(&server, room, &id_of(&kept)).await;
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("saved"));
    let next = create(&server, room, json!({})).await;
    assert!(
        number(&id_of(&next)) > number(&id_of(&gone)),
        "{next} after {gone}"
    );
}
