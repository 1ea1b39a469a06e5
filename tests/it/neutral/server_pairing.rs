//! People in a room, as docs/protocol.md says (issue 11), through the real
//! backend and sandbox with a fake model: messages to the room that run no
//! turn, the room's records, a cancelled turn's partial reply, rename, the
//! shell's working directory and who caused what (`byConnection`).
//! Backend-neutral: only the protocol is used.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::apps::{exec_with, messages};
use crate::common::{Server, Ws, http};
use serde_json::{Value, json};

/// A server whose agent is `model`.
async fn with_model(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    Server::fresh_with(&[model.one_round_args(), extra.to_vec()].concat()).await
}

/// A server whose model must not be asked: it answers every request 500.
async fn without_turns() -> (FakeModel, Server, tempfile::TempDir) {
    let model = FakeModel::start(Vec::new()).await;
    let (server, dir) = with_model(&model, &[]).await;
    (model, server, dir)
}

/// The records of `kind` among `messages`.
fn records<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "system" && m["event"]["kind"] == kind)
        .collect()
}

/// The one record of `kind` in the room, checked to be a readable
/// `system` message (naming whoever did it, but for a shell's restart,
/// which names the command).
async fn the_record(server: &Server, room: &str, kind: &str) -> Value {
    let stored = messages(server, room).await;
    let found = records(&stored, kind);
    assert_eq!(found.len(), 1, "one {kind} record: {stored:?}");
    let record = found[0].clone();
    let by = record["event"]["by"].as_str().unwrap();
    let text = record["text"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "{record}");
    if kind != "shell" {
        assert!(text.contains(by), "the text names {by}: {record}");
    }
    record
}

/// Reads frames until each of `wanted` matched one (in any order);
/// answers the frames in the order of `wanted`.
async fn frames_matching(ws: &mut Ws, wanted: &[&dyn Fn(&Value) -> bool]) -> Vec<Value> {
    let mut found: Vec<Option<Value>> = vec![None; wanted.len()];
    while found.iter().any(Option::is_none) {
        let frame = ws.next().await;
        for (slot, matches) in found.iter_mut().zip(wanted) {
            if slot.is_none() && matches(&frame) {
                *slot = Some(frame.clone());
            }
        }
    }
    found.into_iter().flatten().collect()
}

/// Matches the `duet_exec complete` frame.
fn complete(f: &Value) -> bool {
    f["type"] == "duet_exec" && f["phase"] == "complete"
}

/// The keys of a JSON object, sorted.
fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// An rpc sent without waiting for its answer.
async fn send_rpc(ws: &mut Ws, id: u64, method: &str, args: Value) {
    ws.send(json!({"type":"rpc","id":id,"method":method,"args":args}))
        .await;
}

/// Waits for the answer of rpc `id`.
async fn rpc_answer(ws: &mut Ws, id: u64) -> Value {
    ws.until(|f| f["type"] == "rpc" && f["id"] == id).await
}

/// Skips to the next `duet_exec` frame of `phase`.
async fn exec_frame(ws: &mut Ws, phase: &str) -> Value {
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == phase)
        .await
}

#[tokio::test]
async fn a_message_to_the_room_runs_no_turn_and_is_answered_at_once() {
    let (model, server, _dir) = without_turns().await;
    let mut bob = server.joined("p1", "user=bob").await;
    let (status, body) = server
        .post(
            "/api/rooms/p1/message",
            json!({"text":"  ok thanks ","userId":"ann","to":"room"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // `{reply: null, messages}`, and no `error`.
    assert_eq!(keys(&body), ["messages", "reply"]);
    assert_eq!(body["reply"], Value::Null);
    let stored = body["messages"].as_array().unwrap();
    assert_eq!(stored.len(), 1, "no reply, no note: {body}");
    assert_eq!(stored[0]["role"], "user");
    assert_eq!(stored[0]["to"], "room");
    assert_eq!(stored[0]["text"], "ok thanks");
    assert_eq!(stored[0]["userId"], "ann");
    // Broadcast like any message.
    let state = bob.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["messages"][0], stored[0]);
    // A message for the agent is stored with `to: "agent"` (the default).
    let (_, asked) = server
        .post("/api/rooms/p1/message", json!({"text":"and you?"}))
        .await;
    assert_eq!(asked["messages"][1]["to"], "agent", "{asked}");
    // Only that one reached the model.
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_message_to_the_room_over_rpc_is_broadcast_and_does_not_wait_for_a_turn() {
    let model = FakeModel::start(vec![Script::Hang(vec!["thinking".into()])]).await;
    let (server, _dir) = with_model(&model, &[]).await;
    let mut ada = server.joined("p2", "user=ada&deltas=1").await;
    let mut bob = server.joined("p2", "user=bob").await;
    send_rpc(&mut ada, 1, "message", json!([{"text":"think hard"}])).await;
    // The model was asked and streams (then hangs).
    bob.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    // Bob's line to the room is answered all the same.
    let answer = bob
        .rpc(2, "message", json!([{"text":"brb","to":"room"}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(keys(&answer["result"]), ["messages", "reply"]);
    let said = answer["result"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (
            said["text"].clone(),
            said["to"].clone(),
            said["userId"].clone()
        ),
        (json!("brb"), json!("room"), json!("bob"))
    );
    // Ada (deltas) gets it as one message frame.
    let frame = ada
        .until(|f| f["type"] == "duet_message" && f["message"]["text"] == "brb")
        .await;
    assert_eq!(frame["message"], said);
    assert_eq!(model.requests().len(), 1, "the room message asked nobody");
    let (_, cancelled) = server.post("/api/rooms/p2/cancel", json!({})).await;
    assert_eq!(cancelled, json!({"cancelled":true}));
    assert_eq!(
        rpc_answer(&mut ada, 1).await["result"]["reply"],
        Value::Null
    );
}

#[tokio::test]
async fn the_agent_sees_room_messages_and_records_as_context_not_as_questions() {
    let model = FakeModel::start(vec![Script::Stream(vec!["Noted.".into()])]).await;
    let (server, _dir) = with_model(&model, &[]).await;
    server
        .post(
            "/api/rooms/p3/message",
            json!({"text":"ok thanks","userId":"bob","to":"room"}),
        )
        .await;
    let put = http()
        .put(server.url("/api/rooms/p3/files/notes.txt?userId=ann"))
        .body("twelve bytes");
    assert_eq!(common::answer(put).await.0, 200);
    let (_, body) = server
        .post(
            "/api/rooms/p3/message",
            json!({"text":"what did bob say?","userId":"ann"}),
        )
        .await;
    assert_eq!(body["reply"], "Noted.", "{body}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let chat = requests[0].1["messages"].as_array().unwrap().clone();
    let contents: Vec<&str> = chat
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let last = contents.last().unwrap();
    assert!(last.contains("what did bob say?"), "{contents:?}");
    // Bob's line is there, marked as said to the room (not a question).
    let said = contents
        .iter()
        .find(|c| c.contains("ok thanks"))
        .unwrap_or_else(|| panic!("the room message is in the context: {contents:?}"));
    assert!(said.contains("bob"), "{said}");
    assert!(said.to_lowercase().contains("room"), "marked: {said}");
    assert_ne!(said, last);
    // So is the upload's record, by its text.
    let record = the_record(&server, "p3", "upload").await;
    let record_text = record["text"].as_str().unwrap();
    assert!(
        contents.iter().any(|c| c.contains(record_text)),
        "{contents:?}"
    );
}

#[tokio::test]
async fn a_bad_to_is_refused_with_its_field_and_stores_nothing() {
    let (model, server, _dir) = without_turns().await;
    for to in [json!("everyone"), json!(1), json!("ROOM")] {
        let (status, body) = server
            .post("/api/rooms/p4/message", json!({"text":"hi","to":to}))
            .await;
        assert_eq!(status, 400, "{to}: {body}");
        assert_eq!(body["error"], "invalid request");
        assert_eq!(keys(&body["details"]), ["to"], "{body}");
        assert!(body["details"]["to"][0].is_string());
    }
    let mut ws = server.joined("p4", "user=ada").await;
    let answer = ws
        .rpc(1, "message", json!([{"text":"hi","to":"nobody"}]))
        .await;
    assert_eq!(answer["success"], false);
    assert_eq!(answer["status"], 400);
    assert_eq!(answer["error"], "invalid request");
    assert_eq!(keys(&answer["details"]), ["to"]);
    assert!(messages(&server, "p4").await.is_empty());
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_repeated_client_id_of_a_room_message_stores_it_once() {
    let (model, server, _dir) = without_turns().await;
    let body = json!({"text":"see you","userId":"bob","to":"room","clientId":"c-1"});
    let (_, first) = server.post("/api/rooms/p5/message", body.clone()).await;
    let (status, again) = server.post("/api/rooms/p5/message", body).await;
    assert_eq!(status, 200);
    assert_eq!(keys(&again), ["messages", "reply"], "{again}");
    assert_eq!(again["messages"], first["messages"]);
    let stored = messages(&server, "p5").await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["clientId"], "c-1");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_cleanup_leaves_exactly_its_record_and_a_fresh_shell() {
    let (_model, server, _dir) = without_turns().await;
    server
        .post("/api/rooms/p6/message", json!({"text":"x","to":"room"}))
        .await;
    exec_with(&server, "p6", json!({"cmd":"cd /tmp"})).await;
    let mut ada = server.joined("p6", "user=ada").await;
    let (status, body) = server
        .post("/api/rooms/p6/cleanup", json!({"userId":"bob"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ada.until_type("duet_cleanup").await["by"], "bob");
    let emptied = ada.next().await;
    assert_eq!(emptied["type"], "cf_agent_state");
    let state = &emptied["state"];
    let held = state["messages"].as_array().unwrap();
    assert_eq!(held.len(), 1, "{state}");
    assert_eq!(held[0]["role"], "system");
    assert_eq!(held[0]["event"], json!({"kind":"cleanup","by":"bob"}));
    assert_eq!(state["execs"], json!([]));
    assert_eq!(state["shell"], json!({"cwd":"/workspace"}));
    // The same for whoever joins, and in the history.
    let mut carl = server.ws("p6", "user=carl").await;
    carl.next().await;
    assert_eq!(&carl.next().await["state"], state);
    assert_eq!(messages(&server, "p6").await, *held);
    the_record(&server, "p6", "cleanup").await;
}

#[tokio::test]
async fn a_cancelled_turn_keeps_what_streamed_and_who_cancelled_it() {
    let model = FakeModel::start(vec![Script::Hang(vec![
        "Let me look".into(),
        " at it".into(),
    ])])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let mut ada = server.joined("p7", "user=ada").await;
    let mut bob = server.joined("p7", "user=bob").await;
    send_rpc(&mut ada, 1, "message", json!([{"text":"look"}])).await;
    let start = bob
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let turn_id = start["turnId"].as_str().unwrap().to_string();
    let mut streamed = String::new();
    while streamed != "Let me look at it" {
        let delta = bob
            .until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
            .await;
        streamed.push_str(delta["text"].as_str().unwrap());
    }
    let cancel = bob.rpc(2, "cancel", json!([{}])).await;
    assert_eq!(cancel["result"], json!({"cancelled":true}), "{cancel}");
    let answer = rpc_answer(&mut ada, 1).await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"]["reply"], Value::Null);
    assert!(answer["result"]["error"].is_string(), "{answer}");
    let stored = messages(&server, "p7").await;
    let roles: Vec<&str> = stored.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "agent", "system"], "{stored:?}");
    assert_eq!(stored[1]["text"], "Let me look at it");
    assert_eq!(stored[1]["cancelledBy"], "bob");
    assert_eq!(
        stored[2]["event"],
        json!({"kind":"cancel","by":"bob","turnId":turn_id})
    );
    the_record(&server, "p7", "cancel").await;
}

#[tokio::test]
async fn a_cancel_keeps_the_outputs_of_the_commands_that_ran() {
    let model = FakeModel::start(vec![Script::chunked(
        "Checking.<run>echo one</run><run>sleep 60</run>",
        7,
    )])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let mut bob = server.joined("p8", "user=bob").await;
    let asked = tokio::spawn(common::answer(
        http()
            .post(server.url("/api/rooms/p8/message"))
            .json(&json!({"text":"check","userId":"ada"})),
    ));
    bob.until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["cmd"] == "sleep 60")
        .await;
    let (_, cancelled) = server
        .post("/api/rooms/p8/cancel", json!({"userId":"bob"}))
        .await;
    assert_eq!(cancelled, json!({"cancelled":true}));
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["reply"], Value::Null);
    let stored = messages(&server, "p8").await;
    let agent = stored.iter().find(|m| m["role"] == "agent").unwrap();
    assert_eq!(agent["text"], "Checking.\n\nOutput (echo one):\none");
    assert_eq!(agent["runs"][0]["cmd"], "echo one");
    assert_eq!(agent["runs"].as_array().unwrap().len(), 1, "{agent}");
    assert_eq!(agent["cancelledBy"], "bob");
    assert_eq!(
        the_record(&server, "p8", "cancel").await["event"]["by"],
        "bob"
    );
}

#[tokio::test]
async fn an_interrupt_is_recorded_with_the_command_it_stopped() {
    let (_model, server, _dir) = without_turns().await;
    // The sandbox is up: the command below runs as soon as it is sent.
    exec_with(&server, "p9", json!({"cmd":"true"})).await;
    let mut ada = server.joined("p9", "user=ada").await;
    let mut bob = server.joined("p9", "user=bob").await;
    // Nothing runs: nothing is interrupted, nothing recorded.
    let idle = bob.rpc(1, "interrupt", json!([{}])).await;
    assert_eq!(idle["result"], json!({"interrupted":false}));
    // It ignores SIGINT: it runs on until the SIGKILL 2 s later.
    let cmd = "trap '' INT; sleep 100";
    send_rpc(&mut ada, 2, "exec", json!([{ "cmd": cmd }])).await;
    let start = exec_frame(&mut bob, "start").await;
    let exec_id = start["execId"].as_str().unwrap().to_string();
    let interrupted = bob.rpc(3, "interrupt", json!([{}])).await;
    assert_eq!(
        interrupted["result"],
        json!({"interrupted":true}),
        "{interrupted}"
    );
    // Pressed again while it stops: still one record.
    bob.rpc(4, "interrupt", json!([{"execId":exec_id}])).await;
    let ended = rpc_answer(&mut ada, 2).await;
    assert_eq!(ended["result"]["result"]["interrupted"], true, "{ended}");
    let record = the_record(&server, "p9", "interrupt").await;
    assert_eq!(
        record["event"],
        json!({"kind":"interrupt","by":"bob","execId":exec_id,"cmd":cmd})
    );
    assert!(
        record["text"].as_str().unwrap().contains("sleep 100"),
        "{record}"
    );
    assert_eq!(records(&messages(&server, "p9").await, "shell").len(), 0);
}

#[tokio::test]
async fn an_upload_is_recorded_with_who_sent_it() {
    let (_model, server, _dir) = without_turns().await;
    let put = |path: &str, body: &'static str| {
        common::answer(
            http()
                .put(server.url(&format!("/api/rooms/p10/files/{path}")))
                .body(body),
        )
    };
    let (status, body) = put("notes.txt?userId=ann", "twelve bytes").await;
    assert_eq!((status, body), (200, json!({"path":"notes.txt","size":12})));
    let record = the_record(&server, "p10", "upload").await;
    assert_eq!(
        record["event"],
        json!({"kind":"upload","by":"ann","path":"notes.txt","size":12})
    );
    assert!(record["text"].as_str().unwrap().contains("notes.txt"));
    // Without a name: by "anonymous"; a deeper path is relative to /workspace.
    assert_eq!(put("docs/a.txt", "abc").await.0, 200);
    let stored = messages(&server, "p10").await;
    let uploads = records(&stored, "upload");
    assert_eq!(
        uploads[1]["event"],
        json!({"kind":"upload","by":"anonymous","path":"docs/a.txt","size":3})
    );
    // A bad name is refused before anything is written.
    let (status, body) = put("bad.txt?userId=", "x").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(keys(&body["details"]), ["userId"]);
    let (status, _) = server.get("/api/rooms/p10/files/bad.txt").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn rename_changes_the_name_of_a_socket_without_reconnecting() {
    let (_model, server, _dir) = without_turns().await;
    let mut ada = server.joined("p11", "user=ada&_pk=ada-1").await;
    let mut bob = server.joined("p11", "user=bob&_pk=bob-1").await;
    ada.until_type("duet_presence").await;
    let answer = ada.rpc(1, "rename", json!([{"name":"ann"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"name":"ann"}));
    // Everyone sees the new name, on the same connection.
    let presence = bob.until_type("duet_presence").await;
    let names: Vec<(&str, &str)> = presence["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["id"].as_str().unwrap(), u["name"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("ada-1", "ann"), ("bob-1", "bob")]);
    let record = the_record(&server, "p11", "rename").await;
    assert_eq!(
        record["event"],
        json!({"kind":"rename","by":"ada","from":"ada","to":"ann"})
    );
    assert!(record["text"].as_str().unwrap().contains("ann"));
    // Later messages and commands carry the new name.
    let said = ada
        .rpc(2, "message", json!([{"text":"hi","to":"room"}]))
        .await;
    let last = said["result"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["userId"], "ann");
    send_rpc(&mut ada, 3, "exec", json!([{"cmd":"true"}])).await;
    assert_eq!(exec_frame(&mut bob, "start").await["by"], "ann");
    // A bad name: 400 naming `name`, nothing changed.
    for bad in [
        json!([{"name":""}]),
        json!([{"name":"x".repeat(33)}]),
        json!([{}]),
        // Characters that hide or move text: a name that would pass for another.
        json!([{"name":"b\u{202e}ob"}]),
        json!([{"name":"an\u{200b}n"}]),
        json!([{"name":"a\u{2028}b"}]),
    ] {
        let refused = ada.rpc(4, "rename", bad.clone()).await;
        assert_eq!(refused["success"], false, "{bad}");
        assert_eq!(refused["status"], 400);
        assert_eq!(refused["error"], "invalid request");
        assert_eq!(keys(&refused["details"]), ["name"], "{refused}");
    }
    assert_eq!(records(&messages(&server, "p11").await, "rename").len(), 1);
}

#[tokio::test]
async fn the_shell_cwd_is_in_complete_frames_and_the_state() {
    let (_model, server, _dir) = without_turns().await;
    let mut ada = server.ws("p12", "user=ada&deltas=1").await;
    ada.next().await;
    let first = ada.next().await;
    assert_eq!(first["state"]["shell"], json!({"cwd":"/workspace"}));
    let mut bob = server.joined("p12", "user=bob").await;
    let done = ada.rpc(1, "exec", json!([{"cmd":"cd /tmp"}])).await;
    assert_eq!(done["success"], true, "{done}");
    // Bob (no deltas) gets the complete frame and the whole state.
    let moved = |f: &Value| f["type"] == "cf_agent_state" && f["state"]["shell"]["cwd"] == "/tmp";
    let seen = frames_matching(&mut bob, &[&complete, &moved]).await;
    assert_eq!(seen[0]["cwd"], "/tmp", "{}", seen[0]);
    assert_eq!(seen[1]["state"]["shell"], json!({"cwd":"/tmp"}));
    // A command's own cwd does not move the shell.
    let mut carl = server.ws("p12", "user=carl&deltas=1").await;
    carl.next().await;
    assert_eq!(carl.next().await["state"]["shell"]["cwd"], "/tmp");
    let pwd = ada
        .rpc(2, "exec", json!([{"cmd":"pwd","cwd":"/usr"}]))
        .await;
    assert_eq!(pwd["result"]["result"]["stdout"], "/usr\n", "{pwd}");
    assert_eq!(exec_frame(&mut carl, "complete").await["cwd"], "/tmp");
    // Deltas sockets get the change as a patch.
    send_rpc(&mut ada, 3, "exec", json!([{"cmd":"cd /usr"}])).await;
    let patch = carl
        .until(|f| f["type"] == "duet_state" && f["patch"]["shell"]["cwd"] == "/usr")
        .await;
    assert_eq!(patch["patch"], json!({"shell":{"cwd":"/usr"}}));
}

#[tokio::test]
async fn exit_resets_the_directory_and_exports_and_says_so() {
    let (_model, server, _dir) = without_turns().await;
    let room = "p13";
    exec_with(&server, room, json!({"cmd":"export A=1; cd /tmp"})).await;
    let mut ada = server.joined(room, "user=ada&deltas=1").await;
    let result = exec_with(&server, room, json!({"cmd":"exit","userId":"bob"})).await;
    assert!(result["error"].is_string(), "says so in error: {result}");
    let reset = |f: &Value| f["type"] == "duet_state" && f["patch"]["shell"].is_object();
    let seen = frames_matching(&mut ada, &[&complete, &reset]).await;
    let complete = &seen[0];
    assert_eq!(complete["cwd"], "/workspace", "{complete}");
    assert_eq!(seen[1]["patch"]["shell"], json!({"cwd":"/workspace"}));
    let record = the_record(&server, room, "shell").await;
    let event = &record["event"];
    assert_eq!(
        (
            &event["by"],
            &event["reason"],
            &event["cwd"],
            &event["reset"]
        ),
        (
            &json!("bob"),
            &json!("exit"),
            &json!("/workspace"),
            &json!(true)
        ),
        "{record}"
    );
    assert_eq!(event["execId"], complete["execId"]);
    let after = exec_with(&server, room, json!({"cmd":"pwd; echo \"[$A]\""})).await;
    assert_eq!(after["stdout"], "/workspace\n[]\n");
    // `exit 4` answers its status.
    let four = exec_with(&server, room, json!({"cmd":"cd /tmp; exit 4"})).await;
    assert_eq!(four["exitCode"], 4);
    let after = exec_with(&server, room, json!({"cmd":"pwd"})).await;
    assert_eq!(after["stdout"], "/workspace\n");
}

#[tokio::test]
async fn a_timeout_keeps_the_shell_and_stores_no_shell_record() {
    let (_model, server, _dir) = without_turns().await;
    let room = "p14";
    exec_with(
        &server,
        room,
        json!({"cmd":"export A=1; cd /tmp; f() { echo fn; }"}),
    )
    .await;
    let timed = exec_with(&server, room, json!({"cmd":"sleep 30","timeoutMs":500})).await;
    assert_eq!(timed["timedOut"], true, "{timed}");
    assert_eq!(timed["error"], Value::Null, "{timed}");
    let after = exec_with(&server, room, json!({"cmd":"pwd; echo \"[$A]\"; f"})).await;
    assert_eq!(after["stdout"], "/tmp\n[1]\nfn\n");
    let (_, stored) = server.get(&format!("/api/rooms/{room}/messages")).await;
    let shells: Vec<&Value> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["event"]["kind"] == "shell")
        .collect();
    assert!(shells.is_empty(), "{shells:?}");
}

#[tokio::test]
async fn by_connection_names_the_socket_that_caused_a_command_or_turn() {
    let model = FakeModel::start(vec![
        Script::chunked("<run>echo hi</run>", 5),
        Script::Stream(vec!["Hello.".into()]),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let mut ada = server.joined("p15", "user=ada&_pk=ada-pk").await;
    let mut bob = server.joined("p15", "user=bob").await;
    // Ada's own command.
    send_rpc(&mut ada, 1, "exec", json!([{"cmd":"true"}])).await;
    let start = exec_frame(&mut bob, "start").await;
    assert_eq!(start["byConnection"], "ada-pk", "{start}");
    assert_eq!(rpc_answer(&mut ada, 1).await["success"], true);
    // Ada's question: the turn and the agent's command.
    send_rpc(&mut ada, 2, "message", json!([{"text":"say hi"}])).await;
    let ai = bob
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    assert_eq!(ai["byConnection"], "ada-pk", "{ai}");
    let agent = exec_frame(&mut bob, "start").await;
    assert_eq!(
        (agent["source"].clone(), agent["byConnection"].clone()),
        (json!("agent"), json!("ada-pk"))
    );
    assert_eq!(rpc_answer(&mut ada, 2).await["success"], true);
    // Over HTTP no socket caused it: no byConnection.
    exec_with(&server, "p15", json!({"cmd":"true"})).await;
    let start = exec_frame(&mut bob, "start").await;
    assert!(start.get("byConnection").is_none(), "{start}");
    server
        .post("/api/rooms/p15/message", json!({"text":"hello"}))
        .await;
    let ai = bob
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    assert!(ai.get("byConnection").is_none(), "{ai}");
}

#[tokio::test]
async fn records_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    server
        .post(
            "/api/rooms/p16/message",
            json!({"text":"see you","userId":"bob","to":"room"}),
        )
        .await;
    server
        .post("/api/rooms/p16/cleanup", json!({"userId":"ann"}))
        .await;
    exec_with(&server, "p16", json!({"cmd":"exit"})).await;
    let before = messages(&server, "p16").await;
    assert_eq!(before.len(), 2, "{before:?}");
    server.stop().await;
    let server = Server::start(dir.path(), &[]).await;
    assert_eq!(messages(&server, "p16").await, before);
    let mut ws = server.ws("p16", "user=ada").await;
    ws.next().await;
    let state = ws.next().await;
    assert_eq!(state["state"]["messages"], json!(before));
    assert_eq!(state["state"]["shell"], json!({"cwd":"/workspace"}));
}

#[tokio::test]
async fn an_idle_sandbox_that_stops_resets_the_shell_cwd_at_once() {
    if common::only_duet_serve("--sandbox-idle-secs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--sandbox-idle-secs", "1"]).await;
    let mut ada = server.joined("p17", "user=ada&deltas=1").await;
    exec_with(&server, "p17", json!({"cmd":"cd /tmp"})).await;
    let moved = ada.until_type("duet_state").await;
    assert_eq!(moved["patch"]["shell"]["cwd"], "/tmp");
    // No command: the sandbox stops by itself, and the state says so.
    let reset = ada.until_type("duet_state").await;
    assert_eq!(reset["patch"]["shell"], json!({"cwd":"/workspace"}));
    let after = exec_with(&server, "p17", json!({"cmd":"pwd"})).await;
    assert_eq!(after["stdout"], "/workspace\n");
}
