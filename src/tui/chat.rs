//! The chat's content, the room's timeline: messages by id (merged from
//! states, deltas and older pages, never duplicated), people's commands
//! among them by time, and the agent's reply while it streams; each a
//! cell, a message's lines cached per width, so a frame renders only what
//! shows.

use crate::protocol::{DuetMessage, ExecFrame, ExecRecord, ExecSource, Role};
use crate::tui::cell::{Cell, Lines, RenderCtx};
use crate::tui::chat_render::render_turn;
use crate::tui::execs::{Completion, MAX_RUNS};
use crate::tui::timeline::{CommandLine, add_note, render_entry};
use std::cell::RefCell;
use std::collections::HashMap;
use std::iter::Peekable;
use std::rc::Rc;

/// A message with its rendering cache (by width).
#[derive(Debug, Clone)]
pub struct ChatEntry {
    pub msg: DuetMessage,
    /// A muted line under it that this client adds (what an agent
    /// reply's turn changed: `tui::diff`).
    note: Option<String>,
    cache: RefCell<Option<(u16, Lines)>>,
}

impl ChatEntry {
    fn new(msg: DuetMessage, notes: &HashMap<String, String>) -> ChatEntry {
        ChatEntry {
            note: notes.get(&msg.id).cloned(),
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
        let mut lines = render_entry(&self.msg, width, ctx);
        if let Some(note) = &self.note {
            add_note(&mut lines, note, width, ctx);
        }
        if let Some(usage) = &self.msg.usage {
            add_note(&mut lines, &crate::text::usage_line(usage), width, ctx);
        }
        let lines = Rc::new(lines);
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
    /// The `_pk` of the socket whose message began it, when one did (and
    /// this client saw its start).
    pub by_connection: Option<String>,
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

/// Every message this client shows, oldest first, and people's commands.
#[derive(Debug, Clone, Default)]
pub struct ChatLog {
    entries: Vec<ChatEntry>,
    /// People's commands, by `ts` (the agent's are in its replies).
    commands: Vec<CommandLine>,
    /// The newest `ts` the backend gave (messages, records): where a
    /// command that starts now goes.
    latest_ts: i64,
    /// `/clear`: messages up to this id are not shown again.
    hidden_upto: Option<String>,
    /// Whether older pages may exist on the backend.
    pub has_more: bool,
    /// An older page was asked for and has not come yet.
    pub loading_older: bool,
    pub turn: Option<LiveTurn>,
    /// Notes under messages, by message id (kept when a message is
    /// replaced or comes again in a state).
    notes: HashMap<String, String>,
}

impl ChatLog {
    /// Messages shown.
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = &DuetMessage> {
        self.entries.iter().map(|e| &e.msg)
    }

    /// People's commands shown, oldest first.
    pub fn commands(&self) -> &[CommandLine] {
        &self.commands
    }

    /// Number of items: messages, commands, plus the live turn.
    pub fn len(&self) -> usize {
        self.entries.len() + self.commands.len() + usize::from(self.turn.is_some())
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
        self.saw(messages.iter().map(|m| m.ts));
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
                _ => ChatEntry::new(msg.clone(), &self.notes),
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
        self.saw([msg.ts]);
        if self.hidden(&msg) {
            return false;
        }
        let at = self
            .entries
            .binary_search_by(|e| id_key(&e.msg.id).cmp(&id_key(&msg.id)));
        let grew = match at {
            Ok(i) => {
                if self.entries[i].msg != msg {
                    self.entries[i] = ChatEntry::new(msg, &self.notes);
                }
                false
            }
            // Older than all shown while older pages exist: it comes with
            // its page, without a hole before it.
            Err(0) if self.has_more && !self.entries.is_empty() => false,
            Err(i) => {
                let entry = ChatEntry::new(msg, &self.notes);
                self.entries.insert(i, entry);
                i + 1 == self.entries.len()
            }
        };
        self.settle_turn();
        grew
    }

    fn saw(&mut self, ts: impl IntoIterator<Item = i64>) {
        self.latest_ts = ts.into_iter().fold(self.latest_ts, i64::max);
    }

    /// Takes a person's command as it streams: a start adds its line, a
    /// completion gives it its badge. Answers whether the chat changed.
    pub fn apply_exec_frame(&mut self, frame: &ExecFrame, now_ms: i64) -> bool {
        match frame {
            ExecFrame::Start {
                exec_id,
                source: ExecSource::User,
                ..
            } => {
                if self.commands.iter().any(|c| c.exec_id == *exec_id) {
                    return false;
                }
                let ts = self.latest_ts;
                self.commands
                    .extend(CommandLine::started(frame, ts, now_ms));
                self.trim_commands();
                true
            }
            ExecFrame::Complete { exec_id, .. } => {
                match self.commands.iter_mut().find(|c| c.exec_id == *exec_id) {
                    Some(line) => {
                        line.done = Completion::from_frame(frame);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// Takes a state's `execs`: people's commands this client missed are
    /// added; known ones move to the backend's time and end as recorded.
    pub fn apply_exec_records<'a>(
        &mut self,
        records: impl IntoIterator<Item = &'a ExecRecord>,
    ) -> bool {
        let mut changed = false;
        for record in records {
            self.saw([record.ts]);
            if record.source != ExecSource::User {
                continue;
            }
            match self
                .commands
                .iter_mut()
                .find(|c| c.exec_id == record.exec_id)
            {
                Some(line) => {
                    if line.ts != record.ts || line.shown_ms != record.ts || line.done.is_none() {
                        line.ts = record.ts;
                        line.shown_ms = record.ts;
                        line.done
                            .get_or_insert_with(|| Completion::from_record(record));
                        changed = true;
                    }
                }
                None => {
                    self.commands.push(CommandLine::from_record(record));
                    changed = true;
                }
            }
        }
        if changed {
            self.commands.sort_by_key(|c| c.ts);
            self.trim_commands();
        }
        changed
    }

    fn trim_commands(&mut self) {
        if self.commands.len() > MAX_RUNS {
            self.commands.drain(..self.commands.len() - MAX_RUNS);
        }
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
            .map(|m| ChatEntry::new(m.clone(), &self.notes))
            .collect();
        if older.is_empty() && !page.is_empty() && self.hidden_upto.is_some() {
            self.has_more = false;
        }
        self.entries.splice(0..0, older);
    }

    /// `/clear`: hides everything shown so far, on this screen only (the
    /// output pane remembers which commands it hid).
    pub fn clear_local(&mut self) {
        if let Some(last) = self.entries.last() {
            self.hidden_upto = Some(last.msg.id.clone());
        }
        self.entries.clear();
        self.commands.clear();
        self.has_more = false;
    }

    /// Puts `note` under message `id` (now, and whenever it comes again);
    /// answers whether a shown message changed.
    pub fn set_note(&mut self, id: &str, note: String) -> bool {
        self.notes.insert(id.to_string(), note.clone());
        match self.entries.iter_mut().find(|e| e.msg.id == id) {
            Some(entry) => {
                entry.note = Some(note);
                *entry.cache.borrow_mut() = None;
                true
            }
            None => false,
        }
    }

    /// The room was cleaned up: nothing is left.
    pub fn clear_all(&mut self) {
        self.notes.clear();
        self.entries.clear();
        self.commands.clear();
        self.hidden_upto = None;
        self.has_more = false;
        self.loading_older = false;
        self.turn = None;
    }

    /// The cells, newest first: the live reply, then messages and
    /// commands by time (a command after a message of the same time).
    pub fn cells_rev(&self) -> impl Iterator<Item = &dyn Cell> {
        let turn = self.turn.iter().map(|t| t as &dyn Cell);
        let merged = NewestFirst {
            messages: self.entries.iter().rev().peekable(),
            commands: self.commands.iter().rev().peekable(),
        };
        turn.chain(merged)
    }
}

/// Messages and commands, each newest first, merged by time.
struct NewestFirst<'a, M: Iterator<Item = &'a ChatEntry>, C: Iterator<Item = &'a CommandLine>> {
    messages: Peekable<M>,
    commands: Peekable<C>,
}

impl<'a, M, C> Iterator for NewestFirst<'a, M, C>
where
    M: Iterator<Item = &'a ChatEntry>,
    C: Iterator<Item = &'a CommandLine>,
{
    type Item = &'a dyn Cell;

    fn next(&mut self) -> Option<&'a dyn Cell> {
        let command_first = match (self.messages.peek(), self.commands.peek()) {
            (Some(m), Some(c)) => c.ts >= m.msg.ts,
            (None, Some(_)) => true,
            _ => false,
        };
        if command_first {
            self.commands.next().map(|c| c as &dyn Cell)
        } else {
            self.messages.next().map(|e| e as &dyn Cell)
        }
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

    /// The timeline as (kind, id) newest last.
    fn timeline(log: &ChatLog) -> Vec<String> {
        let ctx = RenderCtx {
            theme: crate::tui::theme::Theme::PLAIN,
            tz: time::UtcOffset::UTC,
            now_ms: 0,
        };
        let mut out: Vec<String> = log
            .cells_rev()
            .map(|c| c.lines(60, &ctx)[0].to_string())
            .collect();
        out.reverse();
        out
    }

    #[test]
    fn commands_go_among_messages_by_the_backends_time() {
        use crate::protocol::{ExecFrame, ExecRecord, ExecSource};
        let mut log = ChatLog::default();
        let at = |id: &str, ts: i64| DuetMessage { ts, ..msg(id, id) };
        log.apply_state(&[at("1", 60_000), at("2", 120_000)], true);
        let start = ExecFrame::Start {
            exec_id: "e1".into(),
            cmd: "make".into(),
            by: "bob".into(),
            source: ExecSource::User,
            by_connection: None,
        };
        // This machine's clock says nothing about the order.
        assert!(log.apply_exec_frame(&start, 9_999_999_999));
        assert!(!log.apply_exec_frame(&start, 0), "once");
        log.apply_message(at("3", 180_000));
        let lines = timeline(&log);
        assert!(lines[2].contains("bob $ make"), "{lines:#?}");
        assert!(lines[3].starts_with("00:03 ada"), "{lines:#?}");
        // Its record puts it where the backend says it started.
        let record = ExecRecord {
            exec_id: "e1".into(),
            cmd: "make".into(),
            by: "bob".into(),
            source: ExecSource::User,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(0),
            duration: 1,
            ts: 30_000,
            truncated: false,
            error: None,
            timed_out: false,
            interrupted: false,
        };
        let agents = ExecRecord {
            exec_id: "e2".into(),
            source: ExecSource::Agent,
            ..record.clone()
        };
        assert!(log.apply_exec_records([&record, &agents]));
        let lines = timeline(&log);
        assert!(lines[0].starts_with("00:00 bob $ make  ✓ 0"), "{lines:#?}");
        assert_eq!(log.commands().len(), 1, "the agent's stay in its replies");
        log.clear_local();
        assert!(log.is_empty());
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
