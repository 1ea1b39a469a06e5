//! The chat's content: messages by id (merged from states, deltas and
//! older pages, never duplicated) and the agent's reply while it streams;
//! each a cell, a message's lines cached per width, so a frame renders
//! only what shows.

use crate::protocol::{DuetMessage, Role};
use crate::tui::cell::{Cell, Lines, RenderCtx};
use crate::tui::chat_render::{render_message, render_turn};
use std::cell::RefCell;
use std::rc::Rc;

/// A message with its rendering cache (by width).
#[derive(Debug, Clone)]
pub struct ChatEntry {
    pub msg: DuetMessage,
    cache: RefCell<Option<(u16, Lines)>>,
}

impl ChatEntry {
    fn new(msg: DuetMessage) -> ChatEntry {
        ChatEntry {
            msg,
            cache: RefCell::new(None),
        }
    }
}

impl Cell for ChatEntry {
    /// The message's lines at `width`, rendered once per width.
    fn lines(&self, width: u16, ctx: &RenderCtx) -> Lines {
        if let Some((w, lines)) = &*self.cache.borrow()
            && *w == width
        {
            return lines.clone();
        }
        let lines = Rc::new(render_message(&self.msg, width, ctx));
        *self.cache.borrow_mut() = Some((width, lines.clone()));
        lines
    }
}

/// The agent's reply while the model streams it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveTurn {
    pub turn_id: String,
    pub text: String,
    pub started_ms: i64,
    /// The stream ended; the stored message is on its way.
    pub ended: bool,
}

impl Cell for LiveTurn {
    /// Rendered afresh each time: its spinner and elapsed time move.
    fn lines(&self, width: u16, ctx: &RenderCtx) -> Lines {
        Rc::new(render_turn(self, width, ctx))
    }
}

/// Ordering of message ids: "increasing" ids compare by length, then text
/// (right for decimal counters and for fixed-width ids alike).
pub fn id_key(id: &str) -> (usize, &str) {
    (id.len(), id)
}

/// Every message this client shows, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ChatLog {
    entries: Vec<ChatEntry>,
    /// `/clear`: messages up to this id are not shown again.
    hidden_upto: Option<String>,
    /// Whether older pages may exist on the backend.
    pub has_more: bool,
    /// An older page was asked for and has not come yet.
    pub loading_older: bool,
    pub turn: Option<LiveTurn>,
}

impl ChatLog {
    /// Messages shown.
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = &DuetMessage> {
        self.entries.iter().map(|e| &e.msg)
    }

    /// Number of items: messages, plus the live turn.
    pub fn len(&self) -> usize {
        self.entries.len() + usize::from(self.turn.is_some())
    }

    /// Whether nothing shows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The oldest message's id (for `/messages?before=`).
    pub fn oldest_id(&self) -> Option<&str> {
        self.entries.first().map(|e| e.msg.id.as_str())
    }

    fn hidden(&self, msg: &DuetMessage) -> bool {
        self.hidden_upto
            .as_deref()
            .is_some_and(|h| id_key(&msg.id) <= id_key(h))
    }

    /// Takes a room state's messages (the most recent ones): keeps what is
    /// older than them, replaces the rest. Answers whether something new
    /// came at the end.
    pub fn apply_state(&mut self, messages: &[DuetMessage], first_state: bool) -> bool {
        if first_state {
            self.has_more = messages.len() >= crate::protocol::STATE_MESSAGES;
        }
        let last_before = self.entries.last().map(|e| e.msg.id.clone());
        let Some(first) = messages.first() else {
            self.entries.clear();
            return false;
        };
        let mut old = std::mem::take(&mut self.entries);
        let keep = old
            .iter()
            .take_while(|e| id_key(&e.msg.id) < id_key(&first.id))
            .count();
        let mut cached: std::collections::HashMap<String, ChatEntry> =
            old.drain(keep..).map(|e| (e.msg.id.clone(), e)).collect();
        self.entries = old;
        for msg in messages {
            if self.hidden(msg) {
                continue;
            }
            let entry = match cached.remove(&msg.id) {
                Some(entry) if entry.msg == *msg => entry,
                _ => ChatEntry::new(msg.clone()),
            };
            self.entries.push(entry);
        }
        self.settle_turn();
        let last_after = self.entries.last().map(|e| e.msg.id.as_str());
        match (last_before.as_deref(), last_after) {
            (_, None) => false,
            (None, Some(_)) => !first_state,
            (Some(b), Some(a)) => id_key(a) > id_key(b),
        }
    }

    /// Takes one stored or changed message (a `duet_message` delta):
    /// replaces the one of its id, or inserts it in id order. Answers
    /// whether it came at the end.
    pub fn apply_message(&mut self, msg: DuetMessage) -> bool {
        if self.hidden(&msg) {
            return false;
        }
        let at = self
            .entries
            .binary_search_by(|e| id_key(&e.msg.id).cmp(&id_key(&msg.id)));
        let grew = match at {
            Ok(i) => {
                if self.entries[i].msg != msg {
                    self.entries[i] = ChatEntry::new(msg);
                }
                false
            }
            // Older than all shown while older pages exist: it comes with
            // its page, without a hole before it.
            Err(0) if self.has_more && !self.entries.is_empty() => false,
            Err(i) => {
                self.entries.insert(i, ChatEntry::new(msg));
                i + 1 == self.entries.len()
            }
        };
        self.settle_turn();
        grew
    }

    /// Keeps the latest `n` messages; older ones dropped here come back
    /// as older pages.
    pub fn keep_latest(&mut self, n: usize) {
        if self.entries.len() > n {
            self.entries.drain(..self.entries.len() - n);
            self.has_more = true;
        }
    }

    /// An ended live reply gives way once its stored message is shown.
    fn settle_turn(&mut self) {
        if let Some(turn) = &self.turn
            && turn.ended
            && self.entries.last().map(|e| e.msg.role) != Some(Role::User)
        {
            self.turn = None;
        }
    }

    /// Adds an older page in front.
    pub fn prepend(&mut self, page: &[DuetMessage], has_more: bool) {
        self.loading_older = false;
        self.has_more = has_more;
        let first = self.entries.first().map(|e| e.msg.id.clone());
        let older: Vec<ChatEntry> = page
            .iter()
            .filter(|m| first.as_deref().is_none_or(|f| id_key(&m.id) < id_key(f)))
            .filter(|m| !self.hidden(m))
            .cloned()
            .map(ChatEntry::new)
            .collect();
        if older.is_empty() && !page.is_empty() && self.hidden_upto.is_some() {
            self.has_more = false;
        }
        self.entries.splice(0..0, older);
    }

    /// `/clear`: hides everything shown so far, on this screen only.
    pub fn clear_local(&mut self) {
        if let Some(last) = self.entries.last() {
            self.hidden_upto = Some(last.msg.id.clone());
        }
        self.entries.clear();
        self.has_more = false;
    }

    /// The room was cleaned up: nothing is left.
    pub fn clear_all(&mut self) {
        self.entries.clear();
        self.hidden_upto = None;
        self.has_more = false;
        self.loading_older = false;
        self.turn = None;
    }

    /// The cells, newest first: the live reply, then the messages.
    pub fn cells_rev(&self) -> impl Iterator<Item = &dyn Cell> {
        let turn = self.turn.iter().map(|t| t as &dyn Cell);
        turn.chain(self.entries.iter().rev().map(|e| e as &dyn Cell))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, text: &str) -> DuetMessage {
        DuetMessage {
            client_id: None,
            id: id.into(),
            role: Role::User,
            user_id: Some("ada".into()),
            text: text.into(),
            ts: 0,
            runs: None,
            ..DuetMessage::default()
        }
    }

    #[test]
    fn states_merge_by_id_without_duplicates() {
        let mut log = ChatLog::default();
        assert!(!log.apply_state(&[msg("1", "a"), msg("2", "b")], true));
        log.prepend(&[msg("0", "z")], false);
        assert!(log.apply_state(&[msg("2", "b"), msg("3", "c")], false));
        let ids: Vec<_> = log.messages().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["0", "1", "2", "3"]);
        assert!(!log.apply_state(&[msg("2", "b"), msg("3", "c")], false));
        assert!(log.apply_state(&[msg("9", "x"), msg("10", "y")], false));
        let ids: Vec<_> = log.messages().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["0", "1", "2", "3", "9", "10"]);
        log.apply_state(&[], false);
        assert!(log.is_empty());
    }

    #[test]
    fn deltas_replace_by_id_and_insert_in_order() {
        let mut log = ChatLog::default();
        log.apply_state(&[msg("1", "a"), msg("3", "c")], true);
        assert!(log.apply_message(msg("4", "d")));
        assert!(!log.apply_message(msg("2", "b")), "not at the end");
        assert!(!log.apply_message(msg("3", "c edited")));
        let shown: Vec<_> = log
            .messages()
            .map(|m| (m.id.as_str(), m.text.as_str()))
            .collect();
        assert_eq!(
            shown,
            [("1", "a"), ("2", "b"), ("3", "c edited"), ("4", "d")]
        );
        assert!(
            log.apply_message(msg("10", "j")),
            "ids order by length first"
        );
        log.has_more = true;
        assert!(!log.apply_message(msg("0", "z")), "comes with its page");
        assert_eq!(log.oldest_id(), Some("1"));
    }

    #[test]
    fn clear_hides_what_was_shown_only() {
        let mut log = ChatLog::default();
        log.apply_state(&[msg("1", "a")], true);
        log.clear_local();
        log.apply_state(&[msg("1", "a"), msg("2", "b")], false);
        let ids: Vec<_> = log.messages().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["2"]);
    }
}
