//! A room's ports, reached through the backend (docs/protocol.md
//! "Background processes and ports"): the HTTP preview (preview.rs), the
//! browser's credential for it (this file), each preview's own origin
//! (hosts.rs names them, site.rs serves them, ticket.rs carries a browser
//! there), and the tunnel (tunnel.rs).
//! Both connect through `Sandbox::port_connect`, which reaches only the
//! sandbox's own loopback.

mod cookies;
mod hosts;
mod preview;
mod site;
mod ticket;
mod tunnel;

pub(crate) use hosts::PreviewHosts;
pub(crate) use preview::{bare, preview};
pub(crate) use site::by_host;
pub(crate) use tunnel::tunnel;

use super::auth::Access;
use super::errors::ApiError;
use super::http::room_details;
use crate::protocol::Details;
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
    Ok(handle.sandbox.port_connect(port).await?)
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

/// What a `duet_preview` cookie opens on `room`'s `port` (`token`: the
/// server's): the server's access, or its invite's while that is usable.
pub(crate) async fn cookie_access(
    app: &super::router::App,
    token: &str,
    room: &str,
    port: &str,
    cookie: &str,
) -> Option<Access> {
    match cookie.split_once('.') {
        None => is_credential(cookie, token, room, port).then_some(Access::Server),
        Some((invite_id, tag)) => {
            let row = usable_invite(app, room, invite_id).await?;
            is_credential(tag, &row.token_hash, room, port).then_some(Access::Invite(row.invite))
        }
    }
}

/// Invite `invite_id` of `room` while it can be used (neither revoked nor
/// expired); `None` too when the store cannot answer. What a preview's
/// cookie or ticket made from an invite stands on.
pub(crate) async fn usable_invite(
    app: &super::router::App,
    room: &str,
    invite_id: &str,
) -> Option<super::store_access::InviteRow> {
    let row = app
        .registry
        .shared
        .store
        .invite(room.to_string(), invite_id.to_string())
        .await
        .ok()??;
    row.usable().then_some(row)
}

/// Whether a query parameter (`name=value`, as sent) is named `name`,
/// however that is encoded.
fn is_param(pair: &str, name: &str) -> bool {
    url::form_urlencoded::parse(pair.as_bytes())
        .next()
        .is_some_and(|(given, _)| given == name)
}

/// The values of the query's parameters named `name`.
pub(crate) fn query_values(query: &str, name: &str) -> Vec<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .filter(|(given, _)| given == name)
        .map(|(_, value)| value.into_owned())
        .collect()
}

/// `query` without its parameters named one of `names` (`None` when
/// nothing is left), the others as they were written.
pub(crate) fn without_params(query: &str, names: &[&str]) -> Option<String> {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !names.iter().any(|name| is_param(pair, name)))
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// `query` without its `token` parameters (`None` when nothing is left).
pub(crate) fn without_token(query: &str) -> Option<String> {
    without_params(query, &["token"])
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
    }

    #[test]
    fn the_token_leaves_the_query() {
        assert_eq!(without_token("token=x"), None);
        assert_eq!(without_token("a=1&token=x&b=2").as_deref(), Some("a=1&b=2"));
        assert_eq!(without_token("tokens=1").as_deref(), Some("tokens=1"));
        assert_eq!(without_token("%74oken=x&a=1").as_deref(), Some("a=1"));
        assert_eq!(
            query_values("a=1&%74ok%65n=x&duet_ticket=t", "token"),
            ["x"]
        );
        assert_eq!(
            without_params("a=1&duet_ticket=t&token=x", &["token", "duet_ticket"]).as_deref(),
            Some("a=1")
        );
    }
}
