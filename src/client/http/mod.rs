//! Every HTTP call of docs/protocol.md, from the client's side: one
//! `HttpClient` per room, a bearer token where the backend has one, 503 and
//! 429 retried after `Retry-After`, every other error kept whole.

use crate::client::processes::StartProcess;
use crate::protocol::{
    CancelResponse, CleanupResponse, ExecRequest, ExecResponse, FileResponse, InterruptResponse,
    MessageRequest, MessageResponse, MessagesPage,
};
use crate::protocol::{
    Checkpoint, CheckpointResponse, CheckpointsResponse, DeleteResponse, DirEntry, ForkResponse,
    ListingResponse, RestoreResponse,
};
use crate::protocol::{DecidedResponse, Invite, InviteCreated, InvitesResponse, RevokeResponse};
use crate::protocol::{KillResponse, PortsResponse, ProcessResponse, ProcessesResponse};
use crate::protocol::{Policy, PolicyResponse};
use crate::protocol::{PortState, Process, ProcessLogs};

mod archive;
mod backend;
mod calls;
mod error;
pub use archive::ByteStream;
pub use backend::Backend;
pub use error::{HttpError, StatusError};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How often a 503 or 429 is retried before it is shown.
const MAX_RETRIES: u32 = 5;
/// The longest `Retry-After` honoured; longer ones are shortened to this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// A client of one room of one backend.
#[derive(Debug, Clone)]
pub struct HttpClient {
    backend: Backend,
    room: String,
    name: String,
}

impl HttpClient {
    /// A client for `room` on the backend at `base` (e.g. `http://h:8787`).
    pub fn new(
        base: &str,
        room: &str,
        token: Option<String>,
        name: &str,
    ) -> Result<HttpClient, HttpError> {
        let backend = Backend::new(base, token)?;
        if !crate::protocol::valid_room_id(room) {
            return Err(HttpError::Invalid(format!(
                "room {room:?}: 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric"
            )));
        }
        Ok(HttpClient {
            backend,
            room: room.to_string(),
            name: name.to_string(),
        })
    }

    /// The same client for another backend (the embedded one moved).
    pub fn with_base(&self, base: &str) -> Result<HttpClient, HttpError> {
        HttpClient::new(base, &self.room, self.backend.token.clone(), &self.name)
    }

    /// The backend's base URL.
    pub fn base(&self) -> &str {
        &self.backend.base
    }

    /// The room this client talks to.
    pub fn room(&self) -> &str {
        &self.room
    }

    /// The token it sends, if any.
    pub fn token(&self) -> Option<&str> {
        self.backend.token.as_deref()
    }

    /// The name it sends as `userId`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Changes the name sent as `userId` (after `/name`).
    pub fn set_name(&mut self, name: &str) {
        self.name = name.to_string();
    }

    fn room_url(&self, tail: &str) -> String {
        format!("{}/api/rooms/{}/{tail}", self.backend.base, self.room)
    }

    /// `GET /health`: whether the backend answers `ok`.
    pub async fn health(&self) -> Result<(), HttpError> {
        let url = format!("{}/health", self.backend.base);
        let text = self.backend.send_text(Method::GET, &url, None).await?;
        if text.trim() == "ok" {
            Ok(())
        } else {
            Err(HttpError::Decode {
                url,
                message: format!("health answered {text:?}"),
            })
        }
    }

    /// `POST /message`: answers when the agent's turn ended.
    pub async fn message(&self, text: &str) -> Result<MessageResponse, HttpError> {
        let body = MessageRequest {
            text: text.to_string(),
            user_id: Some(self.name.clone()),
            client_id: Some(crate::client::rpc::new_client_id()),
            to: None,
        };
        self.post("message", &body).await
    }

    /// `POST /sandbox/exec`.
    pub async fn exec(&self, mut request: ExecRequest) -> Result<ExecResponse, HttpError> {
        request.user_id.get_or_insert_with(|| self.name.clone());
        self.post("sandbox/exec", &request).await
    }

    /// `POST /sandbox/interrupt`: the given command, else the current one.
    pub async fn interrupt(&self, exec_id: Option<&str>) -> Result<bool, HttpError> {
        Ok(self.interrupt_one(exec_id, None).await?.interrupted)
    }

    /// `POST /sandbox/interrupt {clientId}`: the command an `exec` of ours
    /// named so (none when none carries it: it ended, or has not come);
    /// `withdrawn` when it was still waiting, and never runs.
    pub async fn interrupt_named(&self, client_id: &str) -> Result<InterruptResponse, HttpError> {
        self.interrupt_one(None, Some(client_id)).await
    }

    async fn interrupt_one(
        &self,
        exec_id: Option<&str>,
        client_id: Option<&str>,
    ) -> Result<InterruptResponse, HttpError> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            exec_id: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            client_id: Option<&'a str>,
            user_id: &'a str,
        }
        let body = Body {
            exec_id,
            client_id,
            user_id: &self.name,
        };
        self.post("sandbox/interrupt", &body).await
    }

    /// `POST /cancel`: ends the agent's current turn.
    pub async fn cancel(&self, turn_id: Option<&str>) -> Result<bool, HttpError> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            turn_id: Option<&'a str>,
            user_id: &'a str,
        }
        let body = Body {
            turn_id,
            user_id: &self.name,
        };
        let answer: CancelResponse = self.post("cancel", &body).await?;
        Ok(answer.cancelled)
    }

    /// `POST /cleanup`: 200, or 207 with `errors` (still a success here).
    pub async fn cleanup(&self) -> Result<CleanupResponse, HttpError> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            user_id: &'a str,
        }
        self.post(
            "cleanup",
            &Body {
                user_id: &self.name,
            },
        )
        .await
    }

    /// `GET /messages`: a page strictly older than `before`.
    pub async fn messages(
        &self,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<MessagesPage, HttpError> {
        self.page("messages", before, limit).await
    }

    /// `GET /execs`: a page of the room's commands strictly older than `before`.
    pub async fn execs(
        &self,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<crate::protocol::ExecsPage, HttpError> {
        self.page("execs", before, limit).await
    }

    /// `GET /{what}?before&limit`: a page of the room's history.
    async fn page<T: DeserializeOwned>(
        &self,
        what: &str,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<T, HttpError> {
        let mut url = url::Url::parse(&self.room_url(what))
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(before) = before {
                query.append_pair("before", before);
            }
            if let Some(limit) = limit {
                query.append_pair("limit", &limit.to_string());
            }
        }
        let text = self
            .backend
            .send_text(Method::GET, url.as_str(), None)
            .await?;
        decode(url.as_str(), &text)
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        tail: &str,
        body: &B,
    ) -> Result<T, HttpError> {
        let url = self.room_url(tail);
        let json = serde_json::to_vec(body).map_err(|err| HttpError::Invalid(err.to_string()))?;
        let text = self
            .backend
            .send_text(Method::POST, &url, Some(json))
            .await?;
        decode(&url, &text)
    }

    /// The URL of a workspace file, each segment of `path` escaped.
    fn file_url(&self, path: &str) -> Result<String, HttpError> {
        // A URL resolves `..` itself: refuse it here, as the server would.
        if path.split('/').any(|s| s == "..") {
            return Err(HttpError::Invalid(format!(
                "{path}: must stay inside /workspace (no ..)"
            )));
        }
        let mut url = url::Url::parse(&self.room_url("files"))
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        url.path_segments_mut()
            .map_err(|_| {
                HttpError::Invalid(format!(
                    "server URL {:?} cannot have a path",
                    self.backend.base
                ))
            })?
            .extend(path.split('/').filter(|s| !s.is_empty()));
        Ok(url.to_string())
    }
}

/// Parses a success body, or says what was wrong with it.
fn decode<T: DeserializeOwned>(url: &str, text: &str) -> Result<T, HttpError> {
    serde_json::from_str(text).map_err(|err| HttpError::Decode {
        url: url.to_string(),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_refused_before_any_request() {
        assert!(HttpClient::new("ftp://x", "r", None, "a").is_err());
        assert!(HttpClient::new("http://x", "bad room", None, "a").is_err());
        assert!(HttpClient::new("http://x:1/", "r-1", None, "a").is_ok());
    }
}
