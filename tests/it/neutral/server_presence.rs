//! Presence as deltas (docs/protocol.md "State deltas"): a `deltas=1`
//! socket gets the whole list once, on connect, then who joined, left,
//! was renamed or changed role as `duet_presence_delta`; a socket without
//! deltas keeps getting whole lists.

use crate::common::Ws;
use crate::common::access::{guest, owner_joins, set_role, with_token};
use serde_json::{Value, json};

/// The next presence frame of a deltas socket: always a delta.
async fn delta(ws: &mut Ws) -> Value {
    let frame = ws
        .until(|f| {
            f["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("duet_presence"))
        })
        .await;
    assert_eq!(frame["type"], "duet_presence_delta", "{frame}");
    frame
}

/// The ids and names of a whole list (the next `duet_presence`).
async fn whole(ws: &mut Ws) -> Vec<(String, String, String)> {
    let frame = ws.until_type("duet_presence").await;
    entries(&frame["users"])
}

fn entries(users: &Value) -> Vec<(String, String, String)> {
    users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            assert!(u["since"].as_i64().unwrap() > 0, "{u}");
            let s = |k: &str| u[k].as_str().unwrap().to_string();
            (s("id"), s("name"), s("role"))
        })
        .collect()
}

fn entry(id: &str, name: &str, role: &str) -> (String, String, String) {
    (id.into(), name.into(), role.into())
}

/// The delta's `joined` or `changed` entries, and nothing else in it.
fn only(frame: &Value, field: &str) -> Vec<(String, String, String)> {
    let keys: Vec<&String> = frame.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "one field besides type: {frame}");
    entries(&frame[field])
}

#[tokio::test]
async fn deltas_sockets_see_joins_renames_roles_and_leaves_as_deltas() {
    let (server, _dir) = with_token(&[]).await;
    let room = "pd1";
    let ada = owner_joins(&server, room, "user=ada&_pk=a&deltas=1").await;
    assert_eq!(entries(&ada.users), [entry("a", "ada", "owner")]);
    let mut ada = ada.ws;
    // A socket without deltas: whole lists, as before.
    let pat = owner_joins(&server, room, "user=pat&_pk=p").await;
    assert_eq!(pat.users.as_array().unwrap().len(), 2);
    let mut pat = pat.ws;
    let joined = delta(&mut ada).await;
    assert_eq!(only(&joined, "joined"), [entry("p", "pat", "owner")]);

    // A writer by invite joins with deltas: its own first list is whole.
    let (bob, invite) = guest(&server, room, "writer", None).await;
    let bob = bob.joins("user=bob&_pk=b&deltas=1").await;
    assert_eq!(bob.users.as_array().unwrap().len(), 3);
    let mut bob = bob.ws;
    let joined = delta(&mut ada).await;
    assert_eq!(only(&joined, "joined"), [entry("b", "bob", "writer")]);
    assert_eq!(whole(&mut pat).await.len(), 3);

    // Renamed.
    let answer = bob.rpc(1, "rename", json!([{"name":"robert"}])).await;
    assert_eq!(answer["success"], true, "{answer}");
    let changed = delta(&mut ada).await;
    assert_eq!(only(&changed, "changed"), [entry("b", "robert", "writer")]);
    assert!(
        whole(&mut pat)
            .await
            .contains(&entry("b", "robert", "writer"))
    );

    // A new role for the invite.
    set_role(&server, room, invite["id"].as_str().unwrap(), "viewer").await;
    let changed = delta(&mut ada).await;
    assert_eq!(only(&changed, "changed"), [entry("b", "robert", "viewer")]);
    assert!(
        whole(&mut pat)
            .await
            .contains(&entry("b", "robert", "viewer"))
    );
    let own = delta(&mut bob).await;
    assert_eq!(only(&own, "changed"), [entry("b", "robert", "viewer")]);

    // Gone.
    bob.close().await;
    let left = delta(&mut ada).await;
    assert_eq!(left, json!({"type":"duet_presence_delta","left":["b"]}));
    assert_eq!(
        whole(&mut pat).await,
        [entry("a", "ada", "owner"), entry("p", "pat", "owner")]
    );
    pat.close().await;
    let left = delta(&mut ada).await;
    assert_eq!(left["left"], json!(["p"]));

    // Connecting again: the whole list first, deltas after.
    ada.close().await;
    let again = owner_joins(&server, room, "user=ada&_pk=a&deltas=1").await;
    assert_eq!(entries(&again.users), [entry("a", "ada", "owner")]);
    let mut again = again.ws;
    let _cid = owner_joins(&server, room, "user=cid&_pk=c&deltas=1").await;
    let joined = delta(&mut again).await;
    assert_eq!(only(&joined, "joined"), [entry("c", "cid", "owner")]);
}

#[tokio::test]
async fn an_id_on_two_sockets_stays_exact_when_one_leaves() {
    let (server, _dir) = with_token(&[]).await;
    let room = "pd2";
    let mut ada = owner_joins(&server, room, "user=ada&_pk=a&deltas=1")
        .await
        .ws;
    // The same `_pk` twice (a client reconnecting before its old socket
    // closed): the id is sent whole, and what the list holds stays exact.
    let first = owner_joins(&server, room, "user=bo&_pk=b&deltas=1")
        .await
        .ws;
    let mut list = vec![entry("a", "ada", "owner")];
    let apply = |list: &mut Vec<(String, String, String)>, d: &Value| {
        let ids: Vec<&str> = d["left"]
            .as_array()
            .map(|l| l.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        list.retain(|e| !ids.contains(&e.0.as_str()));
        if d["joined"].is_array() {
            list.extend(entries(&d["joined"]));
        }
    };
    apply(&mut list, &delta(&mut ada).await);
    let _second = owner_joins(&server, room, "user=bo&_pk=b&deltas=1")
        .await
        .ws;
    apply(&mut list, &delta(&mut ada).await);
    assert_eq!(list.iter().filter(|e| e.0 == "b").count(), 2, "{list:?}");
    first.close().await;
    apply(&mut list, &delta(&mut ada).await);
    assert_eq!(
        list,
        [entry("a", "ada", "owner"), entry("b", "bo", "owner")]
    );
}
