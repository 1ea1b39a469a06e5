//! A preview at its own origin (hosts.rs names them): a request whose
//! `Host` is a preview host is the app's, whole path space and all; it
//! never reaches Duet's API. Its credential is the server's token, an
//! invite's, a ticket from Duet's own preview route (ticket.rs), or the
//! `duet_preview` cookie of that origin, which those are traded for. A
//! request that a page of another origin sends is refused, so one
//! preview's pages cannot act on another's.

use super::hosts::PreviewHosts;
use super::preview::{forward, may_send};
use super::{COOKIE_NAME, cookie_access, cookie_credential, query_values, without_params};
use crate::server::access::Action;
use crate::server::auth::{Access, invite_access, same};
use crate::server::channel_guard::Guard;
use crate::server::errors::ApiError;
use crate::server::router::App;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::{self, AUTHORIZATION, HOST, HeaderMap, HeaderValue, ORIGIN};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The query parameter carrying a ticket.
pub(crate) const TICKET: &str = "duet_ticket";

/// Middleware, outermost: requests for a preview host are the preview's.
pub(crate) async fn by_host(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let Some(hosts) = app.registry.shared.previews.clone() else {
        return next.run(req).await;
    };
    let target = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| hosts.target(h));
    match target {
        None => next.run(req).await,
        Some(None) => {
            ApiError::field("host", "names no room and port of a preview").into_response()
        }
        Some(Some((room, port))) => serve(&app, &hosts, &room, port, req)
            .await
            .unwrap_or_else(IntoResponse::into_response),
    }
}

/// Serves `room`'s `port` at its own origin.
async fn serve(
    app: &App,
    hosts: &PreviewHosts,
    room: &str,
    port: u16,
    req: Request,
) -> Result<Response, ApiError> {
    if let Some(origin) = req.headers().get(ORIGIN) {
        let own = format!(
            "{}{}",
            if hosts.secure() {
                "https://"
            } else {
                "http://"
            },
            own_host(&req)
        );
        if !origin.to_str().unwrap_or("").eq_ignore_ascii_case(&own) {
            return Err(ApiError::forbidden(
                "origin",
                "a preview answers its own pages only, not another origin's",
            ));
        }
    }
    let query = req.uri().query().unwrap_or("").to_string();
    let access = access(app, room, port, req.headers(), &query)
        .await
        .ok_or_else(ApiError::unauthorized)?;
    let action = may_send(access.role(), &req)?;
    let page = action == Action::PreviewRead;
    let traded = ["token", TICKET]
        .iter()
        .any(|name| !query_values(&query, name).is_empty());
    let kept = without_params(&query, &["token", TICKET]);
    let path = req.uri().path().to_string();
    let target = match kept.as_deref() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    if traded && page {
        let cookie = match app.token.as_deref() {
            Some(token) => cookie_for(app, token, &access, room, port, hosts.secure()).await,
            None => None,
        };
        return Ok(see_other(&target, cookie));
    }
    let bodiless = crate::server::access::check(access.role(), Action::UsePort).is_err();
    let guard = Guard::new(&app.registry.shared, room, &access, action);
    forward(app, room, port, None, target, req, bodiless, guard).await
}

/// The `Host` the request was sent to, lowercase.
fn own_host(req: &Request) -> String {
    req.headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// What the request's credential allows for `room`'s `port`, or `None`
/// (401): a ticket, the bearer token or `?token=`, the origin's cookie.
async fn access(
    app: &App,
    room: &str,
    port: u16,
    headers: &HeaderMap,
    query: &str,
) -> Option<Access> {
    let Some(token) = app.token.as_deref() else {
        return Some(Access::Server);
    };
    for ticket in query_values(query, TICKET) {
        if let Some(access) = super::ticket::redeem(app, token, room, port, &ticket).await {
            return Some(access);
        }
    }
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|v| v.trim().to_string());
    let room_path = format!("/api/rooms/{room}/");
    for candidate in bearer.into_iter().chain(query_values(query, "token")) {
        if same(&candidate, token) {
            return Some(Access::Server);
        }
        if let Some(access) = invite_access(app, &room_path, &candidate).await {
            return Some(access);
        }
    }
    let cookie = cookie_credential(headers)?;
    cookie_access(app, token, room, &port.to_string(), &cookie).await
}

/// The `Set-Cookie` of the origin's credential for `access`: host-only
/// (no `Domain`), so it goes to this preview's host and no other.
async fn cookie_for(
    app: &App,
    token: &str,
    access: &Access,
    room: &str,
    port: u16,
    secure: bool,
) -> Option<String> {
    let port = port.to_string();
    let value = match access {
        Access::Server => super::credential(token, room, &port),
        Access::Invite(invite) => {
            let key = super::ticket::invite_key(app, room, &invite.id).await?;
            format!("{}.{}", invite.id, super::credential(&key, room, &port))
        }
    };
    let secure = if secure { "; Secure" } else { "" };
    Some(format!(
        "{COOKIE_NAME}={value}; Path=/; HttpOnly; SameSite=Lax{secure}"
    ))
}

/// 303 to `location`, setting `cookie` if any.
fn see_other(location: &str, cookie: Option<String>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}
