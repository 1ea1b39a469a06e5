//! A viewer: every forbidden call (HTTP and rpc) is a 403 and does nothing;
//! what a viewer may do (read, chat, follow, watch).

use super::*;

#[tokio::test]
async fn a_viewer_s_every_forbidden_call_over_http_is_a_403_and_does_nothing() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-http";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let invites_before = invites(&server, room).await.len();
    let (p, c, i) = (&f.process, &f.checkpoint, &f.invite);
    let calls: Vec<(&str, (u16, Value))> = vec![
        (
            "ask the agent",
            vera.post("/message", json!({"text":"agent, please rm -rf /"}))
                .await,
        ),
        (
            "ask the agent (to: agent)",
            vera.post("/message", json!({"text":"agent, please","to":"agent"}))
                .await,
        ),
        (
            "exec",
            vera.post("/sandbox/exec", json!({"cmd":"touch intruder.txt"}))
                .await,
        ),
        (
            "interrupt",
            vera.post("/sandbox/interrupt", json!({})).await,
        ),
        ("cancel", vera.post("/cancel", json!({})).await),
        (
            "PUT a file",
            vera.put("/files/intruder.txt?userId=vera", b"x").await,
        ),
        (
            "DELETE a file",
            vera.delete("/files/kept.txt?userId=vera").await,
        ),
        (
            "start a process",
            vera.post("/processes", json!({"cmd":"touch intruder.txt"}))
                .await,
        ),
        (
            "kill a process",
            vera.delete(&format!("/processes/{p}")).await,
        ),
        (
            "POST to a preview",
            common::answer(
                vera.request(reqwest::Method::POST, "/ports/8000/")
                    .body("x"),
            )
            .await,
        ),
        (
            "DELETE on a preview",
            common::answer(vera.request(reqwest::Method::DELETE, "/ports/8000/x")).await,
        ),
        (
            "take a checkpoint",
            vera.post("/checkpoints", json!({})).await,
        ),
        (
            "restore a checkpoint",
            vera.post(&format!("/checkpoints/{c}/restore"), json!({}))
                .await,
        ),
        (
            "delete a checkpoint",
            vera.delete(&format!("/checkpoints/{c}")).await,
        ),
        (
            "fork",
            vera.post("/fork", json!({"to":"viewer-http-fork"})).await,
        ),
        ("cleanup", vera.post("/cleanup", json!({})).await),
        (
            "set the policy",
            vera.post("/policy", json!({"policy":"off"})).await,
        ),
        (
            "approve",
            vera.post("/approve", json!({"approvalId":"a1","approved":true}))
                .await,
        ),
        (
            "create an invite",
            vera.post("/invites", json!({"role":"owner"})).await,
        ),
        ("list the invites", vera.get("/invites").await),
        (
            "revoke an invite",
            vera.delete(&format!("/invites/{i}")).await,
        ),
        (
            "set a role",
            vera.post(&format!("/invites/{i}/role"), json!({"role":"viewer"}))
                .await,
        ),
    ];
    for (what, answer) in &calls {
        assert_forbidden(what, answer, "viewer");
    }
    // A WebSocket to a preview, and a tunnel, are refused before they upgrade.
    assert_eq!(vera.upgrade_refused("/ports/8000/").await, 403);
    assert_eq!(vera.upgrade_refused("/tunnel/8000").await, 403);
    // The check comes after the body's own problems.
    let (status, body) = vera.post("/sandbox/exec", json!({"cmd": 7})).await;
    assert_eq!(status, 400, "{body}");
    still_furnished(&server, room, &f, invites_before).await;
    let cleaned = messages(&server, room)
        .await
        .iter()
        .any(|m| m["event"]["kind"] == "cleanup");
    assert!(!cleaned, "the room was not cleaned up");
    let (_, state) = server
        .get(&room_path("viewer-http-fork", "/messages"))
        .await;
    assert_eq!(state["messages"], json!([]), "no fork was made");
}

#[tokio::test]
async fn a_viewer_s_every_forbidden_rpc_is_a_403_and_terminal_frames_are_refused() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-rpc";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let invites_before = invites(&server, room).await.len();
    let mut viewer = vera.joins("user=vera").await;
    let (p, c, i) = (&f.process, &f.checkpoint, &f.invite);
    let calls = [
        ("message", json!([{"text":"agent, please rm -rf /"}])),
        ("exec", json!([{"cmd":"touch intruder.txt"}])),
        ("interrupt", json!([{}])),
        ("cancel", json!([{}])),
        ("cleanup", json!([])),
        ("process_start", json!([{"cmd":"touch intruder.txt"}])),
        ("process_kill", json!([{"processId": p}])),
        ("term_open", json!([{"cols":80,"rows":24}])),
        ("checkpoint_create", json!([{}])),
        ("checkpoint_restore", json!([{"checkpointId": c}])),
        ("checkpoint_delete", json!([{"checkpointId": c}])),
        ("fork", json!([{"to":"viewer-rpc-fork"}])),
        ("set_policy", json!([{"policy":"off"}])),
        ("approve", json!([{"approvalId":"a1","approved":true}])),
        ("set_role", json!([{"inviteId": i, "role":"viewer"}])),
        ("invite_create", json!([{"role":"owner"}])),
        ("invite_revoke", json!([{"inviteId": i}])),
        ("set_model", json!([{"model":"x"}])),
    ];
    for (n, (method, args)) in calls.iter().enumerate() {
        let answer = viewer.ws.rpc(100 + n as u64, method, args.clone()).await;
        assert_rpc_forbidden(method, &answer, "viewer");
    }
    // No terminal was opened by the viewer's term_open.
    let state = owner_joins(&server, room, "user=olga").await;
    assert_eq!(state.state["terminal"], Value::Null);

    // Once the owner runs one, the viewer may watch it, but not type into
    // it, size it or close it.
    let mut owner = state.ws;
    let term = open_terminal(&mut owner, 1, 100, 30).await;
    let term_id = term["termId"].clone();
    let watched = open_terminal(&mut viewer.ws, 2, 40, 10).await;
    assert_eq!(watched, json!({"termId": term_id, "cols": 100, "rows": 30}));
    viewer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"touch intruder.txt; echo VIEWER-TYPED\r")}))
        .await;
    let refused = viewer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));
    viewer
        .ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":20,"rows":5}))
        .await;
    let refused = viewer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));
    let close = viewer
        .ws
        .rpc(3, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_rpc_forbidden("term_close", &close, "viewer");
    // The owner's keys reach the shell; the viewer's never did.
    owner
        .send(
            json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo OWNER-$((6*7))\r")}),
        )
        .await;
    let screen = terminal_until(&mut owner, &term_id, "OWNER-42").await;
    assert!(!screen.contains("VIEWER-TYPED"), "{screen}");
    let viewer_saw = terminal_until(&mut viewer.ws, &term_id, "OWNER-42").await;
    assert!(!viewer_saw.contains("VIEWER-TYPED"), "{viewer_saw}");
    let me = owner_joins(&server, room, "user=check").await;
    assert_eq!(
        me.state["terminal"],
        json!({"termId": term_id, "cols": 100, "rows": 30}),
        "the viewer's size never counted and the terminal runs"
    );
    still_furnished(&server, room, &f, invites_before).await;
}

#[tokio::test]
async fn a_viewer_reads_everything_chats_follows_and_watches() {
    let (server, _dir) = with_token(&[]).await;
    let room = "viewer-may";
    let f = furnish(&server, room).await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let mut viewer = vera.joins("user=vera").await;
    // Reads.
    for rest in [
        "/messages".to_string(),
        "/files/kept.txt".to_string(),
        "/files/".to_string(),
        "/processes".to_string(),
        format!("/processes/{}", f.process),
        format!("/processes/{}/logs", f.process),
        "/ports".to_string(),
        "/checkpoints".to_string(),
    ] {
        let (status, body) = vera.get(&rest).await;
        assert_eq!(status, 200, "GET {rest}: {body}");
    }
    assert_eq!(vera.get("/files/kept.txt").await.1, "the owner's");
    // A preview's GET is no refusal (nothing listens there: 502).
    let (status, body) = vera.get("/ports/8000/").await;
    assert_eq!(status, 502, "{body}");
    // Chat to the room, over HTTP and rpc; typing; rename.
    let (status, body) = vera
        .post(
            "/message",
            json!({"text":"hello room","to":"room","userId":"vera"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null);
    assert!(body.get("error").is_none(), "{body}");
    let said = viewer
        .ws
        .rpc(1, "message", json!([{"text":"and again","to":"room"}]))
        .await;
    assert_eq!(said["success"], true, "{said}");
    let texts: Vec<Value> = messages(&server, room)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| json!([m["userId"], m["text"], m["to"]]))
        .collect();
    assert_eq!(
        texts,
        [
            json!(["vera", "hello room", "room"]),
            json!(["vera", "and again", "room"])
        ]
    );
    viewer.ws.send(json!({"type":"duet_typing"})).await;
    let typing = owner.ws.until_type("duet_typing").await;
    assert_eq!(typing["name"], "vera");
    let renamed = viewer.ws.rpc(2, "rename", json!([{"name":"vee"}])).await;
    assert_eq!(renamed["result"], json!({"name":"vee"}), "{renamed}");
    // Follow a process's output, and stop.
    let follow = viewer
        .ws
        .rpc(3, "process_follow", json!([{"processId": f.process}]))
        .await;
    assert_eq!(follow["success"], true, "{follow}");
    assert_eq!(follow["result"]["processId"], f.process.as_str());
    let unfollow = viewer
        .ws
        .rpc(4, "process_unfollow", json!([{"processId": f.process}]))
        .await;
    assert_eq!(unfollow["result"], json!({"unfollowed": true}));
    // Watch a running terminal, its size not counted; then detach.
    let term = open_terminal(&mut owner.ws, 5, 90, 25).await;
    let term_id = term["termId"].clone();
    let watched = open_terminal(&mut viewer.ws, 6, 30, 8).await;
    assert_eq!(watched, json!({"termId": term_id, "cols": 90, "rows": 25}));
    let detached = viewer
        .ws
        .rpc(7, "term_detach", json!([{"termId": term_id}]))
        .await;
    assert_eq!(detached["result"], json!({"detached": true}), "{detached}");
    // The viewer is sent everything: a command's stream.
    exec(&server, room, "echo for-everyone").await;
    let out = viewer
        .ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    assert_eq!(out["data"], "for-everyone\n");
}
