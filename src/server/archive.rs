//! `PUT` and `GET /api/rooms/{room}/archive/{path}` and `GET
//! /api/rooms/{room}/diff` (docs/protocol.md "Archives"): a folder in and
//! out as one streamed tar, and what changed since a push (or a
//! checkpoint). The sandbox unpacks, packs and compares; the room takes
//! the push's checkpoint and stores its record.

use super::access::Action;
use super::auth::{Access, Caller};
use super::errors::{ApiError, Path, add_detail};
use super::http::room_details;
use super::router::App;
use crate::protocol::{Checkpoint, Details, PushResponse, name_problem};
use crate::sandbox::SandboxError;
use crate::sandbox::files::FileBody;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::sync::Arc;

/// The query's values of `key`, in order.
fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// A folder path (empty: the workspace); its problem, if any, in `details`.
fn check_folder(details: &mut Details, path: &str) {
    if !path.trim_matches('/').is_empty()
        && let Err(SandboxError::BadPath(message)) =
            crate::sandbox::files::components(path.trim_end_matches('/'))
    {
        add_detail(details, "path", message);
    }
}

/// The folder as the workspace names it (no `./`, no trailing `/`).
fn shown(path: &str) -> String {
    crate::sandbox::files::components(path.trim_end_matches('/'))
        .map(|parts| parts.join("/"))
        .unwrap_or_default()
}

/// A missing folder is the plain-text 404 of any unknown path.
fn archive_error(e: SandboxError) -> Response {
    match e {
        SandboxError::NoFile => (StatusCode::NOT_FOUND, "not found").into_response(),
        e => ApiError::from(e).into_response(),
    }
}

/// The request's body as it arrives; a connection that breaks is an error
/// of the body (the push is then undone).
fn pushed_body(body: Body) -> FileBody {
    use futures_util::StreamExt;
    Box::pin(
        body.into_data_stream().map(|chunk| {
            chunk.map_err(|e| SandboxError::Failed(format!("the upload broke off: {e}")))
        }),
    )
}

/// `PUT /api/rooms/{room}/archive/`: into the workspace itself.
pub(crate) async fn put_root(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path(room): Path<String>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    put(&app, &access, &room, String::new(), query, body).await
}

/// `PUT /api/rooms/{room}/archive/{path}?userId=NAME[&delete=1]`
pub(crate) async fn put_folder(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path((room, path)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    put(&app, &access, &room, path, query, body).await
}

async fn put(
    app: &App,
    access: &Access,
    room: &str,
    path: String,
    query: Option<String>,
    body: Body,
) -> Response {
    let mut details = room_details(room);
    check_folder(&mut details, &path);
    let given = query_values(query.as_deref(), "userId")
        .pop()
        .map(|name| name.trim().to_string());
    if let Some(problem) = given.as_deref().and_then(name_problem) {
        add_detail(&mut details, "userId", problem);
    }
    let mirror = match query_values(query.as_deref(), "delete").pop().as_deref() {
        None | Some("0") | Some("false") => false,
        Some("1") | Some("true") => true,
        Some(_) => {
            add_detail(&mut details, "delete", "must be 1 (or 0)");
            false
        }
    };
    if !details.is_empty() {
        return ApiError::invalid(details).into_response();
    }
    if let Err(e) = crate::server::access::check(access.role(), Action::WriteFiles) {
        return e.into_response();
    }
    let mut caller = Caller::new(None, access.clone(), None);
    if let Some(name) = given {
        caller.call_itself(name);
    }
    let by = caller.name_or_anonymous();
    let handle = match app.registry.room(room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let pushed = match handle
        .sandbox
        .archive_put(path.clone(), pushed_body(body), mirror)
        .await
    {
        Ok(pushed) => pushed,
        Err(e) => return archive_error(e),
    };
    let push = crate::server::room::Push {
        by,
        path: shown(&path),
        pushed,
    };
    let checkpoint: Option<Checkpoint> = match handle.pushed(push).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    Json(PushResponse {
        files: pushed.files,
        bytes: pushed.bytes,
        deleted: pushed.deleted,
        checkpoint,
    })
    .into_response()
}

/// `GET /api/rooms/{room}/archive/`: the workspace itself.
pub(crate) async fn get_root(State(app): State<Arc<App>>, Path(room): Path<String>) -> Response {
    get(&app, &room, String::new()).await
}

/// `GET /api/rooms/{room}/archive/{path}`
pub(crate) async fn get_folder(
    State(app): State<Arc<App>>,
    Path((room, path)): Path<(String, String)>,
) -> Response {
    get(&app, &room, path).await
}

async fn get(app: &App, room: &str, path: String) -> Response {
    let mut details = room_details(room);
    check_folder(&mut details, &path);
    if !details.is_empty() {
        return ApiError::invalid(details).into_response();
    }
    let handle = match app.registry.room(room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle.sandbox.archive_get(path).await {
        Ok(tar) => {
            let headers = [(header::CONTENT_TYPE, "application/x-tar")];
            (headers, Body::from_stream(tar)).into_response()
        }
        Err(e) => archive_error(e),
    }
}

/// `GET /api/rooms/{room}/diff[?from=CHECKPOINT][&path=P…]`
pub(crate) async fn diff(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let mut details = room_details(&room);
    let mut paths = Vec::new();
    for path in query_values(query.as_deref(), "path") {
        match crate::sandbox::files::components(path.trim_end_matches('/')) {
            Ok(parts) => paths.push(parts.join("/")),
            Err(SandboxError::BadPath(message)) => add_detail(&mut details, "path", message),
            Err(_) => {}
        }
    }
    let from = query_values(query.as_deref(), "from")
        .pop()
        .filter(|f| !f.is_empty());
    if !details.is_empty() {
        return ApiError::invalid(details).into_response();
    }
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let list = match handle.checkpoint_list().await {
        Ok(list) => list,
        Err(e) => return e.into_response(),
    };
    let checkpoint = match &from {
        Some(wanted) => list
            .iter()
            .rev()
            .find(|c| &c.id == wanted || &c.name == wanted),
        None => list.iter().rev().find(|c| is_push(&c.name)),
    };
    let Some(checkpoint) = checkpoint else {
        return match from {
            Some(wanted) => crate::server::room::unknown_checkpoint(&wanted).into_response(),
            None => ApiError::not_found(
                "no such checkpoint",
                "from",
                "the room has no push to compare with",
            )
            .into_response(),
        };
    };
    match handle.sandbox.diff(checkpoint.id.clone(), paths).await {
        Ok(text) => {
            let headers = [(header::CONTENT_TYPE, "text/plain; charset=utf-8")];
            (headers, text).into_response()
        }
        Err(SandboxError::NoCheckpoint) => {
            crate::server::room::unknown_checkpoint(&checkpoint.id).into_response()
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Whether a checkpoint's name is a push's (`push-N`).
fn is_push(name: &str) -> bool {
    name.strip_prefix("push-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
