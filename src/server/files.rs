//! `GET` and `PUT /api/rooms/{room}/files/{path}`: files in and out of a
//! room's workspace (docs/protocol.md "Files"). The sandbox module does the
//! path resolution that never leaves the workspace.

use super::errors::ApiError;
use super::errors::Path;
use super::http::room_details;
use super::router::App;
use crate::protocol::{FileResponse, MAX_FILE_BODY};
use crate::sandbox::files::FileError;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

fn file_error(e: FileError) -> Response {
    match e {
        FileError::BadPath(message) => ApiError::field("path", message).into_response(),
        FileError::NotFound => (StatusCode::NOT_FOUND, "not found").into_response(),
        FileError::Full => (
            StatusCode::INSUFFICIENT_STORAGE,
            Json(serde_json::json!({"error": "the room's disk is full"})),
        )
            .into_response(),
        FileError::Io(message) => ApiError::internal(message).into_response(),
    }
}

/// Checks the room and the path before anything is touched.
fn check(room: &str, path: &str) -> Result<(), ApiError> {
    let mut details = room_details(room);
    if let Err(FileError::BadPath(message)) = crate::sandbox::files::components(path) {
        details.entry("path".into()).or_default().push(message);
    }
    if details.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(details))
    }
}

/// `GET /api/rooms/{room}/files/{path}`
pub(crate) async fn get_file(
    State(app): State<Arc<App>>,
    Path((room, path)): Path<(String, String)>,
) -> Response {
    if let Err(e) = check(&room, &path) {
        return e.into_response();
    }
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle.sandbox.read_file(path).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Err(e) => file_error(e),
    }
}

/// `PUT /api/rooms/{room}/files/{path}` (body: the bytes)
pub(crate) async fn put_file(
    State(app): State<Arc<App>>,
    Path((room, path)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(e) = check(&room, &path) {
        return e.into_response();
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_FILE_BODY) {
        return ApiError::too_large().into_response();
    }
    let bytes = match axum::body::to_bytes(body, MAX_FILE_BODY).await {
        Ok(b) => b,
        Err(_) => return ApiError::too_large().into_response(),
    };
    let handle = match app.registry.room(&room).await {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    match handle.sandbox.write_file(path.clone(), bytes).await {
        Ok(size) => Json(FileResponse { path, size }).into_response(),
        Err(e) => file_error(e),
    }
}
