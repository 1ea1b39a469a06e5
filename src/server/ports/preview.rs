//! The HTTP preview of a sandbox port: `ANY /api/rooms/{room}/ports/{port}/…`
//! is sent on to `http://localhost:{port}/…` inside the sandbox over a
//! connection of its own (HTTP/1.1, WebSocket upgrades included), with
//! every credential taken off first. A browser trades `?token=` for a
//! cookie that opens this preview only.

use super::{COOKIE_NAME, checked, cookie_credential, cookie_value, has_token, without_token};
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

/// `ANY /api/rooms/{room}/ports/{port}/{path…}`
pub(crate) async fn preview(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path(params): Path<BTreeMap<String, String>>,
    mut req: Request,
) -> Result<Response, ApiError> {
    let (room, port_text) = (param(&params, "room"), param(&params, "port"));
    let port = checked(room, port_text)?;
    let prefix = format!("/api/rooms/{room}/ports/{port_text}");
    let query = req.uri().query().map(str::to_string);
    let has_token = query.as_deref().is_some_and(has_token);
    let upgrade = wants_upgrade(req.headers());
    // A page is traded for the cookie; a WebSocket or a form cannot follow
    // the redirect, so it goes on with the token taken off.
    let page = matches!(*req.method(), Method::GET | Method::HEAD) && !upgrade;
    let action = if page {
        Action::PreviewRead
    } else {
        Action::UsePort
    };
    crate::server::access::check(access.role(), action)?;
    // Revoked, expired or demoted below `action`: the exchange is cut.
    let mut lost = Box::pin(Guard::new(&app.registry.shared, room, &access, action).lost());
    if let Some(query) = query.as_deref().filter(|_| has_token && page) {
        let cookie = app.token.as_deref().map(|_| (&access, given_token(query)));
        return Ok(trade_token(cookie, room, port_text, req.uri(), query));
    }
    let query = query.and_then(|q| without_token(&q));
    let stream = super::connect(&app, room, port).await?;
    let rest = req
        .uri()
        .path()
        .strip_prefix(&prefix)
        .unwrap_or("/")
        .to_string();
    let target = match query.as_deref() {
        Some(q) => format!("{rest}?{q}"),
        None => rest,
    };
    let client_upgrade = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
    let (mut parts, body) = req.into_parts();
    let forwarded_host = parts.headers.get(header::HOST).cloned();
    scrub(&mut parts.headers, upgrade);
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
    set(
        &mut parts.headers,
        HeaderName::from_static("x-forwarded-prefix"),
        &prefix,
    );
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
    Ok(response.map(|body| cut_when(Body::new(body), lost)))
}

/// The `token` a query carries (the middleware checked it).
fn given_token(query: &str) -> String {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The answer to `?token=`: 303 to the same URL without it, with the
/// preview's cookie for the caller's access and token when the server
/// has a token (the middleware checked it).
fn trade_token(
    cookie: Option<(&Access, String)>,
    room: &str,
    port: &str,
    uri: &Uri,
    query: &str,
) -> Response {
    let mut location = uri.path().to_string();
    if let Some(rest) = without_token(query) {
        location.push('?');
        location.push_str(&rest);
    }
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    if let Some((access, token)) = cookie {
        let cookie = format!(
            "{COOKIE_NAME}={}; Path=/api/rooms/{room}/ports/{port}/; HttpOnly; SameSite=Strict",
            cookie_value(access, &token, room, port)
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
    }
    response
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
