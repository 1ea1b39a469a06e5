//! The agent's turn through `duet serve`, against a fake model speaking the
//! OpenAI streaming protocol and the real sandbox: frame order, the queue,
//! cancel and cleanup during a turn.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, Ws, http};
use serde_json::{Value, json};
use std::time::Duration;

async fn with_model(model: &FakeModel) -> (Server, tempfile::TempDir) {
    Server::fresh_with(&model.one_round_args()).await
}

/// Posts a message in the background; resolves to its status and answer.
fn post_message(server: &Server, room: &str, text: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let req = http()
        .post(server.url(&format!("/api/rooms/{room}/message")))
        .json(&json!({"text": text, "userId": "ada"}));
    tokio::spawn(common::answer(req))
}

/// A short label of a frame, to check their order.
fn label(f: &Value) -> String {
    match f["type"].as_str().unwrap() {
        "cf_agent_state" => format!("state{}", f["state"]["messages"].as_array().unwrap().len()),
        "duet_ai" => format!("ai:{}", f["phase"].as_str().unwrap()),
        "duet_exec" => format!("exec:{}", f["phase"].as_str().unwrap()),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn a_turn_streams_runs_and_stores_in_protocol_order() {
    let model = FakeModel::start(vec![Script::chunked("Checking.\n<run>echo hi</run>", 4)]).await;
    let (server, _dir) = with_model(&model).await;
    let mut bob = server.joined("t1", "user=bob").await;
    let answer = post_message(&server, "t1", "say hi");
    let mut labels = Vec::new();
    let mut frames = Vec::new();
    loop {
        let f = bob.next().await;
        labels.push(label(&f));
        frames.push(f.clone());
        if label(&f) == "state2" {
            break;
        }
    }
    labels.dedup();
    assert_eq!(
        labels,
        [
            "state1",
            "ai:start",
            "ai:delta",
            "ai:end",
            "exec:start",
            "exec:stdout",
            "exec:complete",
            "state2"
        ]
    );
    let start = frames.iter().find(|f| label(f) == "exec:start").unwrap();
    assert_eq!(
        (start["by"].clone(), start["source"].clone()),
        (json!("agent"), json!("agent"))
    );
    let (status, body) = answer.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let reply = body["reply"].as_str().unwrap();
    assert_eq!(reply, "Checking.\n\nOutput (echo hi):\nhi");
    let agent = &body["messages"][1];
    assert_eq!(agent["role"], "agent");
    assert_eq!(agent["text"], reply);
    assert_eq!(
        agent["runs"],
        // `at`: where the model asked for it, at the end of "Checking.".
        json!([{"cmd":"echo hi","stdout":"hi\n","stderr":"","exitCode":0,"at":9}])
    );
    assert_eq!(
        frames.last().unwrap()["state"]["messages"],
        body["messages"]
    );
    // The agent's command is in the room's commands too.
    assert_eq!(
        frames.last().unwrap()["state"]["execs"][0]["source"],
        "agent"
    );
}

#[tokio::test]
async fn messages_during_a_turn_are_stored_at_once_and_answered_in_order() {
    let paced = |t: &str| Script::Paced(vec![t.to_string()], Duration::from_millis(300));
    let model = FakeModel::start(vec![paced("first"), paced("second")]).await;
    let (server, _dir) = with_model(&model).await;
    let mut bob = server.joined("t2", "user=bob").await;
    let one = post_message(&server, "t2", "one");
    bob.until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let two = post_message(&server, "t2", "two");
    // "two" is stored (and broadcast) while the first turn runs.
    let state = bob.until_type("cf_agent_state").await;
    let texts: Vec<&str> = state["state"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    let (_, first) = one.await.unwrap();
    assert_eq!(first["reply"], "first");
    let (_, second) = two.await.unwrap();
    assert_eq!(second["reply"], "second");
    let texts: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two", "first", "second"]);
    // The second turn saw the first reply and its own message last.
    let history = &model.requests()[1].1["messages"];
    let last = history.as_array().unwrap().last().unwrap();
    assert!(
        last["content"].as_str().unwrap().ends_with("two"),
        "{history}"
    );
    let contents: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.iter().any(|c| c.ends_with("first")), "{history}");
}

#[tokio::test]
async fn cancel_ends_a_hanging_turn_and_says_so() {
    let model = FakeModel::start(vec![Script::Hang(vec!["thinking".into()])]).await;
    let (server, _dir) = with_model(&model).await;
    let mut bob = server.joined("t3", "user=bob").await;
    let answer = post_message(&server, "t3", "hang");
    let start = bob
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let turn_id = start["turnId"].as_str().unwrap();
    assert!(turn_id.starts_with('t'));
    // What streamed before the cancel is kept: wait until it has.
    bob.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    assert_eq!(
        server
            .post("/api/rooms/t3/cancel", json!({"turnId":"t-other"}))
            .await
            .1,
        json!({"cancelled":false})
    );
    assert_eq!(
        server
            .post(
                "/api/rooms/t3/cancel",
                json!({"turnId":turn_id,"userId":"bob"})
            )
            .await
            .1,
        json!({"cancelled":true})
    );
    let (status, body) = answer.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["reply"], Value::Null);
    assert_eq!(body["error"], "the agent's turn was cancelled");
    // The reply keeps what had streamed, then the record says who cancelled.
    let agent = &body["messages"][1];
    assert_eq!(agent["role"], "agent");
    assert_eq!(agent["text"], "thinking");
    assert_eq!(agent["cancelledBy"], "bob");
    let record = &body["messages"][2];
    assert_eq!(record["role"], "system");
    assert_eq!(
        record["event"],
        json!({"kind":"cancel","by":"bob","turnId":turn_id})
    );
    assert_eq!(record["text"], "bob cancelled the agent's turn");
    assert_eq!(
        server.post("/api/rooms/t3/cancel", json!({})).await.1,
        json!({"cancelled":false})
    );
}

#[tokio::test]
async fn cancel_kills_the_agents_running_command() {
    let model = FakeModel::start(vec![Script::chunked("<run>sleep 60</run>", 50)]).await;
    let (server, _dir) = with_model(&model).await;
    let mut bob = server.joined("t4", "user=bob").await;
    let answer = post_message(&server, "t4", "sleep");
    bob.until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    let (_, body) = server.post("/api/rooms/t4/cancel", json!({})).await;
    assert_eq!(body, json!({"cancelled":true}));
    let complete = bob
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
    assert!(complete["exitCode"] != 0, "{complete}");
    let (_, body) = answer.await.unwrap();
    assert_eq!(body["reply"], Value::Null, "{body}");
}

#[tokio::test]
async fn a_cancel_keeps_the_shells_functions_aliases_variables_and_options() {
    use common::shell_state::{CHECK_STATE, SHELL_STATE, STATE_KEPT};
    let model = FakeModel::start(vec![Script::chunked(
        "<run>echo started; sleep 60; echo after</run>",
        50,
    )])
    .await;
    let (server, _dir) = with_model(&model).await;
    let mut bob = server.joined("t9", "user=bob").await;
    let exec = |cmd: &str| {
        let body = json!({ "cmd": cmd });
        async { server.post("/api/rooms/t9/sandbox/exec", body).await.1["result"].clone() }
    };
    assert_eq!(exec(SHELL_STATE).await["exitCode"], 0);
    let answer = post_message(&server, "t9", "sleep");
    bob.until(|f| {
        f["type"] == "duet_exec"
            && f["phase"] == "stdout"
            && f["data"].as_str().is_some_and(|d| d.contains("started"))
    })
    .await;
    let (_, body) = server.post("/api/rooms/t9/cancel", json!({})).await;
    assert_eq!(body, json!({"cancelled":true}));
    let complete = bob
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
    assert_eq!(complete["exitCode"], 130, "{complete}");
    assert_eq!(
        complete["error"],
        Value::Null,
        "the shell was replaced: {complete}"
    );
    answer.await.unwrap();
    let r = exec(CHECK_STATE).await;
    assert_eq!(r["stdout"], STATE_KEPT, "the shell lost its state: {r}");
}

#[tokio::test]
async fn cleanup_during_a_turn_answers_it_and_keeps_the_room_empty() {
    let model = FakeModel::start(vec![Script::Hang(vec!["…".into()])]).await;
    let (server, _dir) = with_model(&model).await;
    let mut bob: Ws = server.joined("t5", "user=bob").await;
    let answer = post_message(&server, "t5", "hang");
    bob.until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let (status, cleaned) = server
        .post("/api/rooms/t5/cleanup", json!({"userId":"bob"}))
        .await;
    assert_eq!(status, 200, "{cleaned}");
    let (_, body) = answer.await.unwrap();
    assert_eq!(body["reply"], Value::Null);
    assert_eq!(body["error"], "the room was cleaned up");
    // Nothing of the turn is stored: the room holds its cleanup record alone.
    let left = server.get("/api/rooms/t5/messages").await.1["messages"].clone();
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert_eq!(left[0]["event"], json!({"kind":"cleanup","by":"bob"}));
}
