//! The bearer token: every path but `/health` needs it when the server has
//! one; a socket (and a tunnel) may pass it as `?token=` instead, and a
//! port's preview also takes the cookie a browser got for it.

use super::errors::ApiError;
use super::router::App;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// What a request's credential lets it do. Today the server's token (or
/// a server without one) allows everything; roles will be told apart here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Every operation in every room.
    Full,
}

/// Who is calling: the name they go by (`userId`, the socket's `user`),
/// what their credential allows, and the socket they call on (none over
/// HTTP). Found once per request or socket and carried with each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) name: Option<String>,
    pub(crate) access: Access,
    pub(crate) socket: Option<SocketRef>,
}

/// A socket of the room, as an operation's caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SocketRef {
    /// Its number in the process (its presence entry in the room).
    pub(crate) number: u64,
    /// Its `_pk` (or the id the server gave it): `byConnection`.
    pub(crate) id: String,
}

impl Caller {
    /// The name for records and frames: "anonymous" when none was given.
    pub(crate) fn name_or_anonymous(&self) -> String {
        self.name.clone().unwrap_or_else(|| "anonymous".into())
    }

    /// The `_pk` of its socket, for `byConnection` (none over HTTP).
    pub(crate) fn connection(&self) -> Option<String> {
        self.socket.as_ref().map(|s| s.id.clone())
    }
}

/// Middleware answering 401 to requests without the server's token; the
/// others carry their `Access` to the handlers.
pub(crate) async fn require_token(
    State(app): State<Arc<App>>,
    mut req: Request,
    next: Next,
) -> Response {
    match app.token.as_deref() {
        Some(token) if req.uri().path() != "/health" && !authorized(&req, token) => {
            ApiError::unauthorized().into_response()
        }
        _ => {
            req.extensions_mut().insert(Access::Full);
            next.run(req).await
        }
    }
}

/// Whether the request carries `token`.
fn authorized(req: &Request, token: &str) -> bool {
    let header = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if header.is_some_and(|given| same(given.trim(), token)) {
        return true;
    }
    let path = req.uri().path();
    // A browser opening a port's preview: its cookie opens that preview.
    if let Some((room, port)) = super::ports::preview_target(path)
        && super::ports::has_credential(req.headers(), token, room, port)
    {
        return true;
    }
    // Sockets, and a browser trading the token for that cookie, may carry
    // it in the query.
    let by_query = path.starts_with("/agents/")
        || (path.starts_with("/api/rooms/") && path.ends_with("/ws"))
        || super::ports::is_tunnel(path)
        || super::ports::preview_target(path).is_some();
    by_query
        && req.uri().query().is_some_and(|q| {
            url::form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "token" && same(&v, token))
        })
}

/// Compares secrets in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    subtle::ConstantTimeEq::ct_eq(a.as_bytes(), b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(uri: &str, header: Option<&str>) -> Request {
        let mut b = Request::builder().uri(uri);
        if let Some(h) = header {
            b = b.header(AUTHORIZATION, h);
        }
        b.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn tokens_come_by_header_or_on_sockets_by_query() {
        assert!(authorized(
            &req("/api/rooms/a/cleanup", Some("Bearer s3")),
            "s3"
        ));
        assert!(!authorized(
            &req("/api/rooms/a/cleanup", Some("Bearer s4")),
            "s3"
        ));
        assert!(!authorized(
            &req("/api/rooms/a/cleanup?token=s3", None),
            "s3"
        ));
        assert!(authorized(
            &req("/api/rooms/a/ws?user=x&token=s3", None),
            "s3"
        ));
        assert!(authorized(
            &req("/agents/duet-agent/a?token=s3", None),
            "s3"
        ));
        assert!(!authorized(
            &req("/agents/duet-agent/a?token=s", None),
            "s3"
        ));
    }
}
