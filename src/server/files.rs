//! `GET`, `PUT` and `DELETE /api/rooms/{room}/files/{path}`: files in and
//! out of a room's workspace, and a folder's listing (a path ending in
//! `/`; docs/protocol.md "Files"); an upload and a deletion are kept as
//! records in the room. The sandbox module does the path resolution that
//! never leaves the workspace.

use super::access::Action;
use super::auth::{Access, Caller};
use super::errors::Path;
use super::errors::{ApiError, add_detail};
use super::http::room_details;
use super::router::App;
use crate::protocol::{
    DeleteResponse, Details, Event, FileResponse, ListingResponse, MAX_FILE_BODY, name_problem,
};
use crate::sandbox::SandboxError;
use crate::sandbox::files::{FileBody, FileReader};
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::sync::Arc;

/// A missing file is the plain-text 404 of any unknown path; the rest is
/// answered as every sandbox error.
fn file_error(e: SandboxError) -> Response {
    match e {
        SandboxError::NoFile => (StatusCode::NOT_FOUND, "not found").into_response(),
        e => ApiError::from(e).into_response(),
    }
}

/// How long a file may take to open before the answer says so: a stalled
/// disk holds one request, not the server's threads for ever.
const OPEN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How much of a file one chunk of an answer carries.
const CHUNK: usize = 64 * 1024;

/// A file's bytes as an answer's body, read a chunk at a time (never the
/// whole file in memory); at most the length it had when opened.
fn file_body(reader: FileReader) -> Body {
    use tokio::io::AsyncReadExt;
    let file = tokio::fs::File::from_std(reader.file).take(reader.len);
    let chunks = futures_util::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = bytes::BytesMut::with_capacity(CHUNK);
        match file.read_buf(&mut buf).await {
            Ok(0) => None,
            Ok(_) => Some((Ok(buf.freeze()), Some(file))),
            Err(e) => Some((Err(e), None)),
        }
    });
    Body::from_stream(chunks)
}

/// An upload's body as it arrives, refused past `MAX_FILE_BODY` bytes.
fn upload_body(body: Body) -> FileBody {
    use futures_util::StreamExt;
    let mut seen = 0usize;
    let chunks = body.into_data_stream().map(move |chunk| {
        let chunk =
            chunk.map_err(|e| SandboxError::Failed(format!("the upload broke off: {e}")))?;
        seen = seen.saturating_add(chunk.len());
        if seen > MAX_FILE_BODY {
            return Err(SandboxError::TooLarge);
        }
        Ok(chunk)
    });
    Box::pin(chunks)
}

/// Checks the room and the path before anything is touched; answers the
/// path's problems in `details`.
fn check(room: &str, path: &str) -> Details {
    let mut details = room_details(room);
    if let Err(SandboxError::BadPath(message)) = crate::sandbox::files::components(path) {
        add_detail(&mut details, "path", message);
    }
    details
}

/// The 400 of `details`, if they hold a problem.
fn problems(details: Details) -> Result<(), ApiError> {
    if details.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(details))
    }
}

/// Who uploads or deletes: `?userId=NAME` (trimmed), "anonymous" without
/// one, or the name the caller's invite fixes.
fn uploader(query: Option<&str>, details: &mut Details, access: &Access) -> String {
    let given = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(key, _)| key == "userId")
        .map(|(_, value)| value.trim().to_string());
    if let Some(problem) = given.as_deref().and_then(name_problem) {
        add_detail(details, "userId", problem);
    }
    let mut caller = Caller::new(None, access.clone(), None);
    if let Some(name) = given {
        caller.call_itself(name);
    }
    caller.name_or_anonymous()
}

/// The 400 of `details`, else the 403 when the caller may not change files.
fn writable(details: Details, access: &Access) -> Result<(), ApiError> {
    problems(details)?;
    crate::server::access::check(access.role(), Action::WriteFiles)
}

/// `GET /api/rooms/{room}/files/`: the workspace's own listing.
pub(crate) async fn list_root(State(app): State<Arc<App>>, Path(room): Path<String>) -> Response {
    list(&app, &room, String::new()).await
}

/// `DELETE /api/rooms/{room}/files/`: the workspace itself is not deleted.
pub(crate) async fn delete_root(Path(room): Path<String>) -> Response {
    let mut details = room_details(&room);
    add_detail(&mut details, "path", "must name a file under /workspace");
    ApiError::invalid(details).into_response()
}

/// A folder's entries (`path` empty for the workspace).
async fn list(app: &App, room: &str, path: String) -> Response {
    let mut details = room_details(room);
    if !path.is_empty()
        && let Err(SandboxError::BadPath(message)) = crate::sandbox::files::components(&path)
    {
        add_detail(&mut details, "path", message);
    }
    if let Err(e) = problems(details) {
        return e.into_response();
    }
    let handle = match app.registry.room(room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle.sandbox.list_dir(path).await {
        Ok(entries) => Json(ListingResponse { entries }).into_response(),
        Err(e) => file_error(e),
    }
}

/// `GET /api/rooms/{room}/files/{path}`; `{dir}/` lists a folder.
pub(crate) async fn get_file(
    State(app): State<Arc<App>>,
    Path((room, path)): Path<(String, String)>,
) -> Response {
    if let Some(dir) = path.strip_suffix('/') {
        return list(&app, &room, dir.to_string()).await;
    }
    if let Err(e) = problems(check(&room, &path)) {
        return e.into_response();
    }
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let opened = tokio::time::timeout(OPEN_LIMIT, handle.sandbox.open_file(path)).await;
    match opened {
        Ok(Ok(reader)) => {
            let len = reader.len;
            let headers = [
                (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                (header::CONTENT_LENGTH, len.to_string()),
            ];
            (headers, file_body(reader)).into_response()
        }
        Ok(Err(e)) => file_error(e),
        Err(_) => ApiError::internal("the file did not open in time").into_response(),
    }
}

/// Why a `PUT` to a path that ends in `/` is refused.
const NAMES_A_FOLDER: &str = "names a folder (it ends in /), not a file";

/// `PUT /api/rooms/{room}/files/{path}?userId=NAME` (body: the bytes)
pub(crate) async fn put_file(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path((room, path)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut details = check(&room, &path);
    if path.ends_with('/') {
        add_detail(&mut details, "path", NAMES_A_FOLDER);
    }
    let by = uploader(query.as_deref(), &mut details, &access);
    if let Err(e) = writable(details, &access) {
        return e.into_response();
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_FILE_BODY) {
        return ApiError::too_large().into_response();
    }
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle
        .sandbox
        .write_file(path.clone(), upload_body(body))
        .await
    {
        Ok(size) => {
            let event = Event::Upload {
                by,
                path: shown(&path),
                size,
            };
            handle.record(event).await;
            Json(FileResponse { path, size }).into_response()
        }
        Err(e) => file_error(e),
    }
}

/// `DELETE /api/rooms/{room}/files/{path}?userId=NAME`: a file, a
/// symlink or a folder with everything in it.
pub(crate) async fn delete_file(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path((room, path)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let mut details = check(&room, &path);
    let by = uploader(query.as_deref(), &mut details, &access);
    if let Err(e) = writable(details, &access) {
        return e.into_response();
    }
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle.sandbox.delete_path(path.clone()).await {
        Ok(()) => {
            let event = Event::Delete {
                by,
                path: shown(&path),
            };
            handle.record(event).await;
            Json(DeleteResponse { deleted: true }).into_response()
        }
        Err(e) => file_error(e),
    }
}

/// A path as the workspace names it (no `./`, no `//`, no trailing `/`).
fn shown(path: &str) -> String {
    crate::sandbox::files::components(path)
        .map(|parts| parts.join("/"))
        .unwrap_or_else(|_| path.to_string())
}
