//! The agent's turn end to end: the real `duet serve` binary, its room
//! socket and sandbox, with the model a real HTTP server in the test that
//! speaks the OpenAI streaming protocol with scripted replies.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, Ws};
use serde_json::{Value, json};
use std::time::Duration;

/// A server whose agent is `model`.
async fn serve_with(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let args = if extra.contains(&"--agent-steps") {
        model.server_args()
    } else {
        model.one_round_args()
    };
    Server::fresh_with(&[args, extra.to_vec()].concat()).await
}

/// Sends a message in the background; resolves to the HTTP answer.
fn send(server: &Server, room: &str, text: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let url = server.url(&format!("/api/rooms/{room}/message"));
    let body = json!({"text": text, "userId": "ada"});
    tokio::spawn(async move { common::answer(common::http().post(url).json(&body)).await })
}

/// One frame, reduced to what the order of a turn is about.
fn step(frame: &Value) -> Option<String> {
    let phase = frame["phase"].as_str().unwrap_or_default();
    match frame["type"].as_str()? {
        "cf_agent_state" => Some("state".into()),
        "duet_ai" => Some(format!("ai {phase}")),
        "duet_exec" if phase == "start" => Some(format!(
            "exec start {} {}",
            frame["source"].as_str().unwrap_or_default(),
            frame["cmd"].as_str().unwrap_or_default()
        )),
        "duet_exec" => Some(format!("exec {phase}")),
        _ => None,
    }
}

/// Frames until a state holds a message of `role` after the user's;
/// returns the steps (repeats of one step folded) and the frames.
async fn turn_frames(ws: &mut Ws, role: &str) -> (Vec<String>, Vec<Value>) {
    let mut steps: Vec<String> = Vec::new();
    let mut frames = Vec::new();
    loop {
        let frame = ws.next().await;
        if let Some(s) = step(&frame)
            && steps.last() != Some(&s)
        {
            steps.push(s);
        }
        frames.push(frame.clone());
        let done = frame["type"] == "cf_agent_state"
            && frame["state"]["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m["role"] == role);
        if done {
            return (steps, frames);
        }
    }
}

#[tokio::test]
async fn the_stored_reply_is_the_protocol_format_and_the_frames_come_in_order() {
    let reply = "Here.\n<run>echo hi</run>\n<run>ls nope</run>\n<run>true</run>\n<run>echo err >&2</run>\n<run>for x in a b; do\n  echo \"($x):\"\ndone</run>";
    let model = FakeModel::start(vec![Script::chunked(reply, 6)]).await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("r1", "user=bob").await;

    let answer = send(&server, "r1", "look around");
    let (steps, frames) = turn_frames(&mut ws, "agent").await;
    let (status, body) = answer.await.unwrap();

    let expected = "Here.\n\nOutput (echo hi):\nhi\n\n\nOutput (ls nope):\nls: cannot access 'nope': No such file or directory\n\n\nOutput (true):\n[no output]\n\nOutput (echo err >&2):\nerr\n\n\nOutput (for x in a b; do\n  echo \"($x):\"\ndone):\n(a):\n(b):";
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], expected);
    let stored = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(stored["role"], "agent");
    assert_eq!(stored["text"], expected);
    let runs = stored["runs"].as_array().unwrap();
    let exits: Vec<&Value> = runs.iter().map(|r| &r["exitCode"]).collect();
    assert_eq!(
        exits,
        vec![&json!(0), &json!(2), &json!(0), &json!(0), &json!(0)]
    );
    assert_eq!(runs[3]["stderr"], "err\n");
    assert_eq!(runs[4]["stdout"], "(a):\n(b):\n");

    // The page of messages says the same after the fact.
    let (_, page) = server.get("/api/rooms/r1/messages").await;
    assert_eq!(
        page["messages"].as_array().unwrap().last().unwrap(),
        &stored
    );

    let streamed: String = frames
        .iter()
        .filter(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, reply);
    assert_eq!(
        steps,
        vec![
            "state",
            "ai start",
            "ai delta",
            "ai end",
            "exec start agent echo hi",
            "exec stdout",
            "exec complete",
            "exec start agent ls nope",
            "exec stderr",
            "exec complete",
            "exec start agent true",
            "exec complete",
            "exec start agent echo err >&2",
            "exec stderr",
            "exec complete",
            "exec start agent for x in a b; do\n  echo \"($x):\"\ndone",
            "exec stdout",
            "exec complete",
            "state",
        ]
    );
}

#[tokio::test]
async fn rounds_of_commands_end_in_one_stored_reply() {
    let model = FakeModel::start(vec![
        Script::chunked("<run>echo one > f; cat f</run>", 5),
        Script::chunked("Again.<run>cat f; exit 4</run>", 5),
        Script::chunked("Done.", 5),
    ])
    .await;
    let (server, _dir) = serve_with(&model, &["--agent-steps", "3"]).await;
    let (status, body) = send(&server, "r2", "go").await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "Output (echo one > f; cat f):\none\n\nAgain.\n\nOutput (cat f; exit 4):\none\n\nDone."
    );
    // The reply, then the record of the shell its `exit 4` ended: in the
    // order things happened.
    let messages = body["messages"].as_array().unwrap();
    let [.., stored, shell] = messages.as_slice() else {
        panic!("{body}");
    };
    assert_eq!(stored["runs"].as_array().unwrap().len(), 2);
    assert_eq!(stored["runs"][1]["exitCode"], 4);
    assert_eq!(shell["event"]["kind"], "shell", "{body}");
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn model_errors_end_the_turn_with_a_system_message() {
    let model = FakeModel::start(vec![
        Script::Status(
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        ),
        Script::Status(429, r#"{"error":{"message":"Rate limit reached"}}"#.into()),
        Script::Status(500, "upstream exploded".into()),
        Script::Broken(vec!["Half a ".into(), "reply <run>touch x</run>".into()]),
    ])
    .await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("r3", "user=bob").await;
    for (i, expected) in [
        "answered 401: Incorrect API key provided",
        "answered 429: Rate limit reached",
        "answered 500: upstream exploded",
        "broke off",
    ]
    .into_iter()
    .enumerate()
    {
        let answer = send(&server, "r3", &format!("question {i}"));
        let (steps, frames) = turn_frames(&mut ws, "system").await;
        let (status, body) = answer.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reply"], Value::Null);
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with("Model error: "), "{error}");
        assert!(error.contains(expected), "{error}");
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "system");
        assert_eq!(last["text"], error);
        assert_eq!(steps.first().map(String::as_str), Some("state"));
        assert!(steps.contains(&"ai error".to_string()), "{steps:?}");
        assert!(!steps.iter().any(|s| s.starts_with("exec")), "{steps:?}");
        let ai_error = frames
            .iter()
            .find(|f| f["type"] == "duet_ai" && f["phase"] == "error")
            .unwrap();
        assert_eq!(ai_error["error"], error);
    }
    // Nothing half-written was stored as the agent's, and nothing ran.
    let (_, page) = server.get("/api/rooms/r3/messages").await;
    let roles: Vec<&str> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "system"].repeat(4));
    let (_, ls) = server
        .post("/api/rooms/r3/sandbox/exec", json!({"cmd": "ls"}))
        .await;
    assert_eq!(ls["result"]["stdout"], "");
}

#[tokio::test]
async fn a_slow_turn_is_cancelled() {
    let model = FakeModel::start(vec![Script::Hang(vec!["Thinking".into()])]).await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("r4", "user=bob").await;
    let answer = send(&server, "r4", "take your time");
    ws.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    let (status, cancelled) = server.post("/api/rooms/r4/cancel", json!({})).await;
    assert_eq!((status, cancelled), (200, json!({"cancelled": true})));
    let (status, body) = answer.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["reply"], Value::Null);
    assert_eq!(body["error"], "the agent's turn was cancelled");
    // What had streamed is kept, then a record of who cancelled.
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "agent", "system"]);
    assert_eq!(messages[1]["text"], "Thinking");
    assert_eq!(messages[1]["cancelledBy"], "anonymous");
    assert_eq!(messages[2]["text"], "anonymous cancelled the agent's turn");
}

#[tokio::test]
async fn cancelling_kills_the_agents_running_command() {
    let model = FakeModel::start(vec![Script::chunked("Waiting.<run>sleep 600</run>", 4)]).await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("r5", "user=bob").await;
    let answer = send(&server, "r5", "wait");
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["source"] == "agent")
        .await;
    let (status, cancelled) = server.post("/api/rooms/r5/cancel", json!({})).await;
    assert_eq!((status, cancelled), (200, json!({"cancelled": true})));
    let (_, body) = answer.await.unwrap();
    assert_eq!(body["reply"], Value::Null);
    assert_eq!(body["error"], "the agent's turn was cancelled");
    let complete = ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
    assert_ne!(complete["exitCode"], 0, "{complete}");
}

#[tokio::test]
async fn messages_sent_during_a_turn_are_answered_in_order() {
    let paced = |text: &str| {
        Script::Paced(
            text.chars().map(String::from).collect(),
            Duration::from_millis(20),
        )
    };
    let model = FakeModel::start(vec![paced("First answer."), paced("Second answer.")]).await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("r6", "user=bob").await;
    let first = send(&server, "r6", "one");
    ws.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    let second = send(&server, "r6", "two");
    // The second message is stored at once, while the first turn runs.
    let state = ws
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["messages"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["text"] == "two"))
        })
        .await;
    let texts: Vec<&str> = state["state"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    let (_, first) = first.await.unwrap();
    let (_, second) = second.await.unwrap();
    assert_eq!(first["reply"], "First answer.");
    assert_eq!(second["reply"], "Second answer.");
    let texts: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two", "First answer.", "Second answer."]);
    // The second turn's model saw the first answer, and its own question last.
    let requests = model.requests();
    let contents: Vec<String> = requests[1].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let first_answer = contents.iter().position(|c| c.contains("First answer."));
    let question = contents.iter().position(|c| c.ends_with("two"));
    assert!(
        first_answer.is_some() && question == Some(contents.len() - 1) && first_answer < question,
        "{contents:?}"
    );
}

/// `duet ask` with the given args; (exit code, stdout, stderr).
async fn ask(server: &Server, room: &str, question: &str) -> (i32, String, String) {
    ask_with(server, room, question, &[]).await
}

/// `duet ask` with extra flags.
async fn ask_with(
    server: &Server,
    room: &str,
    question: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let url = server.url("");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["ask", "--server", &url, "--room", room, "--name", "ada"])
        .args(extra)
        .arg(question)
        .env_remove("DUET_TOKEN")
        .env_remove("COLUMNS")
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn duet_ask_prints_the_reply_then_the_outputs() {
    let model = FakeModel::start(vec![
        Script::chunked("Checking.\n<run>echo hello</run><run>ls nope</run>", 3),
        Script::Status(500, r#"{"error":{"message":"model melted"}}"#.into()),
    ])
    .await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let (code, stdout, stderr) = ask(&server, "r7", "what is here?").await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "Checking.\n\n$ echo hello\nhello\n\n$ ls nope\nls: cannot access 'nope': No such file or directory\n[exit code 2]\n"
    );
    let (code, stdout, stderr) = ask(&server, "r7", "again?").await;
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(stderr.contains("answered 500: model melted"), "{stderr}");
}

#[tokio::test]
async fn duet_ask_passes_the_token_and_says_what_is_wrong() {
    let model = FakeModel::start(vec![Script::chunked("Fine.<run>echo ok</run>", 4)]).await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            "--ai-url",
            &model.url,
            "--ai-model",
            "m",
            "--token",
            "s3cret",
            "--agent-steps",
            "1",
        ],
    )
    .await;
    let (code, _, stderr) = ask(&server, "r10", "hi").await;
    assert_eq!(code, 1);
    assert!(stderr.contains("401"), "{stderr}");
    let (code, stdout, stderr) = ask_with(&server, "r10", "hi", &["--token", "s3cret"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "Fine.\n\n$ echo ok\nok\n");
    let (code, _, stderr) = ask(&server, "bad room", "hi").await;
    assert_eq!(code, 1);
    assert!(stderr.contains("room \"bad room\""), "{stderr}");
}

#[tokio::test]
async fn duet_ask_shows_every_round() {
    let model = FakeModel::start(vec![
        Script::chunked("First.<run>echo one</run>", 4),
        Script::chunked("Second.", 4),
    ])
    .await;
    let (server, _dir) = serve_with(&model, &["--agent-steps", "2"]).await;
    let (code, stdout, stderr) = ask(&server, "r9", "go").await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "First.\n\n$ echo one\none\n\nSecond.\n");
}

#[tokio::test]
async fn without_a_model_the_room_is_told_how_to_configure_one() {
    if std::net::TcpStream::connect("127.0.0.1:11434").is_ok() {
        eprintln!("an Ollama runs here; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let (status, body) = send(&server, "r8", "hello?").await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["reply"], Value::Null);
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("No model is configured"), "{error}");
    assert!(error.contains("DUET_AI_URL"), "{error}");
    // Everything else works.
    let (status, exec) = server
        .post("/api/rooms/r8/sandbox/exec", json!({"cmd": "echo fine"}))
        .await;
    assert_eq!((status, &exec["result"]["stdout"]), (200, &json!("fine\n")));
}

/// Issue 23, item 8: a record of what happened to the agent's command
/// while its turn ran (bob's interrupt) comes after the turn's reply,
/// live and stored, in the order things happened.
#[tokio::test]
async fn an_interrupt_of_the_agents_command_is_recorded_after_its_reply() {
    let model = FakeModel::start(vec![
        Script::Stream(vec![
            "Waiting.\n\n".into(),
            "<run>echo begun; sleep 20</run>".into(),
        ]),
        Script::Stream(vec!["It was stopped.".into()]),
    ])
    .await;
    let (server, _dir) = serve_with(&model, &[]).await;
    let mut ws = server.joined("ord", "user=bob").await;
    let url = server.url("/api/rooms/ord/message");
    let asked = tokio::spawn(common::answer(
        common::http()
            .post(url)
            .json(&json!({"text": "wait a while", "userId": "ann"})),
    ));
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    let (status, body) = server
        .post("/api/rooms/ord/sandbox/interrupt", json!({"userId": "bob"}))
        .await;
    assert_eq!(
        (status, &body["interrupted"]),
        (200, &json!(true)),
        "{body}"
    );
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (_, state) = server.get("/api/rooms/ord/messages").await;
    let order: Vec<String> = state["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m["event"]["kind"].as_str() {
            Some(kind) => kind.to_string(),
            None => m["role"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    assert_eq!(order, ["user", "agent", "interrupt"], "{state}");
}
