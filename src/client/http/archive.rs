//! The archive routes (docs/protocol.md "Archives: a folder in and out,
//! and what changed"): a folder in as a streamed tar, out as one, and the
//! workspace's diff against a push.

use super::backend::transport;
use super::*;
use crate::protocol::PushResponse;
use futures_util::{Stream, StreamExt};
use std::pin::Pin;

/// A response body as it arrives.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, HttpError>> + Send>>;

impl HttpClient {
    /// The URL of the archive of a workspace folder (`dir` relative to
    /// /workspace; empty: `archive/`, /workspace itself).
    fn archive_url(&self, dir: &str) -> Result<url::Url, HttpError> {
        if dir.split('/').any(|s| s == "..") {
            return Err(HttpError::Invalid(format!(
                "{dir}: must stay inside /workspace (no ..)"
            )));
        }
        let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
        let mut url = url::Url::parse(&self.segments_url("archive", &segments)?)
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        if segments.is_empty()
            && let Ok(mut path) = url.path_segments_mut()
        {
            path.push("");
        }
        Ok(url)
    }

    /// `PUT /archive/{dir}?userId=NAME[&delete=1]`: `body` makes the tar
    /// afresh for each attempt (a 503 or 429 is sent again).
    pub async fn put_archive(
        &self,
        dir: &str,
        delete: bool,
        body: impl Fn() -> reqwest::Body,
    ) -> Result<PushResponse, HttpError> {
        let mut url = self.archive_url(dir)?;
        url.query_pairs_mut().append_pair("userId", &self.name);
        if delete {
            url.query_pairs_mut().append_pair("delete", "1");
        }
        let url = url.to_string();
        let response = self
            .backend
            .respond(Method::PUT, &url, || Some(("application/x-tar", body())))
            .await?;
        let text = response.text().await.map_err(|err| transport(&url, &err))?;
        decode(&url, &text)
    }

    /// `GET /archive/{dir}`: the tar of a workspace folder, as it streams.
    pub async fn get_archive(&self, dir: &str) -> Result<ByteStream, HttpError> {
        let url = self.archive_url(dir)?.to_string();
        let response = self.backend.respond(Method::GET, &url, || None).await?;
        Ok(Box::pin(response.bytes_stream().map(move |chunk| {
            chunk.map_err(|err| transport(&url, &err))
        })))
    }

    /// `GET /diff[?from=CHECKPOINT][&path=P…]`: the workspace against a
    /// checkpoint (by default the newest push), as git's unified diff.
    pub async fn diff(&self, from: Option<&str>, paths: &[String]) -> Result<String, HttpError> {
        let mut url = url::Url::parse(&self.room_url("diff"))
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(from) = from {
                query.append_pair("from", from);
            }
            for path in paths {
                query.append_pair("path", path);
            }
        }
        let bytes = self.backend.send(Method::GET, url.as_str(), None).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
