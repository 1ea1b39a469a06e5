//! The OpenAI-compatible chat-completions API with streaming: Ollama,
//! llama.cpp's server, vLLM, LM Studio, OpenAI and Workers AI all speak it.

use super::BoxFuture;
use super::provider::{ChatMessage, DeltaStream, ModelError, Provider};
use super::sse::{self, Event, chunk_events, error_text};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;

/// Characters of an error answer kept for the message in the room.
const ERROR_BODY_CHARS: usize = 2_000;

/// Builds the HTTP client the agent uses (TLS through rustls with ring).
pub(crate) fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    crate::support::install_tls();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|err| describe(&err))
}

/// A model behind an OpenAI-compatible API.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    client: reqwest::Client,
    base: String,
    model: String,
    key: Option<String>,
}

impl OpenAiProvider {
    /// `base` is the API's base URL (ending in `/v1` for most services).
    pub fn new(client: reqwest::Client, base: &str, model: &str, key: Option<String>) -> Self {
        OpenAiProvider {
            client,
            base: base.trim_end_matches('/').to_string(),
            model: model.to_string(),
            key,
        }
    }
}

impl Provider for OpenAiProvider {
    fn chat(&self, messages: Vec<ChatMessage>) -> BoxFuture<Result<DeltaStream, ModelError>> {
        let url = format!("{}/chat/completions", self.base);
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let body = json!({"model": self.model, "messages": messages, "stream": true});
        let mut request = self.client.post(&url).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        Box::pin(async move {
            let response = request
                .send()
                .await
                .map_err(|err| unreachable(&url, &err))?;
            let response = check_status(&url, response).await?;
            let is_json = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if is_json {
                return whole_answer(response).await;
            }
            Ok(delta_stream(response))
        })
    }
}

/// Lists the models a service offers (`/models`, else Ollama's `/api/tags`)
/// and returns the first. `Ok(None)` when it answers but offers none.
pub(crate) async fn discover_model(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
) -> Result<Option<String>, ModelError> {
    let base = base.trim_end_matches('/');
    let url = format!("{base}/models");
    let mut request = client.get(&url).timeout(Duration::from_secs(10));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|err| unreachable(&url, &err))?;
    if response.status().is_success()
        && let Ok(list) = response.json::<Value>().await
    {
        let first = list
            .get("data")
            .and_then(|d| d.get(0))
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str);
        if let Some(id) = first {
            return Ok(Some(id.to_string()));
        }
    }
    let Some(root) = base.strip_suffix("/v1") else {
        return Ok(None);
    };
    let tags = format!("{root}/api/tags");
    let Ok(response) = client
        .get(&tags)
        .timeout(Duration::from_secs(10))
        .send()
        .await
    else {
        return Ok(None);
    };
    let list: Value = response.json().await.unwrap_or(Value::Null);
    Ok(list
        .get("models")
        .and_then(|m| m.get(0))
        .and_then(|m| m.get("name").or_else(|| m.get("model")))
        .and_then(Value::as_str)
        .map(str::to_string))
}

/// Turns an error status into `ModelError::Status` with the service's text.
async fn check_status(
    url: &str,
    response: reqwest::Response,
) -> Result<reqwest::Response, ModelError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    let message = match serde_json::from_str::<Value>(&body) {
        Ok(value) => value
            .get("error")
            .map(error_text)
            .unwrap_or_else(|| value.to_string()),
        Err(_) => body.trim().to_string(),
    };
    let message: String = message.chars().take(ERROR_BODY_CHARS).collect();
    Err(ModelError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        message: if message.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_string()
        } else {
            message
        },
    })
}

/// A service that ignored `stream: true` and answered in one piece.
async fn whole_answer(response: reqwest::Response) -> Result<DeltaStream, ModelError> {
    let value: Value = response
        .json()
        .await
        .map_err(|err| ModelError::Stream(describe(&err)))?;
    let mut pieces = Vec::new();
    for event in chunk_events(&value) {
        match event {
            Event::Delta(text) => pieces.push(Ok(text)),
            Event::Error(message) => pieces.push(Err(ModelError::Stream(message))),
            Event::Finished | Event::Done => {}
        }
    }
    Ok(futures_util::stream::iter(pieces).fuse().boxed())
}

/// Where a streamed answer stands.
struct StreamState {
    events: futures_util::stream::BoxStream<'static, Result<Vec<Event>, String>>,
    pending: VecDeque<Event>,
    finished: bool,
    /// The bytes ended.
    ended: bool,
    /// Nothing more is yielded.
    over: bool,
}

/// The answer's pieces, read from its server-sent events.
fn delta_stream(response: reqwest::Response) -> DeltaStream {
    let bytes = response
        .bytes_stream()
        .map(|piece| piece.map_err(|err| describe(&err)));
    let state = StreamState {
        events: sse::events(bytes).boxed(),
        pending: VecDeque::new(),
        finished: false,
        ended: false,
        over: false,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if state.over {
                return None;
            }
            if let Some(event) = state.pending.pop_front() {
                match event {
                    Event::Delta(text) if text.is_empty() => continue,
                    Event::Delta(text) => return Some((Ok(text), state)),
                    Event::Finished => state.finished = true,
                    Event::Done => return None,
                    Event::Error(message) => {
                        state.over = true;
                        return Some((Err(ModelError::Stream(message)), state));
                    }
                }
                continue;
            }
            if state.ended {
                state.over = true;
                if state.finished {
                    return None;
                }
                let err =
                    ModelError::Stream("the connection closed before the answer ended".into());
                return Some((Err(err), state));
            }
            match state.events.next().await {
                Some(Ok(events)) => state.pending.extend(events),
                Some(Err(reason)) => {
                    state.over = true;
                    return Some((Err(ModelError::Stream(reason)), state));
                }
                None => state.ended = true,
            }
        }
    })
    .fuse()
    .boxed()
}

/// A request that got no answer; the reason is the root cause (e.g.
/// "Connection refused"), the rest only repeats the URL.
fn unreachable(url: &str, err: &reqwest::Error) -> ModelError {
    let mut root: &(dyn std::error::Error + 'static) = err;
    while let Some(cause) = root.source() {
        root = cause;
    }
    let reason = if err.is_timeout() {
        format!("timed out ({root})")
    } else {
        root.to_string()
    };
    ModelError::Unreachable {
        url: url.to_string(),
        reason,
    }
}

pub(crate) use crate::support::error_chain as describe;
