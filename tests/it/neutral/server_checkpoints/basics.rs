//! Checkpoints made, listed, named and deleted over HTTP and rpc, in the
//! room's state, refused in the protocol's shapes (bad and taken names,
//! unknown ids, a full disk), deleted by a cleanup and kept across a
//! restart.

use super::*;

#[tokio::test]
async fn checkpoints_are_listed_oldest_first_named_and_deleted() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-list";
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
    put_file(&server, room, "f.txt", b"one".to_vec()).await;
    let first = create(&server, room, json!({"name": "before-refactor"})).await;
    assert_eq!(first["name"], "before-refactor");
    assert_eq!(first["by"], "anonymous", "no userId: {first}");
    let second = create(&server, room, json!({})).await;
    let third = create(
        &server,
        room,
        json!({"name": "v1.2_final-x", "userId": "bob"}),
    )
    .await;
    for c in [&first, &second, &third] {
        check_shape(c);
    }
    assert!(number(&id_of(&first)) < number(&id_of(&second)));
    assert!(number(&id_of(&second)) < number(&id_of(&third)));
    assert_eq!(
        second["name"],
        format!("checkpoint-{}", number(&id_of(&second))),
        "{second}"
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone(), second.clone(), third.clone()]
    );
    // Deleting one: answered, unlisted, unknown afterwards.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&second)));
    assert_eq!(
        delete(&server, &path).await,
        (200, json!({"deleted": true}))
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone(), third.clone()]
    );
    assert_eq!(
        delete(&server, &path).await,
        (404, unknown(&id_of(&second)))
    );
    assert_eq!(
        restore(&server, room, &id_of(&second), json!({})).await,
        (404, unknown(&id_of(&second)))
    );
    // Its name is free again; its id is never reused.
    let again = create(&server, room, json!({"name": second["name"]})).await;
    assert!(number(&id_of(&again)) > number(&id_of(&third)), "{again}");
    // Each took the workspace as it was.
    assert_eq!(first["size"], 3);
    let records = records(&messages(&server, room).await, "checkpoint");
    let events: Vec<Value> = records.iter().map(|r| r["event"].clone()).collect();
    assert_eq!(
        events,
        vec![
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&first),"name":"before-refactor"}),
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&second),"name":second["name"]}),
            json!({"kind":"checkpoint","by":"bob","checkpointId":id_of(&third),"name":"v1.2_final-x"}),
            json!({"kind":"checkpoint","by":"anonymous","checkpointId":id_of(&again),"name":second["name"]}),
        ]
    );
    assert!(records[2]["text"].as_str().unwrap().contains("bob"));
    assert_eq!(records[2]["userId"], "bob");
}

#[tokio::test]
async fn bad_names_taken_names_and_unknown_ids_are_answered_in_the_protocol_s_shapes() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-errors";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let path = room_path(room, "/checkpoints");
    for name in [
        json!(""),
        json!("-a"),
        json!(".hidden"),
        json!("a b"),
        json!("a/b"),
        json!("é"),
        json!("x".repeat(65)),
        json!(42),
    ] {
        let (status, body) = server.post(&path, json!({ "name": name })).await;
        assert_eq!(status, 400, "{name}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        let fields: Vec<&String> = body["details"].as_object().unwrap().keys().collect();
        assert_eq!(fields, ["name"], "{name}: {body}");
        assert!(body["details"]["name"][0].is_string(), "{body}");
    }
    let (status, body) = server.post(&path, json!({"userId": "x".repeat(33)})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["userId"][0].is_string(), "{body}");
    let (status, body) = server
        .post("/api/rooms/bad!room/checkpoints", json!({}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["room"][0].is_string(), "{body}");
    // None of those took one.
    assert_eq!(list(&server, room).await, Vec::<Value>::new());

    let taken = create(&server, room, json!({"name": "x".repeat(64)})).await;
    let (status, body) = server.post(&path, json!({"name": "x".repeat(64)})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "a checkpoint has that name");
    let fields: Vec<&String> = body["details"].as_object().unwrap().keys().collect();
    assert_eq!(fields, ["name"], "{body}");
    assert!(body["details"]["name"][0].is_string(), "{body}");
    assert_eq!(taken["name"], "x".repeat(64));
    // A default name is taken like any other.
    let default = create(&server, room, json!({})).await;
    let (status, body) = server.post(&path, json!({"name": default["name"]})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "a checkpoint has that name");
    assert_eq!(list(&server, room).await, vec![taken.clone(), default]);

    // Unknown ids: 404 with the id, on every route.
    for (status, body) in [
        restore(&server, room, "c99", json!({})).await,
        delete(&server, &room_path(room, "/checkpoints/c99")).await,
        fork(
            &server,
            room,
            json!({"to": "cp-errors-fork", "checkpointId": "c99"}),
        )
        .await,
    ] {
        assert_eq!((status, body), (404, unknown("c99")));
    }
    // The same over rpc.
    let mut ws = server.joined(room, "user=ada").await;
    for (i, (method, args)) in [
        ("checkpoint_restore", json!([{"checkpointId": "c99"}])),
        ("checkpoint_delete", json!([{"checkpointId": "c99"}])),
        (
            "fork",
            json!([{"to": "cp-errors-fork", "checkpointId": "c99"}]),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let got = ws.rpc(i as u64 + 1, method, args).await;
        assert_eq!(got["success"], false, "{method}: {got}");
        assert_eq!(got["status"], 404, "{method}: {got}");
        assert_eq!(got["error"], "no such checkpoint", "{method}: {got}");
        assert_eq!(got["details"], unknown("c99")["details"], "{method}: {got}");
    }
    let got = ws
        .rpc(10, "checkpoint_create", json!([{"name": "a b"}]))
        .await;
    assert_eq!(
        (got["success"].clone(), got["status"].clone()),
        (json!(false), json!(400)),
        "{got}"
    );
    assert!(got["details"]["name"][0].is_string(), "{got}");
    let got = ws
        .rpc(11, "checkpoint_create", json!([{"name": "x".repeat(64)}]))
        .await;
    assert_eq!(got["status"], 409, "{got}");
    assert_eq!(got["error"], "a checkpoint has that name");
    assert!(got["details"]["name"][0].is_string(), "{got}");
    // The fork that failed made no room.
    assert_eq!(
        messages(&server, "cp-errors-fork").await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn over_rpc_the_answers_are_the_http_ones_and_the_socket_s_user_is_by() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-rpc";
    put_file(&server, room, "f.txt", b"first".to_vec()).await;
    let mut ws = server.joined(room, "user=bob").await;
    let got = ws
        .rpc(1, "checkpoint_create", json!([{"name": "mine"}]))
        .await;
    assert_eq!(got["success"], true, "{got}");
    let c = got["result"]["checkpoint"].clone();
    check_shape(&c);
    assert_eq!(
        (c["name"].clone(), c["by"].clone()),
        (json!("mine"), json!("bob"))
    );
    let got = ws.rpc(2, "checkpoint_create", json!([{}])).await;
    let other = got["result"]["checkpoint"].clone();
    assert_eq!(
        other["name"],
        format!("checkpoint-{}", number(&id_of(&other)))
    );
    assert_eq!(list(&server, room).await, vec![c.clone(), other.clone()]);

    put_file(&server, room, "f.txt", b"second".to_vec()).await;
    let got = ws
        .rpc(
            3,
            "checkpoint_restore",
            json!([{"checkpointId": id_of(&c)}]),
        )
        .await;
    assert_eq!(got["success"], true, "{got}");
    assert_eq!(got["result"], json!({"restored": true}));
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("first"));
    let got = ws
        .rpc(
            4,
            "checkpoint_delete",
            json!([{"checkpointId": id_of(&other)}]),
        )
        .await;
    assert_eq!(got["result"], json!({"deleted": true}), "{got}");
    assert_eq!(list(&server, room).await, vec![c.clone()]);
    let got = ws.rpc(5, "fork", json!([{"to": "cp-rpc-b"}])).await;
    assert_eq!(got["result"], json!({"roomId": "cp-rpc-b"}), "{got}");
    let stored = messages(&server, room).await;
    assert_eq!(
        records(&stored, "checkpoint")[0]["event"],
        json!({"kind":"checkpoint","by":"bob","checkpointId":id_of(&c),"name":"mine"})
    );
    assert_eq!(
        the_record(&server, room, "restore").await["event"],
        json!({"kind":"restore","by":"bob","checkpointId":id_of(&c),"name":"mine"})
    );
    assert_eq!(
        the_record(&server, room, "fork").await["event"],
        json!({"kind":"fork","by":"bob","from":room,"to":"cp-rpc-b"})
    );
}

#[tokio::test]
async fn the_state_lists_the_checkpoints_in_full_states_and_patches() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-state";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let mut full = server.ws(room, "user=bob").await;
    let state = full.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], json!([]), "{state}");
    full.until_type("duet_presence").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let c = create(&server, room, json!({"name": "one", "userId": "ada"})).await;
    let listed = |c: &Value| json!([c]);
    let last_is_the_record = |state: &Value| {
        state["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["event"]["kind"] == "checkpoint")
    };
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["checkpoints"] == listed(&c)
                && last_is_the_record(&f["state"])
        })
        .await;
    let last = state["state"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    // A patch and the record's message, in either order.
    let (patch, record) = deltas
        .until_both(
            |f| f["type"] == "duet_state" && f["patch"].get("checkpoints").is_some(),
            record_frame("checkpoint"),
        )
        .await;
    assert_eq!(patch["patch"]["checkpoints"], listed(&c), "{patch}");
    assert_eq!(record["message"], last);
    // A socket that joins now reads it on connect.
    let mut late = server.ws(room, "user=cy").await;
    let state = late.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], listed(&c));
    // Deleting it: both kinds of socket see the list empty.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&c)));
    assert_eq!(delete(&server, &path).await.0, 200);
    full.until(|f| f["type"] == "cf_agent_state" && f["state"]["checkpoints"] == json!([]))
        .await;
    let patch = deltas
        .until(|f| f["type"] == "duet_state" && f["patch"].get("checkpoints").is_some())
        .await;
    assert_eq!(patch["patch"]["checkpoints"], json!([]), "{patch}");
}

#[tokio::test]
async fn a_checkpoint_that_does_not_fit_the_disk_is_a_507_and_deleting_one_frees_its_room() {
    // `--disk-mb` holds the workspace and its checkpoints together (the
    // worker's disk budget is the same flag of worker/dev.sh).
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--disk-mb", "8"]).await;
    let room = "cp-quota";
    let mib = 1024 * 1024;
    put_file(&server, room, "big.bin", vec![7u8; 3 * mib]).await;
    let first = create(&server, room, json!({"name": "first"})).await;
    assert_eq!(first["size"], 3 * mib);
    // 3 MiB of workspace and 3 of checkpoint: the next 3 do not fit in 8.
    let (status, body) = server
        .post(&room_path(room, "/checkpoints"), json!({"name": "second"}))
        .await;
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"], "the room's disk is full", "{body}");
    let said = body["details"]["checkpoint"][0]
        .as_str()
        .expect("details.checkpoint");
    let numbers: Vec<u64> = said
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        said.starts_with("it needs ") && said.contains(" bytes; ") && said.ends_with(" are free"),
        "{said}"
    );
    assert!(
        numbers.len() == 2 && numbers[0] >= 3 * mib as u64 && numbers[1] < numbers[0],
        "{said}"
    );
    assert_eq!(
        list(&server, room).await,
        vec![first.clone()],
        "nothing listed"
    );
    assert_eq!(
        records(&messages(&server, room).await, "checkpoint").len(),
        1
    );
    // The workspace still works.
    assert_eq!(sh(&server, room, "echo ok").await, "ok\n");
    // Deleting the first frees its room.
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&first)));
    assert_eq!(delete(&server, &path).await.0, 200);
    let second = create(&server, room, json!({"name": "second"})).await;
    assert_eq!(list(&server, room).await, vec![second]);
}

#[tokio::test]
async fn cleanup_deletes_the_checkpoints() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-cleanup";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let c = create(&server, room, json!({})).await;
    let mut ws = server.joined(room, "user=bob").await;
    let (status, body) = server
        .post(&room_path(room, "/cleanup"), json!({"userId": "bob"}))
        .await;
    assert_eq!(status, 200, "{body}");
    ws.until_type("duet_cleanup").await;
    let state = ws.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["checkpoints"], json!([]), "{state}");
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
    assert_eq!(
        restore(&server, room, &id_of(&c), json!({})).await,
        (404, unknown(&id_of(&c)))
    );
    assert_eq!(read(&server, room, "f.txt").await, None);
}

#[tokio::test]
async fn checkpoints_outlive_a_restart_and_their_ids_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_at(&listen, dir.path(), &[]).await;
    let room = "cp-restart";
    put_file(&server, room, "f.txt", b"saved".to_vec()).await;
    let kept = create(&server, room, json!({"name": "kept"})).await;
    let gone = create(&server, room, json!({})).await;
    let path = room_path(room, &format!("/checkpoints/{}", id_of(&gone)));
    assert_eq!(delete(&server, &path).await.0, 200);
    server.stop().await;

    let server = Server::start_at(&listen, dir.path(), &[]).await;
    assert_eq!(list(&server, room).await, vec![kept.clone()]);
    put_file(&server, room, "f.txt", b"changed".to_vec()).await;
    restored(&server, room, &id_of(&kept)).await;
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("saved"));
    let next = create(&server, room, json!({})).await;
    assert!(
        number(&id_of(&next)) > number(&id_of(&gone)),
        "{next} after {gone}"
    );
}
