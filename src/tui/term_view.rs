//! The room's shared terminal in the TUI: F3 shows it in the output pane
//! and attaches (with the pane's size), hides it and detaches; while the
//! output pane has the focus every key goes to the terminal as the bytes a
//! terminal sends, but Ctrl+], which gives the keys back to the input.
//! The pane's size follows the layout (`duet_term_resize`); who types into
//! it shows in its title; whether one runs, in the status bar. Keys typed
//! while it attaches wait (up to 64 KiB) and go in order once attached.

use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::client::socket::ConnState;
use crate::client::term::keys::{InputModes, key_bytes, paste_bytes};
use crate::client::term::mouse::mouse_bytes;
use crate::client::term::needs;
use crate::client::term::screen::{Seen, TermScreen};
use crate::protocol::{MAX_TERM_INPUT, TermFrame, TermSize, TerminalState};
use crate::tui::app::{App, Effect, Pane, TYPING_MS, Typist};
use crate::tui::keymap::{self, Action};
use crate::tui::roles::Deed;
use crossterm::event::{KeyEvent, MouseEvent};

/// The terminal view's state.
#[derive(Debug, Clone)]
pub struct TermPane {
    /// The room's terminal, while one runs (the state's `terminal`, and
    /// the `open`, `resize` and `exit` frames).
    pub running: Option<TerminalState>,
    /// The output pane shows the terminal.
    pub shown: bool,
    /// What the attached terminal shows.
    pub screen: TermScreen,
    /// `term_open` answered on this connection: frames come.
    pub attached: bool,
    /// The pane's size as last given to the backend.
    pub sent_size: Option<TermSize>,
    /// People typing into the terminal.
    pub typing: Vec<Typist>,
    /// Keys typed while the view attaches (at most `MAX_TERM_INPUT`
    /// bytes): sent in order once `term_open` answered.
    pub typed_early: Vec<u8>,
}

impl Default for TermPane {
    fn default() -> TermPane {
        TermPane {
            running: None,
            shown: false,
            screen: TermScreen::new(TermSize::DEFAULT),
            attached: false,
            sent_size: None,
            typing: Vec::new(),
            typed_early: Vec::new(),
        }
    }
}

/// The key that shows and hides the terminal view, as the help writes it.
pub fn toggle_key() -> String {
    keymap::BINDINGS
        .iter()
        .find(|b| b.action == Action::Terminal)
        .and_then(|b| keymap::keys_of(b).first().map(keymap::label))
        .unwrap_or_else(|| "F3".into())
}

/// A pane's inner size as a terminal size (the protocol's bounds hold:
/// a sliver of a pane asks for the smallest terminal, not less).
fn term_size((width, height): (u16, u16)) -> TermSize {
    TermSize::clamped(i64::from(width), i64::from(height))
}

impl App {
    /// Whether keys go to the terminal: it is shown and its pane focused.
    pub fn terminal_focused(&self) -> bool {
        self.term.shown && self.focus == Pane::Output
    }

    /// The program's key modes (application cursor, bracketed paste).
    fn term_modes(&self) -> InputModes {
        InputModes::of(self.term.screen.screen())
    }

    /// A key while the terminal has the keys: Ctrl+] gives them back,
    /// every other goes to the terminal.
    pub(crate) fn on_terminal_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        if keymap::lookup_terminal(&key) == Some(Action::TermBack) {
            self.focus = Pane::Chat;
            self.unseen.0 = false;
            return;
        }
        if let Some(bytes) = key_bytes(&key, self.term_modes()) {
            self.term_input(bytes, effects);
        }
    }

    /// A paste while the terminal has the keys: bracketed when the
    /// program asked.
    pub(crate) fn on_terminal_paste(&mut self, text: &str, effects: &mut Vec<Effect>) {
        let bytes = paste_bytes(text, self.term_modes());
        self.term_input(bytes, effects);
    }

    /// A mouse event over the terminal view goes to the program when it
    /// asked for the mouse (htop, vim with `mouse=a`); false otherwise.
    pub(crate) fn on_terminal_mouse(
        &mut self,
        mouse: &MouseEvent,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let screen = self.term.screen.screen();
        let mode = screen.mouse_protocol_mode();
        if !self.term.shown || !self.term.attached || mode == vt100::MouseProtocolMode::None {
            return false;
        }
        let inner = self.pane_inner(Pane::Output);
        let size = self.term.screen.size();
        let (col, row) = (
            mouse.column.wrapping_sub(inner.x),
            mouse.row.wrapping_sub(inner.y),
        );
        if mouse.column < inner.x || mouse.row < inner.y || col >= size.cols || row >= size.rows {
            return false;
        }
        let encoding = screen.mouse_protocol_encoding();
        if let Some(bytes) = mouse_bytes(mouse, col, row, mode, encoding) {
            self.term_input(bytes, effects);
        }
        true
    }

    fn term_input(&mut self, data: Vec<u8>, effects: &mut Vec<Effect>) {
        if self.refused(Deed::TypeIntoTerminal) {
            return;
        }
        // The backend is out of reach: keys typed now would run later, in
        // whatever shell is there then (a restart's new one), so they go
        // nowhere and the person is told.
        if !matches!(self.conn, ConnState::Connected { .. }) {
            self.toast("offline: your keys were not sent to the terminal", true);
            return;
        }
        // Shown but not attached yet (it opens, or attaches again after a
        // reconnect): the keys wait for the answer.
        if self.term.shown && !self.term.attached {
            if self.term.typed_early.len() + data.len() > MAX_TERM_INPUT {
                self.toast(
                    "the terminal is not attached yet: keys past 64 KiB were not sent",
                    true,
                );
                return;
            }
            self.term.typed_early.extend_from_slice(&data);
            return;
        }
        if self.term.running.is_none() {
            self.toast(
                format!(
                    "the terminal has ended: your keys were not sent ({} opens a new one)",
                    toggle_key()
                ),
                true,
            );
            return;
        }
        match self.term.screen.term_id().filter(|_| self.term.attached) {
            Some(term_id) => effects.push(Effect::TermInput {
                term_id: term_id.to_string(),
                data,
            }),
            None => self.toast(
                "the terminal is not attached yet: your keys were not sent",
                true,
            ),
        }
    }

    /// F3: show the terminal (attach, keys to it) or hide it (detach).
    pub(crate) fn toggle_terminal(&mut self, effects: &mut Vec<Effect>) {
        if self.term.shown {
            self.term.shown = false;
            self.term.sent_size = None;
            if self.term.attached {
                let term_id = self.term.screen.term_id().map(str::to_string);
                effects.push(Effect::Call(RoomOp::TermDetach(term_id)));
            }
            self.term.attached = false;
            self.term.typed_early.clear();
            self.term.screen.detached();
            return;
        }
        // Watching one that runs is for everyone; opening one is not.
        if self.term.running.is_none() && self.refused(Deed::OpenTerminal) {
            return;
        }
        self.term.shown = true;
        self.focus = Pane::Output;
        self.unseen.1 = false;
        let size = term_size(self.pane_size(Pane::Output));
        self.term.sent_size = Some(size);
        effects.push(Effect::Call(RoomOp::TermOpen(Some(size))));
    }

    /// The pane's size changed while attached: say so.
    pub(crate) fn follow_pane_size(&mut self, effects: &mut Vec<Effect>) {
        // A watcher's size does not count: it is not sent.
        if !self.term.shown || !self.term.attached || self.may(Deed::TypeIntoTerminal).is_err() {
            return;
        }
        // A hidden pane (the narrow layout shows one pane at a time) keeps
        // the size it had: only a pane on screen says how big it is.
        let (width, height) = self.pane_size(Pane::Output);
        if width == 0 || height == 0 {
            return;
        }
        let size = term_size((width, height));
        if self.term.sent_size == Some(size) {
            return;
        }
        self.term.sent_size = Some(size);
        if let Some(term_id) = self.term.screen.term_id() {
            effects.push(Effect::TermResize {
                term_id: term_id.to_string(),
                size,
            });
        }
    }

    /// The connection dropped: the socket attaches again when it is
    /// back, and its answer says so.
    pub(crate) fn terminal_link_down(&mut self) {
        self.term.attached = false;
    }

    /// A `duet_term` frame.
    pub(crate) fn on_term_frame(&mut self, frame: TermFrame) -> bool {
        match &frame {
            TermFrame::Open {
                term_id,
                by,
                cols,
                rows,
            } => {
                self.term.running = Some(TerminalState {
                    term_id: term_id.clone(),
                    cols: *cols,
                    rows: *rows,
                });
                if !self.term.shown {
                    self.toast(
                        format!("{by} opened the room's terminal: {} shows it", toggle_key()),
                        false,
                    );
                }
                return true;
            }
            TermFrame::Resize {
                term_id,
                cols,
                rows,
            } => {
                if let Some(running) = self.term.running.as_mut().filter(|r| r.term_id == *term_id)
                {
                    running.cols = *cols;
                    running.rows = *rows;
                }
            }
            TermFrame::Exit {
                term_id,
                exit_code,
                reason,
            } => {
                let ours = self
                    .term
                    .running
                    .as_ref()
                    .is_some_and(|r| r.term_id == *term_id);
                if ours {
                    self.term.running = None;
                    match (exit_code, reason) {
                        (_, Some(reason)) => {
                            self.toast(format!("the room's terminal ended: {reason}"), true)
                        }
                        (Some(code), None) => {
                            self.toast(format!("the room's terminal exited (code {code})"), false)
                        }
                        (None, None) => self.toast("the room's terminal was closed", false),
                    }
                }
            }
            // The TUI asks for bytes, never for screen frames.
            TermFrame::Data { .. } | TermFrame::Screen { .. } => {}
        }
        match self.term.screen.apply(&frame) {
            Seen::Nothing => matches!(frame, TermFrame::Resize { .. } | TermFrame::Exit { .. }),
            Seen::Drawn => true,
            Seen::Exited(_) => {
                self.terminal_ended();
                true
            }
        }
    }

    /// A `duet_error` saying this socket is not attached to the terminal
    /// the view shows (it ended unseen): the view ends, once, so the keys
    /// that follow go to the input instead of each drawing the same
    /// refusal (those sent before it ended are refused quietly). Answers
    /// whether the error was that.
    pub(crate) fn term_input_refused(&mut self, error: &str) -> bool {
        let refused =
            error.starts_with("duet_term_") && error.contains("is not attached to terminal");
        if !refused || !self.term.shown {
            return refused;
        }
        self.terminal_ended();
        self.toast(
            format!(
                "the room's terminal is not attached any more: {} opens it",
                toggle_key()
            ),
            true,
        );
        true
    }

    /// `duet_typing` with a `termId`: someone types into the terminal.
    pub(crate) fn on_term_typing(&mut self, id: String, name: String) -> bool {
        if id == self.session.connection_id {
            return false;
        }
        let until_ms = self.now_ms + TYPING_MS;
        match self.term.typing.iter_mut().find(|t| t.id == id) {
            Some(t) => t.until_ms = until_ms,
            None => self.term.typing.push(Typist { id, name, until_ms }),
        }
        true
    }

    /// The state's `terminal`: whether one runs. The pane follows it: a
    /// pane showing a terminal that no longer runs (a restore or a cleanup
    /// ended it, or its `exit` was missed) shows that it ended. Not while
    /// the socket is attaching again after a reconnect (a backend that
    /// restarted has no terminal left): its `term_open` then opens a new
    /// one, which the pane shows.
    pub(crate) fn set_terminal(&mut self, terminal: Option<TerminalState>) -> bool {
        let changed = self.term.running != terminal;
        let shown_id = self.term.screen.term_id().map(str::to_string);
        let gone = shown_id.is_some_and(|id| terminal.as_ref().is_none_or(|t| t.term_id != id));
        self.term.running = terminal;
        if gone && self.term.attached {
            self.terminal_ended();
        }
        changed || gone
    }

    /// The terminal shown here ended: the pane gives way to the output
    /// and the keys go back to the input; F3 opens a new one.
    fn terminal_ended(&mut self) {
        self.term.typed_early.clear();
        self.term.screen.detached();
        self.term.attached = false;
        self.term.shown = false;
        self.term.sent_size = None;
    }

    /// The answer of `term_open`, `term_detach` or `term_close`.
    pub(crate) fn on_term_answer(&mut self, answer: &Answer, effects: &mut Vec<Effect>) {
        match (&answer.op, &answer.result) {
            (RoomOp::TermOpen(_), Err(RpcError::Lost(_) | RpcError::NotSent(_))) => {}
            (RoomOp::TermOpen(_), _) => match answer.decode::<TerminalState>() {
                Ok(terminal) if self.term.shown => {
                    self.term.screen.attached(&terminal);
                    self.term.attached = true;
                    let early = std::mem::take(&mut self.term.typed_early);
                    if !early.is_empty() {
                        effects.push(Effect::TermInput {
                            term_id: terminal.term_id.clone(),
                            data: early,
                        });
                    }
                    self.term.running = Some(terminal);
                }
                // Hidden meanwhile: it is not watched any more.
                Ok(terminal) => {
                    let term_id = terminal.term_id.clone();
                    self.term.running = Some(terminal);
                    effects.push(Effect::Call(RoomOp::TermDetach(Some(term_id))));
                }
                Err(err) => {
                    self.term.shown = false;
                    self.term.sent_size = None;
                    self.term.typed_early.clear();
                    self.toast(format!("the room's terminal: {err}"), true);
                }
            },
            (RoomOp::TermClose(_), Err(err)) => {
                self.toast(format!("closing the terminal: {err}"), true);
            }
            _ => {}
        }
    }

    /// Commands that need a terminal are not sent: the hint names the
    /// key and `duet term`. Answers whether `cmd` was held back.
    pub(crate) fn held_for_terminal(&mut self, cmd: &str) -> bool {
        let Some(program) = needs::needs_terminal(cmd) else {
            return false;
        };
        self.toast(needs::tui_hint(&program, &toggle_key()), true);
        true
    }
}
