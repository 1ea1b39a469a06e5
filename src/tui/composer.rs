//! The command line: a multi-line text with a cursor, its mode (ask the
//! agent, talk to the room or run a command) and the input history.

use crate::protocol::Addressee;
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

/// The line being edited.
#[derive(Debug, Clone)]
pub struct Composer {
    text: String,
    /// Byte index of the cursor, always on a grapheme boundary.
    cursor: usize,
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
            text: String::new(),
            cursor: 0,
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

    /// The cursor's byte index.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether the line is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the line, cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Inserts at the cursor (typing and paste; newlines included).
    pub fn insert(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
        self.browsing = None;
    }

    /// Deletes the grapheme before the cursor.
    pub fn backspace(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.text.replace_range(prev..self.cursor, "");
            self.cursor = prev;
        }
    }

    /// Deletes the grapheme after the cursor.
    pub fn delete(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.text.replace_range(self.cursor..next, "");
        }
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed
            .rfind(char::is_whitespace)
            .map(|i| i + trimmed[i..].chars().next().map_or(1, char::len_utf8))
            .unwrap_or(0);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes from the start of the line to the cursor (Ctrl+U).
    pub fn delete_to_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes from the cursor to the end of the line (Ctrl+K).
    pub fn delete_to_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    pub fn left(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.cursor = prev;
        }
    }

    pub fn right(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.cursor = next;
        }
    }

    /// To the start of the current line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// To the end of the current line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Whether the cursor is on the first line (Up browses history there).
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line.
    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves the cursor one line up, keeping the column as near as it can.
    pub fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            return;
        }
        let col = self.text[start..self.cursor].graphemes(true).count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, start - 1, col);
    }

    /// Moves the cursor one line down.
    pub fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            return;
        }
        let col = self.text[self.line_start()..self.cursor]
            .graphemes(true)
            .count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = advance(&self.text, next_start, next_end, col);
    }

    /// Up in the history (from the draft to older entries).
    pub fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let index = match self.browsing {
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(i) => i - 1,
        };
        self.browsing = Some(index);
        self.text = self.history[index].clone();
        self.cursor = self.text.len();
    }

    /// Down in the history (towards the draft).
    pub fn history_next(&mut self) {
        let Some(index) = self.browsing else { return };
        if index + 1 < self.history.len() {
            self.browsing = Some(index + 1);
            self.text = self.history[index + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    /// Whether Up/Down are browsing the history now.
    pub fn browsing(&self) -> bool {
        self.browsing.is_some()
    }

    /// Takes the line for sending: clears it and records it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
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

    /// Clears the line (Ctrl+C) without recording it.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .grapheme_indices(true)
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map(|g| self.cursor + g.len())
    }
}

/// The byte index `col` graphemes after `from`, not past `limit`.
fn advance(text: &str, from: usize, limit: usize, col: usize) -> usize {
    text[from..limit]
        .grapheme_indices(true)
        .nth(col)
        .map_or(limit, |(i, _)| from + i)
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
}
