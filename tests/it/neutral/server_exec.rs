//! Commands through `duet serve` with the real sandbox: streamed to every
//! client of the room, answered with their result, recorded in the state.

use crate::common;
use crate::common::shell_state::{CHECK_STATE, SHELL_STATE, STATE_KEPT};
use crate::common::{Server, Ws, http};
use serde_json::{Value, json};

/// Reads one command's frames (start, output, complete) from `ws`.
async fn exec_frames(ws: &mut Ws) -> (Value, String, String, Value) {
    let start = ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    let id = start["execId"].clone();
    let (mut out, mut err) = (String::new(), String::new());
    loop {
        let f = ws
            .until(|f| f["type"] == "duet_exec" && f["execId"] == id)
            .await;
        match f["phase"].as_str().unwrap() {
            "stdout" => out.push_str(f["data"].as_str().unwrap()),
            "stderr" => err.push_str(f["data"].as_str().unwrap()),
            "complete" => return (start, out, err, f),
            other => panic!("unexpected phase {other}"),
        }
    }
}

#[tokio::test]
async fn a_command_streams_to_everyone_and_answers_its_result() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("x1", "user=ada").await;
    let mut bob = server.joined("x1", "user=bob").await;
    let (status, body) = server
        .post(
            "/api/rooms/x1/sandbox/exec",
            json!({"cmd":"echo hi; echo oops >&2","userId":"ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sandboxName"], "sandbox-x1");
    let result = &body["result"];
    assert_eq!(result["success"], true);
    assert_eq!(result["exitCode"], 0);
    assert_eq!(result["stdout"], "hi\n");
    assert_eq!(result["stderr"], "oops\n");
    assert_eq!(result["command"], "echo hi; echo oops >&2");
    assert!(result["duration"].is_u64());
    let ts = result["timestamp"].as_str().unwrap();
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
        "{ts}"
    );
    for ws in [&mut ada, &mut bob] {
        let (start, out, err, complete) = exec_frames(ws).await;
        assert_eq!(start["execId"], "x00000000001");
        assert_eq!(start["cmd"], "echo hi; echo oops >&2");
        assert_eq!(start["by"], "ada");
        assert_eq!(start["source"], "user");
        assert_eq!((out.as_str(), err.as_str()), ("hi\n", "oops\n"));
        assert_eq!(complete["exitCode"], 0);
        assert!(complete.get("timedOut").is_none() && complete.get("error").is_none());
    }
    // The record is in the state a newcomer receives.
    let mut carl = server.ws("x1", "").await;
    carl.next().await;
    let state = carl.next().await;
    let record = &state["state"]["execs"][0];
    assert_eq!(record["execId"], "x00000000001");
    assert_eq!(record["by"], "ada");
    assert_eq!(record["source"], "user");
    assert_eq!(record["stdout"], "hi\n");
    assert_eq!(record["stderr"], "oops\n");
    assert_eq!(record["exitCode"], 0);
}

#[tokio::test]
async fn failures_timeouts_and_per_command_settings() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = server
        .post("/api/rooms/x2/sandbox/exec", json!({"cmd":"exit 3"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            body["result"]["success"].clone(),
            body["result"]["exitCode"].clone()
        ),
        (json!(false), json!(3))
    );
    let (_, body) = server
        .post(
            "/api/rooms/x2/sandbox/exec",
            json!({"cmd":"sleep 30","timeoutMs":300}),
        )
        .await;
    assert_eq!(body["result"]["timedOut"], true, "{body}");
    assert_eq!(body["result"]["success"], false);
    let (_, body) = server
        .post(
            "/api/rooms/x2/sandbox/exec",
            json!({"cmd":"pwd; echo \"$GREETING\"","cwd":"/tmp","env":{"GREETING":"hello"}}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "/tmp\nhello\n", "{body}");
    // cwd and env were for that command only.
    let (_, body) = server
        .post(
            "/api/rooms/x2/sandbox/exec",
            json!({"cmd":"pwd; echo \"[$GREETING]\""}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "/workspace\n[]\n", "{body}");
}

#[tokio::test]
async fn an_interrupt_stops_the_running_command() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("x3", "user=ada").await;
    let url = server.url("/api/rooms/x3/sandbox/exec");
    let running = tokio::spawn(async move {
        common::answer(http().post(url).json(&json!({"cmd":"sleep 60"}))).await
    });
    let start = ada
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    let exec_id = start["execId"].as_str().unwrap().to_string();
    // The command may not have reached the shell yet: retry until it stops.
    let mut interrupted = false;
    for _ in 0..100 {
        let (status, body) = server
            .post("/api/rooms/x3/sandbox/interrupt", json!({"execId":exec_id}))
            .await;
        assert_eq!(status, 200);
        if body["interrupted"] == true {
            interrupted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(interrupted);
    let (status, body) = running.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["result"]["interrupted"], true, "{body}");
    assert_eq!(body["result"]["success"], false);
    let complete = ada.until(|f| f["phase"] == "complete").await;
    assert_eq!(complete["interrupted"], true);
}

#[tokio::test]
async fn rpc_exec_answers_the_http_body_and_the_state_keeps_twenty() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("x4", "user=ada").await;
    for n in 1..=21u64 {
        let answer = ada
            .rpc(n, "exec", json!([{"cmd":format!("echo {n}")}]))
            .await;
        assert_eq!(answer["success"], true, "{answer}");
        assert_eq!(answer["result"]["result"]["stdout"], format!("{n}\n"));
        assert_eq!(answer["result"]["sandboxName"], "sandbox-x4");
    }
    let mut bob = server.ws("x4", "").await;
    bob.next().await;
    let execs = bob.next().await["state"]["execs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(execs.len(), 20);
    assert_eq!(execs[0]["stdout"], "2\n");
    assert_eq!(execs[19]["execId"], "x00000000021");
    assert_eq!(execs[19]["by"], "ada");
}

#[tokio::test]
async fn stored_outputs_are_capped_at_16_kib() {
    let (server, _dir) = Server::fresh().await;
    let (_, body) = server
        .post(
            "/api/rooms/x5/sandbox/exec",
            json!({"cmd":"head -c 40000 /dev/zero | tr '\\0' a"}),
        )
        .await;
    assert_eq!(body["result"]["stdout"].as_str().unwrap().len(), 40000);
    let mut ws = server.ws("x5", "").await;
    ws.next().await;
    let record = ws.next().await["state"]["execs"][0].clone();
    assert_eq!(record["stdout"].as_str().unwrap().len(), 16 * 1024);
    assert_eq!(record["truncated"], true);
}

#[tokio::test]
async fn cleanup_destroys_the_workspace() {
    let (server, _dir) = Server::fresh().await;
    server
        .post(
            "/api/rooms/x6/sandbox/exec",
            json!({"cmd":"echo kept > f.txt"}),
        )
        .await;
    let (_, body) = server
        .post("/api/rooms/x6/sandbox/exec", json!({"cmd":"cat f.txt"}))
        .await;
    assert_eq!(body["result"]["stdout"], "kept\n");
    let (status, body) = server.post("/api/rooms/x6/cleanup", json!({})).await;
    assert_eq!((status, body), (200, json!({"cleaned":true,"roomId":"x6"})));
    let (_, body) = server
        .post("/api/rooms/x6/sandbox/exec", json!({"cmd":"ls -A"}))
        .await;
    assert_eq!(body["result"]["stdout"], "", "{body}");
    // Exec ids go on after cleanup.
    let mut ws = server.ws("x6", "").await;
    ws.next().await;
    assert_eq!(
        ws.next().await["state"]["execs"][0]["execId"],
        "x00000000003"
    );
}

#[tokio::test]
async fn a_client_that_does_not_read_is_dropped_and_stalls_nobody() {
    if common::only_duet_serve(
        "a 64 MiB output cap (a Durable Object's RPC answer stops at 32 MiB)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--output-cap", "67108864"]).await;
    let mut stuck = server.joined("x7", "user=stuck").await;
    let mut bob = server.joined("x7", "user=bob").await;
    // More output than the socket buffers of a client that never reads.
    let cmd = "head -c 40000000 /dev/zero | tr '\\0' a";
    let req = http()
        .post(server.url("/api/rooms/x7/sandbox/exec"))
        .json(&json!({"cmd":cmd}));
    let answer = tokio::spawn(common::answer(req));
    // bob gets every byte, and hears that the one who did not read was
    // dropped (it would reconnect): during the command or after it, as the
    // machine's speed has it.
    let (mut out, mut ended, mut people) = (0, false, None);
    while !ended || people != Some(1) {
        let f = bob.next().await;
        match (f["type"].as_str(), f["phase"].as_str()) {
            (Some("duet_exec"), Some("stdout")) => out += f["data"].as_str().unwrap().len(),
            (Some("duet_exec"), Some("complete")) => ended = true,
            (Some("duet_presence"), _) => people = Some(f["users"].as_array().unwrap().len()),
            _ => {}
        }
    }
    assert_eq!(out, 40_000_000);
    let (status, body) = answer.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["result"]["stdout"].as_str().unwrap().len(), 40_000_000);
    assert!(stuck.ends().await);
}

#[tokio::test]
async fn the_server_stops_at_once_while_a_command_runs() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = server.joined("x8", "user=ada").await;
    let req = http()
        .post(server.url("/api/rooms/x8/sandbox/exec"))
        .json(&json!({"cmd":"sleep 600"}));
    let running = tokio::spawn(req.send());
    ada.until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    // Stops within the wait of `stop`, long before the command would end;
    // the waiting request is answered (500, the room stopped) or cut.
    server.stop().await;
    if let Ok(res) = running.await.unwrap() {
        assert_eq!(res.status(), 500);
    }
    assert!(ada.ends().await);
}

async fn exec_in(server: &Server, room: &str, body: Value) -> Value {
    let (status, body) = server
        .post(&format!("/api/rooms/{room}/sandbox/exec"), body)
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

/// Builds the shell's state in `room`, runs `stop` on a command that it
/// ends, then checks the state: everything is as before the command.
async fn state_outlives(room: &str, stopped: Value, interrupt: bool, code: i64) {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.joined(room, "user=ada").await;
    let r = exec_in(&server, room, json!({ "cmd": SHELL_STATE })).await;
    assert_eq!(r["exitCode"], 0, "{r}");
    assert_eq!(
        exec_in(&server, room, json!({ "cmd": CHECK_STATE })).await["stdout"],
        STATE_KEPT
    );
    let url = server.url(&format!("/api/rooms/{room}/sandbox/exec"));
    let running = tokio::spawn(common::answer(http().post(url).json(&stopped)));
    // Earlier commands printed too: this one's output says it runs.
    ws.until(|f| {
        f["type"] == "duet_exec"
            && f["phase"] == "stdout"
            && f["data"].as_str().is_some_and(|d| d.contains("started"))
    })
    .await;
    if interrupt {
        let (status, body) = server
            .post(&format!("/api/rooms/{room}/sandbox/interrupt"), json!({}))
            .await;
        assert_eq!(
            (status, &body["interrupted"]),
            (200, &json!(true)),
            "{body}"
        );
    }
    let (_, body) = running.await.unwrap();
    let r = &body["result"];
    assert_eq!(r["exitCode"], code, "{r}");
    assert!(
        !r["stdout"].as_str().unwrap().contains("after"),
        "the rest of the command ran: {r}"
    );
    assert_eq!(r["error"], Value::Null, "the shell was replaced: {r}");
    let r = exec_in(&server, room, json!({ "cmd": CHECK_STATE })).await;
    assert_eq!(r["stdout"], STATE_KEPT, "the shell lost its state: {r}");
}

#[tokio::test]
async fn an_interrupt_keeps_the_shells_functions_aliases_variables_and_options() {
    let cmd = "echo started; sleep 100; echo after";
    state_outlives("keep-i", json!({ "cmd": cmd }), true, 130).await;
}

#[tokio::test]
async fn a_timeout_keeps_the_shells_functions_aliases_variables_and_options() {
    let cmd = "echo started; sleep 100; echo after";
    let stopped = json!({ "cmd": cmd, "timeoutMs": 1500 });
    state_outlives("keep-t", stopped, false, 124).await;
}

#[tokio::test]
async fn a_builtin_loop_that_is_interrupted_keeps_the_shells_state() {
    let cmd = "echo started; while :; do :; done; echo after";
    state_outlives("keep-b", json!({ "cmd": cmd }), true, 130).await;
}

#[tokio::test]
async fn a_stopped_shell_at_its_timeout_keeps_its_state() {
    let cmd = "echo started; kill -STOP $$; echo after";
    let stopped = json!({ "cmd": cmd, "timeoutMs": 1500 });
    state_outlives("keep-s", stopped, false, 124).await;
}

#[tokio::test]
async fn output_past_the_cap_is_marked_truncated() {
    let (server, _dir) = Server::fresh_with(&["--output-cap", "1000"]).await;
    let (status, body) = server
        .post(
            "/api/rooms/x9/sandbox/exec",
            json!({"cmd": "head -c 5000 /dev/zero | tr '\\0' a; echo done >&2"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["truncated"], true, "{body}");
    assert_eq!(
        result["stdout"].as_str().unwrap_or_default().len(),
        1000,
        "{body}"
    );
    // Under the cap, nothing is marked.
    let (_, body) = server
        .post("/api/rooms/x9/sandbox/exec", json!({"cmd": "echo small"}))
        .await;
    assert_eq!(body["result"]["stdout"], "small\n", "{body}");
    assert!(body["result"]["truncated"] != true, "{body}");
}
