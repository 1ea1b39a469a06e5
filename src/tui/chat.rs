//! The chat's content: messages by id (merged from state frames and older
//! pages, never duplicated), the agent's reply while it streams, and each
//! item rendered for a width, cached, so a frame renders only what shows.

use crate::blocks::{self, Block};
use crate::protocol::{DuetMessage, Role};
use crate::tui::termtext;
use crate::tui::text::{truncate, wrap};
use crate::tui::theme::Theme;
use ratatui::text::{Line, Span};
use std::cell::RefCell;
use std::rc::Rc;

/// Output lines of a block shown in the chat before folding.
const BLOCK_LINES: usize = 12;
/// The spinner's frames.
pub const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What rendering needs besides the item itself.
#[derive(Debug, Clone, Copy)]
pub struct RenderCtx {
    pub theme: Theme,
    pub tz: time::UtcOffset,
    pub now_ms: i64,
}

/// Rendered lines of an item.
pub type Lines = Rc<Vec<Line<'static>>>;

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

    /// The message's lines at `width`, rendered once per width.
    pub fn lines(&self, width: u16, ctx: &RenderCtx) -> Lines {
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

    /// The lines of item `index` (messages, then the live turn).
    pub fn item_lines(&self, index: usize, width: u16, ctx: &RenderCtx) -> Lines {
        match self.entries.get(index) {
            Some(entry) => entry.lines(width, ctx),
            None => Rc::new(
                self.turn
                    .as_ref()
                    .map(|t| render_turn(t, width, ctx))
                    .unwrap_or_default(),
            ),
        }
    }

    /// The total height at `width` (every item; cached after the first).
    pub fn total_height(&self, width: u16, ctx: &RenderCtx) -> usize {
        (0..self.len())
            .map(|i| self.item_lines(i, width, ctx).len())
            .sum()
    }
}

/// `HH:MM` of a `ts` in the local offset.
pub fn clock(ts_ms: i64, tz: time::UtcOffset) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts_ms) * 1_000_000)
        .map(|t| t.to_offset(tz))
        .map(|t| format!("{:02}:{:02}", t.hour(), t.minute()))
        .unwrap_or_else(|_| "--:--".into())
}

/// `12s`, `3m04s`: an elapsed time for people.
pub fn elapsed(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

fn header(msg: &DuetMessage, width: u16, ctx: &RenderCtx) -> Line<'static> {
    let theme = ctx.theme;
    let time = Span::styled(format!("{} ", clock(msg.ts, ctx.tz)), theme.dim());
    let room = usize::from(width).saturating_sub(6);
    let who = match msg.role {
        Role::Agent => Span::styled(truncate("✦ agent", room), theme.agent()),
        Role::System => Span::styled(truncate("· system", room), theme.dim()),
        Role::User => {
            let name = msg.user_id.as_deref().unwrap_or("someone");
            Span::styled(truncate(name, room), theme.person(name))
        }
    };
    Line::from(vec![time, who])
}

/// A message's lines: header, body (prose, code, command blocks), a blank.
pub fn render_message(msg: &DuetMessage, width: u16, ctx: &RenderCtx) -> Vec<Line<'static>> {
    let mut out = vec![header(msg, width, ctx)];
    let body_style = match msg.role {
        Role::System => ctx.theme.dim(),
        _ => ratatui::style::Style::default(),
    };
    if msg.role == Role::Agent {
        for block in blocks::parse(&msg.text, msg.runs.as_deref()) {
            render_block(&block, width, ctx, body_style, &mut out);
        }
    } else {
        render_prose(&msg.text, width, ctx, body_style, &mut out);
    }
    out.push(Line::default());
    out
}

fn render_turn(turn: &LiveTurn, width: u16, ctx: &RenderCtx) -> Vec<Line<'static>> {
    let theme = ctx.theme;
    let frame = SPINNER[((ctx.now_ms / 100).rem_euclid(SPINNER.len() as i64)) as usize];
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{} ", clock(turn.started_ms, ctx.tz)), theme.dim()),
        Span::styled("✦ agent ", theme.agent()),
        Span::styled(
            format!("{frame} {}", elapsed(ctx.now_ms - turn.started_ms)),
            theme.warn(),
        ),
    ])];
    if turn.text.trim().is_empty() {
        out.push(Line::styled("  thinking…", theme.dim()));
    } else {
        // Commands the model asks for show as commands while it streams;
        // the stored reply has them as blocks.
        let text = turn.text.replace("<run>", "`$ ").replace("</run>", "`");
        render_prose(&text, width, ctx, Default::default(), &mut out);
    }
    out.push(Line::default());
    out
}

/// One block of a reply: prose, or a command with its output or error.
fn render_block(
    block: &Block,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    match block {
        Block::Prose(text) => render_prose(text, width, ctx, style, out),
        Block::Output { cmd, output } => {
            render_command(cmd, width, ctx, out);
            let lines: Vec<String> = termtext::clean(output)
                .iter()
                .map(|l| termtext::strip_sgr(l))
                .collect();
            let shown = lines.len().min(BLOCK_LINES);
            for line in &lines[..shown] {
                gutter_lines(line, width, ctx, ctx.theme.dim(), out);
            }
            if lines.len() > shown {
                let more = format!("… {} more lines", lines.len() - shown);
                gutter_lines(&more, width, ctx, ctx.theme.dim(), out);
            }
        }
        Block::Error { cmd, message } => {
            render_command(cmd, width, ctx, out);
            for line in message.lines() {
                gutter_lines(line, width, ctx, ctx.theme.error(), out);
            }
        }
    }
}

fn render_command(cmd: &str, width: u16, ctx: &RenderCtx, out: &mut Vec<Line<'static>>) {
    let avail = usize::from(width).saturating_sub(4).max(1);
    for (i, part) in cmd.lines().enumerate() {
        let mark = if i == 0 { "  ╭ $ " } else { "  │   " };
        for piece in wrap(part, avail.saturating_sub(2).max(1)) {
            out.push(Line::from(vec![
                Span::styled(mark, ctx.theme.gutter()),
                Span::styled(piece, ctx.theme.command()),
            ]));
        }
    }
}

/// `text` wrapped behind the `│` gutter of code and command blocks.
fn gutter_lines(
    text: &str,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    let avail = usize::from(width).saturating_sub(4).max(1);
    for piece in wrap(text, avail) {
        out.push(Line::from(vec![
            Span::styled("  │ ", ctx.theme.gutter()),
            Span::styled(piece, style),
        ]));
    }
}

/// Prose with fenced code set apart (gutter, code colour, no reflow).
fn render_prose(
    text: &str,
    width: u16,
    ctx: &RenderCtx,
    style: ratatui::style::Style,
    out: &mut Vec<Line<'static>>,
) {
    let avail = usize::from(width).saturating_sub(2).max(1);
    let mut in_code = false;
    for line in text.split('\n') {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let mark = if in_code {
                "  ╰─".to_string()
            } else {
                format!("  ╭─ {}", lang.trim())
            };
            in_code = !in_code;
            out.push(Line::styled(
                truncate(mark.trim_end(), usize::from(width)),
                ctx.theme.gutter(),
            ));
            continue;
        }
        if in_code {
            let expanded = line.replace('\t', "    ");
            gutter_lines(&expanded, width, ctx, ctx.theme.code(), out);
        } else {
            for piece in wrap(line, avail) {
                out.push(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(piece, style),
                ]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, text: &str) -> DuetMessage {
        DuetMessage {
            id: id.into(),
            role: Role::User,
            user_id: Some("ada".into()),
            text: text.into(),
            ts: 0,
            runs: None,
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
