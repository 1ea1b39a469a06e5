//! `clientId` makes sending a message safe to repeat (a client that lost
//! the answer to a drop sends it again): one stored message, one turn, the
//! same answer, also after a restart; and text and names are trimmed.

use crate::common;
use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use serde_json::{Value, json};
use std::time::Duration;

async fn model_server(model: &FakeModel, dir: &std::path::Path) -> Server {
    Server::start(dir, &model.one_round_args()).await
}

fn users(page: &Value) -> Vec<Value> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_repeated_client_id_stores_once_and_answers_the_same() {
    let model = FakeModel::start(vec![Script::chunked("hello there", 4)]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = model_server(&model, dir.path()).await;
    let body = json!({"text":"  say hi  ","userId":"  ada ","clientId":"c-1"});
    let (status, first) = server.post("/api/rooms/r/message", body.clone()).await;
    assert_eq!(
        (status, first["reply"].as_str()),
        (200, Some("hello there")),
        "{first}"
    );
    let (status, again) = server.post("/api/rooms/r/message", body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(again["reply"], first["reply"]);
    assert_eq!(model.requests().len(), 1, "one turn only");
    let (_, page) = server.get("/api/rooms/r/messages").await;
    let asked = users(&page);
    assert_eq!(asked.len(), 1, "{page}");
    assert_eq!(asked[0]["text"], "say hi", "text is trimmed");
    assert_eq!(asked[0]["userId"], "ada", "userId is trimmed");
    assert_eq!(asked[0]["clientId"], "c-1");

    // Over rpc too, and after a restart the answer is kept.
    server.stop().await;
    let server = model_server(&model, dir.path()).await;
    let mut ws = server.joined("r", "user=ada").await;
    let answer = ws
        .rpc(1, "message", json!([{"text":"say hi","clientId":"c-1"}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"]["reply"], "hello there");
    assert_eq!(model.requests().len(), 1);
    // Another id is another message.
    model.push(Script::chunked("again", 3));
    let answer = ws
        .rpc(2, "message", json!([{"text":"say hi","clientId":"c-2"}]))
        .await;
    assert_eq!(answer["result"]["reply"], "again", "{answer}");
}

#[tokio::test]
async fn a_repeat_during_the_turn_waits_for_its_answer() {
    let model = FakeModel::start(vec![Script::Paced(
        vec!["slow ".into(), "reply".into()],
        Duration::from_millis(300),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = model_server(&model, dir.path()).await;
    let body = json!({"text":"q","clientId":"same"});
    let (a, b) = tokio::join!(server.post("/api/rooms/w/message", body.clone()), async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        server.post("/api/rooms/w/message", body.clone()).await
    });
    assert_eq!(a.1["reply"], "slow reply", "{a:?}");
    assert_eq!(b.1["reply"], "slow reply", "{b:?}");
    let (_, page) = server.get("/api/rooms/w/messages").await;
    assert_eq!(users(&page).len(), 1, "{page}");
}

#[tokio::test]
async fn a_repeat_of_a_question_cut_off_by_a_crash_says_so() {
    let model = FakeModel::start(vec![Script::Hang(vec!["thinking".into()])]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = model_server(&model, dir.path()).await;
    let mut ws = server.joined("k", "user=ada").await;
    let url = server.url("/api/rooms/k/message");
    let sent = tokio::spawn(common::answer(
        common::http()
            .post(url)
            .json(&json!({"text":"q","clientId":"lost"})),
    ));
    ws.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    server.crash().await;
    let _ = sent.await;
    let server = model_server(&model, dir.path()).await;
    let (status, answer) = server
        .post(
            "/api/rooms/k/message",
            json!({"text":"q","clientId":"lost"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["reply"], Value::Null);
    assert!(
        answer["error"].as_str().unwrap().contains("restarted"),
        "{answer}"
    );
    assert_eq!(users(&answer).len(), 1, "nothing new stored: {answer}");
}

#[tokio::test]
async fn a_bad_client_id_is_named() {
    let (server, _dir) = Server::fresh().await;
    for bad in [json!(""), json!(7), json!("x".repeat(65)), json!("a\nb")] {
        let (status, body) = server
            .post("/api/rooms/b/message", json!({"text":"q","clientId":bad}))
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(body["details"]["clientId"].is_array(), "{body}");
    }
}
