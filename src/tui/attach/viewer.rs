//! What `duet term` shows and mirrors: the shared terminal's screen through
//! a local emulator, the program's key and mouse modes copied onto the
//! person's terminal, and the status bar; and how it takes the socket's
//! events.

use super::*;

/// The key and mouse modes the program set, as mirrored on the person's
/// terminal: a tiny emulator that holds only them, so that vt100's
/// `input_mode_diff` gives the bytes that change them.
pub(super) struct Mirror {
    shadow: vt100::Parser,
}

pub(super) type Modes = (
    bool,
    bool,
    bool,
    vt100::MouseProtocolMode,
    vt100::MouseProtocolEncoding,
);

pub(super) fn modes(screen: &vt100::Screen) -> Modes {
    (
        screen.application_keypad(),
        screen.application_cursor(),
        screen.bracketed_paste(),
        screen.mouse_protocol_mode(),
        screen.mouse_protocol_encoding(),
    )
}

impl Mirror {
    pub(super) fn new() -> Mirror {
        Mirror {
            shadow: vt100::Parser::new(1, 1, 0),
        }
    }

    /// The bytes that bring the person's terminal to `screen`'s modes,
    /// when they changed.
    pub(super) fn update(&mut self, screen: &vt100::Screen) -> Option<Vec<u8>> {
        if modes(screen) == modes(self.shadow.screen()) {
            return None;
        }
        let bytes = screen.input_mode_diff(self.shadow.screen());
        self.shadow.process(&bytes);
        Some(bytes)
    }
}

/// What `duet term` shows: the terminal's screen and the status bar.
pub(super) struct Viewer {
    pub(super) room: String,
    pub(super) screen: TermScreen,
    /// The terminal answered `term_open` on this connection.
    pub(super) attached: bool,
    /// Attached before: a fresh attachment is a re-attachment.
    pub(super) was_attached: bool,
    pub(super) conn: ConnState,
    pub(super) typing: Vec<(String, String, Instant)>,
    /// What the backend refused last (input over the rate, say), shown
    /// until then.
    pub(super) notice: Option<(String, Instant)>,
    pub(super) theme: Theme,
}

impl Viewer {
    pub(super) fn term_id(&self) -> Option<&str> {
        self.screen.term_id().filter(|_| self.attached)
    }

    /// The status bar's words: room, size, who types, the connection,
    /// the detach key.
    pub(super) fn status(&self, window: Rect) -> (String, String) {
        let mut left = format!(" {}", self.room);
        let size = self.screen.size();
        let mut letterboxed = false;
        match &self.conn {
            ConnState::Connected { .. } if self.attached => {
                left.push_str(&format!(" · terminal {}×{}", size.cols, size.rows));
                let (cols, rows) = (window.width, window.height.saturating_sub(1));
                letterboxed = size.cols < cols || size.rows < rows;
            }
            ConnState::Connected { .. } | ConnState::Connecting if self.was_attached => {
                left.push_str(" · re-attaching…")
            }
            ConnState::Connected { .. } | ConnState::Connecting => left.push_str(" · attaching…"),
            ConnState::Reconnecting { in_secs, reason } => {
                left.push_str(&format!(" · reconnecting in {in_secs} s: {reason}"))
            }
            ConnState::Offline(why) => left.push_str(&format!(" · offline: {why}")),
        }
        let names: Vec<&str> = self.typing.iter().map(|(_, n, _)| n.as_str()).collect();
        match names.as_slice() {
            [] => {}
            [one] => left.push_str(&format!(" · {one} is typing")),
            [a, b] => left.push_str(&format!(" · {a} and {b} are typing")),
            many => left.push_str(&format!(" · {} people are typing", many.len())),
        }
        if letterboxed {
            left.push_str(" · a smaller window sets the size");
        }
        if let Some((notice, _)) = &self.notice {
            left.push_str(&format!(" · backend: {notice}"));
        }
        (left, format!("{DETACH_LABEL} detach "))
    }

    pub(super) fn draw(&self, frame: &mut Frame) {
        let area = frame.area();
        if area.width == 0 || area.height == 0 {
            return;
        }
        let size = self.screen.size();
        // Letterboxed: the terminal in the top-left corner, the rest blank.
        let term = Rect {
            x: 0,
            y: 0,
            width: size.cols.min(area.width),
            height: size.rows.min(area.height.saturating_sub(1)),
        };
        let screen = self.screen.screen();
        frame.render_widget(
            tui_term::widget::PseudoTerminal::new(screen)
                .cursor(tui_term::widget::Cursor::default().visibility(false)),
            term,
        );
        let (row, col) = screen.cursor_position();
        if self.attached && !screen.hide_cursor() && col < term.width && row < term.height {
            frame.set_cursor_position(Position::new(col, row));
        }
        let bar = Rect {
            x: 0,
            y: area.height - 1,
            width: area.width,
            height: 1,
        };
        let (left, right) = self.status(area);
        let total = usize::from(area.width);
        let right_w = crate::text::width(&right);
        let left = crate::text::truncate(&left, total.saturating_sub(right_w + 1).max(1));
        let gap = total.saturating_sub(crate::text::width(&left) + right_w);
        let style = self.theme.status();
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(left, style),
                Span::styled(" ".repeat(gap), style),
                Span::styled(right, style),
            ])),
            bar,
        );
    }
}

impl Viewer {
    /// What the socket said; an end when the attachment is over.
    pub(super) fn on_event(&mut self, event: SocketEvent) -> Option<End> {
        match event {
            SocketEvent::State(state) => {
                if !matches!(state, ConnState::Connected { .. }) && self.attached {
                    self.attached = false;
                    self.was_attached = true;
                }
                if let ConnState::Offline(why) = &state {
                    return Some(End::Failed(why.clone()));
                }
                self.conn = state;
            }
            SocketEvent::Answer(answer) => return self.on_answer(*answer),
            SocketEvent::Frame(frame) => match *frame {
                ServerFrame::Term(frame) => {
                    if let Seen::Exited(code) = self.screen.apply(&frame) {
                        return Some(End::Exited(code));
                    }
                }
                ServerFrame::Typing {
                    id,
                    name,
                    term_id: Some(term_id),
                } if self.screen.term_id() == Some(term_id.as_str()) => {
                    let until = Instant::now() + TYPING;
                    match self.typing.iter_mut().find(|(i, _, _)| *i == id) {
                        Some(typist) => typist.2 = until,
                        None => self.typing.push((id, name, until)),
                    }
                }
                ServerFrame::Presence { users } => {
                    self.typing
                        .retain(|(id, _, _)| users.iter().any(|u| &u.id == id));
                }
                // A refused keystroke is said, not silently lost.
                ServerFrame::Error { error, .. } => {
                    self.notice = Some((error, Instant::now() + NOTICE));
                }
                _ => {}
            },
            SocketEvent::Delta(_) | SocketEvent::Outbox(_) => {}
        }
        None
    }

    pub(super) fn on_answer(&mut self, answer: Answer) -> Option<End> {
        if !matches!(answer.op, RoomOp::TermOpen(_)) {
            return None;
        }
        match (&answer.result, answer.decode::<TerminalState>()) {
            (_, Ok(terminal)) => {
                self.screen.attached(&terminal);
                self.attached = true;
                None
            }
            // The connection dropped first: the next one attaches again.
            (Err(RpcError::Lost(_) | RpcError::NotSent(_)), _) => None,
            (_, Err(why)) => Some(End::Failed(why)),
        }
    }
}
