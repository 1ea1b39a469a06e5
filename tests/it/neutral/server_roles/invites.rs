//! Invites: their shape, token and link, bad bodies, revocation and expiry
//! (401, sockets closed with 4401), the room an invite is for, `duet_you` on
//! connect, the tokenless server, names an invite fixes, and invites kept
//! across a restart.

use super::*;

#[tokio::test]
async fn an_invite_has_the_contract_s_shape_and_its_link_joins_the_room() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-shape";
    let before = now_ms();
    let created = invite(
        &server,
        room,
        json!({"role":"viewer","name":"vera","userId":"olga"}),
    )
    .await;
    let after = now_ms();
    let mut keys: Vec<&String> = created.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["invite", "token", "url"], "{created}");
    let inv = &created["invite"];
    assert_eq!(inv["id"], "i1", "{inv}");
    assert_eq!(inv["role"], "viewer");
    assert_eq!(inv["name"], "vera");
    assert_eq!(inv["by"], "olga");
    let created_at = inv["createdAt"].as_u64().unwrap();
    assert!(
        (before.saturating_sub(2000)..=after + 2000).contains(&created_at),
        "{inv}"
    );
    // The default lifetime is a day.
    let expires_at = inv["expiresAt"].as_u64().unwrap();
    assert!(
        expires_at.abs_diff(created_at + 86_400_000) <= 2000,
        "{inv}"
    );
    // The token: `duet_inv_` and 40 hex digits, unlike the server's.
    let token = created["token"].as_str().unwrap();
    let hex = token.strip_prefix("duet_inv_").expect(token);
    assert!(
        hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    // The link is `duet join`'s: this backend, this room, this token.
    let url = created["url"].as_str().unwrap();
    assert_eq!(url, format!("http://{token}@{}/{room}", server.addr));
    let link = duet::client::join::parse_link(url).unwrap();
    assert_eq!(link.server, format!("http://{}", server.addr));
    assert_eq!(link.room, room);
    assert_eq!(link.token.as_deref(), Some(token));
    let joined = Guest {
        addr: server.addr.clone(),
        room: link.room.clone(),
        token: link.token.clone().unwrap(),
    };
    let (status, body) = joined.get("/messages").await;
    assert_eq!(status, 200, "{body}");

    // A second one: its own id and token; `expiresIn` is honoured.
    let second = invite(&server, room, json!({"role":"writer","expiresIn":60})).await;
    let inv2 = &second["invite"];
    assert_eq!(inv2["id"], "i2");
    assert!(inv2.get("name").is_none(), "{inv2}");
    assert_ne!(second["token"], created["token"]);
    let made = inv2["createdAt"].as_u64().unwrap();
    assert!(
        inv2["expiresAt"].as_u64().unwrap().abs_diff(made + 60_000) <= 2000,
        "{inv2}"
    );

    // The list: oldest first, the same invites, never a token.
    let listed = invites(&server, room).await;
    assert_eq!(listed, vec![inv.clone(), inv2.clone()]);
    let text = serde_json::to_string(&listed).unwrap();
    assert!(
        !text.contains(token) && !text.contains("duet_inv_"),
        "{text}"
    );
    // Another room has its own (none).
    assert_eq!(invites(&server, "inv-other").await, Vec::<Value>::new());
}

#[tokio::test]
async fn bad_invite_bodies_are_400s_with_the_field_named() {
    let (server, _dir) = with_token(&[]).await;
    let path = room_path("inv-bad", "/invites");
    for (body, field) in [
        (json!({}), "role"),
        (json!({"role":"admin"}), "role"),
        (json!({"role":"viewer","expiresIn":0}), "expiresIn"),
        (json!({"role":"viewer","expiresIn":31_536_001}), "expiresIn"),
        (json!({"role":"viewer","expiresIn":"soon"}), "expiresIn"),
        (json!({"role":"viewer","name":""}), "name"),
        (json!({"role":"viewer","name":"x".repeat(33)}), "name"),
    ] {
        let (status, answer) = server.post(&path, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], "invalid request", "{body}: {answer}");
        assert!(
            answer["details"][field]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "{body}: {answer}"
        );
    }
    assert_eq!(
        server.post(&path, json!({"role":"admin"})).await.1["details"]["role"],
        json!(["must be owner, writer or viewer"])
    );
    // The longest lifetime is a year; nothing bad was made.
    invite(
        &server,
        "inv-bad",
        json!({"role":"viewer","expiresIn":31_536_000}),
    )
    .await;
    assert_eq!(invites(&server, "inv-bad").await.len(), 1);
}

#[tokio::test]
async fn a_revoked_invite_answers_401_at_once_and_its_sockets_close_with_4401() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-revoke";
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let (kept, kept_inv) = guest(&server, room, "viewer", None).await;
    let mut socket = vera.joins("user=vera").await;
    let mut other = kept.joins("user=kim").await;
    let id = inv["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!((status, body), (200, json!({"revoked": true})));
    // At once: no request or new socket gets in with it.
    let (status, body) = vera.get("/messages").await;
    assert_eq!((status, body), (401, json!({"error":"unauthorized"})));
    assert_eq!(vera.upgrade_refused("/ws?user=vera").await, 401);
    assert_eq!(
        socket.ws.closed().await,
        Some((4401, "the invite was revoked".to_string()))
    );
    // The other invite's socket stays, and sees vera leave.
    let left = other
        .ws
        .until(|f| {
            f["type"] == "duet_presence"
                && !f["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|u| u["name"] == "vera")
        })
        .await;
    assert!(
        left["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["name"] == "kim")
    );
    assert_eq!(kept.get("/messages").await.0, 200);
    // It is gone from the list; a second revoke does not know it.
    assert_eq!(invites(&server, room).await, vec![kept_inv]);
    let again = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(again, (404, unknown_invite(id)));
    let (status, body) = delete(&server, &room_path(room, "/invites/i9")).await;
    assert_eq!((status, body), (404, unknown_invite("i9")));
}

#[tokio::test]
async fn an_expired_invite_answers_401_and_its_socket_closes_with_4401_when_it_expires() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-expire";
    let created = invite(&server, room, json!({"role":"writer","expiresIn":3})).await;
    let wes = Guest::holding(&server, room, &created);
    let mut socket = wes.joins("user=wes").await;
    assert_eq!(socket.you["role"], "writer");
    // The socket is closed when the invite expires, without a request.
    assert_eq!(
        socket.ws.closed().await,
        Some((4401, "the invite expired".to_string()))
    );
    assert!(now_ms() + 1000 >= created["invite"]["expiresAt"].as_u64().unwrap());
    let (status, body) = wes.get("/messages").await;
    assert_eq!((status, body), (401, json!({"error":"unauthorized"})));
    let (status, _) = wes.post("/sandbox/exec", json!({"cmd":"true"})).await;
    assert_eq!(status, 401);
    assert_eq!(wes.upgrade_refused("/ws?user=wes").await, 401);
    assert_eq!(invites(&server, room).await, Vec::<Value>::new());
    let id = created["invite"]["id"].as_str().unwrap();
    let (status, body) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!((status, body), (404, unknown_invite(id)));
}

#[tokio::test]
async fn an_invite_opens_its_own_room_only() {
    let (server, _dir) = with_token(&[]).await;
    let (ann, _) = guest(&server, "room-a", "owner", None).await;
    assert_eq!(ann.get("/messages").await.0, 200);
    let elsewhere = ann.in_room("room-b");
    for answer in [
        elsewhere.get("/messages").await,
        elsewhere.post("/sandbox/exec", json!({"cmd":"true"})).await,
        elsewhere
            .post("/message", json!({"text":"hi","to":"room"}))
            .await,
        elsewhere.get("/invites").await,
    ] {
        assert_eq!(answer, (401, json!({"error":"unauthorized"})));
    }
    assert_eq!(elsewhere.upgrade_refused("/ws?user=ann").await, 401);
    // The Agents SDK path of the other room is refused too.
    let url = format!(
        "ws://{}/agents/duet-agent/room-b?user=ann&token={}",
        server.addr, ann.token
    );
    assert_eq!(refused_status(&url).await, 401);
    // Nothing was stored there.
    assert_eq!(messages(&server, "room-b").await, Vec::<Value>::new());
}

#[tokio::test]
async fn an_invite_made_with_an_invite_ends_no_later_than_it() {
    let (server, _dir) = with_token(&[]).await;
    let room = "inv-chain";
    let maker = invite(&server, room, json!({"role": "owner", "expiresIn": 60})).await;
    let olga = Guest::holding(&server, room, &maker);
    let (status, made) = olga
        .post(
            "/invites",
            json!({"role": "owner", "expiresIn": 31_536_000}),
        )
        .await;
    assert_eq!(status, 200, "{made}");
    assert_eq!(
        made["invite"]["expiresAt"], maker["invite"]["expiresAt"],
        "a year asked, the maker's minute given: {made}"
    );
    // A shorter one is as asked.
    let (_, short) = olga
        .post("/invites", json!({"role": "viewer", "expiresIn": 10}))
        .await;
    let short_end = short["invite"]["expiresAt"].as_u64().unwrap();
    assert!(
        short_end < maker["invite"]["expiresAt"].as_u64().unwrap(),
        "{short}"
    );
    // The server's token is bound by nothing.
    let year = invite(
        &server,
        room,
        json!({"role": "viewer", "expiresIn": 31_536_000}),
    )
    .await;
    assert!(year["invite"]["expiresAt"].as_u64().unwrap() > now_ms() + 300 * 86_400_000);
}

#[tokio::test]
async fn on_connect_duet_you_comes_right_after_presence_with_the_role() {
    let (server, _dir) = with_token(&[]).await;
    let room = "you-order";
    let owner = owner_joins(&server, room, "user=olga&_pk=pk-olga").await;
    assert_eq!(
        owner.you,
        json!({"type":"duet_you","id":"pk-olga","name":"olga","role":"owner"})
    );
    let olga = &owner.users[0];
    assert_eq!(
        (&olga["id"], &olga["name"], &olga["role"]),
        (&json!("pk-olga"), &json!("olga"), &json!("owner"))
    );
    assert!(olga["since"].is_number(), "{olga}");
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    let viewer = vera.joins("user=vera&_pk=pk-vera").await;
    assert_eq!(
        viewer.you,
        json!({"type":"duet_you","id":"pk-vera","name":"vera","role":"viewer","inviteId":inv["id"]})
    );
    let users = viewer.users.as_array().unwrap();
    let role_of = |id: &str| users.iter().find(|u| u["id"] == id).unwrap()["role"].clone();
    assert_eq!(role_of("pk-olga"), "owner");
    assert_eq!(role_of("pk-vera"), "viewer");
    // The viewer's state is the room's, in full.
    assert_eq!(viewer.state["policy"], "auto");
    assert_eq!(viewer.state["approvals"], json!([]));
    assert!(viewer.state["allow"].is_array(), "{}", viewer.state);
}

#[tokio::test]
async fn a_tokenless_server_makes_everyone_owner_and_refuses_invites_with_409() {
    let (server, _dir) = Server::fresh().await;
    let room = "no-token";
    let refusal = json!({"error":"invites need a token","details":{"token":["this server has no token, so everyone in it is an owner: start it with --token (or DUET_TOKEN) to invite people with roles"]}});
    let answer = server
        .post(&room_path(room, "/invites"), json!({"role":"viewer"}))
        .await;
    assert_eq!(answer, (409, refusal.clone()));
    let mut joined = enter(server.ws(room, "user=ada&_pk=pk-ada").await).await;
    assert_eq!(
        joined.you,
        json!({"type":"duet_you","id":"pk-ada","name":"ada","role":"owner"})
    );
    let frame = joined
        .ws
        .rpc(1, "invite_create", json!([{"role":"writer"}]))
        .await;
    assert_eq!(frame["success"], false, "{frame}");
    assert_eq!(frame["status"], 409);
    assert_eq!(frame["error"], refusal["error"]);
    assert_eq!(frame["details"], refusal["details"]);
}

#[tokio::test]
async fn an_invite_s_name_is_fixed_in_records_whatever_the_client_says() {
    let (server, _dir) = with_token(&[]).await;
    let room = "fixed-name";
    let (ann, _) = guest(&server, room, "writer", Some("ann")).await;
    let mut owner = owner_joins(&server, room, "user=olga").await;
    let mut joined = ann.joins("user=mallory&_pk=pk-ann").await;
    assert_eq!(joined.you["name"], "ann", "{}", joined.you);
    let me = joined
        .users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == "pk-ann")
        .unwrap()
        .clone();
    assert_eq!(me["name"], "ann");
    // Bodies' userId and the socket's user give way to the invite's name.
    let said = joined
        .ws
        .rpc(
            1,
            "message",
            json!([{"text":"from the socket","to":"room","userId":"mallory"}]),
        )
        .await;
    assert_eq!(said["success"], true, "{said}");
    let (status, _) = ann
        .post(
            "/message",
            json!({"text":"over http","to":"room","userId":"mallory"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = ann.put("/files/a.txt?userId=mallory", b"a").await;
    assert_eq!(status, 200);
    let (status, _) = ann
        .post("/sandbox/exec", json!({"cmd":"true","userId":"mallory"}))
        .await;
    assert_eq!(status, 200);
    let start = owner
        .ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start")
        .await;
    assert_eq!(start["by"], "ann");
    let ran = joined.ws.rpc(2, "exec", json!([{"cmd":"true"}])).await;
    assert_eq!(ran["success"], true);
    let (_, cp) = ann.post("/checkpoints", json!({"userId":"mallory"})).await;
    assert_eq!(cp["checkpoint"]["by"], "ann", "{cp}");
    let all = messages(&server, room).await;
    let names: Vec<(Value, Value)> = all
        .iter()
        .map(|m| (m["userId"].clone(), m["event"]["by"].clone()))
        .collect();
    assert!(!names.is_empty());
    for (user, by) in &names {
        assert_eq!(user, "ann", "{names:?}");
        assert!(by.is_null() || by == "ann", "{names:?}");
    }
    let upload = all.iter().find(|m| m["event"]["kind"] == "upload").unwrap();
    assert_eq!(upload["event"]["by"], "ann");
    let state = owner_joins(&server, room, "user=check").await.state;
    for e in state["execs"].as_array().unwrap() {
        assert_eq!(e["by"], "ann", "{e}");
    }
    // Renaming is refused; the name stays.
    let rename = joined
        .ws
        .rpc(3, "rename", json!([{"name":"mallory"}]))
        .await;
    assert_eq!(rename["success"], false, "{rename}");
    assert_eq!(rename["status"], 403);
    assert!(rename["details"]["name"].is_array(), "{rename}");
    let again = joined
        .ws
        .rpc(4, "message", json!([{"text":"still me","to":"room"}]))
        .await;
    assert_eq!(again["success"], true);
    assert_eq!(
        messages(&server, room).await.last().unwrap()["userId"],
        "ann"
    );
    // An invite without a name leaves names to the client.
    let (kim, _) = guest(&server, room, "viewer", None).await;
    let kim = kim.joins("user=kimberly").await;
    assert_eq!(kim.you["name"], "kimberly");
}

#[tokio::test]
async fn invites_roles_and_revocations_are_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let room = "kept";
    let server = start_with_token(dir.path(), &listen, &[]).await;
    let (vera, _) = guest(&server, room, "viewer", Some("vera")).await;
    let (wes, wes_inv) = guest(&server, room, "viewer", None).await;
    let (gone, gone_inv) = guest(&server, room, "writer", None).await;
    let wes_id = wes_inv["id"].as_str().unwrap();
    let (status, _) = server
        .post(
            &room_path(room, &format!("/invites/{wes_id}/role")),
            json!({"role":"writer"}),
        )
        .await;
    assert_eq!(status, 200);
    let gone_id = gone_inv["id"].as_str().unwrap();
    assert_eq!(
        delete(&server, &room_path(room, &format!("/invites/{gone_id}")))
            .await
            .0,
        200
    );
    let listed = invites(&server, room).await;
    server.stop().await;

    let server = start_with_token(dir.path(), &listen, &[]).await;
    assert_eq!(invites(&server, room).await, listed);
    assert_eq!(listed[1]["role"], "writer");
    // The viewer is still a viewer, with its name.
    assert_eq!(vera.get("/messages").await.0, 200);
    assert_forbidden(
        "exec after a restart",
        &vera.post("/sandbox/exec", json!({"cmd":"true"})).await,
        "viewer",
    );
    let joined = vera.joins("user=someone").await;
    assert_eq!(joined.you["name"], "vera");
    assert_eq!(joined.you["role"], "viewer");
    // The role change held; the revoked token stays revoked.
    let ran = wes
        .post("/sandbox/exec", json!({"cmd":"echo still-writer"}))
        .await;
    assert_eq!(ran.0, 200, "{}", ran.1);
    assert_eq!(
        gone.get("/messages").await,
        (401, json!({"error":"unauthorized"}))
    );
    // Ids go on: a new invite is not given an old one's id.
    let next = invite(&server, room, json!({"role":"viewer"})).await;
    assert_eq!(next["invite"]["id"], "i4");
    // The server's token is still the owner.
    let (status, _) = server.get(&room_path(room, "/invites")).await;
    assert_eq!(status, 200);
}
