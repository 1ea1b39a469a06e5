//! `duet ask`: one question to a room's agent from the shell. Prints the
//! reply as it streams on the room's socket, then its commands' outputs;
//! exits non-zero when the turn ended without a reply.

use crate::blocks::{self, Block};
use crate::cli::{AskArgs, ClientArgs};
use crate::protocol::{
    AiPhase, ErrorBody, ExecFrame, ExecSource, MessageRequest, MessageResponse, Role, ServerFrame,
    name_problem, valid_room_id,
};
use anyhow::{Context, anyhow, bail};
use futures_util::StreamExt;
use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;

/// Times a `429`/`503` answer is retried.
const RETRIES: u32 = 3;
/// The longest wait a `Retry-After` may ask for.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// How long to wait, after the answer, for the socket to catch up.
const SOCKET_GRACE: Duration = Duration::from_secs(2);

/// Where the question goes, checked.
struct Target {
    server: url::Url,
    room: String,
    name: String,
    token: Option<String>,
}

impl Target {
    fn from_args(args: &ClientArgs) -> anyhow::Result<Target> {
        let server = args
            .server
            .as_deref()
            .ok_or_else(|| anyhow!("say which server: --server URL (or DUET_SERVER)"))?;
        let server = url::Url::parse(server).with_context(|| format!("bad server URL {server}"))?;
        let room = args
            .room
            .clone()
            .ok_or_else(|| anyhow!("say which room: --room ROOM (or DUET_ROOM)"))?;
        if !valid_room_id(&room) {
            bail!("bad room id {room:?}: 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric");
        }
        let name = args
            .name
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "duet-ask".to_string());
        if let Some(problem) = name_problem(&name) {
            bail!("bad name {name:?}: {problem}");
        }
        Ok(Target {
            server,
            room,
            name,
            token: args.token.clone(),
        })
    }

    /// `http(s)://server/api/rooms/{room}/{tail}`.
    fn http_url(&self, tail: &str) -> anyhow::Result<url::Url> {
        self.server
            .join(&format!("/api/rooms/{}/{tail}", self.room))
            .context("cannot build the request URL")
    }

    /// The room's socket, `ws(s)://…/ws?user=NAME&token=T`.
    fn ws_url(&self) -> anyhow::Result<url::Url> {
        let mut url = self.http_url("ws")?;
        let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
        url.set_scheme(scheme)
            .map_err(|()| anyhow!("cannot make a WebSocket URL of {}", self.server))?;
        url.query_pairs_mut().append_pair("user", &self.name);
        if let Some(token) = &self.token {
            url.query_pairs_mut().append_pair("token", token);
        }
        Ok(url)
    }
}

/// `duet ask "question"`.
pub async fn ask(args: AskArgs) -> anyhow::Result<ExitCode> {
    let target = Target::from_args(&args.client)?;
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        bail!("the question is empty");
    }
    let mut frames = open_socket(&target).await;
    let mut view = TurnView::new(&target.name, &question);
    // The state on connect says which messages were there before.
    if let Some(rx) = frames.as_mut() {
        let first_state = async {
            while let Some(frame) = rx.recv().await {
                if let ServerFrame::State { state } = frame {
                    return Some(state);
                }
            }
            None
        };
        match tokio::time::timeout(SOCKET_GRACE * 5, first_state).await {
            Ok(Some(state)) => view.known = state.messages.into_iter().map(|m| m.id).collect(),
            _ => {
                eprintln!("duet: not streaming (the room's socket sent no state)");
                frames = None;
            }
        }
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let post = post_message(&client, &target, &question);
    tokio::pin!(post);
    let answer = loop {
        let Some(rx) = frames.as_mut() else {
            break post.await;
        };
        tokio::select! {
            answer = &mut post => break answer,
            frame = rx.recv() => match frame {
                Some(frame) => view.show(frame),
                None => frames = None,
            },
        }
    };
    let answer = answer?;
    // Frames sent before the answer may still be on their way.
    if let Some(rx) = frames.as_mut() {
        let deadline = tokio::time::sleep(SOCKET_GRACE);
        tokio::pin!(deadline);
        while !view.reply_stored {
            tokio::select! {
                frame = rx.recv() => match frame {
                    Some(frame) => view.show(frame),
                    None => break,
                },
                () = &mut deadline => break,
            }
        }
    }
    Ok(view.finish(&answer))
}

/// Connects to the room's socket; `None` (and a note) when it cannot.
async fn open_socket(target: &Target) -> Option<mpsc::UnboundedReceiver<ServerFrame>> {
    let url = match target.ws_url() {
        Ok(url) => url,
        Err(err) => {
            eprintln!("duet: not streaming: {err:#}");
            return None;
        }
    };
    let socket = match tokio_tungstenite::connect_async(url.as_str()).await {
        Ok((socket, _)) => socket,
        Err(err) => {
            eprintln!("duet: not streaming (cannot open the room's socket: {err})");
            return None;
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (_write, mut read) = socket.split();
        while let Some(Ok(message)) = read.next().await {
            if let tokio_tungstenite::tungstenite::Message::Text(text) = message
                && let Ok(frame) = serde_json::from_str::<ServerFrame>(text.as_str())
                && tx.send(frame).is_err()
            {
                break;
            }
        }
    });
    Some(rx)
}

/// POSTs the question; retries `429`/`503` after `Retry-After`.
async fn post_message(
    client: &reqwest::Client,
    target: &Target,
    question: &str,
) -> anyhow::Result<MessageResponse> {
    let url = target.http_url("message")?;
    let body = MessageRequest {
        text: question.to_string(),
        user_id: Some(target.name.clone()),
    };
    let mut tries = 0;
    loop {
        let mut request = client.post(url.clone()).json(&body);
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach {}", target.server))?;
        let status = response.status();
        if status.is_success() {
            return response
                .json::<MessageResponse>()
                .await
                .context("the server's answer is not a message answer");
        }
        let retry = matches!(status.as_u16(), 429 | 503) && tries < RETRIES;
        if retry {
            tries += 1;
            let wait = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(Duration::from_secs(1), Duration::from_secs)
                .min(MAX_RETRY_WAIT);
            tokio::time::sleep(wait).await;
            continue;
        }
        let text = response.text().await.unwrap_or_default();
        let shown = match serde_json::from_str::<ErrorBody>(&text) {
            Ok(ErrorBody {
                error,
                details: Some(details),
            }) => format!(
                "{error} {}",
                serde_json::to_string(&details).unwrap_or_default()
            ),
            Ok(body) => body.error,
            Err(_) => text,
        };
        bail!("the server answered {status}: {shown}");
    }
}

/// What `ask` has seen of its turn on the socket, and printed.
struct TurnView {
    name: String,
    question: String,
    /// Message ids there before the question.
    known: HashSet<String>,
    /// The stored question's id, once seen.
    question_id: Option<String>,
    /// Turns that started before the question was stored.
    other_turns: HashSet<String>,
    /// The question's turn, once it started.
    turn: Option<String>,
    /// Rounds of the turn that started.
    rounds: u32,
    /// A later round started and printed nothing yet.
    fresh_round: bool,
    /// The agent's commands of this turn, by exec id.
    execs: HashSet<String>,
    printed_text: bool,
    printed_execs: bool,
    /// The last character printed, to keep one blank line between parts.
    last: Option<char>,
    /// The turn's agent or system message arrived in the state.
    reply_stored: bool,
}

impl TurnView {
    fn new(name: &str, question: &str) -> Self {
        TurnView {
            name: name.to_string(),
            question: question.to_string(),
            known: HashSet::new(),
            question_id: None,
            other_turns: HashSet::new(),
            turn: None,
            rounds: 0,
            fresh_round: false,
            execs: HashSet::new(),
            printed_text: false,
            printed_execs: false,
            last: None,
            reply_stored: false,
        }
    }

    /// Follows one frame; prints what belongs to the question's turn.
    fn show(&mut self, frame: ServerFrame) {
        match frame {
            ServerFrame::State { state } => self.see_state(&state.messages),
            ServerFrame::Ai {
                phase,
                turn_id,
                text,
                ..
            } => self.see_ai(phase, turn_id, text),
            ServerFrame::Exec(exec) => self.see_exec(exec),
            _ => {}
        }
    }

    fn see_state(&mut self, messages: &[crate::protocol::DuetMessage]) {
        if self.question_id.is_none() {
            self.question_id = messages
                .iter()
                .find(|m| {
                    m.role == Role::User
                        && !self.known.contains(&m.id)
                        && m.user_id.as_deref() == Some(self.name.as_str())
                        && m.text.trim() == self.question.trim()
                })
                .map(|m| m.id.clone());
        }
        if self.turn.is_some() {
            let question = self.question_id.as_deref();
            let position = messages
                .iter()
                .position(|m| Some(m.id.as_str()) == question);
            self.reply_stored = position.is_some_and(|at| {
                messages[at + 1..]
                    .iter()
                    .any(|m| m.role != Role::User && !self.known.contains(&m.id))
            });
        }
    }

    fn see_ai(&mut self, phase: AiPhase, turn_id: String, text: Option<String>) {
        if phase == AiPhase::Start && self.turn.is_none() {
            if self.question_id.is_some() && !self.other_turns.contains(&turn_id) {
                self.turn = Some(turn_id.clone());
            } else {
                self.other_turns.insert(turn_id.clone());
            }
        }
        if self.turn.as_deref() != Some(turn_id.as_str()) {
            return;
        }
        match phase {
            AiPhase::Start => {
                self.rounds += 1;
                // A later round's text comes after a blank line of its own.
                self.fresh_round = self.rounds > 1;
            }
            AiPhase::Delta => {
                if let Some(text) = text {
                    self.printed_text = true;
                    if std::mem::take(&mut self.fresh_round) {
                        self.separate();
                        self.print(text.trim_start_matches('\n'));
                    } else {
                        self.print(&text);
                    }
                }
            }
            AiPhase::End | AiPhase::Error => {}
        }
    }

    fn see_exec(&mut self, exec: ExecFrame) {
        match exec {
            ExecFrame::Start {
                exec_id,
                cmd,
                source: ExecSource::Agent,
                ..
            } if self.turn.is_some() && !self.reply_stored => {
                self.execs.insert(exec_id);
                self.printed_execs = true;
                self.separate();
                self.print(&format!("$ {cmd}\n"));
            }
            ExecFrame::Stdout { exec_id, data } | ExecFrame::Stderr { exec_id, data }
                if self.execs.contains(&exec_id) =>
            {
                self.print(&data);
            }
            ExecFrame::Complete {
                exec_id,
                exit_code,
                error,
                timed_out,
                interrupted,
                ..
            } if self.execs.contains(&exec_id) => {
                let mut notes = Vec::new();
                if let Some(code) = exit_code.filter(|c| *c != 0) {
                    notes.push(format!("exit code {code}"));
                }
                if timed_out {
                    notes.push("timed out".to_string());
                }
                if interrupted {
                    notes.push("interrupted".to_string());
                }
                if let Some(error) = error {
                    notes.push(error);
                }
                if !notes.is_empty() {
                    self.end_line();
                    self.print(&format!("[{}]\n", notes.join("; ")));
                }
            }
            _ => {}
        }
    }

    /// Prints what the socket did not show and says how the turn ended.
    fn finish(&mut self, answer: &MessageResponse) -> ExitCode {
        let Some(reply) = &answer.reply else {
            self.end_line();
            let error = answer
                .error
                .as_deref()
                .unwrap_or("the turn ended without a reply");
            eprintln!("duet: {error}");
            return ExitCode::FAILURE;
        };
        if !self.printed_text {
            self.print(reply);
        } else if !self.printed_execs {
            let runs = answer
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Agent && &m.text == reply)
                .and_then(|m| m.runs.clone());
            for block in blocks::parse(reply, runs.as_deref()) {
                match block {
                    Block::Prose(_) => {}
                    Block::Output { cmd, output } => {
                        self.separate();
                        self.print(&format!("Output ({cmd}):\n{output}"));
                    }
                    Block::Error { cmd, message } => {
                        self.separate();
                        self.print(&format!("Error ({cmd}):\n{message}"));
                    }
                }
            }
        }
        self.end_line();
        ExitCode::SUCCESS
    }

    /// Prints to stdout at once (the reply streams).
    fn print(&mut self, text: &str) {
        if let Some(last) = text.chars().next_back() {
            self.last = Some(last);
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// Ends the current line, if one is open.
    fn end_line(&mut self) {
        if self.last.is_some_and(|c| c != '\n') {
            self.print("\n");
        }
    }

    /// One blank line before the next part (none at the very start).
    fn separate(&mut self) {
        if self.last.is_some() {
            self.end_line();
            self.print("\n");
        }
    }
}
