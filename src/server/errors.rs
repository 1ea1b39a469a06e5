//! Error answers of docs/protocol.md (400 with per-field `details`, 401, 405,
//! 413, 500) and the JSON body extractor that produces the body errors.

use crate::protocol::{Details, ErrorBody, MAX_BODY};
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Map, Value};

/// An error answer: a status and the `{"error", "details"?}` body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) body: ErrorBody,
}

impl ApiError {
    /// 400 with the given per-field details.
    pub(crate) fn invalid(details: Details) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            body: ErrorBody {
                error: "invalid request".into(),
                details: Some(details),
                retry_after_ms: None,
            },
        }
    }

    /// 400 naming one field.
    pub(crate) fn field(field: &str, message: impl Into<String>) -> Self {
        Self::one_detail(
            StatusCode::BAD_REQUEST,
            "invalid request",
            field,
            message,
            None,
        )
    }

    /// An error answer without details.
    fn plain(status: StatusCode, error: impl Into<String>) -> Self {
        ApiError {
            status,
            body: ErrorBody {
                error: error.into(),
                details: None,
                retry_after_ms: None,
            },
        }
    }

    /// 500 saying what failed.
    pub(crate) fn internal(error: impl Into<String>) -> Self {
        Self::plain(StatusCode::INTERNAL_SERVER_ERROR, error)
    }

    /// 401: no token, or the wrong one.
    pub(crate) fn unauthorized() -> Self {
        Self::plain(StatusCode::UNAUTHORIZED, "unauthorized")
    }

    /// An error answer whose `details` name one field, and maybe when to
    /// try again.
    fn one_detail(
        status: StatusCode,
        error: &str,
        field: &str,
        message: impl Into<String>,
        retry_after_ms: Option<u64>,
    ) -> Self {
        let mut details = Details::new();
        details.insert(field.into(), vec![message.into()]);
        ApiError {
            status,
            body: ErrorBody {
                error: error.into(),
                details: Some(details),
                retry_after_ms,
            },
        }
    }

    /// 404 for a thing an rpc names that is not there, naming the field.
    pub(crate) fn not_found(error: &str, field: &str, message: impl Into<String>) -> Self {
        Self::one_detail(StatusCode::NOT_FOUND, error, field, message, None)
    }

    /// 409 naming why in `details.FIELD` (a room's cap reached).
    pub(crate) fn conflict(error: &str, field: &str, message: impl Into<String>) -> Self {
        Self::one_detail(StatusCode::CONFLICT, error, field, message, None)
    }

    /// 507: the room's disk has no room for it, saying why in `details.FIELD`.
    pub(crate) fn insufficient_storage(field: &str, message: impl Into<String>) -> Self {
        Self::one_detail(
            StatusCode::INSUFFICIENT_STORAGE,
            "the room's disk is full",
            field,
            message,
            None,
        )
    }

    /// 502: what the request goes to inside the sandbox is not there.
    pub(crate) fn bad_gateway(error: impl Into<String>) -> Self {
        Self::plain(StatusCode::BAD_GATEWAY, error)
    }

    /// 403 naming why in `details.FIELD` (a browser, a role).
    pub(crate) fn forbidden(field: &str, message: impl Into<String>) -> Self {
        Self::one_detail(StatusCode::FORBIDDEN, "forbidden", field, message, None)
    }

    /// 421: a `Host` this server does not answer (DNS rebinding).
    pub(crate) fn misdirected(message: impl Into<String>) -> Self {
        let status = StatusCode::MISDIRECTED_REQUEST;
        Self::one_detail(status, "misdirected request", "host", message, None)
    }

    /// 429: over a rate; `why` names the limit.
    pub(crate) fn rate_limited(wait: std::time::Duration, why: String) -> Self {
        let ms = Some(wait.as_millis().max(1) as u64);
        Self::one_detail(
            StatusCode::TOO_MANY_REQUESTS,
            "rate limited",
            "limit",
            why,
            ms,
        )
    }

    /// 503: the socket caps are reached; `why` says which.
    pub(crate) fn too_many_sockets(wait: std::time::Duration, why: String) -> Self {
        let ms = Some(wait.as_millis() as u64);
        let status = StatusCode::SERVICE_UNAVAILABLE;
        Self::one_detail(status, "too many sockets", "sockets", why, ms)
    }

    /// 413: a body over `MAX_BODY`.
    pub(crate) fn too_large() -> Self {
        Self::plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large")
    }

    /// 405: the path exists, the method does not.
    pub(crate) fn method_not_allowed() -> Self {
        Self::plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
    }

    /// The room is stopping (the server shuts down).
    pub(crate) fn room_gone() -> Self {
        Self::internal("the room stopped before answering")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self.body.retry_after_ms {
            // Retry-After is in whole seconds, rounded up.
            Some(ms) => {
                let secs = ms.div_ceil(1000).max(1).to_string();
                let header = [(axum::http::header::RETRY_AFTER, secs)];
                (self.status, header, Json(self.body)).into_response()
            }
            None => (self.status, Json(self.body)).into_response(),
        }
    }
}

/// The one mapping of the sandbox's errors to the contract's answers.
impl From<crate::sandbox::SandboxError> for ApiError {
    fn from(e: crate::sandbox::SandboxError) -> Self {
        use crate::sandbox::SandboxError as E;
        match e {
            E::BadPath(message) => Self::field("path", message),
            E::Member(message) => Self::field("member", message),
            E::NoFile => Self::plain(StatusCode::NOT_FOUND, "no such file"),
            // The room knows the checkpoint: its files went missing.
            E::NoCheckpoint => Self::internal("the checkpoint's files are gone"),
            E::DiskFull => Self::plain(StatusCode::INSUFFICIENT_STORAGE, e.to_string()),
            E::WontFit { .. } => Self::insufficient_storage("checkpoint", e.to_string()),
            E::TooLarge => Self::too_large(),
            E::NotListening(_) | E::PortUnreachable { .. } => Self::bad_gateway(e.to_string()),
            E::Start(_) | E::Destroyed | E::Unsupported | E::Failed(_) => {
                Self::internal(e.to_string())
            }
        }
    }
}

/// Adds `message` to `field` in `details`.
pub(crate) fn add_detail(details: &mut Details, field: &str, message: impl Into<String>) {
    details
        .entry(field.to_string())
        .or_default()
        .push(message.into());
}

/// Path segments (`{room}`, `{*path}`), like axum's `Path`, but a segment
/// that does not decode (a bad percent escape, invalid UTF-8) is a 400 with
/// `details` naming the segment, as every other bad field is.
#[derive(Debug)]
pub(crate) struct Path<T>(pub(crate) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        use axum::extract::path::{ErrorKind, Path as Segments};
        use axum::extract::rejection::PathRejection;
        match Segments::<T>::from_request_parts(parts, state).await {
            Ok(Segments(value)) => Ok(Path(value)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                let field = match e.kind() {
                    ErrorKind::InvalidUtf8InPathParam { key }
                    | ErrorKind::ParseErrorAtKey { key, .. }
                    | ErrorKind::DeserializeError { key, .. } => key.clone(),
                    _ => "path".to_string(),
                };
                Err(ApiError::field(
                    &field,
                    "is not a valid URL segment (bad percent-encoding or UTF-8)",
                ))
            }
            Err(e) => Err(ApiError::internal(e.body_text())),
        }
    }
}

/// A request body that is a JSON object (an empty body counts as `{}`), read
/// with the 1 MiB limit. Every failure is a docs/protocol.md error body.
#[derive(Debug, Clone, Default)]
pub(crate) struct JsonObject(pub(crate) Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return Err(ApiError::too_large());
        }
        let mut stream = req.into_body().into_data_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ApiError::field("body", format!("could not be read: {e}")))?;
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(ApiError::too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        parse_object(&bytes).map(JsonObject)
    }
}

/// Parses a body into a JSON object; empty (or white space) means `{}`.
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::field("body", "must be a JSON object")),
        Err(e) => Err(ApiError::field("body", format!("is not valid JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_must_be_json_objects() {
        assert_eq!(parse_object(b"").unwrap(), Map::new());
        assert_eq!(parse_object(b" {\"a\":1} ").unwrap().len(), 1);
        for bad in [&b"[1]"[..], b"nope", b"\"s\"", b"{"] {
            let err = parse_object(bad).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST);
            assert!(err.body.details.unwrap().contains_key("body"));
        }
    }

    /// Every sandbox error answers with the status and the body
    /// docs/protocol.md gives it.
    #[test]
    fn sandbox_errors_answer_in_the_contracts_words() {
        use crate::sandbox::SandboxError as E;
        let answer = |e: E| {
            let e = ApiError::from(e);
            (e.status.as_u16(), serde_json::to_string(&e.body).unwrap())
        };
        let cases = [
            (
                E::BadPath("must not leave /workspace (..)".into()),
                400,
                r#"{"error":"invalid request","details":{"path":["must not leave /workspace (..)"]}}"#,
            ),
            (E::DiskFull, 507, r#"{"error":"the room's disk is full"}"#),
            (
                E::WontFit {
                    need: 10485760,
                    free: 4194304,
                },
                507,
                r#"{"error":"the room's disk is full","details":{"checkpoint":["it needs 10485760 bytes; 4194304 are free"]}}"#,
            ),
            (E::TooLarge, 413, r#"{"error":"body too large"}"#),
            (
                E::NotListening(8000),
                502,
                r#"{"error":"nothing listens on port 8000 in the sandbox"}"#,
            ),
            (
                E::Failed("cannot copy".into()).failing("the checkpoint"),
                500,
                r#"{"error":"the checkpoint failed: cannot copy"}"#,
            ),
            (
                E::NoCheckpoint,
                500,
                r#"{"error":"the checkpoint's files are gone"}"#,
            ),
        ];
        for (error, status, body) in cases {
            assert_eq!(answer(error), (status, body.to_string()));
        }
    }
}
