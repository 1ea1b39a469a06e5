//! The agent's turn against a real HTTP server speaking the OpenAI
//! streaming protocol, with commands run by bash.

use crate::common::agent_support::{BashHost, FakeModel, Script};
use duet::ai::{Agent, AgentReply, AiConfig, TurnError, TurnHost};
use duet::protocol::{AiPhase, DuetMessage, Role, Run, ServerFrame};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn config(model: &FakeModel) -> AiConfig {
    AiConfig {
        url: Some(model.url.clone()),
        model: Some("scripted".into()),
        key: Some("sk-test".into()),
        steps: 1,
        ..Default::default()
    }
}

fn question(text: &str) -> Vec<DuetMessage> {
    vec![DuetMessage {
        client_id: None,
        id: "1".into(),
        role: Role::User,
        user_id: Some("ada".into()),
        text: text.into(),
        ts: 0,
        runs: None,
        ..DuetMessage::default()
    }]
}

async fn turn(agent: &Agent, host: &Arc<BashHost>) -> Result<duet::ai::AgentReply, TurnError> {
    let host: Arc<dyn TurnHost> = host.clone();
    agent
        .run_turn(host, question("hi"), "t1".into(), CancellationToken::new())
        .await
}

/// The `duet_ai` frames as (phase, text) pairs.
fn ai_frames(host: &BashHost) -> Vec<(AiPhase, Option<String>)> {
    host.frames()
        .into_iter()
        .filter_map(|f| match f {
            ServerFrame::Ai {
                phase,
                turn_id,
                text,
                error,
                ..
            } => {
                assert_eq!(turn_id, "t1");
                Some((phase, text.or(error)))
            }
            _ => None,
        })
        .collect()
}

fn streamed_text(host: &BashHost) -> String {
    ai_frames(host)
        .into_iter()
        .filter(|(p, _)| *p == AiPhase::Delta)
        .filter_map(|(_, t)| t)
        .collect()
}

#[tokio::test]
async fn a_reply_streams_and_its_commands_become_blocks_byte_for_byte() {
    let reply = "Let me check.\n<run>printf 'a\\nb\\n'</run>\n<run>echo $(echo \"(x): y\")\necho z</run>\n<run>ls missing-file</run>\n<run>true</run>\n<run>echo oops >&2</run>\nDone.";
    let model = FakeModel::start(vec![Script::chunked(reply, 7)]).await;
    let host = BashHost::new();
    let agent = Agent::new(config(&model));
    let answer = turn(&agent, &host).await.unwrap();

    assert_eq!(
        answer.text,
        "Let me check.\n\n\n\n\n\nDone.\n\nOutput (printf 'a\\nb\\n'):\na\nb\n\n\nOutput (echo $(echo \"(x): y\")\necho z):\n(x): y\nz\n\n\nOutput (ls missing-file):\nls: cannot access 'missing-file': No such file or directory\n\n\nOutput (true):\n[no output]\n\nOutput (echo oops >&2):\noops"
    );
    let cmds: Vec<&str> = answer.runs.iter().map(|r| r.cmd.as_str()).collect();
    assert_eq!(
        cmds,
        vec![
            "printf 'a\\nb\\n'",
            "echo $(echo \"(x): y\")\necho z",
            "ls missing-file",
            "true",
            "echo oops >&2"
        ]
    );
    assert_eq!(answer.runs[2].exit_code, Some(2));
    assert_eq!(answer.runs[4].stderr, "oops\n");

    let frames = ai_frames(&host);
    assert_eq!(frames.first(), Some(&(AiPhase::Start, None)));
    assert_eq!(frames.last(), Some(&(AiPhase::End, None)));
    assert!(frames.len() > 3, "the reply streamed in pieces");
    assert_eq!(streamed_text(&host), reply);

    let (headers, body) = &model.requests()[0];
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(body["model"], "scripted");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "ada: hi");
}

#[tokio::test]
async fn a_command_the_sandbox_cannot_run_is_an_error_block() {
    struct NoSandbox;
    impl TurnHost for NoSandbox {
        fn emit(&self, _: ServerFrame) {}
        fn run(&self, cmd: String) -> duet::ai::BoxFuture<Run> {
            Box::pin(async move {
                Run {
                    cmd,
                    stdout: String::new(),
                    stderr: String::new(),
                    exit_code: None,
                    error: Some("the sandbox is not built yet".into()),
                    truncated: false,
                    at: None,
                }
            })
        }
    }
    let model = FakeModel::start(vec![Script::chunked("Try:<run>make (all)</run>", 4)]).await;
    let agent = Agent::new(config(&model));
    let answer = agent
        .run_turn(
            Arc::new(NoSandbox),
            question("build"),
            "t1".into(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.text,
        "Try:\n\nError (make (all)):\nthe sandbox is not built yet"
    );
}

#[tokio::test]
async fn a_service_that_does_not_stream_still_answers() {
    let model = FakeModel::start(vec![Script::Whole("Hello <run>echo hi</run>".into())]).await;
    let host = BashHost::new();
    let answer = turn(&Agent::new(config(&model)), &host).await.unwrap();
    assert_eq!(answer.text, "Hello\n\nOutput (echo hi):\nhi");
}

async fn failing(script: Script) -> (TurnError, Arc<BashHost>) {
    let model = FakeModel::start(vec![script]).await;
    let host = BashHost::new();
    let err = turn(&Agent::new(config(&model)), &host).await.unwrap_err();
    (err, host)
}

#[tokio::test]
async fn model_errors_say_the_status_and_the_services_text() {
    for (status, body, text) in [
        (
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
            "Incorrect API key provided",
        ),
        (
            429,
            r#"{"error":{"message":"Rate limit reached"}}"#,
            "Rate limit reached",
        ),
        (500, "upstream exploded", "upstream exploded"),
    ] {
        let (err, host) = failing(Script::Status(status, body.into())).await;
        let TurnError::Model(message) = &err else {
            panic!("{err:?}")
        };
        assert!(message.contains(&format!("answered {status}")), "{message}");
        assert!(message.contains(text), "{message}");
        let frames = ai_frames(&host);
        assert_eq!(
            frames,
            vec![
                (AiPhase::Start, None),
                (AiPhase::Error, Some(err.to_string()))
            ]
        );
    }
}

#[tokio::test]
async fn a_stream_broken_in_the_middle_is_a_model_error_and_nothing_runs() {
    let (err, host) = failing(Script::Broken(vec![
        "I will ".into(),
        "run <run>touch made</run>".into(),
    ]))
    .await;
    let TurnError::Model(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("broke off"), "{message}");
    assert_eq!(streamed_text(&host), "I will run <run>touch made</run>");
    assert_eq!(ai_frames(&host).last().unwrap().0, AiPhase::Error);
    assert!(!host.dir.path().join("made").exists());
}

#[tokio::test]
async fn a_stream_that_ends_without_done_is_broken() {
    // A stream of pieces with neither finish_reason nor [DONE], then EOF.
    let model = FakeModel::start(vec![]).await;
    model.push(Script::Cut(vec!["half".into()]));
    let host = BashHost::new();
    let err = turn(&Agent::new(config(&model)), &host).await.unwrap_err();
    assert_eq!(
        err,
        TurnError::Model(
            "Model error: the model's answer broke off: the connection closed before the answer ended"
                .into()
        )
    );
}

#[tokio::test]
async fn a_slow_model_is_cancelled_and_keeps_what_it_streamed() {
    let model = FakeModel::start(vec![Script::Hang(vec!["Thinking".into()])]).await;
    let host = BashHost::new();
    let agent = Agent::new(config(&model));
    let cancel = CancellationToken::new();
    let running = {
        let host: Arc<dyn TurnHost> = host.clone();
        let cancel = cancel.clone();
        let agent = agent.clone();
        tokio::spawn(async move {
            agent
                .run_turn(host, question("hi"), "t1".into(), cancel)
                .await
        })
    };
    host.wait_for(|f| {
        matches!(
            f,
            ServerFrame::Ai {
                phase: AiPhase::Delta,
                ..
            }
        )
    })
    .await;
    cancel.cancel();
    let result = running.await.unwrap();
    let Err(TurnError::Cancelled(partial)) = result else {
        panic!("not cancelled: {result:?}");
    };
    // What streamed is kept, and what the call cost: the fake model
    // reported nothing, so it is estimated (2 tokens for "Thinking").
    let usage = partial.usage.expect("a cancelled turn keeps its usage");
    assert_eq!((usage.rounds, usage.completion_tokens), (1, 2));
    assert!(usage.estimated && usage.prompt_tokens > 0);
    assert_eq!(
        partial,
        AgentReply {
            text: "Thinking".into(),
            runs: Vec::new(),
            usage: Some(usage),
        }
    );
    assert_eq!(
        ai_frames(&host).last().unwrap(),
        &(
            AiPhase::Error,
            Some("the agent's turn was cancelled".into())
        )
    );
}

#[tokio::test]
async fn a_cancel_in_a_later_round_keeps_the_rounds_before_and_what_streamed() {
    let model = FakeModel::start(vec![
        Script::chunked("Listing.<run>echo hi</run><run>echo there</run>", 6),
        Script::Hang(vec!["It says ".into(), "hi <run>cat".into()]),
    ])
    .await;
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        steps: 3,
        ..config(&model)
    });
    let cancel = CancellationToken::new();
    let running = {
        let host: Arc<dyn TurnHost> = host.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            agent
                .run_turn(host, question("hi"), "t1".into(), cancel)
                .await
        })
    };
    // The second round streamed its pieces.
    host.wait_for(|f| {
        matches!(f, ServerFrame::Ai { phase: AiPhase::Delta, text: Some(t), .. } if t.contains("<run>cat"))
    })
    .await;
    cancel.cancel();
    let Err(TurnError::Cancelled(partial)) = running.await.unwrap() else {
        panic!("the turn was cancelled");
    };
    // The unfinished tag is not prose; both commands of the first round ran.
    assert_eq!(
        partial.text,
        "Listing.\n\nOutput (echo hi):\nhi\n\n\nOutput (echo there):\nthere\n\nIt says hi"
    );
    let cmds: Vec<&str> = partial.runs.iter().map(|r| r.cmd.as_str()).collect();
    assert_eq!(cmds, ["echo hi", "echo there"]);
}

#[tokio::test]
async fn a_running_command_is_abandoned_on_cancel() {
    let model = FakeModel::start(vec![Script::chunked("<run>sleep 600</run>", 5)]).await;
    let host = BashHost::new();
    let agent = Agent::new(config(&model));
    let cancel = CancellationToken::new();
    let running = {
        let host: Arc<dyn TurnHost> = host.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            agent
                .run_turn(host, question("hi"), "t1".into(), cancel)
                .await
        })
    };
    host.wait_for(|f| {
        matches!(
            f,
            ServerFrame::Ai {
                phase: AiPhase::End,
                ..
            }
        )
    })
    .await;
    cancel.cancel();
    // Nothing was said and the command did not end: nothing to keep but
    // what the model's answer cost.
    let Err(TurnError::Cancelled(partial)) = running.await.unwrap() else {
        panic!("not cancelled");
    };
    assert_eq!((partial.text.as_str(), partial.runs.len()), ("", 0));
    assert_eq!(partial.usage.map(|u| u.rounds), Some(1));
}

#[tokio::test]
async fn a_model_slower_than_the_timeout_ends_the_turn() {
    let model = FakeModel::start(vec![Script::Hang(vec!["Hmm".into()])]).await;
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        timeout: Duration::from_secs(1),
        ..config(&model)
    });
    let err = turn(&agent, &host).await.unwrap_err();
    assert_eq!(
        err,
        TurnError::Model("Model error: the model did not finish within 1 seconds".into())
    );
}

#[tokio::test]
async fn a_model_slower_than_the_timeout_in_round_two_keeps_round_one() {
    let model = FakeModel::start(vec![
        Script::Counted(vec!["<run>echo one</run>".into()], 40, 5),
        Script::Hang(vec!["Thinking".into()]),
    ])
    .await;
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        timeout: Duration::from_secs(1),
        steps: 5,
        ..config(&model)
    });
    let err = turn(&agent, &host).await.unwrap_err();
    let TurnError::ModelPartway { error, done } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        error,
        "Model error: the model did not finish within 1 seconds"
    );
    assert_eq!(err.to_string(), *error);
    // Round 1's output stays; what round 2 had streamed does not.
    assert_eq!(
        done.text,
        "Output (echo one):\none\n\nThe agent stopped after 1 round: the model failed; ask it to go on."
    );
    assert_eq!(done.runs.len(), 1);
    // What the answered round cost, as the service counted it.
    let usage = done.usage.expect("the ended round's usage");
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.rounds,
            usage.estimated
        ),
        (40, 5, 1, false)
    );
    assert_eq!(
        ai_frames(&host).last(),
        Some(&(AiPhase::Error, Some(error.clone())))
    );
}

#[tokio::test]
async fn rounds_give_outputs_back_and_end_in_one_reply() {
    let model = FakeModel::start(vec![
        Script::chunked("<run>echo one</run>", 3),
        Script::chunked("Now two.\n<run>echo two; exit 3</run>", 3),
        Script::chunked("Done.", 3),
    ])
    .await;
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        steps: 5,
        ..config(&model)
    });
    let answer = turn(&agent, &host).await.unwrap();
    assert_eq!(
        answer.text,
        "Output (echo one):\none\n\nNow two.\n\nOutput (echo two; exit 3):\ntwo\n\nDone."
    );
    assert_eq!(answer.runs.len(), 2);
    assert_eq!(answer.runs[1].exit_code, Some(3));

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let second = &requests[1].1["messages"];
    let n = second.as_array().unwrap().len();
    assert_eq!(second[n - 2]["role"], "assistant");
    assert_eq!(second[n - 2]["content"], "<run>echo one</run>");
    assert_eq!(second[n - 1]["role"], "user");
    let note = second[n - 1]["content"].as_str().unwrap();
    assert!(
        note.contains("Output (echo one) [exit code 0]:\none"),
        "{note}"
    );
    let third = requests[2].1["messages"].to_string();
    assert!(third.contains("[exit code 3]"), "{third}");

    // Every client sees the rounds' text apart.
    assert_eq!(
        streamed_text(&host),
        "<run>echo one</run>\n\nNow two.\n<run>echo two; exit 3</run>\n\nDone."
    );
    let phases: Vec<AiPhase> = ai_frames(&host)
        .into_iter()
        .filter(|(p, _)| *p != AiPhase::Delta)
        .map(|(p, _)| p)
        .collect();
    use AiPhase::{End, Start};
    assert_eq!(phases, vec![Start, End, Start, End, Start, End]);
}

#[tokio::test]
async fn one_step_runs_the_commands_once() {
    let model = FakeModel::start(vec![Script::chunked("<run>echo one</run>", 3)]).await;
    let host = BashHost::new();
    let answer = turn(&Agent::new(config(&model)), &host).await.unwrap();
    assert_eq!(answer.text, "Output (echo one):\none");
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn the_model_is_found_by_asking_the_service() {
    let model = FakeModel::start(vec![Script::chunked("Hi.", 3)]).await;
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        model: None,
        key: None,
        ..config(&model)
    });
    assert_eq!(turn(&agent, &host).await.unwrap().text, "Hi.");
    let (headers, body) = &model.requests()[0];
    assert_eq!(body["model"], "fake-model");
    assert!(headers.get("authorization").is_none());
}

#[tokio::test]
async fn the_model_sees_the_messages_within_its_context() {
    let model = FakeModel::start(vec![Script::chunked("Ok.", 3)]).await;
    let host: Arc<dyn TurnHost> = BashHost::new();
    let history: Vec<DuetMessage> = (0..15)
        .map(|i| DuetMessage {
            client_id: None,
            id: i.to_string(),
            role: if i % 2 == 0 { Role::User } else { Role::Agent },
            user_id: (i % 2 == 0).then(|| "bob".to_string()),
            text: format!("message {i}"),
            ts: i,
            runs: None,
            ..DuetMessage::default()
        })
        .collect();
    Agent::new(config(&model))
        .run_turn(host, history, "t1".into(), CancellationToken::new())
        .await
        .unwrap();
    let messages = model.requests()[0].1["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages.len(), 16);
    assert_eq!(messages[1]["content"], "bob: message 0");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[15]["content"], "bob: message 14");
}

#[tokio::test]
async fn an_unreachable_configured_model_is_a_model_error() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        url: Some(format!("http://{addr}/v1")),
        model: Some("m".into()),
        steps: 1,
        ..Default::default()
    });
    let err = turn(&agent, &host).await.unwrap_err();
    let TurnError::Model(message) = err else {
        panic!("{err:?}")
    };
    assert!(message.contains("cannot reach the model"), "{message}");
}

#[tokio::test]
async fn with_nothing_configured_and_no_ollama_it_says_how_to_configure() {
    if std::net::TcpStream::connect("127.0.0.1:11434").is_ok() {
        eprintln!("an Ollama runs here; skipping");
        return;
    }
    let host = BashHost::new();
    let err = turn(&Agent::new(AiConfig::default()), &host)
        .await
        .unwrap_err();
    let TurnError::NoModel(message) = err else {
        panic!("{err:?}")
    };
    assert!(message.contains("DUET_AI_URL"), "{message}");
    assert!(message.contains("Ollama"), "{message}");
    assert_eq!(ai_frames(&host).last().unwrap().0, AiPhase::Error);
}

#[tokio::test]
async fn an_ollama_model_is_found_in_its_tags() {
    use axum::routing::get;
    let _ = rustls::crypto::ring::default_provider().install_default();
    // An Ollama-like service: no OpenAI model list, but /api/tags.
    let model = FakeModel::start(vec![Script::chunked("Hi.", 3)]).await;
    let chat = model.url.clone();
    let app = axum::Router::new()
        .route(
            "/api/tags",
            get(|| async {
                axum::Json(serde_json::json!({"models":[{"name":"llama3.2:latest"}]}))
            }),
        )
        .route(
            "/v1/chat/completions",
            axum::routing::post(move |body: String| {
                let chat = chat.clone();
                async move {
                    let res = reqwest::Client::new()
                        .post(format!("{chat}/chat/completions"))
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    res.text().await.unwrap()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let host = BashHost::new();
    let agent = Agent::new(AiConfig {
        url: Some(format!("http://{addr}/v1")),
        steps: 1,
        ..Default::default()
    });
    assert_eq!(turn(&agent, &host).await.unwrap().text, "Hi.");
    assert_eq!(model.requests()[0].1["model"], "llama3.2:latest");
}
