//! What the agent knows of the project (docs/protocol.md "What the agent
//! knows of the project"), against a real backend and a fake model that
//! records what it was sent: AGENTS.md read afresh each turn and bounded,
//! `@path` files inlined (or said missing), the `run` tool giving the same
//! stored reply as tags (also when the model refuses tools), and
//! `GET /execs` paging through a room's commands. Backend-neutral.

use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, http};
use serde_json::{Value, json};

/// A backend whose model is `model`, with more `duet serve` flags.
async fn with_model(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    Server::fresh_with(&[model.one_round_args(), extra.to_vec()].concat()).await
}

/// Writes a workspace file of `room`.
async fn put(server: &Server, room: &str, path: &str, bytes: &[u8]) {
    let mut req = http()
        .put(server.url(&format!("/api/rooms/{room}/files/{path}")))
        .body(bytes.to_vec());
    if let Some(token) = &server.token {
        req = req.bearer_auth(token);
    }
    let status = req.send().await.unwrap().status();
    assert_eq!(status, 200, "PUT {path}");
}

/// Asks the agent and answers its reply (`null` when it had none).
async fn ask(server: &Server, room: &str, text: &str) -> Value {
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": text, "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The messages of the model's `n`th request.
fn sent(model: &FakeModel, n: usize) -> Vec<Value> {
    model.requests()[n].1["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap()
}

#[tokio::test]
async fn agents_md_is_the_second_system_message_read_afresh_each_turn() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::Stream(vec!["ok".into()]));
    let (server, _dir) = with_model(&model, &[]).await;
    // No AGENTS.md: nothing but the system prompt is a system message.
    ask(&server, "am1", "hello").await;
    let first = sent(&model, 0);
    assert_eq!(first[0]["role"], "system");
    assert_ne!(first[1]["role"], "system", "{first:?}");

    put(
        &server,
        "am1",
        "AGENTS.md",
        b"Use tabs. Run tests with make check.",
    )
    .await;
    ask(&server, "am1", "what are the rules?").await;
    let second = sent(&model, 1);
    assert_eq!(second[1]["role"], "system");
    assert_eq!(
        content(&second[1]),
        "[the project's instructions: /workspace/AGENTS.md]\nUse tabs. Run tests with make check."
    );

    // Changed between turns: the next turn reads the new text.
    put(&server, "am1", "AGENTS.md", b"Use spaces.").await;
    ask(&server, "am1", "and now?").await;
    let third = sent(&model, 2);
    assert_eq!(
        content(&third[1]),
        "[the project's instructions: /workspace/AGENTS.md]\nUse spaces."
    );
}

#[tokio::test]
async fn a_long_agents_md_is_cut_at_the_limit_and_says_so() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::Stream(vec!["ok".into()]));
    let (server, _dir) = with_model(&model, &["--agents-md-bytes", "64"]).await;
    let long = "x".repeat(100);
    put(&server, "am2", "AGENTS.md", long.as_bytes()).await;
    ask(&server, "am2", "hi").await;
    let messages = sent(&model, 0);
    assert_eq!(
        content(&messages[1]),
        format!(
            "[the project's instructions: /workspace/AGENTS.md]\n{}\n[AGENTS.md is 100 bytes: only the first 64 are shown]",
            "x".repeat(64)
        )
    );
}

#[tokio::test]
async fn at_paths_inline_files_and_say_plainly_what_could_not_be() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::Stream(vec!["ok".into()]));
    let (server, _dir) = with_model(&model, &[]).await;
    put(&server, "at1", "src/main.rs", b"fn main() {}\n").await;
    put(&server, "at1", "notes.txt", b"remember").await;
    put(&server, "at1", "big.txt", "y".repeat(40_000).as_bytes()).await;
    let question = "why does @src/main.rs fail? see @notes.txt, @missing.txt and @big.txt @notes.txt @fifth.txt";
    let body = ask(&server, "at1", question).await;
    // The stored message keeps what the person wrote.
    let stored = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(stored["text"], question);
    let messages = sent(&model, 0);
    let last = content(messages.last().unwrap());
    let cut = "y".repeat(32_768);
    let expected = format!(
        "ada: {question}\n\n[@src/main.rs: 13 bytes]\nfn main() {{}}\n\n\n[@notes.txt: 8 bytes]\nremember\n\n\
         [@missing.txt: no such file in /workspace]\n\n\
         [@big.txt: 40000 bytes]\n{cut}\n[@big.txt is 40000 bytes: only the first 32768 are shown]\n\n\
         [@fifth.txt: not read: at most 4 files are inlined in a question]"
    );
    assert_eq!(last, expected);
}

#[tokio::test]
async fn at_agent_at_a_line_start_and_bad_paths_are_not_files() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::Stream(vec!["ok".into()]));
    let (server, _dir) = with_model(&model, &[]).await;
    put(&server, "at2", "lib/a.txt", b"a").await;
    ask(
        &server,
        "at2",
        "@agent look at @../etc/passwd and @lib please",
    )
    .await;
    let messages = sent(&model, 0);
    assert_eq!(
        content(messages.last().unwrap()),
        "ada: @agent look at @../etc/passwd and @lib please\n\n\
         [@../etc/passwd: not a path inside /workspace]\n\n[@lib: a folder, not a file]"
    );
}

/// The stored agent reply of a turn (its text and runs) and the text its
/// `duet_ai` deltas streamed, over a socket of the room.
async fn turn_of(server: &Server, room: &str, question: &str) -> (Value, Value, String) {
    let mut ws = server.joined(room, "user=bob").await;
    let body = ask(server, room, question).await;
    let mut streamed = String::new();
    loop {
        let f = ws.next().await;
        if f["type"] == "duet_ai" && f["phase"] == "delta" {
            streamed.push_str(f["text"].as_str().unwrap());
        }
        if f["type"] == "cf_agent_state"
            && f["state"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "agent")
        {
            break;
        }
    }
    let agent = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "agent")
        .unwrap()
        .clone();
    (agent["text"].clone(), agent["runs"].clone(), streamed)
}

#[tokio::test]
async fn a_run_tool_call_gives_the_same_reply_and_frames_as_a_tag() {
    let model = FakeModel::start(vec![
        Script::Stream(vec!["Checking.".into(), "<run>echo hi</run>".into()]),
        Script::Tools(
            vec!["Checking.".into()],
            vec![(
                "run".into(),
                vec!["{\"cm".into(), "d\": \"echo".into(), " hi\"}".into()],
            )],
        ),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let tagged = turn_of(&server, "tool1", "say hi").await;
    let called = turn_of(&server, "tool2", "say hi").await;
    assert_eq!(tagged.0, "Checking.\n\nOutput (echo hi):\nhi");
    assert_eq!(called.0, tagged.0);
    assert_eq!(called.1, tagged.1);
    assert_eq!(called.2, tagged.2);
    // The tool was offered, as the contract writes it.
    let tools = &model.requests()[1].1["tools"];
    assert_eq!(tools[0]["function"]["name"], "run");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["cmd"])
    );
}

#[tokio::test]
async fn a_model_that_refuses_tools_gets_tags_the_same_reply() {
    let model = FakeModel::start(vec![
        Script::NoTools(Box::new(Script::Stream(vec![
            "Checking.<run>echo hi</run>".into(),
        ]))),
        Script::Stream(vec!["again".into()]),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let (text, _, _) = turn_of(&server, "tool3", "say hi").await;
    assert_eq!(text, "Checking.\n\nOutput (echo hi):\nhi");
    let requests = model.requests();
    assert!(requests[0].1.get("tools").is_some());
    assert!(requests[1].1.get("tools").is_none());
    // From then on, tags only.
    ask(&server, "tool3", "again").await;
    assert!(model.requests()[2].1.get("tools").is_none());
}

#[tokio::test]
async fn a_rate_limit_under_auto_is_the_model_error_not_a_refusal_of_tools() {
    let model = FakeModel::start(vec![
        Script::Status(429, r#"{"error":{"message":"Rate limit reached"}}"#.into()),
        Script::Stream(vec!["fine".into()]),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let body = ask(&server, "tool6", "hi").await;
    assert_eq!(body["reply"], Value::Null);
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("answered 429: Rate limit reached"),
        "{error}"
    );
    // Asked once, not again without tools; and the next turn offers them.
    assert_eq!(model.requests().len(), 1);
    let body = ask(&server, "tool6", "hi again").await;
    assert_eq!(body["reply"], "fine");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].1.get("tools").is_some());
}

#[tokio::test]
async fn with_tools_on_a_refusal_is_the_model_error_and_off_offers_none() {
    let model = FakeModel::start(vec![Script::NoTools(Box::new(Script::Stream(vec![
        "never".into(),
    ])))])
    .await;
    let (server, _dir) = with_model(&model, &["--ai-tools", "on"]).await;
    let body = ask(&server, "tool4", "hi").await;
    assert_eq!(body["reply"], Value::Null);
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("400") && error.contains("does not support tools"),
        "{error}"
    );
    drop(server);

    let model = FakeModel::start(vec![Script::Stream(vec!["fine".into()])]).await;
    let (server, _dir) = with_model(&model, &["--ai-tools", "off"]).await;
    let body = ask(&server, "tool5", "hi").await;
    assert_eq!(body["reply"], "fine");
    assert!(model.requests()[0].1.get("tools").is_none());
}

#[tokio::test]
async fn execs_page_through_every_command_of_the_room() {
    let (server, _dir) = Server::fresh().await;
    // More than the state's 20: every one is kept, not only those.
    for n in 0..25 {
        let (status, _) = server
            .post(
                "/api/rooms/ex1/sandbox/exec",
                json!({"cmd": format!("echo {n}"), "userId": "ann"}),
            )
            .await;
        assert_eq!(status, 200);
    }
    let (status, page) = server.get("/api/rooms/ex1/execs?limit=2").await;
    assert_eq!(status, 200);
    let cmds = |page: &Value| -> Vec<String> {
        page["execs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["cmd"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(cmds(&page), ["echo 23", "echo 24"]);
    assert_eq!(page["hasMore"], true);
    assert_eq!(page["execs"][0]["by"], "ann");
    assert_eq!(page["execs"][0]["stdout"], "23\n");
    let oldest = page["execs"][0]["execId"].as_str().unwrap().to_string();
    let (_, older) = server
        .get(&format!("/api/rooms/ex1/execs?before={oldest}&limit=100"))
        .await;
    let expected: Vec<String> = (0..23).map(|n| format!("echo {n}")).collect();
    assert_eq!(cmds(&older), expected);
    assert_eq!(older["hasMore"], false);
    let (status, bad) = server.get("/api/rooms/ex1/execs?before=zz&limit=0").await;
    assert_eq!(status, 400);
    assert!(bad["details"]["before"].is_array() && bad["details"]["limit"].is_array());
}
