//! Keys, mouse and the command line's submit: the person's side of
//! `App::update`.

use crate::client::rpc::RoomOp;
use crate::protocol::Addressee;
use crate::tui::app::{App, Effect, Modal, Pane};
use crate::tui::composer::{Mode, Motion};
use crate::tui::keymap::{self, Action};
use crate::tui::slash::Outcome;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

/// Lines one wheel step scrolls.
const WHEEL_LINES: isize = 3;

/// A line that starts with it asks the agent, whatever the mode.
pub const AT_AGENT: &str = "@agent";

/// What a (trimmed, non-slash) line sends in `mode`: `@agent …` asks the
/// agent from any mode, `!cmd` runs a command from the chat modes.
/// Nothing when nothing is left to send.
pub fn read_line(mode: Mode, line: &str) -> Option<RoomOp> {
    let op = if let Some(question) = strip_agent(line) {
        RoomOp::to_agent(question)
    } else {
        match (mode.addressee(), line.strip_prefix('!')) {
            (None, _) => RoomOp::Exec(line.to_string()),
            (Some(_), Some(cmd)) => RoomOp::Exec(cmd.trim().to_string()),
            (Some(to), None) => RoomOp::Message {
                text: line.to_string(),
                to,
            },
        }
    };
    let empty = match &op {
        RoomOp::Exec(body) | RoomOp::Message { text: body, .. } => body.is_empty(),
        _ => false,
    };
    (!empty).then_some(op)
}

/// The question after a leading `@agent` (any case; followed by a space,
/// `:` or `,`, or nothing), if the line starts so.
fn strip_agent(line: &str) -> Option<&str> {
    let head = line.get(..AT_AGENT.len())?;
    if !head.eq_ignore_ascii_case(AT_AGENT) {
        return None;
    }
    let rest = &line[AT_AGENT.len()..];
    let question = match rest.chars().next() {
        None => rest,
        Some(c) if c.is_whitespace() || c == ':' || c == ',' => &rest[c.len_utf8()..],
        Some(_) => return None,
    };
    Some(question.trim())
}

impl App {
    pub(crate) fn on_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        if key.kind != KeyEventKind::Press {
            return;
        }
        if let Some(modal) = self.modals.last().cloned() {
            self.on_modal_key(modal, key, effects);
            return;
        }
        if self.terminal_focused() {
            self.on_terminal_key(key, effects);
            return;
        }
        let action = keymap::lookup(&key);
        if action != Some(Action::ClearOrQuit) {
            self.ctrl_c_armed = false;
        }
        if key.code == KeyCode::Char('?') && self.composer.is_empty() {
            self.modals.push(Modal::Help);
            return;
        }
        let Some(action) = action else {
            if let KeyCode::Char(c) = key.code
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                self.composer.insert(c.encode_utf8(&mut [0; 4]));
                self.typed(effects);
            }
            return;
        };
        self.on_action(action, effects);
    }

    fn on_modal_key(&mut self, modal: Modal, key: KeyEvent, effects: &mut Vec<Effect>) {
        let table = match modal {
            Modal::Help | Modal::Checkpoints | Modal::Listing => keymap::HELP_KEYS,
            Modal::Processes => keymap::PROCESS_KEYS,
            Modal::Approval(_) => keymap::APPROVAL_KEYS,
            Modal::Link => keymap::LINK_KEYS,
            Modal::Diff => keymap::DIFF_KEYS,
            Modal::ConfirmCleanup
            | Modal::ConfirmStop(_)
            | Modal::ConfirmOverwrite
            | Modal::ConfirmRestore(_)
            | Modal::ConfirmSwitch(_) => keymap::CONFIRM_KEYS,
        };
        let Some(action) = keymap::lookup_in(table, &key) else {
            return;
        };
        let scrolls = matches!(modal, Modal::Help | Modal::Checkpoints | Modal::Listing);
        if let Some(deed) = crate::tui::roles::key_deed(action)
            && self.refused(deed)
        {
            return;
        }
        if modal == Modal::Diff {
            self.on_diff_key(action);
            return;
        }
        match (modal, action) {
            (_, Action::Up) if scrolls => self.help_scroll = self.help_scroll.saturating_sub(1),
            (_, Action::Down) if scrolls => self.help_scroll = (self.help_scroll + 1).min(2000),
            (_, Action::PageUp) if scrolls => {
                self.help_scroll = self.help_scroll.saturating_sub(10)
            }
            (_, Action::PageDown) if scrolls => {
                self.help_scroll = (self.help_scroll + 10).min(2000);
            }
            (Modal::ConfirmRestore(restore), Action::Confirm) => {
                self.modals.pop();
                self.confirm_restore(restore, effects);
            }
            (Modal::ConfirmSwitch(room), Action::Confirm) => {
                self.answer_switch(room, true, effects)
            }
            (Modal::ConfirmSwitch(room), Action::Close) => self.answer_switch(room, false, effects),
            (Modal::ConfirmCleanup, Action::Confirm) => {
                self.modals.pop();
                effects.push(Effect::Call(RoomOp::Cleanup));
                self.toast(format!("cleaning up room {}…", self.session.room), false);
            }
            (Modal::ConfirmStop(stop), Action::Confirm) => {
                self.modals.pop();
                self.confirm_stop(stop, effects);
            }
            (Modal::ConfirmOverwrite, Action::Confirm) => self.answer_overwrite(true, effects),
            (Modal::ConfirmOverwrite, Action::Close) => self.answer_overwrite(false, effects),
            (Modal::Processes, Action::Up) => self.select_process(-1),
            (Modal::Processes, Action::Down) => self.select_process(1),
            (Modal::Processes, Action::Follow) => self.toggle_follow(effects),
            (Modal::Processes, Action::Kill) => self.kill_selected(effects),
            (Modal::Processes, Action::Close) => self.close_processes(effects),
            (Modal::Approval(id), Action::Confirm) => self.answer_approval(id, true, effects),
            (Modal::Approval(id), Action::Deny) => self.answer_approval(id, false, effects),
            (Modal::Approval(id), Action::Close) => self.dismiss_approval(id),
            (Modal::Link, Action::Copy) => self.copy_link(effects),
            (Modal::Link, Action::Close) => self.close_link(),
            (_, Action::Close) => {
                self.modals.pop();
                self.help_scroll = 0;
            }
            _ => {}
        }
    }

    fn on_action(&mut self, action: Action, effects: &mut Vec<Effect>) {
        let empty = self.composer.is_empty();
        // Esc with nothing to stop does nothing, for every role.
        if action == Action::Escape && self.stop_target().is_none() {
            return;
        }
        let deed = match action {
            // Esc interrupts a command or cancels a turn: the one it stops.
            Action::Escape => self.stop_target().map(|stop| stop.op.action()),
            _ => crate::tui::roles::key_deed(action),
        };
        if let Some(deed) = deed
            && self.refused(deed)
        {
            return;
        }
        match action {
            Action::Submit => self.submit(effects),
            Action::Newline => self.composer.insert("\n"),
            Action::ModeAsk => self.composer.mode = Mode::Ask,
            Action::ModeRoom => self.composer.mode = Mode::Room,
            Action::ModeRun => self.composer.mode = Mode::Run,
            Action::Up => {
                if self.composer.on_first_line() || self.composer.browsing() {
                    self.composer.history_prev();
                } else {
                    self.composer.up();
                }
            }
            Action::Down => {
                if self.composer.on_last_line() || self.composer.browsing() {
                    self.composer.history_next();
                } else {
                    self.composer.down();
                }
            }
            Action::Left => self.composer.left(),
            Action::Right => self.composer.right(),
            Action::WordLeft => self.composer.move_cursor(Motion::WordLeft, false),
            Action::WordRight => self.composer.move_cursor(Motion::WordRight, false),
            Action::SelectLeft => self.composer.move_cursor(Motion::Left, true),
            Action::SelectRight => self.composer.move_cursor(Motion::Right, true),
            Action::SelectWordLeft => self.composer.move_cursor(Motion::WordLeft, true),
            Action::SelectWordRight => self.composer.move_cursor(Motion::WordRight, true),
            Action::SelectUp => self.composer.move_cursor(Motion::Up, true),
            Action::SelectDown => self.composer.move_cursor(Motion::Down, true),
            Action::SelectHome => self.composer.move_cursor(Motion::Home, true),
            Action::SelectEnd => self.composer.move_cursor(Motion::End, true),
            Action::Home if empty => self.scroll_to(self.focus, true, effects),
            Action::End if empty => self.scroll_to(self.focus, false, effects),
            Action::Home => self.composer.home(),
            Action::End => self.composer.end(),
            Action::Backspace => self.composer.backspace(),
            Action::Delete => self.composer.delete(),
            Action::DeleteWord => self.composer.delete_word(),
            Action::DeleteNextWord => self.composer.delete_next_word(),
            Action::Undo => self.composer.undo(),
            Action::Redo => self.composer.redo(),
            Action::DeleteToStart => self.composer.delete_to_start(),
            Action::DeleteToEnd => self.composer.delete_to_end(),
            Action::Escape => self.escape(effects),
            Action::ClearOrQuit => {
                if !empty {
                    self.composer.clear();
                    self.ctrl_c_armed = true;
                } else if self.ctrl_c_armed {
                    self.quit = true;
                    effects.push(Effect::Quit);
                } else {
                    self.ctrl_c_armed = true;
                    let toast = match self.outbox.len() {
                        0 => "press Ctrl+C again to quit".to_string(),
                        1 => "1 message is not sent yet (offline): press Ctrl+C again to quit; it is printed on the way out".to_string(),
                        n => format!(
                            "{n} messages are not sent yet (offline): press Ctrl+C again to quit; they are printed on the way out"
                        ),
                    };
                    self.toast(&toast, false);
                }
            }
            Action::Cleanup => self.modals.push(Modal::ConfirmCleanup),
            Action::Help => self.modals.push(Modal::Help),
            Action::PageUp => {
                let page = self.page(self.focus);
                self.scroll_by(self.focus, page, effects);
            }
            Action::PageDown => {
                let page = self.page(self.focus);
                self.scroll_by(self.focus, -page, effects);
            }
            Action::ScrollTop => self.scroll_to(self.focus, true, effects),
            Action::ScrollBottom => self.scroll_to(self.focus, false, effects),
            Action::ToggleMouse => {
                self.mouse_capture = !self.mouse_capture;
                effects.push(Effect::SetMouse(self.mouse_capture));
                self.toast(
                    if self.mouse_capture {
                        "mouse: wheel scrolls (F2 to select text)"
                    } else {
                        "mouse: select text with it (F2 to scroll again)"
                    },
                    false,
                );
            }
            Action::Redraw => effects.push(Effect::Redraw),
            Action::Terminal => self.toggle_terminal(effects),
            Action::Processes => self.open_processes(),
            Action::Approvals => self.reopen_approvals(),
            // The processes view's own table: not looked up here.
            Action::Follow | Action::Kill => {}
            // The terminal view's own table: not looked up here.
            Action::TermBack => {}
            Action::Copy => self.copy_last(effects),
            Action::ShareLink => self.share_link(effects),
            // Dialog actions: their tables are not looked up here.
            Action::Confirm | Action::Deny | Action::Close => {}
            Action::SwitchPane => {
                self.focus = match self.focus {
                    Pane::Chat => Pane::Output,
                    Pane::Output => Pane::Chat,
                };
                match self.focus {
                    Pane::Chat => self.unseen.0 = false,
                    Pane::Output => self.unseen.1 = false,
                }
            }
        }
    }

    /// Enter: a slash command, else what the line sends in its mode.
    fn submit(&mut self, effects: &mut Vec<Effect>) {
        let text = self.composer.text().to_string();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        match self.slash(trimmed, effects) {
            Outcome::NotOne => {}
            Outcome::Done => {
                self.composer.take();
                return;
            }
            Outcome::Refused => return,
        }
        let Some(op) = read_line(self.composer.mode, trimmed) else {
            return;
        };
        // What this role may not do stays in the input, said why.
        if self.refused(crate::tui::roles::op_deed(&op)) {
            return;
        }
        if let RoomOp::Exec(cmd) = &op
            && self.held_for_terminal(cmd)
        {
            return;
        }
        if let RoomOp::Message { text, .. } = &op
            && text.chars().count() > crate::protocol::MAX_TEXT_CHARS
        {
            self.toast(
                format!(
                    "too long: {} characters, at most {}",
                    text.chars().count(),
                    crate::protocol::MAX_TEXT_CHARS
                ),
                true,
            );
            return;
        }
        self.composer.take();
        self.last_typing_sent = None;
        let pane = match &op {
            RoomOp::Exec(_) => Pane::Output,
            RoomOp::Message { to, .. } => {
                // Only a question makes the agent busy.
                if *to == Addressee::Agent {
                    self.pending_messages += 1;
                }
                Pane::Chat
            }
            _ => Pane::Chat,
        };
        effects.push(Effect::Call(op));
        self.scroll_to(pane, false, effects);
    }

    /// The line that sends `op` again as it was, and the mode it needs
    /// (a message for the room needs room mode).
    pub(crate) fn line_for(&self, op: &RoomOp) -> Option<(String, Mode)> {
        let mode = self.composer.mode;
        Some(match op {
            RoomOp::Exec(cmd) if mode == Mode::Run => (cmd.clone(), mode),
            RoomOp::Exec(cmd) => (format!("!{cmd}"), mode),
            RoomOp::Message {
                text,
                to: Addressee::Agent,
            } if mode == Mode::Ask => (text.clone(), mode),
            RoomOp::Message {
                text,
                to: Addressee::Agent,
            } => (format!("{AT_AGENT} {text}"), mode),
            RoomOp::Message {
                text,
                to: Addressee::Room,
            } => (text.clone(), Mode::Room),
            RoomOp::Rename(name) => (format!("/name {name}"), mode),
            _ => return None,
        })
    }

    pub(crate) fn on_mouse(&mut self, mouse: MouseEvent, effects: &mut Vec<Effect>) -> bool {
        if self.on_terminal_mouse(&mouse, effects) {
            return true;
        }
        let delta = match mouse.kind {
            MouseEventKind::ScrollUp => WHEEL_LINES,
            MouseEventKind::ScrollDown => -WHEEL_LINES,
            _ => return false,
        };
        // The diff view scrolls under the wheel; the panes under it stay.
        if self.modals.last() == Some(&Modal::Diff) {
            self.scroll_diff(-delta);
            return true;
        }
        let area = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        let areas = crate::tui::view::layout::areas(self, area);
        let at = ratatui::layout::Position::new(mouse.column, mouse.row);
        let pane = if areas.output.contains(at) {
            Pane::Output
        } else if areas.chat.contains(at) {
            Pane::Chat
        } else {
            self.focus
        };
        self.scroll_by(pane, delta, effects);
        true
    }

    fn page(&self, pane: Pane) -> isize {
        (self.pane_size(pane).1.saturating_sub(1)).max(1) as isize
    }

    fn scroll_to(&mut self, pane: Pane, top: bool, effects: &mut Vec<Effect>) {
        if top {
            self.scroll_by(pane, isize::MAX / 2, effects);
        } else {
            self.scroll_mut(pane).follow();
        }
    }

    /// Scrolls `pane` by `delta` lines (positive: up, towards older);
    /// going past the top of the chat asks for an older page.
    pub(crate) fn scroll_by(&mut self, pane: Pane, delta: isize, effects: &mut Vec<Effect>) {
        let (width, height) = self.pane_size(pane);
        let ctx = self.render_ctx();
        let mut scroll = *self.scroll(pane);
        let past_top = scroll.scroll_by(delta, self.cells(pane), width, usize::from(height), &ctx);
        *self.scroll_mut(pane) = scroll;
        if pane == Pane::Chat && past_top && self.chat.has_more && !self.chat.loading_older {
            self.chat.loading_older = true;
            effects.push(Effect::LoadOlder {
                before: self.chat.oldest_id().map(str::to_string),
            });
        }
    }
}
