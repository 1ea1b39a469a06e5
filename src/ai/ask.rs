//! `duet ask`: one question to a room's agent from the shell. Prints the
//! reply as it streams on the room's socket, then its commands' outputs;
//! exits non-zero when the turn ended without a reply. Settings, the HTTP
//! client and the socket are the client's (src/client, src/config.rs).

use crate::blocks::{self, Block};
use crate::cli::AskArgs;
use crate::client::commands::{client_for, data_dir_from_env, server_url};
use crate::client::socket::{self, ConnState, SocketCommand, SocketEvent, SocketParams};
use crate::config;
use crate::protocol::{AiPhase, ExecFrame, ExecSource, MessageResponse, Role, ServerFrame};
use anyhow::bail;
use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long to wait for the room's state on connect before asking anyway.
const FIRST_STATE: Duration = Duration::from_secs(10);
/// How long to wait, after the answer, for the socket to catch up.
const SOCKET_GRACE: Duration = Duration::from_secs(2);

/// `duet ask "question"`.
pub async fn ask(args: AskArgs) -> anyhow::Result<ExitCode> {
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        bail!("the question is empty");
    }
    let settings = config::load(&args.client, data_dir_from_env())?;
    let client = client_for(&settings)?;
    let params = SocketParams {
        base: server_url(&settings)?,
        room: client.room().to_string(),
        name: settings.name.clone(),
        token: crate::client::commands::token_for(&settings),
        connection_id: format!("ask-{:016x}", rand::random::<u64>()),
        deltas: false,
    };
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (socket, _task) = socket::spawn(params, events_tx);
    let mut view = TurnView::new(&settings.name, &question);
    // The state on connect says which messages were there before.
    let mut streaming = match tokio::time::timeout(FIRST_STATE, first_state(&mut events)).await {
        Ok(Ok(known)) => {
            view.known = known;
            true
        }
        Ok(Err(reason)) => {
            eprintln!("duet: not streaming ({reason})");
            false
        }
        Err(_) => {
            eprintln!("duet: not streaming (the room's socket sent no state)");
            false
        }
    };
    let post = client.message(&question);
    tokio::pin!(post);
    let answer = loop {
        if !streaming {
            break post.await;
        }
        tokio::select! {
            answer = &mut post => break answer,
            event = events.recv() => match event {
                Some(SocketEvent::Frame(frame)) => view.show(*frame),
                Some(_) => {}
                None => streaming = false,
            },
        }
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => {
            socket.send(SocketCommand::Close);
            eprintln!("duet: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    // Frames sent before the answer may still be on their way.
    if streaming {
        let deadline = tokio::time::sleep(SOCKET_GRACE);
        tokio::pin!(deadline);
        while !view.reply_stored {
            tokio::select! {
                event = events.recv() => match event {
                    Some(SocketEvent::Frame(frame)) => view.show(*frame),
                    Some(_) => {}
                    None => break,
                },
                () = &mut deadline => break,
            }
        }
    }
    socket.send(SocketCommand::Close);
    Ok(view.finish(&answer))
}

/// Waits for the room's state on connect; returns the ids of its messages,
/// or why the socket will not connect.
async fn first_state(
    events: &mut mpsc::UnboundedReceiver<SocketEvent>,
) -> Result<HashSet<String>, String> {
    while let Some(event) = events.recv().await {
        match event {
            SocketEvent::Frame(frame) => {
                if let ServerFrame::State { state } = *frame {
                    return Ok(state.messages.into_iter().map(|m| m.id).collect());
                }
            }
            SocketEvent::State(ConnState::Offline(reason))
            | SocketEvent::State(ConnState::Reconnecting { reason, .. }) => return Err(reason),
            _ => {}
        }
    }
    Err("the socket stopped".into())
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
