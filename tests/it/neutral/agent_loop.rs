//! An agent that finishes the job (issue 29, docs/protocol.md "The agent's
//! turn, in order"): rounds until the model answers without commands or
//! tools, the file tools confined to /workspace, the approval policy on
//! every write, the budgets that end a turn that never stops, a cancel in
//! the middle of a round, and what is sent bounded by the context's
//! tokens. A real backend, its sandbox, and scripted models over HTTP.
//! Backend-neutral.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::cli::{duet, stderr, stdout};
use crate::common::{Server, Ws, http};
use serde_json::{Value, json};

/// A tool call of a scripted answer: its name and its arguments.
fn call(name: &str, args: Value) -> (String, Vec<String>) {
    (name.to_string(), vec![args.to_string()])
}

/// An answer that says `prose` and calls `calls`.
fn tools(prose: &str, calls: Vec<(String, Vec<String>)>) -> Script {
    let prose = if prose.is_empty() {
        Vec::new()
    } else {
        vec![prose.to_string()]
    };
    Script::Tools(prose, calls)
}

/// Posts a question in the background; resolves to its status and answer.
fn ask(server: &Server, room: &str, text: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let req = http()
        .post(server.url(&format!("/api/rooms/{room}/message")))
        .json(&json!({"text": text, "userId": "ada"}));
    tokio::spawn(common::answer(req))
}

/// Runs `cmd` in the room as a person; its result.
async fn exec(server: &Server, room: &str, cmd: &str) -> Value {
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": cmd, "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

/// The text of a workspace file, as `GET /files` gives it.
async fn file(server: &Server, room: &str, path: &str) -> (u16, String) {
    get(server, room, &format!("files/{path}")).await
}

/// `GET /api/rooms/{room}/{route}`: status and text.
async fn get(server: &Server, room: &str, route: &str) -> (u16, String) {
    let res = http()
        .get(server.url(&format!("/api/rooms/{room}/{route}")))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// The last message of the model's `n`th request.
fn last_sent(model: &FakeModel, n: usize) -> String {
    let requests = model.requests();
    let messages = requests[n].1["messages"].as_array().unwrap().clone();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The stored agent message of an answer, and what follows it.
fn agent_message(body: &Value) -> (Value, Vec<Value>) {
    let messages = body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .rposition(|m| m["role"] == "agent")
        .unwrap_or_else(|| panic!("no agent message: {body}"));
    (messages[at].clone(), messages[at + 1..].to_vec())
}

const TEST_SH: &str = "out=$(bash calc.sh); if [ \"$out\" = 4 ]; then echo PASS; else echo \"FAIL: 2 + 2 gave $out\"; exit 1; fi\n";

#[tokio::test]
async fn one_question_fixes_a_failing_test_with_edit_file_and_default_settings() {
    let model = FakeModel::start(vec![
        tools(
            "Running the test first.",
            vec![call("run", json!({"cmd": "bash test.sh"}))],
        ),
        tools(
            "It subtracts; fixing calc.sh.",
            vec![
                call(
                    "edit_file",
                    json!({"path": "calc.sh", "old": "2 - 2", "new": "2 + 2"}),
                ),
                call("run", json!({"cmd": "bash test.sh"})),
            ],
        ),
        Script::Stream(vec!["The test passes now.".into()]),
    ])
    .await;
    // Default settings: no --agent-steps, no budget flags.
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let room = "fix1";
    let mut bob: Ws = server.joined(room, "user=bob").await;
    exec(
        &server,
        room,
        &format!("printf 'echo $((2 - 2))\\n' > calc.sh; printf '%s' '{TEST_SH}' > test.sh"),
    )
    .await;
    assert_eq!(exec(&server, room, "bash test.sh").await["exitCode"], 1);

    let (status, body) = ask(&server, room, "make the test pass").await.unwrap();
    assert_eq!(status, 200, "{body}");
    // The model read the failure, then the success, after its edit.
    assert_eq!(model.requests().len(), 3);
    let second = last_sent(&model, 1);
    assert!(second.contains("FAIL: 2 + 2 gave 0"), "{second}");
    let third = last_sent(&model, 2);
    assert!(
        third.contains("Result (edit_file calc.sh):\nedited calc.sh"),
        "{third}"
    );
    assert!(third.contains("PASS"), "{third}");
    assert_eq!(file(&server, room, "calc.sh").await.1, "echo $((2 + 2))\n");
    // `/diff` of the turn: the workspace against the automatic checkpoint
    // the turn took before its first change shows the edit.
    let (status, diff) = get(&server, room, "diff?from=auto-1").await;
    assert_eq!(status, 200, "{diff}");
    assert!(
        diff.contains("--- a/calc.sh\n+++ b/calc.sh\n")
            && diff.contains("-echo $((2 - 2))\n+echo $((2 + 2))\n"),
        "{diff}"
    );

    let (agent, after) = agent_message(&body);
    let text = agent["text"].as_str().unwrap();
    assert_eq!(body["reply"], agent["text"]);
    assert!(text.starts_with("Running the test first."), "{text}");
    assert!(text.contains("Output (bash test.sh):\nFAIL"), "{text}");
    assert!(text.contains("Edited calc.sh (+1 -1 lines)"), "{text}");
    assert!(text.contains("Output (bash test.sh):\nPASS"), "{text}");
    assert!(text.ends_with("The test passes now."), "{text}");
    let codes: Vec<Value> = agent["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["exitCode"].clone())
        .collect();
    assert_eq!(codes, [json!(1), json!(0)]);
    // The edit is a record of the timeline, after the reply.
    let edit = after
        .iter()
        .find(|m| m["event"]["kind"] == "edit")
        .unwrap_or_else(|| panic!("no edit record: {after:?}"));
    let turn_id = edit["event"]["turnId"].as_str().unwrap();
    assert!(turn_id.starts_with('t'));
    assert_eq!(
        edit["event"],
        json!({"kind":"edit","by":"agent","turnId":turn_id,"path":"calc.sh","added":1,"removed":1})
    );
    // Everyone watched the edit's line stream in the turn's frames.
    bob.until(|f| {
        f["type"] == "duet_ai"
            && f["phase"] == "delta"
            && f["text"]
                .as_str()
                .is_some_and(|t| t.contains("Edited calc.sh"))
    })
    .await;
}

#[tokio::test]
async fn the_room_state_shows_the_turns_bounds() {
    let model = FakeModel::start(Vec::new()).await;
    let (server, _dir) = Server::fresh_with(
        &[
            model.server_args(),
            vec!["--agent-steps", "7", "--agent-turn-secs", "90"],
        ]
        .concat(),
    )
    .await;
    let mut ws = server.ws("bounds", "user=ada").await;
    let state = ws.until_type("cf_agent_state").await;
    assert_eq!(
        state["state"]["agent"],
        json!({"model":"scripted","models":["scripted"],"steps":7,"turnSecs":90,"contextTokens":32000})
    );
}

#[tokio::test]
async fn a_model_that_never_stops_is_ended_by_the_steps_and_the_time() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(tools(
        "Again.",
        vec![call("run", json!({"cmd": "echo again"}))],
    ));
    let args = [model.server_args(), vec!["--agent-steps", "3"]].concat();
    let (server, _dir) = Server::fresh_with(&args).await;
    let (_, body) = ask(&server, "steps", "loop").await.unwrap();
    let reply = body["reply"].as_str().unwrap();
    assert_eq!(model.requests().len(), 3);
    assert_eq!(reply.matches("Output (echo again):\nagain").count(), 3);
    assert!(
        reply.ends_with(
            "\n\nThe agent stopped after 3 rounds, the most a turn may take here; ask it to go on."
        ),
        "{reply}"
    );

    // Rounds without end but a turn of 2 seconds: the time ends it.
    let model = FakeModel::start(Vec::new()).await;
    model.always(tools("", vec![call("run", json!({"cmd": "echo more"}))]));
    let args = [
        model.server_args(),
        vec!["--agent-steps", "100000", "--agent-turn-secs", "2"],
    ]
    .concat();
    let (server, _dir) = Server::fresh_with(&args).await;
    let (_, body) = ask(&server, "time", "loop").await.unwrap();
    let reply = body["reply"].as_str().unwrap();
    assert!(
        reply.ends_with(
            "\n\nThe agent stopped after 2 seconds, the most a turn may take here; ask it to go on."
        ),
        "{reply}"
    );
    let rounds = model.requests().len();
    assert!(rounds >= 2, "{rounds}");
    assert_eq!(reply.matches("Output (echo more)").count(), rounds);
}

#[tokio::test]
async fn a_cancel_in_the_middle_of_round_three_keeps_what_was_done() {
    let model = FakeModel::start(vec![
        tools("One.", vec![call("run", json!({"cmd": "echo one"}))]),
        tools(
            "Two.",
            vec![call(
                "write_file",
                json!({"path": "two.txt", "content": "2\n"}),
            )],
        ),
        Script::Hang(vec!["Thinking about three".into()]),
    ])
    .await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let mut bob = server.joined("cancel3", "user=bob").await;
    let answer = ask(&server, "cancel3", "go");
    bob.until(|f| {
        f["type"] == "duet_ai"
            && f["phase"] == "delta"
            && f["text"]
                .as_str()
                .is_some_and(|t| t.contains("Thinking about three"))
    })
    .await;
    let (_, cancelled) = server
        .post("/api/rooms/cancel3/cancel", json!({"userId": "bob"}))
        .await;
    assert_eq!(cancelled, json!({"cancelled": true}));
    let (_, body) = answer.await.unwrap();
    assert_eq!(body["error"], "the agent's turn was cancelled");
    let (agent, after) = agent_message(&body);
    assert_eq!(agent["cancelledBy"], "bob");
    assert_eq!(
        agent["text"],
        "One.\n\nOutput (echo one):\none\n\nTwo.\n\nWrote two.txt (+1 -0 lines)\n\nThinking about three"
    );
    assert_eq!(file(&server, "cancel3", "two.txt").await.1, "2\n");
    let kinds: Vec<&str> = after
        .iter()
        .filter_map(|m| m["event"]["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["cancel", "edit"]);
}

#[tokio::test]
async fn a_model_error_in_round_two_keeps_what_round_one_did() {
    let model = FakeModel::start(vec![
        tools(
            "Checking.",
            vec![
                call("run", json!({"cmd": "echo one"})),
                call("write_file", json!({"path": "one.txt", "content": "1\n"})),
            ],
        ),
        Script::Status(500, "upstream exploded".into()),
        // A second turn: its round 2 breaks off after some text.
        tools("Again.", vec![call("run", json!({"cmd": "echo two"}))]),
        Script::Broken(vec!["Half of ".into(), "a reply".into()]),
    ])
    .await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let room = "fail2";
    let mut bob = server.joined(room, "user=bob").await;
    let (status, body) = ask(&server, room, "go").await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(model.requests().len(), 2);
    assert_eq!(body["reply"], Value::Null);
    let error = body["error"].as_str().unwrap().to_string();
    assert!(error.starts_with("Model error: "), "{error}");
    assert!(error.contains("answered 500: upstream exploded"), "{error}");
    // Everyone was told the model failed, as the round streamed.
    let failed = bob
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "error")
        .await;
    assert_eq!(failed["error"], error.as_str());

    // Round 1 stays: its text, its output, its file's line; then the
    // sentence, the model's error, and the write's record.
    let (agent, after) = agent_message(&body);
    let stopped = "The agent stopped after 1 round: the model failed; ask it to go on.";
    assert_eq!(
        agent["text"],
        format!("Checking.\n\nWrote one.txt (+1 -0 lines)\n\nOutput (echo one):\none\n\n{stopped}")
    );
    assert_eq!(agent.get("cancelledBy"), None);
    assert_eq!(agent["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(agent["runs"][0]["stdout"], "one\n");
    assert_eq!(agent["usage"]["rounds"], 1, "{agent}");
    assert_eq!(after[0]["role"], "system");
    assert_eq!(after[0]["text"], error.as_str());
    let kinds: Vec<&str> = after
        .iter()
        .filter_map(|m| m["event"]["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["edit"]);
    assert_eq!(file(&server, room, "one.txt").await.1, "1\n");

    // The room's history keeps it, and so does its export.
    let (_, page) = server.get(&format!("/api/rooms/{room}/messages")).await;
    let stored = page["messages"].as_array().unwrap();
    let roles: Vec<&str> = stored.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "agent", "system", "system"]);
    assert_eq!(stored[1]["text"], agent["text"]);
    let out = duet(&server, room, &["export", "--format", "md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    for part in [
        "Checking.",
        "Output (`echo one`)",
        "Wrote one.txt",
        stopped,
        &error,
    ] {
        assert!(md.contains(part), "{part:?} not in {md}");
    }

    // A stream broken in round 2: what it had streamed is not kept.
    let (_, body) = ask(&server, room, "again").await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("broke off"),
        "{body}"
    );
    let (agent, after) = agent_message(&body);
    assert_eq!(
        agent["text"],
        format!("Again.\n\nOutput (echo two):\ntwo\n\n{stopped}")
    );
    assert_eq!(agent["usage"]["rounds"], 1, "{agent}");
    assert_eq!(after[0]["text"], body["error"]);
}

#[tokio::test]
async fn files_beyond_the_workspace_are_refused_and_the_model_is_told() {
    let model = FakeModel::start(vec![
        tools(
            "",
            vec![
                call("write_file", json!({"path": "../evil.txt", "content": "x"})),
                call("read_file", json!({"path": "/etc/passwd"})),
                call("read_file", json!({"path": "link"})),
                call("read_file", json!({"path": "ok.txt"})),
                call(
                    "edit_file",
                    json!({"path": "ok.txt", "old": "zzz", "new": "y"}),
                ),
            ],
        ),
        Script::Stream(vec!["Those paths are not mine to touch.".into()]),
    ])
    .await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let room = "beyond";
    exec(&server, room, "echo fine > ok.txt; ln -s /etc/passwd link").await;
    let (_, body) = ask(&server, room, "try").await.unwrap();
    let told = last_sent(&model, 1);
    let expected = [
        "Error (write_file ../evil.txt):\n../evil.txt is not a path inside /workspace",
        "Error (read_file /etc/passwd):\n/etc/passwd is not a path inside /workspace",
        "Error (read_file link):\nlink is not a path inside /workspace",
        "Result (read_file ok.txt):\nfine\n",
        "Error (edit_file ok.txt):\n`old` does not occur in ok.txt",
    ];
    for part in expected {
        assert!(told.contains(part), "{part:?} not in {told}");
    }
    assert_eq!(body["reply"], "Those paths are not mine to touch.");
    assert_eq!(file(&server, room, "ok.txt").await.1, "fine\n");
    let outside = exec(&server, room, "ls /evil.txt ../evil.txt 2>&1; true").await;
    assert!(
        !outside["stdout"].as_str().unwrap().contains("evil.txt\n"),
        "{outside}"
    );
}

#[tokio::test]
async fn under_ask_a_denied_write_reaches_the_model() {
    let model = FakeModel::start(vec![
        tools(
            "Writing notes.",
            vec![call(
                "write_file",
                json!({"path": "notes.txt", "content": "hi\n"}),
            )],
        ),
        Script::Stream(vec!["Understood, I will not write it.".into()]),
    ])
    .await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let room = "deny";
    let (status, _) = server
        .post(
            &format!("/api/rooms/{room}/policy"),
            json!({"policy": "ask", "userId": "bob"}),
        )
        .await;
    assert_eq!(status, 200);
    let mut bob = server.joined(room, "user=bob").await;
    let answer = ask(&server, room, "write notes");
    let request = bob
        .until(|f| f["type"] == "duet_approval" && f["phase"] == "request")
        .await;
    assert_eq!(request["cmd"], "write_file notes.txt");
    let (status, decided) = server
        .post(
            &format!("/api/rooms/{room}/approve"),
            json!({"approvalId": request["approvalId"], "approved": false, "userId": "bob"}),
        )
        .await;
    assert_eq!((status, decided), (200, json!({"decided": true})));
    let (_, body) = answer.await.unwrap();
    let told = last_sent(&model, 1);
    assert!(
        told.contains("Error (write_file notes.txt):\ndenied by bob"),
        "{told}"
    );
    assert_eq!(
        body["reply"],
        "Writing notes.\n\nDid not write notes.txt: denied by bob\n\nUnderstood, I will not write it."
    );
    assert_eq!(file(&server, room, "notes.txt").await.0, 404);
}

#[tokio::test]
async fn three_hundred_kb_of_history_are_sent_within_the_bound_with_the_question_last() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::Stream(vec!["ok".into()]));
    let args = [
        model.server_args(),
        vec![
            "--room-messages-per-min",
            "0",
            "--socket-messages-per-min",
            "0",
        ],
    ]
    .concat();
    let (server, _dir) = Server::fresh_with(&args).await;
    let room = "long";
    let mut total = 0;
    let mut n = 0;
    while total < 300_000 {
        let text = format!("note {n:03} {}", "x".repeat(7_500));
        total += text.len();
        let (status, body) = server
            .post(
                &format!("/api/rooms/{room}/message"),
                json!({"text": text, "userId": "bob", "to": "room"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        n += 1;
    }
    let (_, body) = ask(&server, room, "the question").await.unwrap();
    assert_eq!(body["reply"], "ok");
    let requests = model.requests();
    let messages = requests[0].1["messages"].as_array().unwrap();
    let sent: usize = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap().len())
        .sum();
    eprintln!(
        "{total} bytes of history: {sent} bytes in {} messages sent, bound {}",
        messages.len(),
        32_000 * 4
    );
    assert!(sent <= 32_000 * 4, "{sent} bytes sent");
    assert!(sent >= 32_000 * 4 / 2, "only {sent} bytes sent");
    assert_eq!(messages.last().unwrap()["content"], "ada: the question");
    let note = messages[1]["content"].as_str().unwrap();
    assert!(
        note.starts_with("[left out to fit the model's context: the room's "),
        "{note}"
    );
    // The newest history is there, the oldest not.
    let contents: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let newest = format!("note {:03}", n - 1);
    assert!(contents.iter().any(|c| c.contains(&newest)));
    assert!(!contents.iter().any(|c| c.contains("note 000")));
}
