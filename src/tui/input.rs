//! Keys, mouse and the command line's submit: the person's side of
//! `App::update`.

use crate::client::rpc::RoomOp;
use crate::tui::app::{App, Effect, Modal, Pane};
use crate::tui::composer::Mode;
use crate::tui::keymap::{self, Action};
use crate::tui::scroll::Scroll;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

/// Lines one wheel step scrolls.
const WHEEL_LINES: isize = 3;

impl App {
    pub(crate) fn on_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        if key.kind != KeyEventKind::Press {
            return;
        }
        if let Some(modal) = self.modals.last().copied() {
            self.on_modal_key(modal, key, effects);
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
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        match modal {
            Modal::Help => {
                match key.code {
                    KeyCode::Up => self.help_scroll = self.help_scroll.saturating_sub(1),
                    KeyCode::Down => self.help_scroll = self.help_scroll.saturating_add(1).min(200),
                    KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                    KeyCode::PageDown => {
                        self.help_scroll = self.help_scroll.saturating_add(10).min(200)
                    }
                    _ => {}
                }
                if matches!(
                    key.code,
                    KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q' | '?')
                ) || ctrl_c
                {
                    self.modals.pop();
                    self.help_scroll = 0;
                }
            }
            Modal::ConfirmCleanup => match key.code {
                KeyCode::Char('y' | 'Y') if !ctrl_c => {
                    self.modals.pop();
                    effects.push(Effect::Call(RoomOp::Cleanup));
                    self.toast(format!("cleaning up room {}…", self.session.room), false);
                }
                KeyCode::Char('n' | 'N') | KeyCode::Esc | KeyCode::Enter => {
                    self.modals.pop();
                }
                _ if ctrl_c => {
                    self.modals.pop();
                }
                _ => {}
            },
        }
    }

    fn on_action(&mut self, action: Action, effects: &mut Vec<Effect>) {
        let empty = self.composer.is_empty();
        match action {
            Action::Submit => self.submit(effects),
            Action::Newline => self.composer.insert("\n"),
            Action::ModeAsk => self.composer.mode = Mode::Ask,
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
            Action::Home if empty => self.scroll_to(self.focus, true, effects),
            Action::End if empty => self.scroll_to(self.focus, false, effects),
            Action::Home => self.composer.home(),
            Action::End => self.composer.end(),
            Action::Backspace => self.composer.backspace(),
            Action::Delete => self.composer.delete(),
            Action::DeleteWord => self.composer.delete_word(),
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
                    self.toast("press Ctrl+C again to quit", false);
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
            Action::ToggleMouse => effects.push(Effect::ToggleMouse),
            Action::Redraw => effects.push(Effect::Redraw),
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

    /// Esc: interrupt the running command, else cancel the agent's turn.
    fn escape(&mut self, effects: &mut Vec<Effect>) {
        if let Some(run) = self.execs.running() {
            let (id, cmd) = (run.exec_id.clone(), run.cmd.clone());
            effects.push(Effect::Call(RoomOp::Interrupt(Some(id))));
            self.toast(format!("interrupting `{cmd}`"), false);
        } else if self.agent_busy() {
            let turn = self.chat.turn.as_ref().map(|t| t.turn_id.clone());
            effects.push(Effect::Call(RoomOp::Cancel(turn)));
            self.toast("cancelling the agent's turn", false);
        }
    }

    /// Enter: a message, `!cmd`, a command (run mode) or a slash command.
    fn submit(&mut self, effects: &mut Vec<Effect>) {
        let text = self.composer.text().to_string();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if let Some(handled) = self.slash(trimmed, effects) {
            if handled {
                self.composer.take();
            }
            return;
        }
        let (is_cmd, body) = match self.composer.mode {
            Mode::Run => (true, trimmed),
            Mode::Ask => match trimmed.strip_prefix('!') {
                Some(cmd) => (true, cmd.trim()),
                None => (false, trimmed),
            },
        };
        if body.is_empty() {
            return;
        }
        if !is_cmd && body.chars().count() > crate::protocol::MAX_TEXT_CHARS {
            self.toast(
                format!(
                    "too long: {} characters, at most {}",
                    body.chars().count(),
                    crate::protocol::MAX_TEXT_CHARS
                ),
                true,
            );
            return;
        }
        let body = body.to_string();
        self.composer.take();
        self.last_typing_sent = None;
        if is_cmd {
            effects.push(Effect::Call(RoomOp::Exec(body)));
        } else {
            self.pending_messages += 1;
            effects.push(Effect::Call(RoomOp::Message(body)));
        }
        self.scroll_to(
            if is_cmd { Pane::Output } else { Pane::Chat },
            false,
            effects,
        );
    }

    /// Slash commands: `None` when `line` is not one; `Some(false)` when it
    /// was refused and stays on the line.
    fn slash(&mut self, line: &str, effects: &mut Vec<Effect>) -> Option<bool> {
        let rest = line.strip_prefix('/')?;
        let (word, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let arg = arg.trim();
        match word {
            "help" => self.modals.push(Modal::Help),
            "cleanup" => self.modals.push(Modal::ConfirmCleanup),
            "clear" => {
                self.chat.clear_local();
                self.execs.clear_local();
                self.chat_scroll = Scroll::default();
                self.output_scroll = Scroll::default();
            }
            "quit" | "exit" => {
                self.quit = true;
                effects.push(Effect::Quit);
            }
            "name" => {
                if let Some(problem) = crate::protocol::name_problem(arg) {
                    self.toast(format!("/name NAME: the name {problem}"), true);
                    return Some(false);
                }
                self.session.name = arg.to_string();
                effects.push(Effect::Rejoin(arg.to_string()));
                self.toast(format!("you are now {arg}"), false);
            }
            "put" | "get" => {
                let mut words = arg.split_whitespace().map(str::to_string);
                let (Some(first), second, None) = (words.next(), words.next(), words.next()) else {
                    let usage = if word == "put" {
                        "/put FILE [PATH]"
                    } else {
                        "/get PATH [FILE]"
                    };
                    self.toast(format!("usage: {usage}"), true);
                    return Some(false);
                };
                let second = second.unwrap_or_default();
                effects.push(if word == "put" {
                    Effect::Put {
                        local: first,
                        remote: second,
                    }
                } else {
                    Effect::Get {
                        remote: first,
                        local: second,
                    }
                });
            }
            // In run mode an unknown `/x` is a path to run.
            _ if self.composer.mode == Mode::Run => return None,
            _ => {
                self.toast(format!("unknown command /{word} (see /help)"), true);
                return Some(false);
            }
        }
        Some(true)
    }

    pub(crate) fn on_mouse(&mut self, mouse: MouseEvent, effects: &mut Vec<Effect>) -> bool {
        let delta = match mouse.kind {
            MouseEventKind::ScrollUp => WHEEL_LINES,
            MouseEventKind::ScrollDown => -WHEEL_LINES,
            _ => return false,
        };
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
