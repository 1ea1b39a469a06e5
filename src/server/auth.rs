//! The bearer token: every path but `/health` needs it when the server has
//! one; a socket (and a tunnel) may pass it as `?token=` instead, and so
//! may a port's preview (whose own origin takes the cookie a browser got
//! for it: ports/site.rs).

use super::access::Action;
use super::errors::ApiError;
use super::router::App;
use crate::protocol::{Invite, RoomRole};
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// What a request's credential lets it do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Access {
    /// The server's token, or a server without one: owner in every room.
    Server,
    /// An invite's token: its role in its room (and maybe its name).
    Invite(Invite),
}

/// Who is calling: the name they go by (`userId`, the socket's `user`),
/// what their credential allows, and the socket they call on (none over
/// HTTP). Found once per request or socket and carried with each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) name: Option<String>,
    pub(crate) access: Access,
    pub(crate) socket: Option<SocketRef>,
    /// The URL the caller reached the server at (`http://HOST`), for the
    /// links the server hands out.
    pub(crate) base: Option<String>,
}

/// A socket of the room, as an operation's caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SocketRef {
    /// Its number in the process (its presence entry in the room).
    pub(crate) number: u64,
    /// Its `_pk` (or the id the server gave it): `byConnection`.
    pub(crate) id: String,
}

impl Access {
    /// The role it gives in its room.
    pub(crate) fn role(&self) -> RoomRole {
        match self {
            Access::Server => RoomRole::Owner,
            Access::Invite(invite) => invite.role,
        }
    }

    /// The invite it came from, if any.
    pub(crate) fn invite_id(&self) -> Option<&str> {
        match self {
            Access::Server => None,
            Access::Invite(invite) => Some(&invite.id),
        }
    }

    /// The name its invite fixes, if it does.
    pub(crate) fn fixed_name(&self) -> Option<&str> {
        match self {
            Access::Server => None,
            Access::Invite(invite) => invite.name.as_deref(),
        }
    }
}

impl Caller {
    /// A caller with `access`, going by `name` unless its invite fixes one.
    pub(crate) fn new(name: Option<String>, access: Access, socket: Option<SocketRef>) -> Self {
        let name = access.fixed_name().map(str::to_string).or(name);
        Caller {
            name,
            access,
            socket,
            base: None,
        }
    }

    /// The same caller, reached at the base URL of `headers`.
    pub(crate) fn reached_by(mut self, headers: &axum::http::HeaderMap) -> Self {
        self.base = base_url(headers);
        self
    }

    /// The name for records and frames: "anonymous" when none was given.
    pub(crate) fn name_or_anonymous(&self) -> String {
        self.name.clone().unwrap_or_else(|| "anonymous".into())
    }

    /// Goes by `name` (a body's `userId`) unless its invite fixes the name.
    pub(crate) fn call_itself(&mut self, name: String) {
        if self.access.fixed_name().is_none() {
            self.name = Some(name);
        }
    }

    /// The `_pk` of its socket, for `byConnection` (none over HTTP).
    pub(crate) fn connection(&self) -> Option<String> {
        self.socket.as_ref().map(|s| s.id.clone())
    }

    /// Its role in the room now.
    pub(crate) fn role(&self) -> RoomRole {
        self.access.role()
    }

    /// `Ok` when its role may do `action`, else the contract's 403.
    pub(crate) fn may(&self, action: Action) -> Result<(), ApiError> {
        super::access::check(self.role(), action)
    }
}

/// `http://HOST` (or `https://` behind a proxy that says so) of a request.
pub(crate) fn base_url(headers: &axum::http::HeaderMap) -> Option<String> {
    let host = headers.get(axum::http::header::HOST)?.to_str().ok()?;
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    let scheme = if https { "https" } else { "http" };
    Some(format!("{scheme}://{host}"))
}

/// How invite tokens start; the rest is 40 hex digits.
pub(crate) const INVITE_PREFIX: &str = "duet_inv_";

/// A new invite token.
pub(crate) fn new_invite_token() -> String {
    let bytes: [u8; 20] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{INVITE_PREFIX}{hex}")
}

/// The SHA-256 of a token, as the store keeps it (hex).
pub(crate) fn token_hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The room a path is about (`/api/rooms/{room}/…`,
/// `/agents/duet-agent/{room}`), unchecked.
pub(crate) fn path_room(path: &str) -> Option<&str> {
    if let Some(rest) = path.strip_prefix("/api/rooms/") {
        return rest.split('/').next().filter(|r| !r.is_empty());
    }
    path.strip_prefix("/agents/duet-agent/")
        .map(|rest| rest.trim_end_matches('/'))
        .filter(|r| !r.is_empty() && !r.contains('/'))
}

/// Middleware answering 401 to requests without a credential for the
/// room they are about; the others carry their `Access` to the handlers.
pub(crate) async fn require_token(
    State(app): State<Arc<App>>,
    mut req: Request,
    next: Next,
) -> Response {
    let access = match app.token.as_deref() {
        None => Some(Access::Server),
        // `/health` and the page need no token (and carry none on).
        Some(_) if req.uri().path() == "/health" || super::web::is_page(req.uri().path()) => {
            return next.run(req).await;
        }
        Some(token) => {
            let given = Given::of(&req);
            credential(&app, given, token).await
        }
    };
    match access {
        Some(access) => {
            req.extensions_mut().insert(access);
            next.run(req).await
        }
        None => ApiError::unauthorized().into_response(),
    }
}

/// The credentials a request carries, read before anything is awaited.
struct Given {
    path: String,
    /// `Authorization: Bearer`, then `?token=` where a query may carry it.
    tokens: Vec<String>,
    /// `?ticket=` on the room's socket (tickets.rs).
    tickets: Vec<String>,
}

impl Given {
    fn of(req: &Request) -> Given {
        let path = req.uri().path().to_string();
        let header = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|v| v.trim().to_string());
        // Sockets, and a browser trading the token for that cookie, may
        // carry it in the query.
        let by_query = query_token_route(&path);
        let query = by_query.then(|| query_value(req, "token")).flatten();
        // A ticket opens the room's socket and nothing else.
        let ticket = socket_route(&path)
            .then(|| query_value(req, "ticket"))
            .flatten();
        Given {
            tokens: header.into_iter().chain(query).collect(),
            tickets: ticket.into_iter().collect(),
            path,
        }
    }
}

/// The first value of the request's query parameter `name`.
fn query_value(req: &Request, name: &str) -> Option<String> {
    let query = req.uri().query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Whether `path` is the room's socket (`/api/rooms/{room}/ws`,
/// `/agents/duet-agent/{room}`); not a file named `ws`.
fn socket_route(path: &str) -> bool {
    match path.strip_prefix("/api/rooms/") {
        Some(rest) => rest
            .split_once('/')
            .is_some_and(|(room, rest)| !room.is_empty() && rest == "ws"),
        None => path_room(path).is_some(),
    }
}

/// Whether `path` is a route the contract lets carry `?token=`: the room's
/// socket, a tunnel and a port's preview. Nowhere else.
fn query_token_route(path: &str) -> bool {
    socket_route(path)
        || super::ports::is_tunnel(path)
        || super::ports::preview_target(path).is_some()
}

/// What the request's credential allows, or `None` (401).
async fn credential(app: &App, given: Given, token: &str) -> Option<Access> {
    for candidate in &given.tokens {
        if same(candidate, token) {
            return Some(Access::Server);
        }
        if let Some(invite) = invite_access(app, &given.path, candidate).await {
            return Some(invite);
        }
    }
    let room = path_room(&given.path)?;
    for ticket in &given.tickets {
        if let Some(access) = ticket_access(app, room, ticket).await {
            return Some(access);
        }
    }
    None
}

/// The access a socket ticket gives in `room`: the server's, or its
/// invite's as of now while that invite can be used.
async fn ticket_access(app: &App, room: &str, ticket: &str) -> Option<Access> {
    match super::tickets::check(&app.registry.shared, room, ticket)? {
        None => Some(Access::Server),
        Some(invite_id) => {
            let row = super::ports::usable_invite(app, room, &invite_id).await?;
            Some(Access::Invite(row.invite))
        }
    }
}

/// The access an invite token `given` gives on `path`: its invite's, when
/// it is for that path's room and still usable. On the room list (which
/// no room names) any usable invite is known, to be refused with a 403.
pub(crate) async fn invite_access(app: &App, path: &str, given: &str) -> Option<Access> {
    if !given.starts_with(INVITE_PREFIX) {
        return None;
    }
    let room = path_room(path);
    if room.is_none() && path != super::rooms::PATH {
        return None;
    }
    let row = app
        .registry
        .shared
        .store
        .invite_by_hash(token_hash(given))
        .await
        .ok()??;
    let for_path = room.is_none_or(|room| row.room == room);
    (for_path && row.usable()).then_some(Access::Invite(row.invite))
}

/// Compares secrets in time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    subtle::ConstantTimeEq::ct_eq(a.as_bytes(), b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_room() {
        assert_eq!(path_room("/api/rooms/a/cleanup"), Some("a"));
        assert_eq!(path_room("/api/rooms/a"), Some("a"));
        assert_eq!(path_room("/agents/duet-agent/b"), Some("b"));
        assert_eq!(path_room("/api/rooms/"), None);
        assert_eq!(path_room("/health"), None);
    }

    #[test]
    fn only_sockets_tunnels_and_previews_take_the_token_in_the_query() {
        for path in [
            "/api/rooms/a/ws",
            "/agents/duet-agent/a",
            "/api/rooms/a/tunnel/8000",
            "/api/rooms/a/ports/8000/",
            "/api/rooms/a/ports/8000/x/ws",
        ] {
            assert!(query_token_route(path), "{path}");
        }
        for path in [
            "/api/rooms/a/files/ws",
            "/api/rooms/a/files/sub/ws",
            "/api/rooms/a/messages",
            "/api/rooms//ws",
            "/api/rooms/a/ws/x",
            "/agents/duet-agent/a/ws",
            "/agents/other/a",
            "/health",
        ] {
            assert!(!query_token_route(path), "{path}");
        }
    }

    #[test]
    fn invite_tokens_are_random_and_kept_as_hashes() {
        let (a, b) = (new_invite_token(), new_invite_token());
        assert_ne!(a, b);
        assert!(a.starts_with(INVITE_PREFIX));
        assert_eq!(a.len(), INVITE_PREFIX.len() + 40);
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), token_hash(&b));
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
