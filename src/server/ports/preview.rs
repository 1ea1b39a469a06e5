//! The HTTP preview of a sandbox port: `ANY /api/rooms/{room}/ports/{port}/…`
//! is sent on to `http://localhost:{port}/…` inside the sandbox over a
//! connection of its own (HTTP/1.1, WebSocket upgrades included), with
//! every credential taken off first and only the body a role may send
//! (`forward`, which the preview's own origin uses too, site.rs). A
//! browser is sent to that origin instead: no app runs on Duet's.

use super::{COOKIE_NAME, checked, cookie_credential, without_token};
use crate::protocol::RoomRole;
use crate::server::access::Action;
use crate::server::auth::Access;
use crate::server::channel_guard::{Guard, cut_when};
use crate::server::errors::{ApiError, Path};
use crate::server::router::App;
use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Headers that belong to one connection, not to the request (RFC 9110
/// 7.6.1); an upgrade keeps `connection` and `upgrade`.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// `/api/rooms/{room}/ports/{port}` without its slash: 308 to it with one.
pub(crate) async fn bare(
    Path(params): Path<BTreeMap<String, String>>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (room, port) = (param(&params, "room"), param(&params, "port"));
    checked(room, port)?;
    let mut location = format!("{}/", uri.path());
    if let Some(query) = uri.query() {
        location.push('?');
        location.push_str(query);
    }
    Ok((
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, location)],
    )
        .into_response())
}

/// `ANY /api/rooms/{room}/ports/{port}/{path…}`: for the CLI and other
/// clients that send the token (never browsers: a browser is sent to the
/// preview's own origin, so that no app's page runs on Duet's).
pub(crate) async fn preview(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path(params): Path<BTreeMap<String, String>>,
    req: Request,
) -> Result<Response, ApiError> {
    // The path as sent: `/`, `api`, `rooms`, {room}, `ports`, {port}, the rest.
    let raw: Vec<&str> = req.uri().path().splitn(7, '/').collect();
    let room = param(&params, "room");
    // The port as sent: digits only (`%38000` is no port, as on the worker).
    let port_text = raw.get(5).copied().unwrap_or_default();
    let port = checked(room, port_text)?;
    let prefix = format!("/api/rooms/{room}/ports/{port_text}");
    let action = may_send(access.role(), &req)?;
    let page = action == Action::PreviewRead;
    let query = req.uri().query().and_then(without_token);
    let rest = format!("/{}", raw.get(6).copied().unwrap_or_default());
    let target = match query.as_deref() {
        Some(q) => format!("{rest}?{q}"),
        None => rest,
    };
    if from_browser(req.headers(), app.token.is_some()) {
        return elsewhere(&app, &access, room, port, &target, page).await;
    }
    let bodiless = crate::server::access::check(access.role(), Action::UsePort).is_err();
    let guard = Guard::new(&app.registry.shared, room, &access, action);
    forward(
        &app,
        room,
        port,
        Some(&prefix),
        target,
        req,
        bodiless,
        guard,
    )
    .await
}

/// Whether the request is a page's (a `GET` or `HEAD` that is not a
/// WebSocket upgrade): what a viewer may send.
pub(super) fn is_page(req: &Request) -> bool {
    matches!(*req.method(), Method::GET | Method::HEAD) && !wants_upgrade(req.headers())
}

/// What sending `req` to a port is (reading a page, or using the port), or
/// the refusal if `role` may not (a viewer sends pages only).
pub(super) fn may_send(role: RoomRole, req: &Request) -> Result<Action, ApiError> {
    let action = if is_page(req) {
        Action::PreviewRead
    } else {
        Action::UsePort
    };
    crate::server::access::check(role, action)?;
    Ok(action)
}

/// Whether a browser sent the request: it says where it comes from
/// (`Origin`, `Sec-Fetch-*`), or it has no bearer token where one is
/// needed (the token in the URL, a cookie).
fn from_browser(headers: &HeaderMap, token_needed: bool) -> bool {
    let says = headers.contains_key(header::ORIGIN)
        || headers
            .keys()
            .any(|name| name.as_str().starts_with("sec-fetch-"));
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer "));
    says || (!bearer && (token_needed || headers.contains_key(header::COOKIE)))
}

/// A browser's request on Duet's preview route: a page goes to the
/// preview's own origin (`target` there, with a ticket for its cookie);
/// anything else is refused.
async fn elsewhere(
    app: &App,
    access: &Access,
    room: &str,
    port: u16,
    target: &str,
    page: bool,
) -> Result<Response, ApiError> {
    let Some(hosts) = app.registry.shared.previews.as_ref() else {
        return Err(ApiError::forbidden(
            "origin",
            "browsers open a port's preview at an origin of its own, and this server has none: \
             start it with --preview-host HOST",
        ));
    };
    let url = hosts.url(room, port);
    if !page {
        return Err(ApiError::forbidden(
            "origin",
            format!("a port's preview opens at an origin of its own: {url}"),
        ));
    }
    let mut location = format!("{}{target}", url.trim_end_matches('/'));
    if let Some(token) = app.token.as_deref() {
        let ticket = super::ticket::issue(app, token, access, room, port)
            .await
            .ok_or_else(ApiError::unauthorized)?;
        location.push(if target.contains('?') { '&' } else { '?' });
        location.push_str(&format!("{}={ticket}", super::site::TICKET));
    }
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response())
}

/// Sends `req` on to `port` in `room`'s sandbox as `target` (path and
/// query), on a connection of its own that carries this one request:
/// without its body when `bodiless` (a viewer's), with `X-Forwarded-Prefix:
/// prefix` when the preview lives below one. What it carries is cut when
/// `guard`'s credential is revoked, expires or is demoted below the request.
#[allow(clippy::too_many_arguments)]
pub(super) async fn forward(
    app: &App,
    room: &str,
    port: u16,
    prefix: Option<&str>,
    target: String,
    mut req: Request,
    bodiless: bool,
    guard: Guard,
) -> Result<Response, ApiError> {
    let mut lost = Box::pin(guard.lost());
    let upgrade = wants_upgrade(req.headers());
    let stream = super::connect(app, room, port).await?;
    let client_upgrade = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
    let (mut parts, body) = req.into_parts();
    let body = if bodiless { Body::empty() } else { body };
    let forwarded_host = parts.headers.get(header::HOST).cloned();
    scrub(&mut parts.headers, upgrade);
    if bodiless {
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    if !upgrade {
        // The app's connection carries this one request, nothing after it.
        set(&mut parts.headers, header::CONNECTION, "close");
    }
    set(
        &mut parts.headers,
        header::HOST,
        &format!("localhost:{port}"),
    );
    if let Some(host) = forwarded_host {
        parts
            .headers
            .insert(HeaderName::from_static("x-forwarded-host"), host);
    }
    let prefix_header = HeaderName::from_static("x-forwarded-prefix");
    match prefix {
        Some(prefix) => set(&mut parts.headers, prefix_header, prefix),
        None => drop(parts.headers.remove(prefix_header)),
    }
    set(
        &mut parts.headers,
        HeaderName::from_static("x-forwarded-proto"),
        "http",
    );
    parts.uri = target
        .parse()
        .map_err(|_| ApiError::field("path", "is not a valid request target"))?;
    parts.version = axum::http::Version::HTTP_11;
    parts.extensions = Default::default();
    let upstream = axum::http::Request::from_parts(parts, body);

    let broken = |e: hyper::Error| {
        ApiError::bad_gateway(format!(
            "the app on port {port} in the sandbox broke off: {e}"
        ))
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(broken)?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let mut response = tokio::select! {
        response = sender.send_request(upstream) => response.map_err(broken)?,
        _ = &mut lost => return Err(ApiError::unauthorized()),
    };
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        let app_upgrade = hyper::upgrade::on(&mut response);
        if let Some(client_upgrade) = client_upgrade {
            tokio::spawn(async move {
                if let (Ok(client), Ok(app)) = (client_upgrade.await, app_upgrade.await) {
                    let (mut client, mut app) = (TokioIo::new(client), TokioIo::new(app));
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut app) => {}
                        _ = lost => {}
                    }
                }
            });
        }
        return Ok(response.map(|_| Body::empty()));
    }
    scrub(response.headers_mut(), false);
    super::cookies::confine(response.headers_mut());
    Ok(response.map(|body| cut_when(Body::new(body), lost)))
}

/// Whether the request asks to switch protocols (a WebSocket).
fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Takes off what must not go through: hop-by-hop headers (an upgrade
/// keeps its own), and every credential of Duet's: `Authorization` and
/// the preview cookie (other cookies are the app's).
fn scrub(headers: &mut HeaderMap, upgrade: bool) {
    for name in HOP_BY_HOP {
        if !(upgrade && (name == "connection" || name == "upgrade")) {
            headers.remove(name);
        }
    }
    headers.remove(header::AUTHORIZATION);
    if cookie_credential(headers).is_some() || headers.contains_key(header::COOKIE) {
        let kept: Vec<String> = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .map(str::trim)
            .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(COOKIE_NAME))
            .map(str::to_string)
            .collect();
        headers.remove(header::COOKIE);
        if !kept.is_empty()
            && let Ok(value) = HeaderValue::from_str(&kept.join("; "))
        {
            headers.insert(header::COOKIE, value);
        }
    }
}

fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}

fn param<'a>(params: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    params.get(key).map(String::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_taken_off_and_app_cookies_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer s3".parse().unwrap());
        headers.insert(
            header::COOKIE,
            "a=1; duet_preview=xyz; b=2".parse().unwrap(),
        );
        headers.insert(header::CONNECTION, "keep-alive".parse().unwrap());
        scrub(&mut headers, false);
        assert!(headers.get(header::AUTHORIZATION).is_none());
        assert!(headers.get(header::CONNECTION).is_none());
        assert_eq!(headers.get(header::COOKIE).unwrap(), "a=1; b=2");
        let mut only_ours = HeaderMap::new();
        only_ours.insert(header::COOKIE, "duet_preview=xyz".parse().unwrap());
        scrub(&mut only_ours, false);
        assert!(only_ours.get(header::COOKIE).is_none());
    }
}
