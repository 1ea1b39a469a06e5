//! `duet export` against a real backend: a room with chat, an agent turn
//! that ran a command, a person's command and a record, exported as
//! markdown (names, Output blocks), as JSON (every stored message and
//! command, past the first page) and as an asciicast v2 recording (its
//! events in time order, holding the outputs and who ran them).

use crate::common;
use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::cli::{duet, stderr, stdout};
use serde_json::{Value, json};

/// A room with a conversation, an agent's command, a person's command,
/// an upload (a record) and `chatter` more room messages.
async fn busy_room(server: &Server, room: &str, chatter: usize) {
    let post = |path: String, body: Value| async move { server.post(&path, body).await };
    let (status, _) = post(
        format!("/api/rooms/{room}/message"),
        json!({"text": "hello bob", "userId": "ann", "to": "room"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = post(
        format!("/api/rooms/{room}/message"),
        json!({"text": "list the files", "userId": "ann"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = post(
        format!("/api/rooms/{room}/sandbox/exec"),
        json!({"cmd": "echo from-bob", "userId": "bob"}),
    )
    .await;
    assert_eq!(status, 200);
    let mut put = common::http()
        .put(server.url(&format!("/api/rooms/{room}/files/notes.txt?userId=ann")))
        .body("remember");
    if let Some(token) = &server.token {
        put = put.bearer_auth(token);
    }
    assert_eq!(put.send().await.unwrap().status(), 200);
    for n in 0..chatter {
        let (status, body) = post(
            format!("/api/rooms/{room}/message"),
            json!({"text": format!("note {n}"), "userId": "bob", "to": "room"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
}

async fn server_with_agent() -> (Server, tempfile::TempDir, FakeModel) {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Here they are.".into(),
        "<run>echo agent-saw-this</run>".into(),
    ])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &model.one_round_args()).await;
    (server, dir, model)
}

#[tokio::test]
async fn markdown_names_who_said_and_ran_what_with_output_blocks() {
    let (server, _dir, _model) = server_with_agent().await;
    busy_room(&server, "exp1", 0).await;
    let out = duet(&server, "exp1", &["export", "--format", "md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.starts_with("# Duet room `exp1`"), "{md}");
    assert!(md.contains("**ann** to the room"), "{md}");
    assert!(md.contains("> hello bob"));
    assert!(md.contains("**ann** to the agent"));
    assert!(md.contains("**agent**"));
    assert!(md.contains("Here they are."));
    assert!(
        md.contains("Output (`echo agent-saw-this`):\n\n```text\nagent-saw-this\n```"),
        "{md}"
    );
    assert!(md.contains("**bob** ran"));
    assert!(md.contains("$ echo from-bob\nfrom-bob"));
    assert!(md.contains("_ann uploaded notes.txt"), "{md}");
    // In time order: the greeting, the question, the reply, bob's command.
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} in {md}"));
    assert!(at("> hello bob") < at("> list the files"));
    assert!(at("> list the files") < at("Here they are."));
    assert!(at("Here they are.") < at("$ echo from-bob"));
}

#[tokio::test]
async fn json_holds_the_whole_history_past_the_first_page() {
    let (server, _dir, _model) = server_with_agent().await;
    busy_room(&server, "exp2", 105).await;
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_str().unwrap().to_string();
    let out = duet(
        &server,
        "exp2",
        &["export", "--format", "json", "-o", &path],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("wrote"), "{}", stderr(&out));
    let export: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(export["room"], "exp2");
    let messages = export["messages"].as_array().unwrap();
    // hello, the question, the reply, the upload, 105 notes: more than a
    // page of 100.
    assert_eq!(messages.len(), 109, "{}", messages.len());
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "oldest first, no repeats"
    );
    assert_eq!(messages[0]["text"], "hello bob");
    assert_eq!(messages[108]["text"], "note 104");
    assert_eq!(messages[3]["event"]["kind"], "upload");
    let execs = export["execs"].as_array().unwrap();
    let cmds: Vec<&str> = execs.iter().map(|e| e["cmd"].as_str().unwrap()).collect();
    assert_eq!(cmds, ["echo agent-saw-this", "echo from-bob"]);
    assert_eq!(execs[1]["by"], "bob");
}

#[tokio::test]
async fn the_cast_is_asciicast_v2_in_time_order_with_the_outputs() {
    let (server, _dir, _model) = server_with_agent().await;
    busy_room(&server, "exp3", 0).await;
    let out = duet(&server, "exp3", &["export", "--format", "cast"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["version"], 2);
    assert!(header["width"].as_u64().unwrap() > 0 && header["height"].as_u64().unwrap() > 0);
    let events: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!events.is_empty());
    let mut last = 0.0;
    for e in &events {
        let t = e[0].as_f64().unwrap();
        assert!(t >= last, "time order: {events:?}");
        last = t;
        assert_eq!(e[1], "o");
    }
    let all: String = events.iter().map(|e| e[2].as_str().unwrap()).collect();
    assert!(all.contains("$ echo agent-saw-this"), "{all}");
    assert!(all.contains("agent-saw-this\r\n"));
    assert!(all.contains("# the agent") && all.contains("# bob"));
    assert!(all.contains("from-bob\r\n"));
}

#[tokio::test]
async fn a_bad_format_or_an_unwritable_file_is_said() {
    let (server, _dir) = Server::fresh().await;
    let out = duet(&server, "exp4", &["export", "--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
    let out = duet(&server, "exp4", &["export", "-o", "/nonexistent-dir/x.md"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/nonexistent-dir/x.md could not be written"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn markdown_has_the_outputs_text_without_escape_codes() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = server
        .post(
            "/api/rooms/exp5/sandbox/exec",
            json!({"cmd": "printf '\\033[31mred\\033[0m and \\033[1mbold\\033[0m\\n'", "userId": "bob"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains('\u{1b}')
    );
    let out = duet(&server, "exp5", &["export", "--format", "md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.contains("red and bold\n"), "{md}");
    assert!(!md.contains('\u{1b}'), "{md:?}");
    // The JSON keeps the output as it was.
    let out = duet(&server, "exp5", &["export", "--format", "json"]);
    assert!(stdout(&out).contains("\\u001b[31mred"), "{}", stdout(&out));
}

/// The model's reply: prose, a command, more prose (issue 23, item 8).
const PLACED_REPLY: [&str; 3] = [
    "Let me check.\n\n",
    "<run>echo 1</run>",
    "\n\nThat should print 1.",
];

#[tokio::test]
async fn markdown_shows_a_command_where_the_agent_asked_for_it() {
    let model = FakeModel::start(vec![Script::Stream(
        PLACED_REPLY.iter().map(|s| s.to_string()).collect(),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &model.one_round_args()).await;
    let (status, body) = server
        .post(
            "/api/rooms/exp6/message",
            json!({"text": "print one", "userId": "ann"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The stored text is the original protocol's, byte for byte; the run
    // says where it was asked.
    let reply = &body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "agent")
        .unwrap()
        .clone();
    assert_eq!(
        reply["text"],
        "Let me check.\n\n\n\nThat should print 1.\n\nOutput (echo 1):\n1"
    );
    assert_eq!(reply["runs"][0]["at"], 15, "{reply}");
    let out = duet(&server, "exp6", &["export", "--format", "md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} in {md}"));
    assert!(at("Let me check.") < at("Output (`echo 1`)"), "{md}");
    assert!(at("Output (`echo 1`)") < at("That should print 1."), "{md}");
    // Where the tag was, the stored prose has four line ends.
    assert!(!md.contains("\n\n\n\n"), "no runs of blank lines: {md:?}");
}

/// The records of a room's `events`, as `{kind, by, …}`.
fn events(messages: &Value) -> Vec<Value> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.get("event").cloned())
        .collect()
}

#[tokio::test]
async fn a_policy_change_and_a_background_start_are_records() {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.ws("exp7", "user=cat").await;
    ws.until_type("duet_you").await;
    let (status, body) = server
        .post(
            "/api/rooms/exp7/policy",
            json!({"policy": "ask", "userId": "ann"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The same policy again changes nothing and records nothing.
    let (status, _) = server
        .post(
            "/api/rooms/exp7/policy",
            json!({"policy": "ask", "userId": "ann"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = server
        .post(
            "/api/rooms/exp7/processes",
            json!({"cmd": "sleep 30", "name": "napper", "userId": "bob"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["process"]["id"].as_str().unwrap().to_string();
    // Live: each comes to the room's sockets as it is stored.
    ws.until(|f| f.to_string().contains(r#""kind":"policy""#))
        .await;
    ws.until(|f| f.to_string().contains(r#""kind":"process""#))
        .await;
    // Stored: what a later reader gets.
    let out = duet(&server, "exp7", &["export", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let export: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        events(&export["messages"]),
        [
            json!({"kind": "policy", "by": "ann", "policy": "ask"}),
            json!({"kind": "process", "by": "bob", "processId": id, "name": "napper", "cmd": "sleep 30"}),
        ]
    );
    let out = duet(&server, "exp7", &["export", "--format", "md"]);
    let md = stdout(&out);
    assert!(md.contains("_ann set the agent's commands to ask_"), "{md}");
    assert!(
        md.contains("_bob started napper in the background: `sleep 30`_"),
        "{md}"
    );
}
