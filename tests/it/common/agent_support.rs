//! Test support: a real HTTP server on loopback that speaks the OpenAI
//! chat-completions streaming protocol with scripted replies, and a turn
//! host that records frames and runs commands with bash.
#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use duet::ai::{BoxFuture, TurnHost};
use duet::protocol::{Run, ServerFrame};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One scripted answer of the fake model.
#[derive(Debug, Clone)]
pub enum Script {
    /// Streams these pieces, then `finish_reason` and `[DONE]`.
    Stream(Vec<String>),
    /// Streams these pieces, waiting this long before each.
    Paced(Vec<String>, Duration),
    /// Answers with this status and body.
    Status(u16, String),
    /// Streams these pieces, then breaks the connection.
    Broken(Vec<String>),
    /// Streams these pieces, then ends the body without `[DONE]`.
    Cut(Vec<String>),
    /// Streams these pieces, then never ends.
    Hang(Vec<String>),
    /// Answers in one JSON piece (no streaming).
    Whole(String),
    /// Streams the prose pieces, then tool calls (a name and its
    /// arguments in pieces), then `finish_reason: "tool_calls"`.
    Tools(Vec<String>, Vec<(String, Vec<String>)>),
    /// A model without tools: a request that offers any is refused with a
    /// 400 (and this script stays for the next request); one without
    /// tools gets the inner script.
    NoTools(Box<Script>),
    /// Streams these pieces and counts them as (prompt, completion)
    /// tokens: a last chunk with `usage` (and no choices), as OpenAI
    /// sends it when `stream_options.include_usage` asked for it.
    Counted(Vec<String>, u64, u64),
    /// A service that refuses `stream_options` with a 400 (this script
    /// stays for the next request); a request without it gets the inner
    /// script.
    NoUsageOption(Box<Script>),
}

impl Script {
    /// A reply streamed in pieces of about `size` characters.
    pub fn chunked(text: &str, size: usize) -> Script {
        let chars: Vec<char> = text.chars().collect();
        Script::Stream(
            chars
                .chunks(size.max(1))
                .map(|c| c.iter().collect())
                .collect(),
        )
    }
}

/// What the fake model holds: its scripts and the requests it got.
#[derive(Default)]
pub struct FakeState {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
    /// Answer to every request once the scripts ran out.
    fallback: Mutex<Option<Script>>,
    /// When the last streamed answer sent its last piece.
    last_token: Mutex<Option<Instant>>,
}

/// A fake OpenAI-compatible model on a loopback port.
#[derive(Clone)]
pub struct FakeModel {
    pub url: String,
    pub state: Arc<FakeState>,
}

impl FakeModel {
    /// Starts the server; `url` is its `/v1` base.
    pub async fn start(scripts: Vec<Script>) -> FakeModel {
        let state = Arc::new(FakeState::default());
        state.scripts.lock().unwrap().extend(scripts);
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeModel {
            url: format!("http://{addr}/v1"),
            state,
        }
    }

    /// The `duet serve` flags that make this the server's model.
    pub fn server_args(&self) -> Vec<&str> {
        vec![
            "--ai-url",
            self.url.as_str(),
            "--ai-model",
            "scripted",
            "--ai-key",
            "sk-test",
        ]
    }

    /// The flags of `server_args` with one round a turn, as the original
    /// agent had (`--agent-steps 1`): a script of one answer is a turn.
    pub fn one_round_args(&self) -> Vec<&str> {
        let mut args = self.server_args();
        args.extend(["--agent-steps", "1"]);
        args
    }

    /// Adds answers to the script.
    pub fn push(&self, script: Script) {
        self.state.scripts.lock().unwrap().push_back(script);
    }

    /// Answers every request without a script this way.
    pub fn always(&self, script: Script) {
        *self.state.fallback.lock().unwrap() = Some(script);
    }

    /// When the last streamed answer (`Stream` or `Paced`) sent its end.
    pub fn last_token(&self) -> Option<Instant> {
        *self.state.last_token.lock().unwrap()
    }

    /// The chat requests received so far (headers, JSON body).
    pub fn requests(&self) -> Vec<(HeaderMap, Value)> {
        self.state.requests.lock().unwrap().clone()
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({"object":"list","data":[{"id":"fake-model","object":"model"}]}))
}

/// One SSE event carrying a piece of the answer.
fn event(piece: &str) -> Bytes {
    let chunk = json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":piece},"finish_reason":null}]});
    Bytes::from(format!("data: {chunk}\n\n"))
}

fn finish() -> Bytes {
    let chunk = json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]});
    Bytes::from(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
}

async fn chat(State(state): State<Arc<FakeState>>, headers: HeaderMap, body: String) -> Response {
    let value: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    state
        .requests
        .lock()
        .unwrap()
        .push((headers, value.clone()));
    let mut next = state.scripts.lock().unwrap().pop_front();
    if let Some(Script::NoTools(inner)) = next {
        if value.get("tools").is_some() {
            state
                .scripts
                .lock()
                .unwrap()
                .push_front(Script::NoTools(inner));
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"error":{"message":"this model does not support tools"}}"#,
            )
                .into_response();
        }
        next = Some(*inner);
    }
    if let Some(Script::NoUsageOption(inner)) = next {
        if value.get("stream_options").is_some() {
            state
                .scripts
                .lock()
                .unwrap()
                .push_front(Script::NoUsageOption(inner));
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#,
            )
                .into_response();
        }
        next = Some(*inner);
    }
    let asked_usage = value["stream_options"]["include_usage"] == json!(true);
    let script = next
        .or_else(|| state.fallback.lock().unwrap().clone())
        .unwrap_or(Script::Status(
            500,
            r#"{"error":{"message":"no script left"}}"#.into(),
        ));
    let sse = |body: Body| {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(body)
            .unwrap()
    };
    match script {
        Script::Status(code, body) => (
            StatusCode::from_u16(code).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Script::Tools(prose, calls) => {
            let mut events: Vec<Result<Bytes, std::io::Error>> =
                prose.iter().map(|p| Ok(event(p))).collect();
            for (index, (name, pieces)) in calls.iter().enumerate() {
                for (n, piece) in pieces.iter().enumerate() {
                    let mut function = json!({"arguments": piece});
                    let mut call = json!({"index": index});
                    if n == 0 {
                        function["name"] = json!(name);
                        call["id"] = json!(format!("call_{index}"));
                        call["type"] = json!("function");
                    }
                    call["function"] = function;
                    let chunk = json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[call]},"finish_reason":null}]});
                    events.push(Ok(Bytes::from(format!("data: {chunk}\n\n"))));
                }
            }
            let chunk = json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]});
            events.push(Ok(Bytes::from(format!("data: {chunk}\n\ndata: [DONE]\n\n"))));
            sse(Body::from_stream(futures_util::stream::iter(events)))
        }
        Script::NoTools(_) | Script::NoUsageOption(_) => unreachable!("unwrapped above"),
        Script::Counted(pieces, prompt, completion) => {
            let mut body: String = pieces.iter().map(|p| String::from_utf8_lossy(&event(p)).into_owned()).collect();
            let end = json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]});
            body.push_str(&format!("data: {end}\n\n"));
            if asked_usage {
                let usage = json!({"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt + completion}});
                body.push_str(&format!("data: {usage}\n\n"));
            }
            body.push_str("data: [DONE]\n\n");
            sse(Body::from(body))
        }
        Script::Whole(text) => axum::Json(json!({"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"stop"}]})).into_response(),
        Script::Stream(pieces) => {
            let events: Vec<Result<Bytes, std::io::Error>> =
                pieces.iter().map(|p| Ok(event(p))).collect();
            let end = futures_util::stream::once(async move {
                *state.last_token.lock().unwrap() = Some(Instant::now());
                Ok(finish())
            });
            let stream = futures_util::StreamExt::chain(futures_util::stream::iter(events), end);
            sse(Body::from_stream(stream))
        }
        Script::Paced(pieces, pause) => {
            let stream = futures_util::stream::unfold(
                (pieces.into_iter(), false),
                move |(mut rest, done)| {
                    let state = state.clone();
                    async move {
                    if done {
                        return None;
                    }
                    match rest.next() {
                        Some(piece) => {
                            tokio::time::sleep(pause).await;
                            Some((Ok::<_, std::io::Error>(event(&piece)), (rest, false)))
                        }
                        None => {
                            *state.last_token.lock().unwrap() = Some(Instant::now());
                            Some((Ok(finish()), (rest, true)))
                        }
                    }
                    }
                },
            );
            sse(Body::from_stream(stream))
        }
        Script::Broken(pieces) => {
            let events: Vec<Result<Bytes, std::io::Error>> =
                pieces.iter().map(|p| Ok(event(p))).collect();
            // Let the pieces go out before the connection breaks.
            let broken = futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(std::io::Error::other("the model crashed"))
            });
            let stream = futures_util::StreamExt::chain(futures_util::stream::iter(events), broken);
            sse(Body::from_stream(stream))
        }
        Script::Cut(pieces) => {
            let events: Vec<Result<Bytes, std::io::Error>> =
                pieces.iter().map(|p| Ok(event(p))).collect();
            sse(Body::from_stream(futures_util::stream::iter(events)))
        }
        Script::Hang(pieces) => {
            let events: Vec<Result<Bytes, std::io::Error>> =
                pieces.iter().map(|p| Ok(event(p))).collect();
            let stream = futures_util::StreamExt::chain(
                futures_util::stream::iter(events),
                futures_util::stream::pending(),
            );
            sse(Body::from_stream(stream))
        }
    }
}

/// A turn host that records frames and runs commands with bash in a
/// temporary directory (the real host is the server's room).
pub struct BashHost {
    pub frames: Mutex<Vec<ServerFrame>>,
    pub dir: tempfile::TempDir,
    /// Notified on every frame.
    pub notify: tokio::sync::Notify,
}

impl BashHost {
    pub fn new() -> Arc<BashHost> {
        Arc::new(BashHost {
            frames: Mutex::new(Vec::new()),
            dir: tempfile::tempdir().unwrap(),
            notify: tokio::sync::Notify::new(),
        })
    }

    pub fn frames(&self) -> Vec<ServerFrame> {
        self.frames.lock().unwrap().clone()
    }

    /// Waits until a frame matches (generous timeout).
    pub async fn wait_for(&self, what: impl Fn(&ServerFrame) -> bool) {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let notified = self.notify.notified();
                if self.frames().iter().any(&what) {
                    return;
                }
                notified.await;
            }
        })
        .await
        .expect("the frame never came");
    }
}

impl TurnHost for BashHost {
    fn emit(&self, frame: ServerFrame) {
        self.frames.lock().unwrap().push(frame);
        self.notify.notify_waiters();
    }

    fn run(&self, cmd: String) -> BoxFuture<Run> {
        let dir = self.dir.path().to_path_buf();
        Box::pin(async move {
            let out = tokio::process::Command::new("bash")
                .arg("-c")
                .arg(&cmd)
                .current_dir(dir)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output()
                .await;
            match out {
                Ok(out) => Run {
                    cmd,
                    stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    exit_code: out.status.code(),
                    error: None,
                    truncated: false,
                    at: None,
                },
                Err(err) => Run {
                    cmd,
                    stdout: String::new(),
                    stderr: String::new(),
                    exit_code: None,
                    error: Some(err.to_string()),
                    truncated: false,
                    at: None,
                },
            }
        })
    }
}
