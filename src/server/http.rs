//! The HTTP endpoints of docs/protocol.md: each checks the room id and its body
//! before anything is touched, then asks the room's actor.

use super::auth::{Access, Caller};
use super::errors::Path;
use super::errors::{ApiError, JsonObject, add_detail};
use super::ops::{self, Method, Reply, Verb};
use super::router::App;
use crate::protocol::{Details, MessagesPage, PAGE_DEFAULT, PAGE_MAX, valid_room_id};
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, post};
use axum::{Extension, Json};
use std::sync::Arc;

/// The message of a bad room id.
pub(crate) const ROOM_RULE: &str =
    "must be 1-63 characters of A-Z a-z 0-9 _ -, the first and last a letter or digit";

/// Problems of a room id, as `details`.
pub(crate) fn room_details(room: &str) -> Details {
    let mut details = Details::new();
    if !valid_room_id(room) {
        add_detail(&mut details, "room", ROOM_RULE);
    }
    details
}

/// `GET /health`
pub(crate) async fn health() -> &'static str {
    "ok"
}

/// Validates and performs operation `method` on `room` for a caller
/// with `access`.
async fn run_op(
    app: Arc<App>,
    room: String,
    method: Method,
    access: Access,
    headers: axum::http::HeaderMap,
    body: Result<JsonObject, ApiError>,
) -> Result<Reply, ApiError> {
    let details = room_details(&room);
    // A bad room id is the answer even when the body is bad too.
    let JsonObject(obj) = match body {
        Ok(body) => body,
        Err(e) if details.is_empty() => return Err(e),
        Err(_) => return Err(ApiError::invalid(details)),
    };
    let caller = Caller::new(None, access, None).reached_by(&headers);
    let request = ops::parse(method, &obj, details, caller)?;
    app.registry.room(&room).await?.perform(request).await
}

/// The route of operation `method` below `/api/rooms/{room}`; a path's
/// `{id}` becomes the body's field it names (`processId`, `checkpointId`).
pub(crate) fn operation(method: Method, verb: Verb) -> MethodRouter<Arc<App>> {
    let id_field = method.id_field().unwrap_or("processId");
    let handler = move |State(app): State<Arc<App>>,
                        Extension(access): Extension<Access>,
                        Path(params): Path<std::collections::BTreeMap<String, String>>,
                        headers: axum::http::HeaderMap,
                        body: Result<JsonObject, ApiError>| {
        let room = params.get("room").cloned().unwrap_or_default();
        let body = body.map(|JsonObject(mut obj)| {
            if let Some(id) = params.get("id") {
                obj.insert(id_field.into(), id.clone().into());
            }
            JsonObject(obj)
        });
        run_op(app, room, method, access, headers, body)
    };
    match verb {
        Verb::Post => post(handler),
        Verb::Delete => delete(handler),
    }
}

/// The `before` and `limit` of a page (`/messages`, `/execs`), or the
/// problems with them; `prefix` starts the ids (`x` for commands).
fn page_query(
    query: Option<&str>,
    prefix: &str,
    what: &str,
    mut details: Details,
) -> Result<(Option<String>, usize), ApiError> {
    let (mut before, mut limit) = (None, PAGE_DEFAULT);
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "before" => {
                let digits = value.strip_prefix(prefix).unwrap_or("");
                if !digits.is_empty()
                    && digits.len() <= 20
                    && digits.bytes().all(|b| b.is_ascii_digit())
                {
                    before = Some(value.into_owned());
                } else {
                    add_detail(&mut details, "before", format!("must be {what}"));
                }
            }
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=PAGE_MAX).contains(&n) => limit = n,
                _ => add_detail(
                    &mut details,
                    "limit",
                    "must be a whole number from 1 to 100",
                ),
            },
            _ => {}
        }
    }
    if details.is_empty() {
        Ok((before, limit))
    } else {
        Err(ApiError::invalid(details))
    }
}

/// `GET /api/rooms/{room}/messages?before&limit`
pub(crate) async fn messages(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<MessagesPage>, ApiError> {
    let (before, limit) = page_query(query.as_deref(), "", "a message id", room_details(&room))?;
    // A stored room is loaded first: loading notes a turn cut off by a crash.
    if let Ok(true) = app.registry.shared.store.has_room(room.clone()).await {
        app.registry.room(&room).await?.ready().await;
    }
    let (messages, has_more) = app
        .registry
        .shared
        .store
        .page(room, before, limit)
        .await
        .map_err(|e| ApiError::internal(format!("the messages could not be read: {e}")))?;
    Ok(Json(MessagesPage { messages, has_more }))
}

/// Unknown paths: 404 in plain text.
pub(crate) async fn not_found() -> Response {
    (axum::http::StatusCode::NOT_FOUND, "not found").into_response()
}

/// Known paths with another method: 405 as JSON.
pub(crate) async fn method_not_allowed() -> Response {
    ApiError::method_not_allowed().into_response()
}

/// `GET /api/rooms/{room}/execs?before&limit`: the room's commands, a page.
pub(crate) async fn execs(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<crate::protocol::ExecsPage>, ApiError> {
    let (before, limit) = page_query(query.as_deref(), "x", "a command id", room_details(&room))?;
    let (execs, has_more) = app
        .registry
        .shared
        .store
        .page_execs(room, before, limit)
        .await
        .map_err(|e| ApiError::internal(format!("the commands could not be read: {e}")))?;
    Ok(Json(crate::protocol::ExecsPage { execs, has_more }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_queries_are_checked() {
        assert_eq!(
            page_query(None, "", "a message id", Details::new()).unwrap(),
            (None, 50)
        );
        assert_eq!(
            page_query(
                Some("before=000000000007&limit=100"),
                "",
                "a message id",
                Details::new()
            )
            .unwrap(),
            (Some("000000000007".into()), 100)
        );
        let err = page_query(
            Some("limit=101&before=x"),
            "",
            "a message id",
            Details::new(),
        )
        .unwrap_err();
        let details = err.body.details.unwrap();
        assert!(details.contains_key("limit") && details.contains_key("before"));
        assert!(page_query(Some("limit=abc"), "", "a message id", Details::new()).is_err());
        assert!(page_query(Some("limit=0"), "", "a message id", Details::new()).is_err());
        let commands = page_query(
            Some("before=x00000000003"),
            "x",
            "a command id",
            Details::new(),
        );
        assert_eq!(commands.unwrap(), (Some("x00000000003".into()), 50));
        let err = page_query(
            Some("before=00000000003"),
            "x",
            "a command id",
            Details::new(),
        );
        assert_eq!(
            err.unwrap_err().body.details.unwrap()["before"],
            ["must be a command id"]
        );
    }
}
