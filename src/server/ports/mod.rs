//! A room's ports, reached through the backend (docs/protocol.md
//! "Background processes and ports"): the HTTP preview (preview.rs), the
//! browser's credential for it (this file), and the tunnel (tunnel.rs).
//! Both connect through `Sandbox::port_connect`, which reaches only the
//! sandbox's own loopback.

mod preview;
mod tunnel;

pub(crate) use preview::{bare, preview};
pub(crate) use tunnel::tunnel;

use super::auth::{Access, token_hash};
use super::errors::ApiError;
use super::http::room_details;
use crate::protocol::Details;
use crate::sandbox::PortError;
use axum::http::HeaderMap;
use axum::http::header::COOKIE;

/// The cookie holding a browser's credential for one preview.
pub(crate) const COOKIE_NAME: &str = "duet_preview";

/// The room and port of a preview path (`/api/rooms/{room}/ports/{port}…`),
/// unchecked.
pub(crate) fn preview_target(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/api/rooms/")?;
    let (room, rest) = rest.split_once('/')?;
    let rest = rest.strip_prefix("ports/")?;
    let port = rest.split('/').next()?;
    Some((room, port))
}

/// Whether `path` is a tunnel's (`/api/rooms/{room}/tunnel/{port}`).
pub(crate) fn is_tunnel(path: &str) -> bool {
    path.strip_prefix("/api/rooms/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(_, rest)| rest.strip_prefix("tunnel/"))
        .is_some_and(|port| !port.is_empty() && !port.contains('/'))
}

/// The room id and port of a route, or the 400 naming what is wrong.
pub(crate) fn checked(room: &str, port: &str) -> Result<u16, ApiError> {
    let mut details: Details = room_details(room);
    let port = match port.parse::<u16>() {
        Ok(p) if p > 0 => Some(p),
        _ => {
            super::errors::add_detail(
                &mut details,
                "port",
                "must be a port number from 1 to 65535",
            );
            None
        }
    };
    match port {
        Some(port) if details.is_empty() => Ok(port),
        _ => Err(ApiError::invalid(details)),
    }
}

/// A connection to `port` in `room`'s sandbox, or the 502 saying why not.
pub(crate) async fn connect(
    app: &super::router::App,
    room: &str,
    port: u16,
) -> Result<tokio::net::TcpStream, ApiError> {
    let handle = app.registry.room(room).await?;
    handle.sandbox.port_connect(port).await.map_err(unreachable)
}

/// The answer when the sandbox's port cannot be reached.
fn unreachable(e: PortError) -> ApiError {
    ApiError::bad_gateway(e.to_string())
}

/// The credential a browser's cookie holds for `room`'s `port`: an HMAC
/// of both under `key` (the server's token, or an invite token's hash), so it opens this preview only and
/// says nothing of the token.
pub(crate) fn credential(key: &str, room: &str, port: &str) -> String {
    use base64::Engine;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.as_bytes());
    let tag = ring::hmac::sign(&key, format!("duet preview\0{room}\0{port}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
}

/// The preview credential a request's cookies carry, if any.
pub(crate) fn cookie_credential(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim().to_string())
}

/// Whether `given` is the credential for `room`'s `port` under `key`
/// (the server's token, or an invite token's hash).
pub(crate) fn is_credential(given: &str, key: &str, room: &str, port: &str) -> bool {
    let expected = credential(key, room, port);
    subtle::ConstantTimeEq::ct_eq(given.as_bytes(), expected.as_bytes()).into()
}

/// The cookie's value for a caller with `access` who gave `token`: the
/// server's credential, or an invite's, which names the invite (so it
/// stops working with it) and is keyed by its token's hash.
pub(crate) fn cookie_value(access: &Access, token: &str, room: &str, port: &str) -> String {
    match access.invite_id() {
        None => credential(token, room, port),
        Some(id) => format!("{id}.{}", credential(&token_hash(token), room, port)),
    }
}

/// Whether a query parameter (`name=value`, as sent) is `token`, however
/// its name is encoded (`%74oken` is `token` to the token check too).
fn is_token(pair: &str) -> bool {
    url::form_urlencoded::parse(pair.as_bytes())
        .next()
        .is_some_and(|(name, _)| name == "token")
}

/// Whether `query` carries a `token` parameter.
pub(crate) fn has_token(query: &str) -> bool {
    query.split('&').any(is_token)
}

/// `query` without its `token` parameters (`None` when nothing is left).
pub(crate) fn without_token(query: &str) -> Option<String> {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !is_token(pair))
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_paths_are_recognised() {
        assert_eq!(
            preview_target("/api/rooms/r1/ports/8000/a/b"),
            Some(("r1", "8000"))
        );
        assert_eq!(
            preview_target("/api/rooms/r1/ports/8000"),
            Some(("r1", "8000"))
        );
        assert_eq!(preview_target("/api/rooms/r1/files/ports/8000"), None);
        assert!(is_tunnel("/api/rooms/r1/tunnel/5432"));
        assert!(!is_tunnel("/api/rooms/r1/files/tunnel/5432"));
        assert!(!is_tunnel("/api/rooms/r1/tunnel/5432/ws"));
        assert!(checked("r1", "0").is_err());
        assert!(checked("r1", "65536").is_err());
        assert_eq!(checked("r1", "8000").ok(), Some(8000));
    }

    #[test]
    fn credentials_are_per_room_and_port_and_not_the_token() {
        let a = credential("s3cret", "r1", "8000");
        assert_ne!(a, credential("s3cret", "r1", "8001"));
        assert_ne!(a, credential("s3cret", "r2", "8000"));
        assert_ne!(a, credential("other", "r1", "8000"));
        assert!(!a.contains("s3cret"));
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            format!("theme=dark; {COOKIE_NAME}={a}").parse().unwrap(),
        );
        let given = cookie_credential(&headers).unwrap();
        assert!(is_credential(&given, "s3cret", "r1", "8000"));
        assert!(!is_credential(&given, "s3cret", "r1", "8001"));
        let invite = crate::protocol::Invite {
            id: "i2".into(),
            role: crate::protocol::RoomRole::Viewer,
            name: None,
            expires_at: 0,
            created_at: 0,
            by: String::new(),
        };
        let value = cookie_value(&Access::Invite(invite), "duet_inv_x", "r1", "8000");
        let (id, tag) = value.split_once('.').unwrap();
        assert_eq!(id, "i2");
        assert!(is_credential(tag, &token_hash("duet_inv_x"), "r1", "8000"));
        assert!(!value.contains("duet_inv_x"));
    }

    #[test]
    fn the_token_leaves_the_query() {
        assert_eq!(without_token("token=x"), None);
        assert_eq!(without_token("a=1&token=x&b=2").as_deref(), Some("a=1&b=2"));
        assert_eq!(without_token("tokens=1").as_deref(), Some("tokens=1"));
        assert_eq!(without_token("%74oken=x&a=1").as_deref(), Some("a=1"));
        assert!(has_token("a=1&%74ok%65n=x") && !has_token("a=token"));
    }
}
