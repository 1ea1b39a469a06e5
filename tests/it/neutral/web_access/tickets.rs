//! Socket tickets (docs/protocol.md "The page"): `POST …/ticket` trades a
//! token for a ticket that opens this room's socket only, for a while,
//! with the role of the token that made it; a ticket made from an invite
//! stands on it (revoked: refused, and its socket closed; demoted: the
//! socket's role changes).

use crate::common::access::{Guest, TOKEN, enter, guest, refused_status, set_role, with_token};
use crate::common::{Server, Ws, answer, http};
use serde_json::{Value, json};

/// `POST /api/rooms/{room}/ticket` with `bearer`: status and answer.
async fn ticket(server: &Server, room: &str, bearer: &str) -> (u16, Value) {
    answer(
        http()
            .post(server.url(&format!("/api/rooms/{room}/ticket")))
            .bearer_auth(bearer),
    )
    .await
}

/// A ticket of `guest`'s (it must be given).
async fn guest_ticket(server: &Server, guest: &Guest) -> String {
    let (status, body) = ticket(server, &guest.room, &guest.token).await;
    assert_eq!(status, 200, "{body}");
    body["ticket"].as_str().expect("a ticket").to_string()
}

/// The socket URL of `room` opened with `ticket` (no token).
fn ws_url(server: &Server, room: &str, ticket: &str) -> String {
    format!(
        "ws://{}/api/rooms/{room}/ws?ticket={ticket}&user=page&_pk=page1&deltas=1",
        server.addr
    )
}

#[tokio::test]
async fn a_ticket_opens_its_room_s_socket_with_the_token_s_role() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-ticket";
    // The server's token: an owner's ticket.
    let (status, body) = ticket(&server, room, TOKEN).await;
    assert_eq!(status, 200, "{body}");
    let owner_ticket = body["ticket"].as_str().unwrap().to_string();
    let expires = body["expiresAt"].as_u64().expect("expiresAt in ms");
    let now = crate::common::now_ms();
    assert!(expires > now && expires <= now + 61_000, "{body}");
    assert!(!owner_ticket.contains(TOKEN));
    let joined = enter(Ws::connect(&ws_url(&server, room, &owner_ticket)).await).await;
    assert_eq!(joined.you["role"], "owner", "{}", joined.you);
    assert!(joined.you.get("inviteId").is_none(), "{}", joined.you);
    // An invite's: its role, its invite named.
    let (viewer, invite) = guest(&server, room, "viewer", None).await;
    let t = guest_ticket(&server, &viewer).await;
    assert!(!t.contains(&viewer.token));
    let mut joined = enter(Ws::connect(&ws_url(&server, room, &t)).await).await;
    assert_eq!(joined.you["role"], "viewer", "{}", joined.you);
    assert_eq!(joined.you["inviteId"], invite["id"]);
    // It is the viewer's socket: what a viewer may not do is refused.
    let refused = joined.ws.rpc(1, "exec", json!([{"cmd": "echo no"}])).await;
    crate::common::access::assert_rpc_forbidden("a viewer's exec", &refused, "viewer");
}

#[tokio::test]
async fn a_ticket_opens_nothing_else() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-ticket-only";
    let (_, body) = ticket(&server, room, TOKEN).await;
    let t = body["ticket"].as_str().unwrap().to_string();
    // Another room's socket.
    let other = ws_url(&server, "web-ticket-other", &t);
    assert_eq!(refused_status(&other).await, 401);
    // An HTTP route, by query or as a bearer.
    let url = server.url(&format!("/api/rooms/{room}/messages?ticket={t}"));
    assert_eq!(answer(http().get(url)).await.0, 401);
    let url = server.url(&format!("/api/rooms/{room}/messages"));
    assert_eq!(answer(http().get(url).bearer_auth(&t)).await.0, 401);
    // A forged or altered one.
    let altered = format!("{}x", &t);
    assert_eq!(refused_status(&ws_url(&server, room, &altered)).await, 401);
    let (expires, mac) = t.split_once('.').unwrap();
    let later = format!("{}.{mac}", expires.parse::<u64>().unwrap() + 1);
    assert_eq!(refused_status(&ws_url(&server, room, &later)).await, 401);
    // Without a credential, no ticket.
    let (status, _) = ticket(&server, room, "wrong").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn an_expired_ticket_is_refused() {
    // Tickets that expire as they are made: no waiting.
    let (server, _dir) = with_token(&["--ticket-secs", "0"]).await;
    let (status, body) = ticket(&server, "web-ticket-old", TOKEN).await;
    assert_eq!(status, 200, "{body}");
    let t = body["ticket"].as_str().unwrap();
    assert_eq!(
        refused_status(&ws_url(&server, "web-ticket-old", t)).await,
        401
    );
}

#[tokio::test]
async fn revoking_or_demoting_the_invite_reaches_a_ticket_s_socket() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-ticket-revoke";
    let (writer, invite) = guest(&server, room, "writer", None).await;
    let id = invite["id"].as_str().unwrap().to_string();
    let t = guest_ticket(&server, &writer).await;
    let mut joined = enter(Ws::connect(&ws_url(&server, room, &t)).await).await;
    assert_eq!(joined.you["role"], "writer");
    // Demoted: the socket is a viewer's from now on.
    set_role(&server, room, &id, "viewer").await;
    let you = joined
        .ws
        .until(|f| f["type"] == "duet_you" && f["role"] == "viewer")
        .await;
    assert_eq!(you["inviteId"], id.as_str());
    // A ticket made before the demotion opens a viewer's socket now.
    let again = enter(Ws::connect(&ws_url(&server, room, &t)).await).await;
    assert_eq!(again.you["role"], "viewer");
    // Revoked: the sockets close with 4401, and the ticket opens nothing.
    let (status, body) = answer(
        http()
            .delete(server.url(&format!("/api/rooms/{room}/invites/{id}")))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let closed = joined.ws.closed().await;
    assert_eq!(closed.map(|(code, _)| code), Some(4401));
    assert_eq!(refused_status(&ws_url(&server, room, &t)).await, 401);
    let (status, _) = ticket(&server, room, &writer.token).await;
    assert_eq!(status, 401);
}
