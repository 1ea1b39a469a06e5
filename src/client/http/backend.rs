//! One backend, room or not: its base URL, the token sent to it, and how
//! a request is sent (503 and 429 retried after `Retry-After`, every other
//! error kept whole). `HttpClient` is a room's calls over it; the rooms
//! list (`GET /api/rooms`) is the backend's own.

use super::{HttpError, MAX_RETRIES, MAX_RETRY_WAIT, StatusError, decode};
use crate::protocol::{RoomSummary, RoomsResponse};
use crate::support::error_chain;
use reqwest::{Method, StatusCode};
use std::time::Duration;

/// The backend at a base URL, with the token it is sent.
#[derive(Debug, Clone)]
pub struct Backend {
    client: reqwest::Client,
    pub(super) base: String,
    pub(super) token: Option<String>,
}

impl Backend {
    /// The backend at `base` (e.g. `http://h:8787`), sent `token`.
    pub fn new(base: &str, token: Option<String>) -> Result<Backend, HttpError> {
        crate::support::install_tls();
        let base = base.trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&base)
            .map_err(|err| HttpError::Invalid(format!("server URL {base:?}: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(HttpError::Invalid(format!(
                "server URL {base:?}: use http:// or https://"
            )));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|err| HttpError::Invalid(format!("cannot build an HTTP client: {err}")))?;
        Ok(Backend {
            client,
            base,
            token,
        })
    }

    /// `GET /api/rooms`: the backend's rooms, newest change first (its
    /// owner only: an invite's token gets a 403).
    pub async fn rooms(&self) -> Result<Vec<RoomSummary>, HttpError> {
        let url = format!("{}/api/rooms", self.base);
        let text = self.send_text(Method::GET, &url, None).await?;
        decode::<RoomsResponse>(&url, &text).map(|page| page.rooms)
    }

    /// Sends one JSON request; answers the body of a 2xx as text.
    pub(super) async fn send_text(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
    ) -> Result<String, HttpError> {
        let bytes = self
            .send(method, url, body.map(|b| ("application/json", b)))
            .await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Sends one request, retrying 503 and 429 after `Retry-After`; answers
    /// the body of a 2xx, or the error whole.
    pub(super) async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<(&'static str, Vec<u8>)>,
    ) -> Result<bytes::Bytes, HttpError> {
        let response = self
            .respond(method, url, || {
                body.as_ref()
                    .map(|(kind, bytes)| (*kind, reqwest::Body::from(bytes.clone())))
            })
            .await?;
        response.bytes().await.map_err(|err| transport(url, &err))
    }

    /// Sends one request, retrying 503 and 429 after `Retry-After` (with a
    /// body `body` makes afresh for each attempt: a stream is read once);
    /// answers the response of a 2xx with its body unread (to be
    /// streamed), or the error whole.
    pub(super) async fn respond(
        &self,
        method: Method,
        url: &str,
        body: impl Fn() -> Option<(&'static str, reqwest::Body)>,
    ) -> Result<reqwest::Response, HttpError> {
        let mut attempt = 0;
        loop {
            let mut request = self.client.request(method.clone(), url);
            if let Some(token) = &self.token {
                request = request.bearer_auth(token);
            }
            if let Some((content_type, body)) = body() {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, content_type)
                    .body(body);
            }
            let response = request.send().await.map_err(|err| transport(url, &err))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let bytes = response.bytes().await.map_err(|err| transport(url, &err))?;
            let retryable = matches!(
                status,
                StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
            );
            if retryable && attempt < MAX_RETRIES {
                attempt += 1;
                let wait = retry_after
                    .map(Duration::from_secs)
                    .unwrap_or(Duration::from_secs(1))
                    .min(MAX_RETRY_WAIT);
                tracing::debug!(%url, %status, ?wait, "retrying");
                tokio::time::sleep(wait).await;
                continue;
            }
            return Err(HttpError::Status(StatusError::from_body(
                status.as_u16(),
                &String::from_utf8_lossy(&bytes),
            )));
        }
    }
}

/// A failure to reach the backend, with its causes.
pub(super) fn transport(url: &str, err: &reqwest::Error) -> HttpError {
    // reqwest's own text repeats the URL; its causes say what happened.
    let message = std::error::Error::source(err).map_or_else(|| err.to_string(), error_chain);
    let cause = if err.is_timeout() {
        "timed out".to_string()
    } else {
        crate::client::explain::cause(err)
    };
    HttpError::Transport {
        url: url.to_string(),
        message,
        cause,
    }
}
