//! A process's life: started over HTTP and rpc, its names, its exit, the
//! kill (TERM, then KILL), the cap on how many run, bad requests, and where
//! and how it runs.

use super::*;

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
    let frames = full
        .until_both(process_frame("start", &id), |f| {
            f["type"] == "cf_agent_state" && with_it(&f["state"]["processes"])
        })
        .await;
    assert_eq!(
        frames.0,
        json!({"type":"duet_process","phase":"start","process":p})
    );
    assert_eq!(frames.1["state"]["processes"], json!([p]));
    let frames = deltas
        .until_both(process_frame("start", &id), |f| {
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
