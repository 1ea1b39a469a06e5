//! A writer's allowed calls and owner-only refusals, and a role changed
//! live: the next call is judged by it, and a demoted writer's terminal
//! input and window stop counting.

use super::*;

#[tokio::test]
async fn a_writer_may_act_but_not_clean_up_fork_invite_or_set_roles() {
    let (server, _dir) = with_token(&[]).await;
    let room = "writer";
    let f = furnish(&server, room).await;
    let (wes, _) = guest(&server, room, "writer", None).await;
    let ok = |what: &str, (status, body): &(u16, Value)| {
        assert_eq!(*status, 200, "{what}: {body}");
    };
    let ran = wes
        .post("/sandbox/exec", json!({"cmd":"echo by-the-writer"}))
        .await;
    ok("exec", &ran);
    assert_eq!(ran.1["result"]["stdout"], "by-the-writer\n");
    ok(
        "interrupt",
        &wes.post("/sandbox/interrupt", json!({})).await,
    );
    ok("cancel", &wes.post("/cancel", json!({})).await);
    // Asking the agent is allowed (this backend has no model: it says so).
    let asked = wes.post("/message", json!({"text":"hello agent"})).await;
    ok("ask the agent", &asked);
    assert_eq!(asked.1["reply"], Value::Null);
    ok(
        "PUT a file",
        &wes.put("/files/w.txt?userId=wes", b"w").await,
    );
    ok(
        "DELETE a file",
        &wes.delete("/files/w.txt?userId=wes").await,
    );
    let started = wes.post("/processes", json!({"cmd":"sleep 600"})).await;
    ok("start a process", &started);
    let pid = started.1["process"]["id"].as_str().unwrap().to_string();
    ok(
        "kill a process",
        &wes.delete(&format!("/processes/{pid}")).await,
    );
    let taken = wes.post("/checkpoints", json!({"name":"w1"})).await;
    ok("take a checkpoint", &taken);
    let cid = taken.1["checkpoint"]["id"].as_str().unwrap().to_string();
    ok(
        "restore a checkpoint",
        &wes.post(&format!("/checkpoints/{cid}/restore"), json!({}))
            .await,
    );
    ok(
        "delete a checkpoint",
        &wes.delete(&format!("/checkpoints/{cid}")).await,
    );
    let policy = wes.post("/policy", json!({"policy":"ask"})).await;
    assert_eq!(policy, (200, json!({"policy":"ask"})));
    // Over the socket: open, type into, resize and close the terminal.
    let mut writer = wes.joins("user=wes").await;
    let term = open_terminal(&mut writer.ws, 1, 80, 24).await;
    let term_id = term["termId"].clone();
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo W-$((2*21))\r")}))
        .await;
    terminal_until(&mut writer.ws, &term_id, "W-42").await;
    writer
        .ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":70,"rows":20}))
        .await;
    let resized = writer
        .ws
        .until(|f| f["type"] == "duet_term" && f["phase"] == "resize")
        .await;
    assert_eq!(
        (&resized["cols"], &resized["rows"]),
        (&json!(70), &json!(20))
    );
    let closed = writer
        .ws
        .rpc(2, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_eq!(closed["result"], json!({"closed": true}), "{closed}");
    let set = writer
        .ws
        .rpc(3, "set_policy", json!([{"policy":"auto"}]))
        .await;
    assert_eq!(set["result"], json!({"policy":"auto"}), "{set}");

    // What only an owner may do.
    let i = &f.invite;
    for (what, answer) in [
        ("cleanup", wes.post("/cleanup", json!({})).await),
        ("fork", wes.post("/fork", json!({"to":"writer-fork"})).await),
        (
            "create an invite",
            wes.post("/invites", json!({"role":"viewer"})).await,
        ),
        ("list the invites", wes.get("/invites").await),
        (
            "revoke an invite",
            wes.delete(&format!("/invites/{i}")).await,
        ),
        (
            "set a role",
            wes.post(&format!("/invites/{i}/role"), json!({"role":"owner"}))
                .await,
        ),
    ] {
        assert_forbidden(what, &answer, "writer");
    }
    for (n, (method, args)) in [
        ("cleanup", json!([])),
        ("fork", json!([{"to":"writer-fork"}])),
        ("invite_create", json!([{"role":"viewer"}])),
        ("invite_revoke", json!([{"inviteId": i}])),
        ("set_role", json!([{"inviteId": i, "role":"owner"}])),
    ]
    .iter()
    .enumerate()
    {
        let answer = writer.ws.rpc(10 + n as u64, method, args.clone()).await;
        assert_rpc_forbidden(method, &answer, "writer");
    }
    // The room kept its history and invites; the writer is still a writer.
    assert!(exists(&server, room, "kept.txt").await);
    assert_eq!(invites(&server, room).await.len(), 2);
    assert_eq!(
        server.get(&room_path("writer-fork", "/messages")).await.1["messages"],
        json!([])
    );
}

#[tokio::test]
async fn a_role_change_is_seen_live_and_judges_the_next_call() {
    let (server, _dir) = with_token(&[]).await;
    let room = "live-role";
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let id = inv["id"].as_str().unwrap().to_string();
    let mut owner = owner_joins(&server, room, "user=olga&_pk=pk-olga").await;
    let mut viewer = vera.joins("user=vera&_pk=pk-vera").await;
    let refused = viewer.ws.rpc(1, "exec", json!([{"cmd":"echo no"}])).await;
    assert_rpc_forbidden("exec", &refused, "viewer");

    let (answer, before) = owner
        .ws
        .rpc_keeping(2, "set_role", json!([{"inviteId": id, "role":"writer"}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let changed = &answer["result"]["invite"];
    assert_eq!(
        (&changed["id"], &changed["role"]),
        (&json!(id), &json!("writer"))
    );
    let you = viewer.ws.until_type("duet_you").await;
    assert_eq!(
        you,
        json!({"type":"duet_you","id":"pk-vera","name":"vera","role":"writer","inviteId":id})
    );
    let role_in = |f: &Value| {
        f["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["id"] == "pk-vera")
            .map(|u| u["role"].clone())
    };
    let now_writer =
        |f: &Value| f["type"] == "duet_presence" && role_in(f) == Some(json!("writer"));
    if !before.iter().any(now_writer) {
        owner.ws.until(now_writer).await;
    }
    let ran = viewer
        .ws
        .rpc(3, "exec", json!([{"cmd":"echo now-a-writer"}]))
        .await;
    assert_eq!(ran["success"], true, "{ran}");
    assert_eq!(ran["result"]["result"]["stdout"], "now-a-writer\n");
    assert_eq!(
        vera.post("/sandbox/exec", json!({"cmd":"true"})).await.0,
        200
    );

    // Back to viewer over HTTP: the next call is refused again.
    let body = set_role(&server, room, &id, "viewer").await;
    assert_eq!(body["invite"]["role"], "viewer");
    let you = viewer.ws.until_type("duet_you").await;
    assert_eq!(you["role"], "viewer");
    let refused = viewer.ws.rpc(4, "exec", json!([{"cmd":"echo no"}])).await;
    assert_rpc_forbidden("exec", &refused, "viewer");
    assert_forbidden(
        "exec over HTTP",
        &vera.post("/sandbox/exec", json!({"cmd":"true"})).await,
        "viewer",
    );
    assert_eq!(invites(&server, room).await[0]["role"], "viewer");

    // Bad role, unknown invite.
    let bad = owner
        .ws
        .rpc(5, "set_role", json!([{"inviteId": id, "role":"boss"}]))
        .await;
    assert_eq!(
        (&bad["status"], &bad["error"]),
        (&json!(400), &json!("invalid request")),
        "{bad}"
    );
    assert!(bad["details"]["role"].is_array(), "{bad}");
    let unknown = owner
        .ws
        .rpc(6, "set_role", json!([{"inviteId":"i9","role":"writer"}]))
        .await;
    assert_eq!(unknown["status"], 404, "{unknown}");
    assert_eq!(
        json!({"error": unknown["error"], "details": unknown["details"]}),
        unknown_invite("i9")
    );
    // Revoking over rpc closes the socket.
    let revoked = owner
        .ws
        .rpc(7, "invite_revoke", json!([{"inviteId": id}]))
        .await;
    assert_eq!(revoked["result"], json!({"revoked": true}), "{revoked}");
    assert_eq!(
        viewer.ws.closed().await,
        Some((4401, "the invite was revoked".to_string()))
    );
}

#[tokio::test]
async fn a_writer_demoted_while_attached_to_the_terminal_types_nothing_more() {
    let (server, _dir) = with_token(&[]).await;
    let room = "demoted-term";
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut writer = wes.joins("user=wes").await;
    let term = open_terminal(&mut writer.ws, 1, 100, 30).await;
    let term_id = term["termId"].clone();
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo W-$((2*21))\r")}))
        .await;
    terminal_until(&mut writer.ws, &term_id, "W-42").await;

    let id = inv["id"].as_str().unwrap();
    set_role(&server, room, id, "viewer").await;
    assert_eq!(writer.ws.until_type("duet_you").await["role"], "viewer");
    writer
        .ws
        .send(json!({"type":"duet_term_input","termId":term_id,"data":b64(b"touch demoted.txt; echo DEMOTED-TYPED\r")}))
        .await;
    let refused = writer.ws.until_type("duet_error").await;
    assert_eq!(refused, json!({"type":"duet_error","error":"forbidden"}));

    // The owner's keys still reach the shell; the demoted ones never did.
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let owned = open_terminal(&mut owner.ws, 2, 100, 30).await;
    assert_eq!(owned["termId"], term_id);
    owner
        .ws
        .send(
            json!({"type":"duet_term_input","termId":term_id,"data":b64(b"echo OWNER-$((6*7))\r")}),
        )
        .await;
    let screen = terminal_until(&mut owner.ws, &term_id, "OWNER-42").await;
    assert!(!screen.contains("DEMOTED-TYPED"), "{screen}");
    let watched = terminal_until(&mut writer.ws, &term_id, "OWNER-42").await;
    assert!(!watched.contains("DEMOTED-TYPED"), "{watched}");
    assert!(!exists(&server, room, "demoted.txt").await);
}

/// Reads `ws` until the terminal's `resize` to `cols`×`rows`.
async fn resized_to(ws: &mut Ws, term_id: &Value, cols: u16, rows: u16) {
    ws.until(|f| {
        f["type"] == "duet_term"
            && f["phase"] == "resize"
            && f["termId"] == *term_id
            && f["cols"] == cols
            && f["rows"] == rows
    })
    .await;
}

#[tokio::test]
async fn a_demoted_or_revoked_writer_s_window_stops_counting_for_the_terminal_s_size() {
    let (server, _dir) = with_token(&[]).await;
    let room = "demoted-size";
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let opened = open_terminal(&mut owner.ws, 1, 120, 40).await;
    let term_id = opened["termId"].clone();
    assert_eq!(
        (opened["cols"].clone(), opened["rows"].clone()),
        (json!(120), json!(40))
    );

    // A writer's smaller window narrows it; demoted, the writer watches on
    // (still attached) and the terminal is the owner's size again.
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut writer = wes.joins("user=wes").await;
    let attached = open_terminal(&mut writer.ws, 1, 60, 20).await;
    assert_eq!(
        (attached["cols"].clone(), attached["rows"].clone()),
        (json!(60), json!(20))
    );
    resized_to(&mut owner.ws, &term_id, 60, 20).await;
    let id = inv["id"].as_str().unwrap();
    set_role(&server, room, id, "viewer").await;
    resized_to(&mut owner.ws, &term_id, 120, 40).await;
    resized_to(&mut writer.ws, &term_id, 120, 40).await;

    // A revoked writer's window stops counting too.
    let (rita, inv) = guest(&server, room, "writer", None).await;
    let mut revoked = rita.joins("user=rita").await;
    open_terminal(&mut revoked.ws, 1, 50, 15).await;
    resized_to(&mut owner.ws, &term_id, 50, 15).await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200, "{body}");
    resized_to(&mut owner.ws, &term_id, 120, 40).await;
}
