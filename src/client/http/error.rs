//! Why a call to the backend failed, in words for the person: the status
//! and the server's whole body (its `details` included), or the transport's
//! causes.

use crate::protocol::{Details, ErrorBody};
use reqwest::StatusCode;
use std::fmt;

/// Why a call failed, with everything the person needs to see.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The backend answered with an error status.
    #[error("{0}")]
    Status(StatusError),
    /// The backend could not be reached or the connection broke: the
    /// whole chain (`message`, for the log) and its gist (`cause`, for the
    /// person: see `explain::http`).
    #[error("cannot reach {url}: {message}")]
    Transport {
        url: String,
        message: String,
        cause: String,
    },
    /// The backend answered 2xx with a body that is not what docs/protocol.md says.
    #[error("unexpected answer from {url}: {message}")]
    Decode { url: String, message: String },
    /// The settings cannot make a valid request (bad server URL, room id).
    #[error("{0}")]
    Invalid(String),
}

/// An error answer: the status and the server's body, `details` included.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusError {
    pub status: u16,
    /// The `error` field, or the whole text when the body is not JSON.
    pub error: String,
    pub details: Option<Details>,
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        write!(f, "{} {}", self.status, reason)?;
        if !self.error.is_empty() {
            write!(f, ": {}", self.error)?;
        }
        for (field, messages) in self.details.iter().flatten() {
            write!(f, "; {field}: {}", messages.join(", "))?;
        }
        Ok(())
    }
}

impl StatusError {
    /// Reads an error answer's body: JSON `{error, details}` or plain text.
    pub fn from_body(status: u16, body: &str) -> StatusError {
        match serde_json::from_str::<ErrorBody>(body) {
            Ok(parsed) => StatusError {
                status,
                error: parsed.error,
                details: parsed.details,
            },
            Err(_) => StatusError {
                status,
                error: body.trim().to_string(),
                details: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_shown_whole() {
        let err = StatusError::from_body(
            400,
            r#"{"error":"invalid request","details":{"cmd":["must not be empty"]}}"#,
        );
        assert_eq!(
            err.to_string(),
            "400 Bad Request: invalid request; cmd: must not be empty"
        );
        let err = StatusError::from_body(404, "Not Found\n");
        assert_eq!(err.to_string(), "404 Not Found: Not Found");
    }
}
