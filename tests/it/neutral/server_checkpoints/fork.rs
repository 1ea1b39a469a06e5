//! A fork: from now and from a checkpoint, into separate rooms; refused
//! into a room that exists or a bad room id.

use super::*;

#[tokio::test]
async fn a_fork_from_now_and_from_a_checkpoint_starts_separate_rooms() {
    let (server, _dir) = Server::fresh().await;
    let (a, b, c) = ("cp-fork-a", "cp-fork-b", "cp-fork-c");
    put_file(&server, a, "f.txt", b"v1".to_vec()).await;
    let v1 = create(&server, a, json!({"name": "v1"})).await;
    put_file(&server, a, "f.txt", b"v2".to_vec()).await;
    put_file(&server, a, "sub/g.txt", b"g".to_vec()).await;
    start(&server, a, json!({"cmd": "sleep 300"})).await;

    let got = fork(&server, a, json!({"to": b, "userId": "ada"})).await;
    assert_eq!(got, (200, json!({"roomId": b})));
    let got = fork(&server, a, json!({"to": c, "checkpointId": id_of(&v1)})).await;
    assert_eq!(got, (200, json!({"roomId": c})));
    assert_eq!(read(&server, b, "f.txt").await.as_deref(), Some("v2"));
    assert_eq!(read(&server, b, "sub/g.txt").await.as_deref(), Some("g"));
    assert_eq!(read(&server, c, "f.txt").await.as_deref(), Some("v1"));
    assert_eq!(read(&server, c, "sub/g.txt").await, None);

    // The new rooms: one fork record each, no checkpoints, no processes.
    let from_now = json!({"kind":"fork","by":"ada","from":a,"to":b});
    let from_v1 = json!({"kind":"fork","by":"anonymous","from":a,"to":c,"checkpointId":id_of(&v1)});
    for (room, event) in [(b, &from_now), (c, &from_v1)] {
        let history = messages(&server, room).await;
        assert_eq!(history.len(), 1, "{room}: {history:?}");
        assert_eq!(history[0]["role"], "system");
        assert_eq!(&history[0]["event"], event, "{room}");
        let mut ws = server.ws(room, "user=cy").await;
        let state = ws.until_type("cf_agent_state").await;
        let state = &state["state"];
        assert_eq!(state["messages"], json!(history), "{room}");
        assert_eq!(state["checkpoints"], json!([]), "{room}");
        assert_eq!(state["processes"], json!([]), "{room}");
        assert_eq!(state["execs"], json!([]), "{room}");
        assert_eq!(list(&server, room).await, Vec::<Value>::new());
    }
    // The room it came from holds both records.
    let events: Vec<Value> = records(&messages(&server, a).await, "fork")
        .iter()
        .map(|r| r["event"].clone())
        .collect();
    assert_eq!(events, vec![from_now.clone(), from_v1]);
    assert!(
        records(&messages(&server, b).await, "fork")[0]["text"]
            .as_str()
            .unwrap()
            .contains("ada")
    );

    // Separate: a write in one is not in the other, either way, through
    // the files route and the shells.
    put_file(&server, b, "f.txt", b"b's".to_vec()).await;
    assert_eq!(read(&server, a, "f.txt").await.as_deref(), Some("v2"));
    exec(&server, a, "echo a > only-a.txt; echo a2 > sub/g.txt").await;
    assert_eq!(read(&server, b, "only-a.txt").await, None);
    assert_eq!(read(&server, b, "sub/g.txt").await.as_deref(), Some("g"));
    assert_eq!(
        sh(&server, b, "cat f.txt; echo; ls").await,
        "b's\nf.txt\nsub\n"
    );
    assert_eq!(read(&server, c, "f.txt").await.as_deref(), Some("v1"));
    // A checkpoint of the new room is its own.
    create(&server, b, json!({"name": "b-only"})).await;
    assert_eq!(list(&server, a).await, vec![v1.clone()]);
    // The checkpoint a room was forked from still restores in its own room.
    restored(&server, a, &id_of(&v1)).await;
    assert_eq!(read(&server, a, "f.txt").await.as_deref(), Some("v1"));
    assert_eq!(read(&server, b, "f.txt").await.as_deref(), Some("b's"));
}

#[tokio::test]
async fn a_fork_into_a_room_that_exists_or_a_bad_room_id_is_refused() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-fork-err";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    // A room exists once something is stored in it.
    let (status, body) = server
        .post(
            "/api/rooms/cp-fork-taken/message",
            json!({"text": "here", "to": "room"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for to in [room, "cp-fork-taken"] {
        assert_eq!(
            fork(&server, room, json!({ "to": to })).await,
            (409, exists(to))
        );
    }
    let mut ws = server.joined(room, "user=ada").await;
    let got = ws.rpc(1, "fork", json!([{"to": room}])).await;
    assert_eq!(got["success"], false, "{got}");
    assert_eq!(got["status"], 409);
    assert_eq!(got["error"], "the room exists");
    assert_eq!(got["details"], exists(room)["details"]);
    // A room someone joined exists too.
    let _joined = server.joined("cp-fork-joined", "user=bob").await;
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-joined"})).await,
        (409, exists("cp-fork-joined"))
    );
    // A room made by a fork exists.
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-new"})).await.0,
        200
    );
    assert_eq!(
        fork(&server, room, json!({"to": "cp-fork-new"})).await,
        (409, exists("cp-fork-new"))
    );
    // `to` missing or not a room id.
    for body in [
        json!({}),
        json!({"to": ""}),
        json!({"to": "bad room"}),
        json!({"to": "-x"}),
        json!({"to": "x-"}),
        json!({"to": "x".repeat(64)}),
        json!({"to": 7}),
    ] {
        let (status, got) = fork(&server, room, body.clone()).await;
        assert_eq!(status, 400, "{body}: {got}");
        assert_eq!(got["error"], "invalid request", "{got}");
        assert!(got["details"]["to"][0].is_string(), "{body}: {got}");
    }
    let got = ws.rpc(2, "fork", json!([{"to": "no/pe"}])).await;
    assert_eq!(got["status"], 400, "{got}");
    assert!(got["details"]["to"][0].is_string(), "{got}");
    // Only the one good fork is recorded.
    assert_eq!(records(&messages(&server, room).await, "fork").len(), 1);
}
