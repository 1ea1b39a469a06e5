//! The OpenAI-compatible chat-completions API with streaming: Ollama,
//! llama.cpp's server, vLLM, LM Studio, OpenAI and Workers AI all speak it.

use super::provider::{ChatMessage, DeltaStream, ModelError, Piece, Provider, ToolCall};
use super::sse::{self, Event, chunk_events, error_text};
use super::usage::{Tokens, UsageReport};
use super::{BoxFuture, ToolMode};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    tools: ToolMode,
    /// Set once the service refused the tool (under `auto`: tags from then on).
    tools_refused: Arc<AtomicBool>,
    /// Where the service's counts of each answer go.
    usage: UsageReport,
    /// Set once the service refused `stream_options` (not asked from then on).
    usage_refused: Arc<AtomicBool>,
}

impl OpenAiProvider {
    /// `base` is the API's base URL (ending in `/v1` for most services).
    pub fn new(client: reqwest::Client, base: &str, model: &str, key: Option<String>) -> Self {
        OpenAiProvider {
            client,
            base: base.trim_end_matches('/').to_string(),
            model: model.to_string(),
            key,
            tools: ToolMode::Off,
            tools_refused: Default::default(),
            usage: UsageReport::default(),
            usage_refused: Default::default(),
        }
    }

    /// Reports what each answer cost to `report`, asking for the counts
    /// when streaming unless `refused` remembers that the service refused.
    pub fn with_usage(mut self, report: UsageReport, refused: Arc<AtomicBool>) -> Self {
        self.usage = report;
        self.usage_refused = refused;
        self
    }

    /// Offers the `run` tool by `mode`; `refused` remembers a refusal.
    pub fn with_tools(mut self, mode: ToolMode, refused: Arc<AtomicBool>) -> Self {
        self.tools = mode;
        self.tools_refused = refused;
        self
    }

    /// Remembers that the service refused `stream_options`.
    fn refused_usage(&self) {
        self.usage_refused.store(true, Ordering::Relaxed);
        tracing::info!("the model refused stream_options; usage is estimated");
    }

    /// Whether this request offers the tool.
    fn offers_tool(&self) -> bool {
        match self.tools {
            ToolMode::Off => false,
            ToolMode::On => true,
            ToolMode::Auto => !self.tools_refused.load(Ordering::Relaxed),
        }
    }

    /// Sends the chat request, with the tool or without, asking for its
    /// usage or not.
    async fn send(
        &self,
        url: &str,
        messages: &[Value],
        tool: bool,
        usage: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let mut body = json!({"model": self.model, "messages": messages, "stream": true});
        if usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        if tool {
            body["tools"] = super::tools::definitions();
            body["tool_choice"] = json!("auto");
        }
        let mut request = self.client.post(url).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|err| unreachable(url, &err))?;
        check_status(url, response).await
    }
}

/// Whether an answer of `status` to a request with tools may be the
/// service refusing them: a 4xx, but not a key, permission or rate answer,
/// which would be the same without tools.
fn refuses_tools(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 401 | 403 | 408 | 429)
}

/// Whether a service's error message is about `stream_options`.
fn names_usage(message: &str) -> bool {
    message.contains("stream_options") || message.contains("include_usage")
}

impl Provider for OpenAiProvider {
    fn chat(&self, messages: Vec<ChatMessage>) -> BoxFuture<Result<DeltaStream, ModelError>> {
        let url = format!("{}/chat/completions", self.base);
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let this = self.clone();
        Box::pin(async move {
            let mut tool = this.offers_tool();
            let mut usage = !this.usage_refused.load(Ordering::Relaxed);
            let mut response = this.send(&url, &messages, tool, usage).await;
            // A refusal that names `stream_options` is about it, not the tool.
            if usage
                && let Err(ModelError::Status {
                    status, message, ..
                }) = &response
                && refuses_tools(*status)
                && names_usage(message)
            {
                usage = false;
                response = this.send(&url, &messages, tool, false).await;
                if response.is_ok() {
                    this.refused_usage();
                }
            }
            let response = match response {
                // A service that refuses tools gets tags, now and later; it
                // refused them if the same request without them is answered.
                Err(ModelError::Status { status, .. })
                    if tool && this.tools == ToolMode::Auto && refuses_tools(status) =>
                {
                    tool = false;
                    let response = this.send(&url, &messages, false, usage).await;
                    if response.is_ok() {
                        this.tools_refused.store(true, Ordering::Relaxed);
                        tracing::info!("the model refused the run tool; using <run> tags");
                    }
                    response
                }
                other => other,
            };
            let response = match response {
                // One that refuses `stream_options` is not asked for usage
                // again (its answers' usage is estimated, or read where it
                // gives it unasked).
                Err(ModelError::Status { status, .. }) if usage && refuses_tools(status) => {
                    let response = this.send(&url, &messages, tool, false).await?;
                    this.refused_usage();
                    response
                }
                other => other?,
            };
            let is_json = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if is_json {
                return whole_answer(response, &this.usage).await;
            }
            Ok(delta_stream(response, this.usage.clone()))
        })
    }
}

/// Tool calls gathered by index: name and arguments so far.
#[derive(Default)]
struct ToolCalls(BTreeMap<u64, (Option<String>, String)>);

impl ToolCalls {
    fn add(&mut self, index: u64, name: Option<String>, arguments: &str) {
        let call = self.0.entry(index).or_default();
        if name.is_some() {
            call.0 = name;
        }
        call.1.push_str(arguments);
    }

    /// The calls, in order, as pieces of the answer; calls without a
    /// name are left out.
    fn into_pieces(self) -> Vec<Piece> {
        self.0
            .into_values()
            .filter_map(|(name, arguments)| {
                Some(Piece::Call(ToolCall {
                    name: name?,
                    arguments,
                }))
            })
            .collect()
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
async fn whole_answer(
    response: reqwest::Response,
    usage: &UsageReport,
) -> Result<DeltaStream, ModelError> {
    let value: Value = response
        .json()
        .await
        .map_err(|err| ModelError::Stream(describe(&err)))?;
    let mut pieces = Vec::new();
    let mut calls = ToolCalls::default();
    for event in chunk_events(&value) {
        match event {
            Event::Delta(text) => pieces.push(Ok(Piece::Text(text))),
            Event::Error(message) => pieces.push(Err(ModelError::Stream(message))),
            Event::ToolCall {
                index,
                name,
                arguments,
            } => calls.add(index, name, &arguments),
            Event::Usage { prompt, completion } => usage.set(Tokens { prompt, completion }),
            Event::Finished | Event::Done => {}
        }
    }
    pieces.extend(calls.into_pieces().into_iter().map(Ok));
    Ok(futures_util::stream::iter(pieces).fuse().boxed())
}

/// Where a streamed answer stands.
struct StreamState {
    events: futures_util::stream::BoxStream<'static, Result<Vec<Event>, String>>,
    pending: VecDeque<Event>,
    /// The answer's tool calls, gathered until it ends.
    calls: ToolCalls,
    /// Its calls, once it ended: the last pieces.
    ended_calls: VecDeque<Piece>,
    finished: bool,
    /// The bytes ended.
    ended: bool,
    /// Nothing more is yielded.
    over: bool,
    /// Where the answer's usage goes.
    usage: UsageReport,
}

/// The answer's pieces, read from its server-sent events.
fn delta_stream(response: reqwest::Response, usage: UsageReport) -> DeltaStream {
    let bytes = response
        .bytes_stream()
        .map(|piece| piece.map_err(|err| describe(&err)));
    let state = StreamState {
        events: sse::events(bytes).boxed(),
        pending: VecDeque::new(),
        calls: ToolCalls::default(),
        ended_calls: VecDeque::new(),
        finished: false,
        ended: false,
        over: false,
        usage,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if state.over {
                let call = state.ended_calls.pop_front()?;
                return Some((Ok(call), state));
            }
            if let Some(event) = state.pending.pop_front() {
                match event {
                    Event::Delta(text) if text.is_empty() => continue,
                    Event::Delta(text) => return Some((Ok(Piece::Text(text)), state)),
                    Event::Finished => state.finished = true,
                    Event::ToolCall {
                        index,
                        name,
                        arguments,
                    } => state.calls.add(index, name, &arguments),
                    Event::Usage { prompt, completion } => {
                        state.usage.set(Tokens { prompt, completion });
                    }
                    Event::Done => {
                        calls_at_end(&mut state);
                        continue;
                    }
                    Event::Error(message) => {
                        state.over = true;
                        return Some((Err(ModelError::Stream(message)), state));
                    }
                }
                continue;
            }
            if state.ended {
                if state.finished {
                    calls_at_end(&mut state);
                    continue;
                }
                state.over = true;
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

/// The answer ended: its tool calls are its last pieces.
fn calls_at_end(state: &mut StreamState) {
    state.over = true;
    state.ended_calls = std::mem::take(&mut state.calls).into_pieces().into();
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
