//! Background processes, as docs/protocol.md "Background processes and
//! ports" says, over HTTP and real sockets to a real backend and sandbox:
//! starting (HTTP and rpc), names and ids, listing, logs and their 64 KiB
//! tails, following (no gap, no duplicate, whole characters, frames of at
//! most 64 KiB) and unfollowing, killing (TERM, then KILL) and its group,
//! exiting, the cap, the error shapes, outliving the socket and the shell,
//! cleanup, the room state and its patches, a restart, the idle stop, and
//! where a process runs. Backend-neutral: only the protocol, except what
//! is marked `only_duet_serve` (its flags).

use crate::common;
use crate::common::apps::{
    delete, ended, exec, logs, printed, process, put_file, room_path, start, wait_for,
};
use crate::common::{Server, Ws, answer, http};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A `duet_process` frame of `phase` for `id`.
fn process_frame<'a>(phase: &'a str, id: &'a str) -> impl Fn(&Value) -> bool + 'a {
    move |f| {
        f["type"] == "duet_process"
            && f["phase"] == phase
            && (f["processId"] == id || f["process"]["id"] == id)
    }
}

/// Sends an rpc; answers its answer and the frames that came before it.
async fn rpc_keeping(ws: &mut Ws, id: u64, method: &str, args: Value) -> (Value, Vec<Value>) {
    ws.send(json!({"type":"rpc","id":id,"method":method,"args":args}))
        .await;
    let mut before = Vec::new();
    loop {
        let frame = ws.next().await;
        if frame["type"] == "rpc" && frame["id"] == id {
            return (frame, before);
        }
        before.push(frame);
    }
}

/// Reads frames until the exit frame of `id`; answers it and those before.
async fn until_exit(ws: &mut Ws, id: &str) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let frame = ws.next().await;
        if process_frame("exit", id)(&frame) {
            return (frame, before);
        }
        before.push(frame);
    }
}

/// Reads frames until one matching `a` and one matching `b` came, in
/// either order; answers the first of each.
async fn frames_until_both(
    ws: &mut Ws,
    a: impl Fn(&Value) -> bool,
    b: impl Fn(&Value) -> bool,
) -> (Value, Value) {
    let (mut first, mut second) = (None, None);
    while first.is_none() || second.is_none() {
        let frame = ws.next().await;
        if first.is_none() && a(&frame) {
            first = Some(frame);
        } else if second.is_none() && b(&frame) {
            second = Some(frame);
        }
    }
    (first.unwrap(), second.unwrap())
}

/// The first of `seen` that `ok` accepts, else the next such frame.
async fn seen_or_next(ws: &mut Ws, seen: Vec<Value>, ok: impl Fn(&Value) -> bool) -> Value {
    match seen.into_iter().find(&ok) {
        Some(frame) => frame,
        None => ws.until(ok).await,
    }
}

/// The output frames of `id` among `frames`, as (stream, data).
fn output_of(frames: &[Value], id: &str) -> Vec<(String, String)> {
    frames
        .iter()
        .filter(|f| {
            f["type"] == "duet_process"
                && (f["phase"] == "stdout" || f["phase"] == "stderr")
                && f["processId"] == id
        })
        .map(|f| {
            (
                f["phase"].as_str().unwrap().to_string(),
                f["data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn id_of(process: &Value) -> String {
    process["id"].as_str().expect("a process id").to_string()
}

/// `0\n1\n…\n{n-1}\n`: what the counter processes print.
fn counted(n: usize) -> String {
    (0..n).map(|i| format!("{i}\n")).collect()
}

/// A shell loop printing 0..n, one a line, `pause` seconds apart.
fn counter(n: usize, pause: &str) -> String {
    format!("i=0; while [ $i -lt {n} ]; do echo $i; i=$((i+1)); sleep {pause}; done")
}

/// How many `sleep`s are alive in the sandbox: a killed one may be a
/// zombie for a moment, until PID 1 reaps it, and that is not alive.
const LIVING_SLEEPS: &str = "ps -e -o stat=,comm= | awk '$1 !~ /^Z/ && $2 == \"sleep\"' | wc -l";

#[tokio::test]
async fn starting_over_http_answers_the_process_and_tells_every_socket() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-start";
    let mut full = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let before = now_ms();
    let p = start(
        &server,
        room,
        json!({"cmd": "  sleep 300  ", "userId": "ada"}),
    )
    .await;
    let id = id_of(&p);
    assert!(id.starts_with('p'), "ids are p1, p2, …: {p}");
    assert_eq!(p["name"], "sleep", "the program's name by default: {p}");
    assert_eq!(p["cmd"], "sleep 300", "cmd is trimmed: {p}");
    assert_eq!(p["by"], "ada");
    assert_eq!(p["status"], "running");
    assert_eq!(p["exitCode"], Value::Null);
    let started = p["startedAt"].as_u64().expect("startedAt is a ts");
    assert!(
        started + 5_000 >= before && started <= now_ms() + 5_000,
        "{p}"
    );
    assert!(p.get("endedAt").is_none_or(Value::is_null), "{p}");

    // Every socket is told, with the same process, and its state lists it:
    // a full state for one, a patch for the other (in either order).
    let with_it = |list: &Value| list.as_array().is_some_and(|l| !l.is_empty());
    let frames = frames_until_both(&mut full, process_frame("start", &id), |f| {
        f["type"] == "cf_agent_state" && with_it(&f["state"]["processes"])
    })
    .await;
    assert_eq!(
        frames.0,
        json!({"type":"duet_process","phase":"start","process":p})
    );
    assert_eq!(frames.1["state"]["processes"], json!([p]));
    let frames = frames_until_both(&mut deltas, process_frame("start", &id), |f| {
        f["type"] == "duet_state" && with_it(&f["patch"]["processes"])
    })
    .await;
    assert_eq!(
        frames.0,
        json!({"type":"duet_process","phase":"start","process":p})
    );
    assert_eq!(frames.1["patch"]["processes"], json!([p]));

    // The HTTP routes list it and answer it by id.
    let (status, list) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(status, 200);
    assert_eq!(list, json!({"processes": [p]}));
    let (status, one) = server
        .get(&room_path(room, &format!("/processes/{id}")))
        .await;
    assert_eq!(status, 200);
    assert_eq!(one, json!({"process": p}));
    // A socket that joins now reads it on connect.
    let mut late = server.ws(room, "user=cy").await;
    let state = late.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["processes"], json!([p]));
}

#[tokio::test]
async fn names_default_to_the_program_and_the_starter_to_anonymous() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-names";
    let named = start(&server, room, json!({"cmd": "sleep 300", "name": "web"})).await;
    assert_eq!(named["id"], "p1", "ids are made by the server: p1, p2, …");
    assert_eq!(named["name"], "web");
    assert_eq!(named["by"], "anonymous", "no userId: {named}");
    let folder = start(&server, room, json!({"cmd": "/bin/sleep 300"})).await;
    assert_eq!(folder["name"], "sleep", "without its folder: {folder}");
    assert_eq!(folder["id"], "p2");
    // A long program name is cut to 32 characters.
    let long = format!("{}/x", "a".repeat(40));
    let cut = start(&server, room, json!({"cmd": long})).await;
    assert_eq!(cut["name"], "x");
    let long = start(
        &server,
        room,
        json!({"cmd": format!("{} 1", "b".repeat(40))}),
    )
    .await;
    assert_eq!(long["name"], "b".repeat(32), "{long}");
}

#[tokio::test]
async fn starting_and_killing_over_rpc_name_the_socket_s_user() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-rpc";
    let mut other = server.joined(room, "user=ada").await;
    let mut bob = server.joined(room, "user=bob").await;
    let answer = bob
        .rpc(1, "process_start", json!([{"cmd": "sleep 300"}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let p = answer["result"]["process"].clone();
    assert_eq!(p["by"], "bob");
    assert_eq!(p["status"], "running");
    let id = id_of(&p);
    let seen = other.until(process_frame("start", &id)).await;
    assert_eq!(seen["process"], p);

    let named = bob
        .rpc(
            2,
            "process_start",
            json!([{"cmd": "sleep 300", "name": "nap"}]),
        )
        .await;
    assert_eq!(named["result"]["process"]["name"], "nap", "{named}");

    let killed = bob.rpc(3, "process_kill", json!([{"processId": id}])).await;
    assert_eq!(killed["success"], true, "{killed}");
    assert_eq!(killed["result"], json!({"killed": true}));
    let exit = other.until(process_frame("exit", &id)).await;
    assert_eq!(
        exit,
        json!({"type":"duet_process","phase":"exit","processId":id,"status":"killed","exitCode":143})
    );
    let again = bob.rpc(4, "process_kill", json!([{"processId": id}])).await;
    assert_eq!(again["result"], json!({"killed": false}), "{again}");
    // After a rename, the new name starts them.
    let renamed = bob.rpc(5, "rename", json!([{"name": "robert"}])).await;
    assert_eq!(renamed["success"], true, "{renamed}");
    let answer = bob
        .rpc(6, "process_start", json!([{"cmd": "sleep 300"}]))
        .await;
    assert_eq!(answer["result"]["process"]["by"], "robert", "{answer}");
    // A bad name over rpc: the same 400 as over HTTP.
    let bad = bob
        .rpc(7, "process_start", json!([{"cmd": "sleep 1", "name": ""}]))
        .await;
    assert_eq!(bad["status"], 400, "{bad}");
    assert!(bad["details"]["name"][0].is_string(), "{bad}");
}

#[tokio::test]
async fn a_process_that_ends_by_itself_has_exited_with_its_status() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-exit";
    let mut ws = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "echo out; echo err >&2; exit 3"}),
    )
    .await;
    let id = id_of(&p);
    let (exit, seen) = until_exit(&mut ws, &id).await;
    assert_eq!(
        exit,
        json!({"type":"duet_process","phase":"exit","processId":id,"status":"exited","exitCode":3})
    );
    let done = process(&server, room, &id).await;
    assert_eq!(done["status"], "exited");
    assert_eq!(done["exitCode"], 3);
    // Both kinds of socket learn it from the state too.
    let ended_in = |list: &Value| {
        list.as_array().is_some_and(|l| {
            l.iter()
                .any(|p| p["id"] == id.as_str() && p["status"] == "exited")
        })
    };
    let state = seen_or_next(&mut ws, seen, |f| {
        f["type"] == "cf_agent_state" && ended_in(&f["state"]["processes"])
    })
    .await;
    assert_eq!(state["state"]["processes"], json!([done]));
    let patch = deltas
        .until(|f| f["type"] == "duet_state" && ended_in(&f["patch"]["processes"]))
        .await;
    assert_eq!(patch["patch"]["processes"], json!([done]));
    let ended_at = done["endedAt"].as_u64().expect("endedAt once it ended");
    assert!(ended_at >= done["startedAt"].as_u64().unwrap(), "{done}");
    // Its log: each stream apart.
    assert_eq!(
        logs(&server, room, &id).await,
        json!({"stdout": "out\n", "stderr": "err\n"})
    );
    // Killing it now stops nothing.
    let (status, body) = delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    assert_eq!((status, body), (200, json!({"killed": false})));
    assert_eq!(process(&server, room, &id).await["status"], "exited");

    let ok = start(&server, room, json!({"cmd": "true"})).await;
    let ok = ended(&server, room, &id_of(&ok)).await;
    assert_eq!(
        (ok["status"].clone(), ok["exitCode"].clone()),
        (json!("exited"), json!(0))
    );
}

#[tokio::test]
async fn a_log_keeps_the_last_64_kib_of_each_stream() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-tail";
    // 40000 numbered lines (228,894 bytes) on stdout, a short line on stderr.
    let p = start(&server, room, json!({"cmd": "seq 1 40000; echo done >&2"})).await;
    let id = id_of(&p);
    ended(&server, room, &id).await;
    let log = logs(&server, room, &id).await;
    let all: String = (1..=40000).map(|i| format!("{i}\n")).collect();
    let stdout = log["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), 64 * 1024, "exactly the last 64 KiB");
    assert_eq!(stdout, &all[all.len() - 64 * 1024..]);
    assert_eq!(log["stderr"], "done\n");
    // The same for stderr, on its own.
    let p = start(&server, room, json!({"cmd": "echo hi; seq 1 40000 >&2"})).await;
    let id = id_of(&p);
    ended(&server, room, &id).await;
    let log = logs(&server, room, &id).await;
    assert_eq!(log["stdout"], "hi\n");
    assert_eq!(
        log["stderr"].as_str().unwrap(),
        &all[all.len() - 64 * 1024..]
    );

    // Three-byte characters: the cut falls inside one, which is dropped.
    let euros = start(
        &server,
        room,
        json!({"cmd": "python3 -c 'import sys; sys.stdout.buffer.write(\"€\".encode() * 30000)'"}),
    )
    .await;
    let id = id_of(&euros);
    let done = ended(&server, room, &id).await;
    assert_eq!(done["exitCode"], 0, "{done}");
    let stdout = logs(&server, room, &id).await["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(stdout, "€".repeat(65536 / 3), "21845 whole characters");
}

#[tokio::test]
async fn following_sends_the_log_so_far_then_the_rest_once_and_only_to_followers() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-follow";
    let mut follower = server.joined(room, "user=ada").await;
    let mut bystander = server.joined(room, "user=bob").await;
    let n = 1500;
    let p = start(&server, room, json!({"cmd": counter(n, "0.002")})).await;
    let id = id_of(&p);
    // Follow while it counts: some lines are printed already.
    printed(&server, room, &id, "\n50\n").await;
    let (answer, before) = rpc_keeping(
        &mut follower,
        1,
        "process_follow",
        json!([{"processId": id}]),
    )
    .await;
    assert_eq!(answer["success"], true, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["processId"], id.as_str());
    assert_eq!(result["stderr"], "");
    let so_far = result["stdout"].as_str().unwrap().to_string();
    assert!(
        so_far.starts_with("0\n1\n") && so_far.contains("\n50\n"),
        "{so_far:?}"
    );
    let (exit, after) = until_exit(&mut follower, &id).await;
    assert_eq!(exit["status"], "exited");
    let mut seen = so_far.clone();
    let frames: Vec<Value> = before.into_iter().chain(after).collect();
    for (stream, data) in output_of(&frames, &id) {
        assert_eq!(stream, "stdout");
        seen.push_str(&data);
    }
    // No gap, no line twice, and everything before the exit frame.
    assert_eq!(seen, counted(n));
    assert!(
        output_of(&frames, &id).len() < n,
        "output is coalesced into fewer frames than lines"
    );
    // Someone who did not follow got the start and the exit, no output.
    let (_, seen_by_bob) = until_exit(&mut bystander, &id).await;
    assert!(seen_by_bob.iter().any(process_frame("start", &id)));
    assert_eq!(output_of(&seen_by_bob, &id), vec![]);
}

#[tokio::test]
async fn unfollowing_stops_the_output_frames() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-unfollow";
    let mut ws = server.joined(room, "user=ada").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while :; do echo tick; echo tock >&2; sleep 0.05; done"}),
    )
    .await;
    let id = id_of(&p);
    let answer = ws
        .rpc(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let out = ws
        .until(|f| f["type"] == "duet_process" && f["phase"] == "stdout")
        .await;
    assert!(out["data"].as_str().unwrap().contains("tick"), "{out}");
    let err = ws
        .until(|f| f["type"] == "duet_process" && f["phase"] == "stderr")
        .await;
    assert!(err["data"].as_str().unwrap().contains("tock"), "{err}");

    let answer = ws
        .rpc(2, "process_unfollow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"unfollowed": true}));
    // It keeps printing; this socket gets none of it any more.
    let before = logs(&server, room, &id).await["stdout"]
        .as_str()
        .unwrap()
        .len();
    wait_for("more output", || async {
        let now = logs(&server, room, &id).await["stdout"]
            .as_str()
            .unwrap()
            .len();
        (now > before + 40).then_some(())
    })
    .await;
    let (status, body) = delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    assert_eq!((status, body), (200, json!({"killed": true})));
    let (_, frames) = until_exit(&mut ws, &id).await;
    assert_eq!(output_of(&frames, &id), vec![], "no output after unfollow");
    // Unfollowing what one does not follow is fine too.
    let again = ws
        .rpc(3, "process_unfollow", json!([{"processId": id}]))
        .await;
    assert_eq!(again["result"], json!({"unfollowed": true}), "{again}");
}

#[tokio::test]
async fn killing_sends_term_then_kill_after_two_seconds() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-kill";
    let mut ws = server.joined(room, "user=ada").await;
    // A normal process ends on SIGTERM: 143.
    let p = start(&server, room, json!({"cmd": "sleep 300"})).await;
    let id = id_of(&p);
    let (status, body) = delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    assert_eq!((status, body), (200, json!({"killed": true})));
    // DELETE answers once it ended.
    let done = process(&server, room, &id).await;
    assert_eq!(done["status"], "killed", "{done}");
    assert_eq!(done["exitCode"], 143, "{done}");
    assert!(done["endedAt"].is_u64(), "{done}");
    let (exit, _) = until_exit(&mut ws, &id).await;
    assert_eq!(
        exit,
        json!({"type":"duet_process","phase":"exit","processId":id,"status":"killed","exitCode":143})
    );

    // One that survives SIGTERM (it says so, and goes on) needs SIGKILL:
    // the log shows that TERM came first, the 137 that KILL ended it.
    let stubborn = start(
        &server,
        room,
        json!({"cmd": "trap 'echo got-term' TERM; echo ready; while :; do sleep 0.1; done"}),
    )
    .await;
    let id = id_of(&stubborn);
    printed(&server, room, &id, "ready").await;
    let (status, body) = delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    assert_eq!((status, body), (200, json!({"killed": true})));
    let out = logs(&server, room, &id).await["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(out.starts_with("ready\ngot-term\n"), "TERM first: {out:?}");
    let done = process(&server, room, &id).await;
    assert_eq!(
        (done["status"].clone(), done["exitCode"].clone()),
        (json!("killed"), json!(137))
    );
    // Its whole group went with it: no sleep is left in the sandbox.
    let left = exec(&server, room, LIVING_SLEEPS).await;
    assert_eq!(left["stdout"], "0\n", "{left}");
}

#[tokio::test]
async fn a_room_runs_at_most_eight_processes_at_once() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-cap8";
    let mut ids = Vec::new();
    for _ in 0..8 {
        ids.push(id_of(
            &start(&server, room, json!({"cmd": "sleep 300"})).await,
        ));
    }
    let (status, body) = server
        .post(&room_path(room, "/processes"), json!({"cmd": "sleep 300"}))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body,
        json!({"error":"too many processes","details":{"processes":["at most 8 processes run at once in a room"]}})
    );
    // Over rpc: the same status, error and details.
    let mut ws = server.joined(room, "user=ada").await;
    let answer = ws
        .rpc(1, "process_start", json!([{"cmd": "sleep 300"}]))
        .await;
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["status"], 409);
    assert_eq!(answer["error"], "too many processes");
    assert_eq!(answer["details"], body["details"]);
    // One that ends makes room.
    let (status, _) = delete(&server, &room_path(room, &format!("/processes/{}", ids[0]))).await;
    assert_eq!(status, 200);
    start(&server, room, json!({"cmd": "sleep 300"})).await;
}

#[tokio::test]
async fn max_processes_sets_the_cap() {
    if common::only_duet_serve("--max-processes, a duet serve flag") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-processes", "2"]).await;
    let room = "proc-cap2";
    let first = start(&server, room, json!({"cmd": "sleep 300"})).await;
    start(&server, room, json!({"cmd": "sleep 300"})).await;
    let (status, body) = server
        .post(&room_path(room, "/processes"), json!({"cmd": "sleep 300"}))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body,
        json!({"error":"too many processes","details":{"processes":["at most 2 processes run at once in a room"]}})
    );
    // Ended processes do not count.
    delete(
        &server,
        &room_path(room, &format!("/processes/{}", id_of(&first))),
    )
    .await;
    let quick = start(&server, room, json!({"cmd": "true"})).await;
    ended(&server, room, &id_of(&quick)).await;
    start(&server, room, json!({"cmd": "sleep 300"})).await;
    // Another room has a cap of its own.
    start(&server, "proc-cap2-other", json!({"cmd": "sleep 300"})).await;
}

#[tokio::test]
async fn bad_requests_are_answered_in_the_protocol_s_shapes() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-bad";
    let path = room_path(room, "/processes");
    for body in [
        json!({}),
        json!({"cmd": ""}),
        json!({"cmd": "   \n "}),
        json!({"cmd": "echo a\u{0}b"}),
        json!({"cmd": 42}),
    ] {
        let (status, got) = server.post(&path, body.clone()).await;
        assert_eq!(status, 400, "{body} → {got}");
        assert_eq!(got["error"], "invalid request", "{got}");
        assert!(got["details"]["cmd"][0].is_string(), "{body} → {got}");
    }
    for name in [json!(""), json!("x".repeat(33)), json!("a\u{7}b")] {
        let body = json!({"cmd": "sleep 1", "name": name});
        let (status, got) = server.post(&path, body.clone()).await;
        assert_eq!(status, 400, "{body} → {got}");
        assert_eq!(got["error"], "invalid request");
        assert!(got["details"]["name"][0].is_string(), "{body} → {got}");
    }
    let (status, got) = server
        .post(&path, json!({"cmd": "true", "userId": "x".repeat(33)}))
        .await;
    assert_eq!(status, 400, "{got}");
    assert!(got["details"]["userId"][0].is_string(), "{got}");
    // A body that is not a JSON object.
    let req = common::apps::with_token(&server, http().post(server.url(&path)))
        .header("content-type", "application/json")
        .body("[1,2]");
    let (status, body) = answer(req).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["body"][0].is_string(), "{body}");
    // A bad room id.
    let (status, got) = server
        .post("/api/rooms/a.b/processes", json!({"cmd": "true"}))
        .await;
    assert_eq!(status, 400, "{got}");
    assert!(got["details"]["room"][0].is_string(), "{got}");
    // Nothing started.
    let (_, list) = server.get(&path).await;
    assert_eq!(list, json!({"processes": []}));

    // Unknown ids: 404 with the process's id, on every route.
    let unknown = json!({"error":"no such process","details":{"processId":["no process \"p99\" in this room"]}});
    for (status, got) in [
        server.get(&format!("{path}/p99")).await,
        server.get(&format!("{path}/p99/logs")).await,
        delete(&server, &format!("{path}/p99")).await,
    ] {
        assert_eq!((status, got), (404, unknown.clone()));
    }
    let mut ws = server.joined(room, "user=ada").await;
    for (i, method) in ["process_kill", "process_follow"].iter().enumerate() {
        let got = ws
            .rpc(i as u64 + 1, method, json!([{"processId": "p99"}]))
            .await;
        assert_eq!(got["success"], false, "{got}");
        assert_eq!(got["status"], 404, "{method}: {got}");
        assert_eq!(got["error"], unknown["error"]);
        assert_eq!(got["details"], unknown["details"]);
    }
    for (i, method) in ["process_kill", "process_follow"].iter().enumerate() {
        let got = ws.rpc(20 + i as u64, method, json!([{}])).await;
        assert_eq!(got["status"], 400, "{method} without processId: {got}");
        assert!(got["details"]["processId"][0].is_string(), "{got}");
    }
    let got = ws.rpc(9, "process_start", json!([{"cmd": " "}])).await;
    assert_eq!(got["success"], false, "{got}");
    assert_eq!(got["status"], 400);
    assert!(got["details"]["cmd"][0].is_string(), "{got}");
}

#[tokio::test]
async fn a_process_outlives_its_socket_and_the_shell() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-outlive";
    let mut ws = server.joined(room, "user=ada").await;
    let answer = ws
        .rpc(
            1,
            "process_start",
            json!([{"cmd": "while :; do date +%s%N; sleep 0.1; done"}]),
        )
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let id = id_of(&answer["result"]["process"]);
    ws.close().await;
    // The command shell ends and is replaced: the process is not its child.
    let result = exec(&server, room, "exit 0").await;
    assert!(
        result["exitCode"] == 0 || result["error"].is_string(),
        "{result}"
    );
    let lines = |s: &str| s.lines().count();
    let seen = lines(logs(&server, room, &id).await["stdout"].as_str().unwrap());
    wait_for("the process to print on", || async {
        let now = lines(logs(&server, room, &id).await["stdout"].as_str().unwrap());
        (now > seen + 5).then_some(())
    })
    .await;
    assert_eq!(process(&server, room, &id).await["status"], "running");
    // A new socket sees it running.
    let mut later = server.ws(room, "user=bob").await;
    let state = later.until_type("cf_agent_state").await;
    let listed = &state["state"]["processes"][0];
    assert_eq!(listed["id"], id.as_str());
    assert_eq!(listed["status"], "running");
}

#[tokio::test]
async fn a_process_runs_in_the_workspace_with_the_room_s_files_and_a_fresh_environment() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-where";
    put_file(
        &server,
        room,
        "notes/hello.txt",
        b"from the room\n".to_vec(),
    )
    .await;
    // The command shell moves and exports; a process starts afresh.
    exec(&server, room, "cd /tmp && export DUET_TEST_VAR=shell").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "pwd; cat notes/hello.txt; echo \"[$DUET_TEST_VAR]\"; read -r x; echo \"read:$?\"; echo made > made.txt"}),
    )
    .await;
    let id = id_of(&p);
    let done = ended(&server, room, &id).await;
    assert_eq!(done["status"], "exited", "{done}");
    assert_eq!(
        logs(&server, room, &id).await["stdout"],
        "/workspace\nfrom the room\n[]\nread:1\n",
        "in /workspace, the room's files, no exports, stdin from /dev/null"
    );
    // What it wrote is the room's, as the shell and the files route see it.
    let seen = exec(&server, room, "cat /workspace/made.txt").await;
    assert_eq!(seen["stdout"], "made\n");
    let (status, body) = answer(common::apps::with_token(
        &server,
        http().get(server.url(&room_path(room, "/files/made.txt"))),
    ))
    .await;
    assert_eq!((status, body), (200, json!("made\n")));
    // It runs in the sandbox, as the commands' user.
    let inside = start(&server, room, json!({"cmd": "id -u; hostname"})).await;
    ended(&server, room, &id_of(&inside)).await;
    let shell = exec(&server, room, "id -u; hostname").await;
    assert_eq!(
        logs(&server, room, &id_of(&inside)).await["stdout"],
        shell["stdout"]
    );
}

#[tokio::test]
async fn cleanup_kills_the_processes_first_and_empties_the_lists() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-cleanup";
    let mut full = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let a = id_of(&start(&server, room, json!({"cmd": "sleep 300"})).await);
    let b = id_of(&start(&server, room, json!({"cmd": "python3 -m http.server 8000"})).await);
    common::apps::listening(&server, room, 8000).await;
    let (status, body) = server
        .post(&room_path(room, "/cleanup"), json!({"userId": "ada"}))
        .await;
    assert_eq!(status, 200, "{body}");
    for ws in [&mut full, &mut deltas] {
        let mut exits = Vec::new();
        loop {
            let frame = ws.next().await;
            if frame["type"] == "duet_cleanup" {
                break;
            }
            if frame["type"] == "duet_process" && frame["phase"] == "exit" {
                assert_eq!(frame["status"], "killed", "{frame}");
                exits.push(frame["processId"].as_str().unwrap().to_string());
            }
        }
        exits.sort();
        let mut want = vec![a.clone(), b.clone()];
        want.sort();
        assert_eq!(exits, want, "both exit frames before duet_cleanup");
        let state = ws.until_type("cf_agent_state").await;
        assert_eq!(state["state"]["processes"], json!([]));
        assert_eq!(state["state"]["ports"], json!([]));
    }
    let (_, list) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(list, json!({"processes": []}));
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn the_room_keeps_the_last_twenty_ended_processes_oldest_first() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-kept";
    let mut ids = Vec::new();
    for i in 0..22 {
        let p = start(&server, room, json!({"cmd": format!("echo {i}")})).await;
        ended(&server, room, &id_of(&p)).await;
        ids.push(id_of(&p));
    }
    let running = id_of(&start(&server, room, json!({"cmd": "sleep 300"})).await);
    let (_, list) = server.get(&room_path(room, "/processes")).await;
    let listed: Vec<String> = list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let mut want: Vec<String> = ids[2..].to_vec();
    want.push(running);
    assert_eq!(
        listed, want,
        "the last 20 ended and the one running, oldest first"
    );
    // The ones kept keep their logs; the ones dropped are unknown.
    assert_eq!(logs(&server, room, &ids[21]).await["stdout"], "21\n");
    let (status, _) = server
        .get(&room_path(room, &format!("/processes/{}", ids[0])))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_running_process_keeps_the_sandbox_and_the_room_from_idling() {
    if common::only_duet_serve("--sandbox-idle-secs and --room-idle-secs, duet serve flags") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["--sandbox-idle-secs", "1", "--room-idle-secs", "1"],
    )
    .await;
    let room = "proc-idle";
    exec(&server, room, "cd /tmp").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while :; do echo tick; sleep 0.2; done"}),
    )
    .await;
    let id = id_of(&p);
    // Well past both idle times, with no command and no socket.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let now = process(&server, room, &id).await;
    assert_eq!(now["status"], "running", "{now}");
    let shell = exec(&server, room, "pwd").await;
    assert_eq!(
        shell["stdout"], "/tmp\n",
        "the sandbox did not stop: the shell is where it was"
    );
    // Once it is stopped, the sandbox idles out as usual.
    delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    wait_for("the sandbox to stop", || async {
        // Each check is a command, which the idle time counts from.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let shell = exec(&server, room, "pwd").await;
        (shell["stdout"] == "/workspace\n").then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_rest_of_its_group_ends_when_its_first_process_does() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-group";
    // bash starts a child in the background and exits at once.
    let p = start(&server, room, json!({"cmd": "sleep 300 & echo started"})).await;
    let done = ended(&server, room, &id_of(&p)).await;
    assert_eq!(
        (done["status"].clone(), done["exitCode"].clone()),
        (json!("exited"), json!(0))
    );
    wait_for("the group's sleep to be gone", || async {
        let left = exec(&server, room, LIVING_SLEEPS).await;
        (left["stdout"] == "0\n").then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_follower_gets_every_byte_of_a_fast_process_in_frames_of_at_most_64_kib() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-fast";
    put_file(
        &server,
        room,
        "big.txt",
        "abcdefghij\n".repeat(100_000).into_bytes(),
    )
    .await;
    let mut ws = server.joined(room, "user=ada").await;
    // It waits for the follower before it prints 1.1 MB at once.
    let p = start(
        &server,
        room,
        json!({"cmd": "while [ ! -e go ]; do sleep 0.05; done; cat big.txt; echo end >&2"}),
    )
    .await;
    let id = id_of(&p);
    let (answer, before) =
        rpc_keeping(&mut ws, 1, "process_follow", json!([{"processId": id}])).await;
    assert_eq!(
        answer["result"],
        json!({"processId": id, "stdout": "", "stderr": ""})
    );
    exec(&server, room, "touch go").await;
    let (exit, after) = until_exit(&mut ws, &id).await;
    assert_eq!(exit["exitCode"], 0, "{exit}");
    let frames: Vec<Value> = before.into_iter().chain(after).collect();
    let (mut out, mut err) = (String::new(), String::new());
    for (stream, data) in output_of(&frames, &id) {
        assert!(data.len() <= 64 * 1024, "a frame of {} bytes", data.len());
        if stream == "stdout" {
            out.push_str(&data)
        } else {
            err.push_str(&data)
        }
    }
    assert!(
        out.len() == 1_100_000 && out == "abcdefghij\n".repeat(100_000),
        "{} bytes came",
        out.len()
    );
    assert_eq!(err, "end\n");
}

#[tokio::test]
async fn a_character_split_between_writes_arrives_whole() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-utf8";
    let mut ws = server.joined(room, "user=ada").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while [ ! -e go ]; do sleep 0.05; done; printf '\\xe2'; sleep 0.3; printf '\\x82\\xac\\n'"}),
    )
    .await;
    let id = id_of(&p);
    let answer = ws
        .rpc(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    exec(&server, room, "touch go").await;
    let (_, frames) = until_exit(&mut ws, &id).await;
    let out: String = output_of(&frames, &id)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(out, "€\n", "the frames");
    assert_eq!(logs(&server, room, &id).await["stdout"], "€\n", "the log");
}

#[tokio::test]
async fn following_twice_still_sends_each_output_once_and_an_ended_process_can_be_followed() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-follow-twice";
    let mut ws = server.joined(room, "user=ada").await;
    let n = 300;
    let p = start(
        &server,
        room,
        json!({"cmd": format!("while [ ! -e go ]; do sleep 0.05; done; {}", counter(n, "0.005"))}),
    )
    .await;
    let id = id_of(&p);
    let (first, mut frames) =
        rpc_keeping(&mut ws, 1, "process_follow", json!([{"processId": id}])).await;
    assert_eq!(first["success"], true, "{first}");
    let (second, before) =
        rpc_keeping(&mut ws, 2, "process_follow", json!([{"processId": id}])).await;
    assert_eq!(second["success"], true, "{second}");
    frames.extend(before);
    exec(&server, room, "touch go").await;
    let (_, after) = until_exit(&mut ws, &id).await;
    frames.extend(after);
    let out: String = output_of(&frames, &id)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(out, counted(n), "each line once");
    // Following one that ended answers its log; nothing follows.
    let late = ws
        .rpc(3, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(late["success"], true, "{late}");
    assert_eq!(
        late["result"],
        json!({"processId": id, "stdout": counted(n), "stderr": ""})
    );
}

#[tokio::test]
async fn after_a_restart_no_process_is_said_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_at(&listen, dir.path(), &[]).await;
    let room = "proc-restart";
    let p = start(&server, room, json!({"cmd": "sleep 300"})).await;
    let id = id_of(&p);
    server.stop().await;
    let server = Server::start_at(&listen, dir.path(), &[]).await;
    // The sandbox went away with the server: its process is not running,
    // whether the room still lists it (exitCode null) or not.
    let (status, list) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(status, 200, "{list}");
    for p in list["processes"].as_array().unwrap() {
        assert_ne!(p["status"], "running", "{p}");
        if p["id"] == id.as_str() {
            assert_eq!(p["exitCode"], Value::Null, "{p}");
        }
    }
    let mut ws = server.ws(room, "user=ada").await;
    let state = ws.until_type("cf_agent_state").await;
    for p in state["state"]["processes"].as_array().unwrap() {
        assert_ne!(p["status"], "running", "{p}");
    }
    assert_eq!(state["state"]["ports"], json!([]));
    let left = exec(&server, room, LIVING_SLEEPS).await;
    assert_eq!(left["stdout"], "0\n");
}
