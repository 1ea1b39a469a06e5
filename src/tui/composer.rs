//! The command line: a multi-line text with a cursor, its mode (ask the
//! agent, talk to the room or run a command) and the input history.

use crate::protocol::Addressee;
use ratatui_textarea::{CursorMove, DataCursor, TextArea};
use unicode_segmentation::UnicodeSegmentation;

/// Entries kept in the input history.
const HISTORY_MAX: usize = 500;

/// What plain text on the line does. In every mode `/cmd` is a slash
/// command and `@agent …` asks the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A question for the agent (everyone sees it); `!cmd` runs a command.
    Ask,
    /// A message for the people in the room, no agent turn; `!cmd` runs.
    Room,
    /// A command for the sandbox.
    Run,
}

impl Mode {
    /// Whom a plain line is for, in a chat mode.
    pub fn addressee(self) -> Option<Addressee> {
        match self {
            Mode::Ask => Some(Addressee::Agent),
            Mode::Room => Some(Addressee::Room),
            Mode::Run => None,
        }
    }
}

/// Where a cursor motion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Motion {
    /// One grapheme (a character as a person sees it) back or forward.
    Left,
    Right,
    /// To the start of this or the previous word; to the start of the
    /// next one.
    WordLeft,
    WordRight,
    /// One line, keeping the column as near as it can.
    Up,
    Down,
    /// The start or end of the current line.
    Home,
    End,
}

/// The line being edited: ratatui-textarea keeps the text, the cursor,
/// the selection and the undo history; this adds the mode, the input
/// history and grapheme-wise steps.
#[derive(Debug, Clone)]
pub struct Composer {
    area: TextArea<'static>,
    /// The text, lines joined with `\n` (kept in step with `area`).
    text: String,
    pub mode: Mode,
    history: Vec<String>,
    /// Position while browsing the history; `None` when editing.
    browsing: Option<usize>,
    /// What was on the line when browsing started.
    draft: String,
}

impl Default for Composer {
    fn default() -> Self {
        Composer {
            area: TextArea::default(),
            text: String::new(),
            mode: Mode::Ask,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }
}

impl Composer {
    /// The text on the line.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte index in `text`.
    pub fn cursor(&self) -> usize {
        let DataCursor(row, col) = self.area.cursor();
        self.byte_index(row, col)
    }

    /// The selected bytes of `text` (start, end), while something is.
    pub fn selection(&self) -> Option<(usize, usize)> {
        let ((r1, c1), (r2, c2)) = self.area.selection_range()?;
        let (start, end) = (self.byte_index(r1, c1), self.byte_index(r2, c2));
        (start < end).then_some((start, end))
    }

    /// Whether the line is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the line, cursor at its end (undo brings the old one back).
    pub fn set_text(&mut self, text: &str) {
        self.replace_all(text);
        self.browsing = None;
    }

    /// Inserts at the cursor (typing and paste; newlines included),
    /// over the selection if there is one.
    pub fn insert(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.area.insert_str(s);
        self.edited();
    }

    /// Deletes the selection, else the grapheme before the cursor.
    pub fn backspace(&mut self) {
        self.select_grapheme(Motion::Left);
        self.area.delete_char();
        self.edited();
    }

    /// Deletes the selection, else the grapheme after the cursor.
    pub fn delete(&mut self) {
        self.select_grapheme(Motion::Right);
        self.area.delete_next_char();
        self.edited();
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        self.area.delete_word();
        self.edited();
    }

    /// Deletes the word after the cursor (Alt+D).
    pub fn delete_next_word(&mut self) {
        self.area.delete_next_word();
        self.edited();
    }

    /// Deletes from the start of the line to the cursor (Ctrl+U).
    pub fn delete_to_start(&mut self) {
        self.area.delete_line_by_head();
        self.edited();
    }

    /// Deletes from the cursor to the end of the line (Ctrl+K).
    pub fn delete_to_end(&mut self) {
        self.area.delete_line_by_end();
        self.edited();
    }

    /// Takes back the last edit.
    pub fn undo(&mut self) {
        self.area.undo();
        self.edited();
    }

    /// Does again the edit the last undo took back.
    pub fn redo(&mut self) {
        self.area.redo();
        self.edited();
    }

    /// Moves the cursor; `select` extends the selection (Shift), else
    /// the selection ends.
    pub fn move_cursor(&mut self, motion: Motion, select: bool) {
        if !select {
            self.area.cancel_selection();
        } else if !self.area.is_selecting() {
            self.area.start_selection();
        }
        match motion {
            Motion::Left => (0..self.grapheme_chars(Motion::Left))
                .for_each(|_| self.area.move_cursor(CursorMove::Back)),
            Motion::Right => (0..self.grapheme_chars(Motion::Right))
                .for_each(|_| self.area.move_cursor(CursorMove::Forward)),
            Motion::WordLeft => self.area.move_cursor(CursorMove::WordBack),
            Motion::WordRight => self.area.move_cursor(CursorMove::WordForward),
            Motion::Up => self.area.move_cursor(CursorMove::Up),
            Motion::Down => self.area.move_cursor(CursorMove::Down),
            Motion::Home => self.area.move_cursor(CursorMove::Head),
            Motion::End => self.area.move_cursor(CursorMove::End),
        }
    }

    pub fn left(&mut self) {
        self.move_cursor(Motion::Left, false);
    }

    pub fn right(&mut self) {
        self.move_cursor(Motion::Right, false);
    }

    /// To the start of the current line.
    pub fn home(&mut self) {
        self.move_cursor(Motion::Home, false);
    }

    /// To the end of the current line.
    pub fn end(&mut self) {
        self.move_cursor(Motion::End, false);
    }

    /// Moves the cursor one line up, keeping the column as near as it can.
    pub fn up(&mut self) {
        self.move_cursor(Motion::Up, false);
    }

    /// Moves the cursor one line down.
    pub fn down(&mut self) {
        self.move_cursor(Motion::Down, false);
    }

    /// Whether the cursor is on the first line (Up browses history there).
    pub fn on_first_line(&self) -> bool {
        self.area.cursor().0 == 0
    }

    /// Whether the cursor is on the last line.
    pub fn on_last_line(&self) -> bool {
        self.area.cursor().0 + 1 >= self.area.lines().len()
    }

    /// Up in the history (from the draft to older entries).
    pub fn history_prev(&mut self) {
        let index = match self.browsing {
            _ if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(i) => i.saturating_sub(1),
        };
        self.browsing = Some(index);
        if let Some(entry) = self.history.get(index).cloned() {
            self.replace_all(&entry);
        }
    }

    /// Down in the history (towards the draft).
    pub fn history_next(&mut self) {
        let Some(index) = self.browsing else { return };
        let next = match self.history.get(index + 1) {
            Some(entry) => {
                self.browsing = Some(index + 1);
                entry.clone()
            }
            None => {
                self.browsing = None;
                std::mem::take(&mut self.draft)
            }
        };
        self.replace_all(&next);
    }

    /// Whether Up/Down are browsing the history now.
    pub fn browsing(&self) -> bool {
        self.browsing.is_some()
    }

    /// Takes the line for sending: clears it (with its undo history) and
    /// records it in the input history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.area = TextArea::default();
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > HISTORY_MAX {
                self.history.remove(0);
            }
        }
        text
    }

    /// Clears the line (Ctrl+C) without recording it; undo brings it back.
    pub fn clear(&mut self) {
        self.area.cancel_selection();
        self.area.clear();
        self.edited();
    }

    /// The whole text becomes `text`, cursor at its end, as one more edit.
    fn replace_all(&mut self, text: &str) {
        self.area.cancel_selection();
        self.area.clear();
        self.area
            .insert_str(text.replace("\r\n", "\n").replace('\r', "\n"));
        self.area.move_cursor(CursorMove::Bottom);
        self.area.move_cursor(CursorMove::End);
        self.sync();
    }

    /// After an edit: the text again, and typing leaves the history.
    fn edited(&mut self) {
        self.sync();
        self.browsing = None;
    }

    fn sync(&mut self) {
        self.text = self.area.lines().join("\n");
    }

    /// Without a selection, selects the grapheme before or after the
    /// cursor when it is more than one character (an emoji with its
    /// modifier), so that one key deletes all of it.
    fn select_grapheme(&mut self, towards: Motion) {
        if !self.area.is_selecting() && self.grapheme_chars(towards) > 1 {
            self.move_cursor(towards, true);
        }
    }

    /// How many characters the grapheme before (`Left`) or after the
    /// cursor has; 1 across a line end or at either end of the text.
    fn grapheme_chars(&self, towards: Motion) -> usize {
        let DataCursor(row, col) = self.area.cursor();
        let Some(line) = self.area.lines().get(row) else {
            return 1;
        };
        let at = line.char_indices().nth(col).map_or(line.len(), |(i, _)| i);
        let grapheme = match towards {
            Motion::Left => line.get(..at).and_then(|s| s.graphemes(true).next_back()),
            _ => line.get(at..).and_then(|s| s.graphemes(true).next()),
        };
        grapheme.map_or(1, |g| g.chars().count().max(1))
    }

    /// The byte index in `text` of character `col` of line `row`.
    fn byte_index(&self, row: usize, col: usize) -> usize {
        let lines = self.area.lines();
        let before: usize = lines.iter().take(row).map(|l| l.len() + 1).sum();
        let within = lines.get(row).map_or(0, |line| {
            line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
        });
        (before + within).min(self.text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_works_on_graphemes() {
        let mut c = Composer::default();
        c.insert("a漢👍🏽");
        c.backspace();
        assert_eq!(c.text(), "a漢");
        c.left();
        c.insert("b");
        assert_eq!(c.text(), "ab漢");
        c.home();
        c.delete();
        assert_eq!(c.text(), "b漢");
    }

    #[test]
    fn history_browses_and_keeps_the_draft() {
        let mut c = Composer::default();
        c.insert("one");
        c.take();
        c.insert("two");
        c.take();
        c.insert("draft");
        c.history_prev();
        assert_eq!(c.text(), "two");
        c.history_prev();
        c.history_prev();
        assert_eq!(c.text(), "one");
        c.history_next();
        c.history_next();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn lines_move_up_and_down_by_column() {
        let mut c = Composer::default();
        c.insert("abcd\nxy\nlonger");
        c.up();
        assert_eq!(&c.text()[c.cursor()..], "\nlonger");
        c.up();
        c.down();
        c.down();
        assert!(c.on_last_line());
        c.insert("\r\n");
        assert_eq!(c.text().matches('\n').count(), 3);
    }

    #[test]
    fn words_move_and_delete_and_undo_brings_them_back() {
        let mut c = Composer::default();
        c.insert("git commit -m fix");
        c.move_cursor(Motion::WordLeft, false);
        assert_eq!(&c.text()[c.cursor()..], "fix");
        c.move_cursor(Motion::WordLeft, false);
        c.move_cursor(Motion::WordLeft, false);
        c.delete_word();
        assert_eq!(c.text(), "git -m fix");
        c.move_cursor(Motion::WordRight, false);
        assert_eq!(&c.text()[c.cursor()..], "m fix");
        c.delete_to_end();
        assert_eq!(c.text(), "git -");
        c.undo();
        assert_eq!(c.text(), "git -m fix");
        c.undo();
        assert_eq!(c.text(), "git commit -m fix");
        c.redo();
        assert_eq!(c.text(), "git -m fix");
        c.end();
        c.delete_to_start();
        assert_eq!(c.text(), "");
        c.undo();
        assert_eq!(c.text(), "git -m fix");
    }

    #[test]
    fn a_selection_is_replaced_by_typing_and_deleted_whole() {
        let mut c = Composer::default();
        c.insert("hello world");
        c.move_cursor(Motion::Left, true);
        c.move_cursor(Motion::WordLeft, true);
        assert_eq!(c.selection(), Some((6, 11)));
        c.insert("there");
        assert_eq!(c.text(), "hello there");
        assert_eq!(c.selection(), None);
        c.home();
        c.move_cursor(Motion::Right, true);
        c.move_cursor(Motion::Right, true);
        c.backspace();
        assert_eq!(c.text(), "llo there");
        // A plain motion ends the selection.
        c.move_cursor(Motion::End, true);
        c.left();
        assert_eq!(c.selection(), None);
        c.clear();
        assert!(c.is_empty());
        c.undo();
        assert_eq!(c.text(), "llo there", "Ctrl+C's clear is undone");
    }
}
