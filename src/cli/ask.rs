//! `duet ask`: one question to a room's agent from the shell. Prints the
//! reply as the TUI shows it, as it streams on the room's socket: its
//! markdown drawn for a terminal (colours on a terminal, plain text in a
//! pipe), each paragraph once it is whole, then each command (`$ cmd`)
//! with its output; never the model's `<run>` tags. Exits non-zero when
//! the turn ended without a reply. Settings, the HTTP client and the
//! socket are the client's (src/client, src/config.rs).

use super::ClientArgs;
use crate::blocks::{self, Block};
use crate::client::commands::{client_for, socket_params};
use crate::client::socket::{self, ConnState, SocketCommand, SocketEvent};
use crate::protocol::{AiPhase, ExecFrame, ExecSource, MessageResponse, Role, ServerFrame};
use crate::text::termtext::{self, LineCleaner};
use crate::tui::theme::Theme;
use crate::tui::{markdown, print};
use anyhow::bail;
use clap::Args;
use ratatui::text::{Line, Span};
use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long to wait for the room's state on connect before asking anyway.
const FIRST_STATE: Duration = Duration::from_secs(10);
/// How long to wait, after the answer, for the socket to catch up.
const SOCKET_GRACE: Duration = Duration::from_secs(2);
/// The width replies are drawn for in a pipe (unless `COLUMNS` says).
const PIPE_WIDTH: usize = 80;

#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The question
    #[arg(required = true, trailing_var_arg = true)]
    pub question: Vec<String>,
}

/// `duet ask "question"`.
pub async fn ask(args: AskArgs) -> anyhow::Result<ExitCode> {
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        bail!("the question is empty");
    }
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    let params = socket_params(&settings, &client, "ask", false)?;
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (socket, _task) = socket::spawn(params, events_tx);
    let mut view = TurnView::new(&settings.name, &question, Look::of_stdout());
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

/// How replies are drawn: for a terminal (its width, styles as escapes,
/// colours unless NO_COLOR) or for a pipe (plain text).
#[derive(Debug, Clone, Copy)]
pub struct Look {
    pub width: usize,
    pub escapes: bool,
    pub theme: Theme,
}

impl Look {
    /// The look of this process's stdout.
    fn of_stdout() -> Look {
        let terminal = std::io::stdout().is_terminal();
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c >= 20);
        let width = match crossterm::terminal::size() {
            Ok((w, _)) if terminal && w >= 20 => usize::from(w),
            _ => columns.unwrap_or(PIPE_WIDTH),
        };
        Look {
            width,
            escapes: terminal,
            theme: match terminal {
                true => Theme::from_env(),
                false => Theme::PLAIN,
            },
        }
    }

    /// Markdown prose as this look draws it.
    pub fn prose(&self, text: &str) -> String {
        print::to_text(
            &markdown::render(text, self.width, self.theme),
            self.escapes,
        )
    }

    /// `$ cmd` (more lines of it indented).
    pub fn command(&self, cmd: &str) -> String {
        let lines: Vec<Line> = cmd
            .lines()
            .enumerate()
            .map(|(i, part)| {
                let lead = if i == 0 { "$ " } else { "  " };
                Line::from(vec![
                    Span::styled(lead, self.theme.dim()),
                    Span::styled(part.to_string(), self.theme.command()),
                ])
            })
            .collect();
        print::to_text(&lines, self.escapes)
    }

    /// A cleaned line of output: colours kept on a terminal (stderr in the
    /// error colour when it has none of its own), none in a pipe.
    pub fn output_line(&self, line: &str, stderr: bool) -> String {
        if !self.escapes {
            return format!("{}\n", termtext::strip_sgr(line));
        }
        if line.contains('\u{1b}') {
            return format!("{line}\x1b[0m\n");
        }
        let style = if stderr {
            self.theme.error()
        } else {
            Default::default()
        };
        print::to_text(&[Line::styled(line.to_string(), style)], true)
    }

    /// A note about how a command ended (`[exit code 2]`).
    pub fn note(&self, note: &str) -> String {
        print::to_text(
            &[Line::styled(format!("[{note}]"), self.theme.dim())],
            self.escapes,
        )
    }
}

/// A command of the turn being printed: its two streams' unfinished lines.
#[derive(Default)]
struct Printing {
    stdout: LineCleaner,
    stderr: LineCleaner,
}

/// What `ask` has seen of its turn on the socket, and printed.
struct TurnView {
    name: String,
    question: String,
    look: Look,
    /// Message ids there before the question.
    known: HashSet<String>,
    /// The stored question's id, once seen.
    question_id: Option<String>,
    /// Turns that started before the question was stored.
    other_turns: HashSet<String>,
    /// The question's turn, once it started.
    turn: Option<String>,
    /// The model's text of the current round, and how much of it is
    /// printed (whole paragraphs only, until the round ends).
    round: String,
    printed_upto: usize,
    /// The agent's commands of this turn, by exec id.
    execs: HashMap<String, Printing>,
    printed_text: bool,
    printed_execs: bool,
    /// The last character printed, to keep one blank line between parts.
    last: Option<char>,
    /// The turn's agent or system message arrived in the state.
    reply_stored: bool,
}

impl TurnView {
    fn new(name: &str, question: &str, look: Look) -> Self {
        TurnView {
            name: name.to_string(),
            question: question.to_string(),
            look,
            known: HashSet::new(),
            question_id: None,
            other_turns: HashSet::new(),
            turn: None,
            round: String::new(),
            printed_upto: 0,
            execs: HashMap::new(),
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
                // The prose after the last round's last command.
                self.print_round(self.round.len());
                self.round.clear();
                self.printed_upto = 0;
            }
            AiPhase::Delta => {
                if let Some(text) = text {
                    self.round.push_str(&text);
                    let whole = whole_paragraphs(&self.round, self.printed_upto);
                    self.print_round(whole.min(self.next_tag()));
                }
            }
            AiPhase::End => self.print_round(self.next_tag()),
            AiPhase::Error => self.print_round(self.round.len()),
        }
    }

    /// Where the round's next command tag starts (its end when none): the
    /// prose after a command prints once the command has (the stored reply
    /// shows it there too).
    fn next_tag(&self) -> usize {
        self.round
            .get(self.printed_upto..)
            .and_then(|rest| rest.find("<run>"))
            .map_or(self.round.len(), |at| self.printed_upto + at)
    }

    /// Prints the prose before the round's next command and steps past its
    /// tag: the command prints next.
    fn reach_command(&mut self) {
        let tag = self.next_tag();
        self.print_round(tag);
        if let Some(close) = self.round.get(tag..).and_then(|rest| rest.find("</run>")) {
            self.printed_upto = tag + close + "</run>".len();
        }
    }

    /// Prints the round's text up to `upto` as prose: its `<run>` tags
    /// left out (their commands print as they run).
    fn print_round(&mut self, upto: usize) {
        if upto <= self.printed_upto {
            return;
        }
        let (prose, _) = blocks::extract_commands(&self.round[self.printed_upto..upto]);
        self.printed_upto = upto;
        if prose.is_empty() {
            return;
        }
        self.printed_text = true;
        self.separate();
        let text = self.look.prose(&prose);
        self.print(&text);
    }

    fn see_exec(&mut self, exec: ExecFrame) {
        match exec {
            ExecFrame::Start {
                exec_id,
                cmd,
                source: ExecSource::Agent,
                ..
            } if self.turn.is_some() && !self.reply_stored => {
                self.reach_command();
                self.execs.insert(exec_id, Printing::default());
                self.printed_execs = true;
                self.separate();
                let text = self.look.command(&cmd);
                self.print(&text);
            }
            ExecFrame::Stdout { exec_id, data } => self.see_output(&exec_id, &data, false),
            ExecFrame::Stderr { exec_id, data } => self.see_output(&exec_id, &data, true),
            ExecFrame::Complete {
                exec_id,
                exit_code,
                error,
                timed_out,
                interrupted,
                ..
            } => {
                let Some(mut printing) = self.execs.remove(&exec_id) else {
                    return;
                };
                for (stderr, cleaner) in
                    [(false, &mut printing.stdout), (true, &mut printing.stderr)]
                {
                    if let Some(line) = cleaner.finish() {
                        let text = self.look.output_line(&line, stderr);
                        self.print(&text);
                    }
                }
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
                    let text = self.look.note(&notes.join("; "));
                    self.print(&text);
                }
            }
            _ => {}
        }
    }

    /// Prints the lines a chunk of a command's output finished.
    fn see_output(&mut self, exec_id: &str, data: &str, stderr: bool) {
        let Some(printing) = self.execs.get_mut(exec_id) else {
            return;
        };
        let cleaner = if stderr {
            &mut printing.stderr
        } else {
            &mut printing.stdout
        };
        for line in cleaner.push(data) {
            let text = self.look.output_line(&line, stderr);
            self.print(&text);
        }
    }

    /// Prints what the socket did not show and says how the turn ended.
    fn finish(&mut self, answer: &MessageResponse) -> ExitCode {
        self.print_round(self.round.len());
        let Some(reply) = &answer.reply else {
            self.end_line();
            let error = answer
                .error
                .as_deref()
                .unwrap_or("the turn ended without a reply");
            eprintln!("duet: {error}");
            return ExitCode::FAILURE;
        };
        if !self.printed_text || !self.printed_execs {
            let runs = answer
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Agent && &m.text == reply)
                .and_then(|m| m.runs.clone());
            for block in blocks::parse(reply, runs.as_deref()) {
                self.print_block(&block);
            }
        }
        self.end_line();
        ExitCode::SUCCESS
    }

    /// A block of the stored reply that the socket did not show: prose
    /// when no text streamed, commands when none ran on the socket.
    fn print_block(&mut self, block: &Block) {
        let text = match block {
            Block::Prose(prose) if !self.printed_text => self.look.prose(prose),
            Block::Output { cmd, output } if !self.printed_execs => {
                let mut text = self.look.command(cmd);
                for line in termtext::clean(output) {
                    text.push_str(&self.look.output_line(&line, false));
                }
                text
            }
            Block::Error { cmd, message } if !self.printed_execs => {
                self.look.command(cmd) + &self.look.note(message.trim())
            }
            _ => return,
        };
        self.separate();
        self.print(&text);
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

/// How much of a round's `text` is whole paragraphs (after `from`): up to
/// its last blank line outside a code fence, with no `<run>` tag left
/// open before it; 0 when none is.
fn whole_paragraphs(text: &str, from: usize) -> usize {
    let mut in_fence = false;
    let mut whole = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if !in_fence
            && at > from
            && line.ends_with('\n')
            && line.trim().is_empty()
            && text[..at].matches("<run>").count() == text[..at].matches("</run>").count()
        {
            whole = at;
        }
    }
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_print_once_whole() {
        assert_eq!(whole_paragraphs("one line", 0), 0);
        assert_eq!(whole_paragraphs("one\n\ntwo", 0), 5);
        assert_eq!(whole_paragraphs("one\n\ntwo", 5), 0);
        let fenced = "```sh\nls\n\npwd\n";
        assert_eq!(whole_paragraphs(fenced, 0), 0, "inside a fence");
        let closed = format!("{fenced}```\n\nafter");
        assert_eq!(whole_paragraphs(&closed, 0), closed.len() - "after".len());
        assert_eq!(whole_paragraphs("a <run>ls\n\n", 0), 0, "a tag still open");
    }
}
