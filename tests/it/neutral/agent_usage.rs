//! What a turn cost and the model a room uses (docs/protocol.md "Usage"
//! and "The agent's model"): usage stored on the agent's message from the
//! service's counts (asked for with `stream_options`) or estimated without
//! them; an owner's `set_model` (HTTP and rpc), refused to writers and
//! viewers and for a model the backend does not allow, recorded, kept
//! across a restart, and the model the scripted service is asked for;
//! `duet model`, and `duet export` keeping the usage.

use crate::common::access::{self, assert_forbidden, assert_rpc_forbidden, guest};
use crate::common::agent_support::{FakeModel, Script};
use crate::common::cli::{duet, stderr, stdout};
use crate::common::{Server, Ws};
use serde_json::{Value, json};

/// The scripted service with the models `a,b,c` allowed (`a` the default).
fn model_args(model: &FakeModel) -> Vec<&str> {
    let mut args = model.server_args();
    args.extend(["--ai-models", "a,b,c"]);
    args
}

/// Asks the agent in `room` (as ada) and answers the stored reply.
async fn ask(server: &Server, room: &str, text: &str) -> Value {
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": text, "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let reply = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(reply["role"], "agent", "{body}");
    reply
}

/// The `agent` of the first state a socket of `room` reads.
async fn agent_of(server: &Server, room: &str) -> Value {
    let mut ws = server.ws(room, "user=ada").await;
    let state = ws.until_type("cf_agent_state").await;
    state["state"]["agent"].clone()
}

/// Reads frames until a state or a patch carries `agent`; answers it.
async fn next_agent(ws: &mut Ws) -> Value {
    let frame = ws
        .until(|f| {
            (f["type"] == "duet_state" && f["patch"].get("agent").is_some())
                || f["type"] == "cf_agent_state"
        })
        .await;
    match frame["type"].as_str() {
        Some("duet_state") => frame["patch"]["agent"].clone(),
        _ => frame["state"]["agent"].clone(),
    }
}

#[tokio::test]
async fn usage_is_the_services_counts_summed_over_rounds_else_estimated() {
    let model = FakeModel::start(vec![
        Script::Counted(vec!["Looking.<run>echo hi</run>".into()], 120, 9),
        Script::Counted(vec!["It says hi.".into()], 150, 4),
        Script::Stream(vec!["No counts from me.".into()]),
    ])
    .await;
    let (server, _dir) =
        Server::fresh_with(&[model.server_args(), vec!["--agent-steps", "2"]].concat()).await;
    let reply = ask(&server, "use1", "what does echo say?").await;
    assert_eq!(
        reply["usage"],
        json!({"promptTokens": 270, "completionTokens": 13, "rounds": 2}),
        "{reply}"
    );
    // Each streamed request asked for the counts.
    for (_, body) in model.requests() {
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }

    // A service that gives none: estimated from the bytes, and said so.
    let reply = ask(&server, "use1", "and now?").await;
    let usage = &reply["usage"];
    assert_eq!(usage["rounds"], 1, "{reply}");
    assert_eq!(usage["estimated"], true, "{reply}");
    // "No counts from me." is 18 bytes: 5 tokens at 4 bytes a token.
    assert_eq!(usage["completionTokens"], 5, "{reply}");
    assert!(usage["promptTokens"].as_u64().unwrap() > 0, "{reply}");

    // The page of messages keeps it.
    let (_, page) = server.get("/api/rooms/use1/messages").await;
    let stored: Vec<&Value> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "agent")
        .collect();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0]["usage"]["promptTokens"], 270);
    assert_eq!(stored[1]["usage"], *usage);
}

#[tokio::test]
async fn a_service_that_refuses_stream_options_still_answers_and_is_not_asked_again() {
    let model = FakeModel::start(vec![
        Script::NoUsageOption(Box::new(Script::Stream(vec!["Fine.".into()]))),
        Script::Stream(vec!["Again.".into()]),
    ])
    .await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    let reply = ask(&server, "use2", "hi").await;
    assert_eq!(reply["text"], "Fine.");
    assert_eq!(reply["usage"]["estimated"], true, "{reply}");
    let reply = ask(&server, "use2", "hi again").await;
    assert_eq!(reply["text"], "Again.");
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        3,
        "refused, asked again without, then the next turn"
    );
    assert!(requests[0].1.get("stream_options").is_some());
    assert!(requests[1].1.get("stream_options").is_none());
    assert!(requests[2].1.get("stream_options").is_none());
}

#[tokio::test]
async fn an_owner_chooses_the_rooms_model_and_its_turns_use_it() {
    let model = FakeModel::start(vec![
        Script::Stream(vec!["From a.".into()]),
        Script::Stream(vec!["From b.".into()]),
    ])
    .await;
    let (server, _dir) = access::with_token(&model_args(&model)).await;
    let joined = access::owner_joins(&server, "mod1", "user=ada&deltas=1").await;
    let mut ws = joined.ws;
    let agent = &joined.state["agent"];
    assert_eq!(agent["model"], "a", "{agent}");
    assert_eq!(agent["models"], json!(["a", "b", "c"]));
    assert!(agent["steps"].as_u64().unwrap() >= 1, "{agent}");

    // The default model first.
    ask(&server, "mod1", "who are you?").await;
    assert_eq!(model.requests()[0].1["model"], "a");

    // A writer and a viewer may not choose it, over HTTP or rpc.
    for role in ["writer", "viewer"] {
        let (someone, _) = guest(&server, "mod1", role, None).await;
        let refused = someone.post("/model", json!({"model": "b"})).await;
        assert_forbidden(&format!("{role} set_model"), &refused, role);
        let mut theirs = someone.joins("user=eve").await.ws;
        let answer = theirs.rpc(1, "set_model", json!([{"model": "b"}])).await;
        assert_rpc_forbidden(&format!("{role} rpc set_model"), &answer, role);
    }
    // A model the backend does not allow: 400 naming the field.
    let (status, body) = server
        .post("/api/rooms/mod1/model", json!({"model": "gpt-9"}))
        .await;
    assert_eq!(status, 400, "{body}");
    let said = body["details"]["model"][0].as_str().unwrap();
    assert!(said.contains("a, b, c"), "{said}");
    let (status, body) = server.post("/api/rooms/mod1/model", json!({})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"]["model"], json!(["is required"]));

    // The owner chooses b: answered, patched, recorded; the next turn uses it.
    let (status, body) = server
        .post(
            "/api/rooms/mod1/model",
            json!({"model": "b", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"model": "b"}));
    assert_eq!(next_agent(&mut ws).await["model"], "b");
    let record = ws
        .until(|f| f["type"] == "duet_message" && f["message"]["event"]["kind"] == "model")
        .await;
    assert_eq!(
        record["message"]["event"],
        json!({"kind": "model", "by": "ada", "model": "b"})
    );
    assert_eq!(record["message"]["text"], "ada set the agent's model to b");
    ask(&server, "mod1", "and now?").await;
    assert_eq!(model.requests()[1].1["model"], "b");

    // Over rpc too.
    let answer = ws.rpc(7, "set_model", json!([{"model": "c"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"model": "c"}));
    assert_eq!(agent_of(&server, "mod1").await["model"], "c");
}

#[tokio::test]
async fn the_rooms_model_survives_a_restart() {
    let model = FakeModel::start(vec![Script::Stream(vec!["From b.".into()])]).await;
    let dir = tempfile::tempdir().unwrap();
    let args = model_args(&model);
    let server = Server::start(dir.path(), &args).await;
    let (status, body) = server
        .post("/api/rooms/mod2/model", json!({"model": "b"}))
        .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;

    let server = Server::start(dir.path(), &args).await;
    assert_eq!(agent_of(&server, "mod2").await["model"], "b");
    ask(&server, "mod2", "still b?").await;
    assert_eq!(model.requests()[0].1["model"], "b");
    server.stop().await;

    // A backend that no longer allows it uses its default.
    let server = Server::start(
        dir.path(),
        &[model.server_args(), vec!["--ai-models", "x,y"]].concat(),
    )
    .await;
    let agent = agent_of(&server, "mod2").await;
    assert_eq!(agent["model"], "x", "{agent}");
    assert_eq!(agent["models"], json!(["x", "y"]));
}

#[tokio::test]
async fn duet_model_lists_the_models_and_chooses_one() {
    let model = FakeModel::start(Vec::new()).await;
    let (server, _dir) = Server::fresh_with(&model_args(&model)).await;
    let out = duet(&server, "mod3", &["model"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "model: a\nmodels:\n* a (default)\n  b\n  c\n\
         a turn: at most 10 rounds and 600 s, 32000 tokens of context\n"
    );
    let out = duet(&server, "mod3", &["model", "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "model: c\n");
    let out = duet(&server, "mod3", &["model"]);
    assert!(stdout(&out).starts_with("model: c\n"), "{}", stdout(&out));
    assert!(stdout(&out).contains("* c\n"), "{}", stdout(&out));
    // A model it does not allow: the server's words, and a failure.
    let out = duet(&server, "mod3", &["model", "gpt-9"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("a, b, c"), "{}", stderr(&out));
}

#[tokio::test]
async fn duet_export_keeps_the_usage() {
    let model = FakeModel::start(vec![Script::Counted(vec!["Done.".into()], 4_100, 380)]).await;
    let (server, _dir) = Server::fresh_with(&model.server_args()).await;
    ask(&server, "use3", "finish it").await;
    let out = duet(&server, "use3", &["export", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let export: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let reply = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "agent")
        .unwrap()
        .clone();
    assert_eq!(
        reply["usage"],
        json!({"promptTokens": 4100, "completionTokens": 380, "rounds": 1})
    );
    let out = duet(&server, "use3", &["export", "--format", "md"]);
    let md = stdout(&out);
    assert!(md.contains("_1 round · 4.1 k in · 380 out_"), "{md}");
}
