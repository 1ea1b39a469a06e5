//! What the agent's turns changed, in the TUI (docs/protocol.md "GET
//! /diff"). `/diff` shows the diff of /workspace against the automatic
//! checkpoint of the newest agent turn that took one, i.e. everything
//! changed since that turn began (by anyone: the diff is of the files
//! now); `/diff NAME` against checkpoint NAME. And under an agent reply
//! whose turn changed files: `changed 3 files (+12 −4) · /diff`.
//!
//! Which replies get that line: the reply of the newest turn with an
//! automatic checkpoint, each time a newer one appears (when a turn ends
//! while this client watches, and once on joining for the newest turn in
//! the history). One `GET /diff` per turn and client; older replies of a
//! history get none (their diff would hold every change since, not
//! theirs). A reply's turn is found by time: its checkpoint is taken
//! after the turn's question and before its reply, so the reply is the
//! first agent message stored at or after the checkpoint's time.

pub mod parse;
pub mod style;

use crate::protocol::{Checkpoint, Role};
use crate::tui::app::{App, Effect, Modal, Pane};
use parse::Stat;
use ratatui::text::Line;
use std::collections::HashMap;

/// What a diff is fetched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffFor {
    /// The `/diff` view, against the checkpoint of this name.
    View(String),
    /// The line under the reply of the turn whose checkpoint it is.
    Turn,
}

/// The `/diff` view's content.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffView {
    /// The checkpoint it is against (its name).
    pub from: String,
    pub stat: Stat,
    /// The diff's lines, styled (each drawn on one row, cut to fit).
    pub lines: Vec<Line<'static>>,
    /// The first line shown.
    pub scroll: usize,
}

/// What the TUI knows of diffs: the view, and the turns' changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diffs {
    pub view: Option<DiffView>,
    /// By automatic checkpoint id: the reply it belongs to, and what its
    /// turn changed once known (`None` while asked, or when the asking
    /// failed).
    turns: HashMap<String, TurnChanges>,
}

#[derive(Debug, Clone, PartialEq)]
struct TurnChanges {
    message_id: String,
    stat: Option<Stat>,
}

/// The newest automatic checkpoint that a turn took.
pub fn newest_turn_checkpoint(list: &[Checkpoint]) -> Option<&Checkpoint> {
    list.iter().rev().find(|c| c.auto && c.turn_id.is_some())
}

/// `changed 3 files (+12 −4) · /diff`
pub fn changed_line(stat: &Stat) -> String {
    format!("changed {} · /diff", stat.said())
}

impl App {
    /// `/diff [CHECKPOINT]`: the answer opens the view.
    pub(crate) fn diff_command(
        &mut self,
        wanted: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let list = &self.checkpoints.list;
        let from = if wanted.is_empty() {
            newest_turn_checkpoint(list).ok_or(
                "/diff: no agent turn to compare with yet (each turn that runs commands \
                 saves a checkpoint first); /diff NAME compares with checkpoint NAME",
            )?
        } else {
            crate::client::checkpoints::find(list, wanted).map_err(|why| {
                format!(
                    "/diff: {}",
                    why.replace("the checkpoints list", "/checkpoints")
                )
            })?
        };
        effects.push(Effect::Diff {
            from: from.id.clone(),
            purpose: DiffFor::View(from.name.clone()),
        });
        Ok(())
    }

    /// A diff came back (or why not).
    pub(crate) fn on_diff(
        &mut self,
        from: String,
        purpose: DiffFor,
        result: Result<String, String>,
    ) {
        match purpose {
            DiffFor::View(name) => match result {
                Ok(text) => {
                    let parsed = parse::parse(&text);
                    self.diffs.view = Some(DiffView {
                        from: name,
                        stat: parsed.stat(),
                        lines: style::styled(&parsed, self.theme),
                        scroll: 0,
                    });
                    self.modals.retain(|m| *m != Modal::Diff);
                    self.modals.push(Modal::Diff);
                }
                Err(why) => self.toast(format!("/diff {name}: {why}"), true),
            },
            DiffFor::Turn => {
                let Some(turn) = self.diffs.turns.get_mut(&from) else {
                    return;
                };
                let text = match result {
                    Ok(text) => text,
                    Err(why) => {
                        // The line is a nicety: no toast for it.
                        tracing::debug!(%why, checkpoint = %from, "a turn's diff failed");
                        return;
                    }
                };
                let stat = parse::parse(&text).stat();
                turn.stat = Some(stat);
                let message_id = turn.message_id.clone();
                if stat.files > 0 {
                    self.with_anchor(Pane::Chat, |app| {
                        app.chat.set_note(&message_id, changed_line(&stat))
                    });
                }
            }
        }
    }

    /// After each message: asks what the newest turn with a checkpoint
    /// changed, once its reply is stored (see the module's comment).
    pub(crate) fn watch_turn_changes(&mut self, effects: &mut Vec<Effect>) {
        let Some(checkpoint) = newest_turn_checkpoint(&self.checkpoints.list) else {
            return;
        };
        if self.diffs.turns.contains_key(&checkpoint.id) {
            return;
        }
        // Its turn still runs: the reply is not stored yet.
        if let Some(turn) = &self.chat.turn
            && !turn.ended
            && checkpoint.turn_id.as_deref() == Some(turn.turn_id.as_str())
        {
            return;
        }
        let Ok(taken) = i64::try_from(checkpoint.ts) else {
            return;
        };
        let reply = self
            .chat
            .messages()
            .rev()
            .take_while(|m| m.ts >= taken)
            .filter(|m| m.role == Role::Agent)
            .last();
        let Some(reply) = reply else {
            return;
        };
        let (id, message_id) = (checkpoint.id.clone(), reply.id.clone());
        self.diffs.turns.insert(
            id.clone(),
            TurnChanges {
                message_id,
                stat: None,
            },
        );
        effects.push(Effect::Diff {
            from: id,
            purpose: DiffFor::Turn,
        });
    }

    /// The room was cleaned up: its checkpoints are gone.
    pub(crate) fn forget_diffs(&mut self) {
        self.diffs = Diffs::default();
        self.modals.retain(|m| *m != Modal::Diff);
    }

    /// Scrolls the view by `lines` (negative: up), within its lines.
    pub(crate) fn scroll_diff(&mut self, lines: isize) {
        let shown = self.diff_rows();
        let Some(view) = self.diffs.view.as_mut() else {
            return;
        };
        let last = view.lines.len().saturating_sub(shown);
        view.scroll = view.scroll.saturating_add_signed(lines).min(last);
    }

    /// Rows of diff the view shows at the current size.
    pub(crate) fn diff_rows(&self) -> usize {
        let area = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        usize::from(crate::tui::view::diff::rect(area).height.saturating_sub(2)).max(1)
    }

    /// A key of the `/diff` view (from `DIFF_KEYS`).
    pub(crate) fn on_diff_key(&mut self, action: crate::tui::keymap::Action) {
        use crate::tui::keymap::Action;
        let page = isize::try_from(self.diff_rows()).unwrap_or(1);
        match action {
            Action::Up => self.scroll_diff(-1),
            Action::Down => self.scroll_diff(1),
            Action::PageUp => self.scroll_diff(-page),
            Action::PageDown => self.scroll_diff(page),
            Action::ScrollTop => self.scroll_diff(isize::MIN),
            Action::ScrollBottom => self.scroll_diff(isize::MAX),
            Action::Close => {
                self.modals.retain(|m| *m != Modal::Diff);
                self.diffs.view = None;
            }
            _ => {}
        }
    }
}
