//! Invites, roles and the approval policy (docs/protocol.md "Invites,
//! roles and approvals"), for the role and approval tests: a backend with
//! a token, an invite's holder (a guest) calling it over HTTP and sockets,
//! the connect frames with `duet_you`, and the 403 of the contract.

use super::{Server, WAIT, Ws, answer, http};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;

/// The server's token: the owner of every room.
pub const TOKEN: &str = "the-owners-token";

/// A backend with the server token `TOKEN` and the flags `extra`.
pub async fn with_token(extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (
        start_with_token(dir.path(), "127.0.0.1:0", extra).await,
        dir,
    )
}

/// As `with_token`, on `data_dir` and `listen` (for a restart).
pub async fn start_with_token(data_dir: &std::path::Path, listen: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--token", TOKEN];
    args.extend_from_slice(extra);
    Server::start_at(listen, data_dir, &args).await
}

/// What a socket reads on connect, in the contract's order.
pub struct Joined {
    pub ws: Ws,
    pub state: Value,
    /// `duet_presence`'s users.
    pub users: Value,
    /// The `duet_you` frame.
    pub you: Value,
}

/// Reads the four connect frames of `ws`, checking their order.
pub async fn enter(mut ws: Ws) -> Joined {
    let identity = ws.next().await;
    assert_eq!(identity["type"], "cf_agent_identity", "{identity}");
    let state = ws.next().await;
    assert_eq!(state["type"], "cf_agent_state", "{state}");
    let presence = ws.next().await;
    assert_eq!(presence["type"], "duet_presence", "{presence}");
    let you = ws.next().await;
    assert_eq!(you["type"], "duet_you", "right after presence: {you}");
    Joined {
        ws,
        state: state["state"].clone(),
        users: presence["users"].clone(),
        you,
    }
}

/// A socket of the server's token (the owner) that read its connect frames.
pub async fn owner_joins(server: &Server, room: &str, query: &str) -> Joined {
    enter(server.ws(room, query).await).await
}

/// Someone holding a token of their own (an invite's) for one room.
#[derive(Clone)]
pub struct Guest {
    pub addr: String,
    pub room: String,
    pub token: String,
}

impl Guest {
    /// Whoever holds the invite `created` (an `invite_create` answer) to `room`.
    pub fn holding(server: &Server, room: &str, created: &Value) -> Guest {
        Guest {
            addr: server.addr.clone(),
            room: room.to_string(),
            token: created["token"]
                .as_str()
                .expect("an invite's token")
                .to_string(),
        }
    }

    /// `http://ADDR/api/rooms/{room}{rest}`
    pub fn url(&self, rest: &str) -> String {
        format!("http://{}/api/rooms/{}{rest}", self.addr, self.room)
    }

    /// A request of `method` to the room's `rest`, with the guest's token.
    pub fn request(&self, method: reqwest::Method, rest: &str) -> reqwest::RequestBuilder {
        http()
            .request(method, self.url(rest))
            .bearer_auth(&self.token)
    }

    pub async fn post(&self, rest: &str, body: Value) -> (u16, Value) {
        answer(self.request(reqwest::Method::POST, rest).json(&body)).await
    }

    pub async fn get(&self, rest: &str) -> (u16, Value) {
        answer(self.request(reqwest::Method::GET, rest)).await
    }

    pub async fn delete(&self, rest: &str) -> (u16, Value) {
        answer(self.request(reqwest::Method::DELETE, rest)).await
    }

    pub async fn put(&self, rest: &str, bytes: &[u8]) -> (u16, Value) {
        answer(
            self.request(reqwest::Method::PUT, rest)
                .body(bytes.to_vec()),
        )
        .await
    }

    /// The socket URL of the room with `query` and the guest's token.
    pub fn ws_url(&self, query: &str) -> String {
        format!(
            "ws://{}/api/rooms/{}/ws?{query}&token={}",
            self.addr, self.room, self.token
        )
    }

    /// A socket of the guest's that read its connect frames.
    pub async fn joins(&self, query: &str) -> Joined {
        enter(Ws::connect(&self.ws_url(query)).await).await
    }

    /// The HTTP status that refuses a WebSocket upgrade of the room's
    /// `rest` (panics when it upgrades).
    pub async fn upgrade_refused(&self, rest: &str) -> u16 {
        let url = format!("ws://{}/api/rooms/{}{rest}", self.addr, self.room);
        let sep = if rest.contains('?') { '&' } else { '?' };
        let url = format!("{url}{sep}token={}", self.token);
        refused_status(&url).await
    }

    /// A tunnel to the room's `port`, opened with the guest's `?token=`
    /// (it must open).
    pub async fn tunnel(&self, port: u16) -> super::apps::Tunnel {
        let url = format!(
            "ws://{}/api/rooms/{}/tunnel/{port}?token={}",
            self.addr, self.room, self.token
        );
        let opened = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("the tunnel opens in time");
        opened.expect("the tunnel opens").0
    }

    /// The same token on another room.
    pub fn in_room(&self, room: &str) -> Guest {
        Guest {
            room: room.to_string(),
            ..self.clone()
        }
    }
}

/// The status with which the server refuses a WebSocket upgrade of `url`.
pub async fn refused_status(url: &str) -> u16 {
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
        .await
        .expect("the server answers the upgrade in time")
    {
        Err(tungstenite::Error::Http(res)) => res.status().as_u16(),
        Ok(_) => panic!("{url} upgraded"),
        Err(e) => panic!("{url}: {e}"),
    }
}

/// The owner's `POST /invites` with `body`: the `{invite, token, url}`.
pub async fn invite(server: &Server, room: &str, body: Value) -> Value {
    let (status, created) = server
        .post(&format!("/api/rooms/{room}/invites"), body)
        .await;
    assert_eq!(status, 200, "{created}");
    created
}

/// An invite of `role` (and `name`, if any) to `room`, and its guest.
pub async fn guest(server: &Server, room: &str, role: &str, name: Option<&str>) -> (Guest, Value) {
    let mut body = json!({"role": role});
    if let Some(name) = name {
        body["name"] = json!(name);
    }
    let created = invite(server, room, body).await;
    (
        Guest::holding(server, room, &created),
        created["invite"].clone(),
    )
}

/// `{"error":"forbidden","details":{"role":[SENTENCE]}}`, the sentence
/// naming `role`.
fn assert_forbidden_body(what: &str, error: &Value, details: &Value, role: &str) {
    assert_eq!(error, "forbidden", "{what}: {details}");
    let sentences = details["role"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: details.role is a list: {details}"));
    assert!(!sentences.is_empty(), "{what}: {details}");
    for s in sentences {
        let s = s.as_str().unwrap();
        assert!(s.contains(role), "{what}: {s:?} names the role {role}");
    }
}

/// An HTTP answer is the contract's 403 for `role`.
pub fn assert_forbidden(what: &str, (status, body): &(u16, Value), role: &str) {
    assert_eq!(*status, 403, "{what}: {body}");
    assert_forbidden_body(what, &body["error"], &body["details"], role);
}

/// An rpc answer is the contract's 403 for `role`.
pub fn assert_rpc_forbidden(what: &str, frame: &Value, role: &str) {
    assert_eq!(frame["success"], false, "{what}: {frame}");
    assert_eq!(frame["status"], 403, "{what}: {frame}");
    assert_eq!(frame["done"], true, "{what}: {frame}");
    assert_forbidden_body(what, &frame["error"], &frame["details"], role);
}

/// `set_policy`, by the owner over HTTP.
pub async fn set_policy(server: &Server, room: &str, body: Value) {
    let (status, answer) = server
        .post(&format!("/api/rooms/{room}/policy"), body.clone())
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"policy": body["policy"]}));
}

/// The owner sets the role of invite `invite_id` (`POST …/invites/{id}/role`);
/// the answer.
pub async fn set_role(server: &Server, room: &str, invite_id: &str, role: &str) -> Value {
    let (status, body) = server
        .post(
            &super::apps::room_path(room, &format!("/invites/{invite_id}/role")),
            serde_json::json!({ "role": role }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}
