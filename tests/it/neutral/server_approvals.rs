//! The agent's approval policy, as docs/protocol.md "Invites, roles and
//! approvals" says, over real sockets to a real backend and sandbox, with
//! a fake model that writes `<run>` commands: `ask` with approve, deny,
//! timeout, a second answer, an unknown id, a viewer's answer, cancel and
//! a reconnect in the middle, over two sockets; `off`; the allow list;
//! setting the policy; the policy kept across a restart. Backend-neutral.

use crate::common;
use crate::common::access::{
    Joined, assert_rpc_forbidden, enter, guest, owner_joins, set_policy, start_with_token,
    with_token,
};
use crate::common::agent_support::{FakeModel, Script};
use crate::common::apps::room_path;
use crate::common::{Server, Ws, answer, http};
use serde_json::{Value, json};

/// A backend with the server token, the fake model and `extra` flags.
async fn with_model(model: &FakeModel, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let mut args = model.one_round_args();
    args.extend_from_slice(extra);
    with_token(&args).await
}

/// A model whose one answer is `text`.
async fn model_saying(text: &str) -> FakeModel {
    FakeModel::start(vec![Script::chunked(text, 8)]).await
}

/// Asks the agent over HTTP in the background (as the owner, `olga`);
/// resolves to the status and answer.
fn ask(server: &Server, room: &str, text: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let req = http()
        .post(server.url(&room_path(room, "/message")))
        .bearer_auth(server.token.as_deref().unwrap())
        .json(&json!({"text": text, "userId": "olga"}));
    tokio::spawn(answer(req))
}

/// Reads frames until one matches `last`; answers all of them, in order.
async fn frames_until(ws: &mut Ws, last: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let f = ws.next().await;
        let done = last(&f);
        frames.push(f);
        if done {
            return frames;
        }
    }
}

fn approval(phase: &'static str) -> impl Fn(&Value) -> bool {
    move |f| f["type"] == "duet_approval" && f["phase"] == phase
}

/// The frame that stores the turn's agent message (a full state, or a
/// deltas socket's `duet_message`).
fn agent_stored(f: &Value) -> bool {
    let last_is_agent = |m: &Value| m["role"] == "agent";
    (f["type"] == "cf_agent_state"
        && f["state"]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(last_is_agent))
        || (f["type"] == "duet_message" && last_is_agent(&f["message"]))
}

/// The room state's `approvals` as a frame carries it: a full state, or a
/// deltas socket's patch.
fn approvals_in(f: &Value) -> Option<Value> {
    match f["type"].as_str() {
        Some("cf_agent_state") => Some(f["state"]["approvals"].clone()),
        Some("duet_state") => f["patch"].get("approvals").cloned(),
        _ => None,
    }
}

fn listing(expected: Value) -> impl Fn(&Value) -> bool {
    move |f| approvals_in(f).as_ref() == Some(&expected)
}

fn execs(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["type"] == "duet_exec").collect()
}

/// Two owners' sockets in `room` (ada's plain, bob's with deltas) and the
/// policy `ask` set by ada over rpc.
async fn two_asking(server: &Server, room: &str) -> (Joined, Joined) {
    let mut ada = owner_joins(server, room, "user=ada").await;
    let mut bob = owner_joins(server, room, "user=bob&deltas=1").await;
    let (set, seen) = ada
        .ws
        .rpc_keeping(1, "set_policy", json!([{"policy":"ask"}]))
        .await;
    assert_eq!(set["result"], json!({"policy":"ask"}), "{set}");
    let asks = |f: &Value| f["type"] == "cf_agent_state" && f["state"]["policy"] == "ask";
    if !seen.iter().any(asks) {
        ada.ws.until(asks).await;
    }
    bob.ws
        .until(|f| f["type"] == "duet_state" && f["patch"]["policy"] == "ask")
        .await;
    (ada, bob)
}

/// Waits on `ws` for the request of `cmd` and the state listing it (in
/// `seen`, the frames read already, or those after); answers the request.
async fn requested_after(ws: &mut Ws, cmd: &str, mut seen: Vec<Value>) -> Value {
    let is_request = |f: &Value| approval("request")(f) && f["cmd"] == cmd;
    let listed = |frames: &[Value]| {
        let request = frames.iter().find(|f| is_request(f))?;
        let entry =
            json!({"approvalId": request["approvalId"], "turnId": request["turnId"], "cmd": cmd});
        frames
            .iter()
            .filter_map(approvals_in)
            .any(|a| a == json!([entry]))
            .then(|| request.clone())
    };
    loop {
        if let Some(request) = listed(&seen) {
            return request;
        }
        seen.push(ws.next().await);
    }
}

async fn requested(ws: &mut Ws, cmd: &str) -> Value {
    requested_after(ws, cmd, Vec::new()).await
}

#[tokio::test]
async fn an_approved_command_waits_then_runs_and_every_socket_sees_it() {
    let model = model_saying("Let me look.\n<run>echo approved-ran</run>").await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "ask-yes";
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let mut viewer = vera.joins("user=vera").await;
    let (mut ada, mut bob) = two_asking(&server, room).await;
    let turn = ask(&server, room, "look around");

    let start = ada
        .ws
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    let request = requested(&mut ada.ws, "echo approved-ran").await;
    let id = request["approvalId"].clone();
    assert_eq!(
        request,
        json!({"type":"duet_approval","phase":"request","approvalId":id,"turnId":start["turnId"],"cmd":"echo approved-ran"})
    );
    assert_eq!(requested(&mut bob.ws, "echo approved-ran").await, request);
    // The viewer sees it too, and may not answer it.
    let seen = viewer.ws.until(approval("request")).await;
    assert_eq!(seen, request);
    let refused = viewer
        .ws
        .rpc(1, "approve", json!([{"approvalId": id, "approved": true}]))
        .await;
    assert_rpc_forbidden("approve", &refused, "viewer");
    let (status, body) = vera
        .post("/approve", json!({"approvalId": id, "approved": true}))
        .await;
    common::access::assert_forbidden("POST /approve", &(status, body), "viewer");
    // A bad answer is a 400 and leaves it open; an unknown id a 404.
    let bad = bob
        .ws
        .rpc(2, "approve", json!([{"approvalId": id, "approved": "yes"}]))
        .await;
    assert_eq!(
        (&bad["status"], &bad["error"]),
        (&json!(400), &json!("invalid request")),
        "{bad}"
    );
    assert!(bad["details"]["approved"].is_array(), "{bad}");
    let (status, body) = server
        .post(
            &room_path(room, "/approve"),
            json!({"approvalId":"a999","approved":true}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], "no such approval");
    assert!(
        body["details"]["approvalId"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{body}"
    );

    // Nothing has run yet; bob approves.
    let (answer, before) = bob
        .ws
        .rpc_keeping(3, "approve", json!([{"approvalId": id, "approved": true}]))
        .await;
    assert_eq!(answer["result"], json!({"decided": true}), "{answer}");
    let decided = json!({"type":"duet_approval","phase":"decided","approvalId":id,"approved":true,"by":"bob"});
    assert!(
        before.contains(&decided),
        "decided goes out before the answer: {before:?}"
    );
    assert!(execs(&before).is_empty(), "{before:?}");
    // Ada sees: decided, the request leaving the state, then the command.
    let frames = frames_until(&mut ada.ws, agent_stored).await;
    let at = |what: &dyn Fn(&Value) -> bool| {
        frames
            .iter()
            .position(what)
            .unwrap_or_else(|| panic!("missing in {frames:?}"))
    };
    let decided_at = at(&|f: &Value| *f == decided);
    let exec_start = at(&|f: &Value| f["type"] == "duet_exec" && f["phase"] == "start");
    assert!(decided_at < exec_start, "{frames:?}");
    assert!(at(&listing(json!([]))) < at(&agent_stored));
    assert_eq!(frames[exec_start]["cmd"], "echo approved-ran");
    assert_eq!(frames[exec_start]["source"], "agent");
    let out = frames
        .iter()
        .find(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .unwrap();
    assert_eq!(out["data"], "approved-ran\n");
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "Let me look.\n\nOutput (echo approved-ran):\napproved-ran"
    );
    // A second answer is a 409, over rpc and HTTP.
    let taken = json!({"error":"already decided","details":{"approvalId":[format!("approval \"{}\" was decided already", id.as_str().unwrap())]}});
    let again = ada
        .ws
        .rpc(4, "approve", json!([{"approvalId": id, "approved": false}]))
        .await;
    assert_eq!(again["status"], 409, "{again}");
    assert_eq!(
        json!({"error": again["error"], "details": again["details"]}),
        taken
    );
    let again = server
        .post(
            &room_path(room, "/approve"),
            json!({"approvalId": id, "approved": false}),
        )
        .await;
    assert_eq!(again, (409, taken));
    // The viewer saw the decision and the command too.
    viewer.ws.until(|f| *f == decided).await;
    viewer
        .ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
}

#[tokio::test]
async fn a_denied_command_runs_nothing_and_the_turn_goes_on() {
    let model = model_saying("Two things.\n<run>echo one</run>\n<run>echo two</run>").await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "ask-no";
    let (mut ada, mut bob) = two_asking(&server, room).await;
    let turn = ask(&server, room, "do two things");
    let first = requested(&mut ada.ws, "echo one").await;
    let (answer, seen) = ada
        .ws
        .rpc_keeping(
            2,
            "approve",
            json!([{"approvalId": first["approvalId"], "approved": false}]),
        )
        .await;
    assert_eq!(answer["result"], json!({"decided": true}), "{answer}");
    // The turn goes on to its next command, which asks in turn.
    let second = requested_after(&mut ada.ws, "echo two", seen).await;
    assert_ne!(second["approvalId"], first["approvalId"]);
    assert_eq!(second["turnId"], first["turnId"]);
    let (status, body) = server
        .post(
            &room_path(room, "/approve"),
            json!({"approvalId": second["approvalId"], "approved": true}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"decided": true})));
    let frames = frames_until(&mut bob.ws, agent_stored).await;
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "Two things.\n\nError (echo one):\ndenied by ada\n\nOutput (echo two):\ntwo"
    );
    let agent = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        agent["runs"],
        json!([
            {"cmd":"echo one","stdout":"","stderr":"","exitCode":null,"error":"denied by ada","at":11},
            {"cmd":"echo two","stdout":"two\n","stderr":"","exitCode":0,"at":11}
        ])
    );
    // Bob saw ada's denial, then the approval, and only the approved
    // command ran.
    let decisions: Vec<(&Value, &Value, &Value)> = frames
        .iter()
        .filter(|f| approval("decided")(f))
        .map(|f| (&f["approvalId"], &f["approved"], &f["by"]))
        .collect();
    assert_eq!(decisions.len(), 2, "{frames:?}");
    assert_eq!(
        decisions[0],
        (&first["approvalId"], &json!(false), &json!("ada"))
    );
    assert_eq!(
        (decisions[1].0, decisions[1].1),
        (&second["approvalId"], &json!(true))
    );
    let starts: Vec<&Value> = execs(&frames)
        .into_iter()
        .filter(|f| f["phase"] == "start")
        .map(|f| &f["cmd"])
        .collect();
    assert_eq!(starts, [&json!("echo two")]);
    let state = owner_joins(&server, room, "user=check").await.state;
    let cmds: Vec<&Value> = state["execs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["cmd"])
        .collect();
    assert_eq!(cmds, [&json!("echo two")]);
}

#[tokio::test]
async fn a_command_nobody_answers_is_decided_by_duet_when_the_time_is_up() {
    let model = model_saying("<run>echo late</run>").await;
    let (server, _dir) = with_model(&model, &["--approval-timeout-secs", "2"]).await;
    let room = "ask-late";
    let (mut ada, mut bob) = two_asking(&server, room).await;
    let turn = ask(&server, room, "be late");
    let request = requested(&mut ada.ws, "echo late").await;
    let id = request["approvalId"].clone();
    let decided = json!({"type":"duet_approval","phase":"decided","approvalId":id,"approved":false,"by":"duet"});
    let frames = frames_until(&mut bob.ws, agent_stored).await;
    assert!(frames.contains(&decided), "{frames:?}");
    assert!(execs(&frames).is_empty(), "{frames:?}");
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "Error (echo late):\nnot approved in time");
    ada.ws.until(|f| *f == decided).await;
    // An answer after the time is up is too late.
    let late = ada
        .ws
        .rpc(2, "approve", json!([{"approvalId": id, "approved": true}]))
        .await;
    assert_eq!(
        (&late["status"], &late["error"]),
        (&json!(409), &json!("already decided")),
        "{late}"
    );
    let state = owner_joins(&server, room, "user=check").await.state;
    assert_eq!(state["approvals"], json!([]));
    assert_eq!(state["execs"], json!([]));
}

#[tokio::test]
async fn cancelling_the_turn_withdraws_its_request() {
    let model = model_saying("<run>echo never</run>").await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "ask-cancel";
    let (mut ada, mut bob) = two_asking(&server, room).await;
    let turn = ask(&server, room, "wait for me");
    let request = requested(&mut ada.ws, "echo never").await;
    requested(&mut bob.ws, "echo never").await;
    let (status, body) = server
        .post(&room_path(room, "/cancel"), json!({"userId":"olga"}))
        .await;
    assert_eq!((status, body), (200, json!({"cancelled": true})));
    let withdrawn =
        json!({"type":"duet_approval","phase":"withdrawn","approvalId":request["approvalId"]});
    for ws in [&mut ada.ws, &mut bob.ws] {
        let frames = frames_until(ws, |f| *f == withdrawn).await;
        assert!(execs(&frames).is_empty(), "{frames:?}");
        ws.until(listing(json!([]))).await;
    }
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null);
    assert!(body["error"].is_string(), "{body}");
    let state = owner_joins(&server, room, "user=check").await.state;
    assert_eq!(state["approvals"], json!([]));
    assert_eq!(state["execs"], json!([]));
    let agent = state["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "agent")
        .unwrap();
    assert_eq!(agent["cancelledBy"], "olga", "{agent}");
}

#[tokio::test]
async fn a_socket_that_reconnects_sees_the_open_request_and_answers_it() {
    let model = model_saying("<run>echo after-reconnect</run>").await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "ask-back";
    let (mut ada, mut bob) = two_asking(&server, room).await;
    let turn = ask(&server, room, "go");
    let request = requested(&mut ada.ws, "echo after-reconnect").await;
    ada.ws.close().await;
    // Back again: the connect state lists the open request.
    let mut back = owner_joins(&server, room, "user=ada&deltas=1").await;
    assert_eq!(
        back.state["approvals"],
        json!([{"approvalId": request["approvalId"], "turnId": request["turnId"], "cmd": "echo after-reconnect"}])
    );
    assert_eq!(back.state["policy"], "ask");
    let answer = back
        .ws
        .rpc(
            1,
            "approve",
            json!([{"approvalId": request["approvalId"], "approved": true}]),
        )
        .await;
    assert_eq!(answer["result"], json!({"decided": true}), "{answer}");
    let frames = frames_until(&mut bob.ws, agent_stored).await;
    let decided = json!({"type":"duet_approval","phase":"decided","approvalId":request["approvalId"],"approved":true,"by":"ada"});
    assert!(frames.contains(&decided), "{frames:?}");
    assert!(!execs(&frames).is_empty(), "{frames:?}");
    let (_, body) = turn.await.unwrap();
    assert_eq!(
        body["reply"],
        "Output (echo after-reconnect):\nafter-reconnect"
    );
}

#[tokio::test]
async fn under_off_no_agent_command_runs() {
    let model = model_saying("Trying.\n<run>echo nope</run>").await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "off";
    let mut ada = owner_joins(&server, room, "user=ada").await;
    set_policy(&server, room, json!({"policy":"off"})).await;
    let turn = ask(&server, room, "try");
    let frames = frames_until(&mut ada.ws, agent_stored).await;
    assert!(execs(&frames).is_empty(), "{frames:?}");
    assert!(
        !frames.iter().any(|f| f["type"] == "duet_approval"),
        "{frames:?}"
    );
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "Trying.\n\nError (echo nope):\nnot run: the room's policy is off"
    );
    let agent = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(agent["runs"][0]["exitCode"], Value::Null);
    assert_eq!(
        agent["runs"][0]["error"],
        "not run: the room's policy is off"
    );
    // People's own commands are never held.
    let (status, ran) = server
        .post(
            &room_path(room, "/sandbox/exec"),
            json!({"cmd":"echo mine"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(ran["result"]["stdout"], "mine\n");
}

#[tokio::test]
async fn allowed_commands_run_without_asking_but_not_when_they_chain() {
    let model =
        model_saying("<run>ls</run>\n<run>cat notes.txt</run>\n<run>ls; rm -rf /workspace</run>")
            .await;
    let (server, _dir) = with_model(&model, &["--approval-allow", "ls"]).await;
    let room = "allow";
    common::apps::put_file(&server, room, "notes.txt", b"keep me".to_vec()).await;
    let mut ada = owner_joins(&server, room, "user=ada").await;
    assert_eq!(ada.state["allow"], json!(["ls"]));
    set_policy(&server, room, json!({"policy":"ask","allow":["cat"]})).await;
    let state = ada
        .ws
        .until(|f| f["type"] == "cf_agent_state" && f["state"]["allow"] == json!(["ls", "cat"]))
        .await;
    assert_eq!(state["state"]["policy"], "ask");
    let turn = ask(&server, room, "look, then wreck");
    let frames = frames_until(&mut ada.ws, approval("request")).await;
    let request = frames.last().unwrap().clone();
    assert_eq!(request["cmd"], "ls; rm -rf /workspace");
    let ran: Vec<&Value> = execs(&frames)
        .into_iter()
        .filter(|f| f["phase"] == "start")
        .map(|f| &f["cmd"])
        .collect();
    assert_eq!(ran, [&json!("ls"), &json!("cat notes.txt")]);
    assert_eq!(frames.iter().filter(|f| approval("request")(f)).count(), 1);
    let answer = ada
        .ws
        .rpc(
            1,
            "approve",
            json!([{"approvalId": request["approvalId"], "approved": false}]),
        )
        .await;
    assert_eq!(answer["result"], json!({"decided": true}));
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "Output (ls):\nnotes.txt\n\n\nOutput (cat notes.txt):\nkeep me\n\nError (ls; rm -rf /workspace):\ndenied by ada"
    );
    let (status, kept) = server.get(&room_path(room, "/files/notes.txt")).await;
    assert_eq!((status, kept), (200, json!("keep me")));
}

#[tokio::test]
async fn setting_the_policy_answers_it_patches_the_state_and_refuses_bad_bodies() {
    let (server, _dir) = with_token(&[]).await;
    let room = "policy";
    let mut plain = owner_joins(&server, room, "user=ada").await;
    let mut deltas = owner_joins(&server, room, "user=bob&deltas=1").await;
    assert_eq!(plain.state["policy"], "auto");
    assert_eq!(plain.state["allow"], json!([]));
    let (set, mut frames) = deltas
        .ws
        .rpc_keeping(
            1,
            "set_policy",
            json!([{"policy":"ask","allow":["git status","ls"]}]),
        )
        .await;
    assert_eq!(set["result"], json!({"policy":"ask"}), "{set}");
    let mut seen = json!({});
    while seen.get("policy").is_none() || seen.get("allow").is_none() {
        let f = if frames.is_empty() {
            deltas.ws.next().await
        } else {
            frames.remove(0)
        };
        if f["type"] == "duet_state" {
            for (k, v) in f["patch"].as_object().unwrap() {
                seen[k] = v.clone();
            }
        }
    }
    assert_eq!(seen["policy"], "ask");
    assert_eq!(seen["allow"], json!(["git status", "ls"]));
    plain
        .ws
        .until(|f| f["type"] == "cf_agent_state" && f["state"]["policy"] == "ask")
        .await;
    let (status, body) = server
        .post(&room_path(room, "/policy"), json!({"policy":"off"}))
        .await;
    assert_eq!((status, body), (200, json!({"policy":"off"})));
    let f = deltas
        .ws
        .until(|f| f["type"] == "duet_state" && f["patch"].get("policy").is_some())
        .await;
    assert_eq!(f["patch"]["policy"], "off");

    let long = "x".repeat(201);
    let many: Vec<String> = (0..65).map(|n| format!("cmd{n}")).collect();
    for (body, field) in [
        (json!({}), "policy"),
        (json!({"policy":"sometimes"}), "policy"),
        (json!({"policy":"ask","allow":"ls"}), "allow"),
        (json!({"policy":"ask","allow":[1]}), "allow"),
        (json!({"policy":"ask","allow":[long]}), "allow"),
        (json!({"policy":"ask","allow":many}), "allow"),
    ] {
        let (status, answer) = server.post(&room_path(room, "/policy"), body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], "invalid request");
        assert!(answer["details"][field].is_array(), "{body}: {answer}");
        let over_rpc = plain.ws.rpc(9, "set_policy", json!([body])).await;
        assert_eq!(over_rpc["status"], 400, "{over_rpc}");
        assert!(over_rpc["details"][field].is_array(), "{over_rpc}");
    }
    assert_eq!(
        server
            .post(&room_path(room, "/policy"), json!({"policy":"sometimes"}))
            .await
            .1["details"]["policy"],
        json!(["must be auto, ask or off"])
    );
    // The longest list the contract allows is taken.
    let most: Vec<String> = (0..64).map(|n| format!("{n:0>200}")).collect();
    set_policy(&server, room, json!({"policy":"auto","allow":most})).await;
    let state = owner_joins(&server, room, "user=check").await.state;
    assert_eq!(state["policy"], "auto");
    assert_eq!(state["allow"].as_array().unwrap().len(), 64);
}

#[tokio::test]
async fn the_policy_and_the_room_s_allow_list_are_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let room = "kept-policy";
    let server = start_with_token(dir.path(), &listen, &["--approval-allow", "ls"]).await;
    set_policy(
        &server,
        room,
        json!({"policy":"ask","allow":["git status"]}),
    )
    .await;
    let before = owner_joins(&server, room, "user=ada").await.state;
    assert_eq!(before["allow"], json!(["ls", "git status"]));
    server.stop().await;
    let server = start_with_token(dir.path(), &listen, &["--approval-allow", "ls"]).await;
    let after = enter(server.ws(room, "user=ada").await).await.state;
    assert_eq!(after["policy"], "ask");
    assert_eq!(after["allow"], json!(["ls", "git status"]));
    assert_eq!(after["approvals"], json!([]));
}
