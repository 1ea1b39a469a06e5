//! The chat as the room's timeline: people's commands as one line each
//! (who, the command, how it ended) among the messages, records of what
//! people did as dim lines, and the marks a message carries beyond its
//! body (said to the room, cancelled by someone). Bodies are drawn by
//! `chat_render`.

use crate::protocol::{DuetMessage, Event, ExecFrame, ExecRecord, Role};
use crate::tui::cell::{Cell, Lines, RenderCtx, clock, elapsed, spinner};
use crate::tui::chat_render::render_message;
use crate::tui::execs::Completion;
use crate::tui::text::{truncate, width, wrap};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::rc::Rc;

pub use crate::text::{one_line, record_text};

/// A person's command (`!cmd`) as the chat shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandLine {
    pub exec_id: String,
    pub cmd: String,
    pub by: String,
    /// Where it goes in the timeline: the backend's start time once a
    /// record says it, until then the newest time the backend gave (so a
    /// live command follows what is shown, whatever this machine's clock).
    pub ts: i64,
    /// When this client saw it start (its running time).
    pub started_ms: i64,
    /// Its `HH:MM`: this client's clock (not before `ts`) until a record
    /// gives the backend's start (`ts` alone may be much older: the last
    /// time the backend gave, or none at all in a fresh room).
    pub shown_ms: i64,
    pub done: Option<Completion>,
}

impl CommandLine {
    /// The line of a command that just started.
    pub fn started(frame: &ExecFrame, ts: i64, now_ms: i64) -> Option<CommandLine> {
        let ExecFrame::Start {
            exec_id, cmd, by, ..
        } = frame
        else {
            return None;
        };
        Some(CommandLine {
            exec_id: exec_id.clone(),
            cmd: cmd.clone(),
            by: by.clone(),
            ts,
            started_ms: now_ms,
            // Not before what the backend already said happened.
            shown_ms: now_ms.max(ts),
            done: None,
        })
    }

    /// The line of a stored command.
    pub fn from_record(record: &ExecRecord) -> CommandLine {
        CommandLine {
            exec_id: record.exec_id.clone(),
            cmd: record.cmd.clone(),
            by: record.by.clone(),
            ts: record.ts,
            started_ms: record.ts,
            shown_ms: record.ts,
            done: Some(Completion::from_record(record)),
        }
    }
}

/// Cells of a command a narrow line keeps before its badge's words.
const MIN_COMMAND: usize = 12;

impl Cell for CommandLine {
    /// `10:04 bob $ make test  ✓ 0`: the command is cut, and when narrow the
    /// badge first keeps only its sign (`■`, `✓`, the spinner).
    fn lines(&self, cells: u16, ctx: &RenderCtx) -> Lines {
        let theme = ctx.theme;
        let time = format!("{} ", clock(self.shown_ms, ctx.tz));
        let (badge, badge_style) = badge(self.done.as_ref(), self.started_ms, ctx);
        let cmd = one_line(&self.cmd);
        let total = usize::from(cells);
        let who = truncate(&self.by, 16);
        // Narrow: the badge's words go first (its sign stays), so the
        // command keeps its start.
        let room =
            |badge: &str| total.saturating_sub(width(&time) + width(&who) + 3 + 2 + width(badge));
        let badge = if room(&badge) < width(&cmd).min(MIN_COMMAND) {
            badge.split(' ').next().unwrap_or_default().to_string()
        } else {
            badge
        };
        let cmd = truncate(&cmd, room(&badge).max(1));
        Rc::new(vec![Line::from(vec![
            Span::styled(time, theme.dim()),
            Span::styled(who, theme.person(&self.by)),
            Span::styled(" $ ", theme.dim()),
            Span::styled(cmd, theme.command()),
            Span::raw("  "),
            Span::styled(badge, badge_style),
        ])])
    }

    fn height(&self, _width: u16, _ctx: &RenderCtx) -> usize {
        1
    }
}

/// How a command ended, in a few cells: `✓ 0`, `✗ 2`, `⏱ timed out`,
/// `■ interrupted`, or the spinner and its running time.
pub fn badge(done: Option<&Completion>, started_ms: i64, ctx: &RenderCtx) -> (String, Style) {
    let theme = ctx.theme;
    let Some(done) = done else {
        let frame = spinner(ctx.now_ms);
        let took = elapsed(ctx.now_ms - started_ms);
        return (format!("{frame} {took}"), theme.warn());
    };
    // Why it ended first: a timed-out or interrupted command also has an
    // `error` (its shell was replaced).
    if done.timed_out {
        ("⏱ timed out".into(), theme.warn())
    } else if done.interrupted {
        ("■ interrupted".into(), theme.warn())
    } else if done.error.is_some() {
        ("✗ error".into(), theme.error())
    } else {
        match done.exit_code {
            Some(0) => ("✓ 0".into(), theme.ok()),
            Some(code) => (format!("✗ {code}"), theme.error()),
            None => ("✗ killed".into(), theme.error()),
        }
    }
}

/// A message's lines in the timeline: a record as its dim line, any
/// other message as `chat_render` draws it, with its marks.
pub fn render_entry(msg: &DuetMessage, width: u16, ctx: &RenderCtx) -> Vec<Line<'static>> {
    if msg.role == Role::System
        && let Some(event) = &msg.event
    {
        return record_lines(msg, event, width, ctx);
    }
    let mut lines = render_message(msg, width, ctx);
    mark(msg, &mut lines, ctx);
    lines
}

/// `10:05 · bob interrupted `sleep 100``: a record, dim, wrapped under its
/// time when it is long.
fn record_lines(
    msg: &DuetMessage,
    event: &Event,
    cells: u16,
    ctx: &RenderCtx,
) -> Vec<Line<'static>> {
    let style = ctx.theme.dim();
    let time = format!("{} · ", clock(msg.ts, ctx.tz));
    let indent = " ".repeat(width(&time));
    let avail = usize::from(cells).saturating_sub(width(&time)).max(1);
    wrap(&record_text(event, &msg.text), avail)
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            let lead = if i == 0 { time.clone() } else { indent.clone() };
            Line::from(vec![Span::styled(lead, style), Span::styled(piece, style)])
        })
        .collect()
}

/// The marks beyond the body: `→ room` after the name of a message for
/// the room; `cancelled by bob` under a reply whose turn was cancelled.
fn mark(msg: &DuetMessage, lines: &mut Vec<Line<'static>>, ctx: &RenderCtx) {
    let theme = ctx.theme;
    if msg.role == Role::User
        && msg.to == Some(crate::protocol::Addressee::Room)
        && let Some(header) = lines.first_mut()
    {
        header.spans.push(Span::styled(" → room", theme.dim()));
    }
    if msg.role == Role::Agent
        && let Some(by) = &msg.cancelled_by
    {
        let said = if msg.text.trim().is_empty() {
            format!("  ■ cancelled by {by} before the agent said anything")
        } else {
            format!("  ■ cancelled by {by}")
        };
        let line = Line::styled(said, theme.dim().add_modifier(Modifier::ITALIC));
        // Before the blank line that ends a message.
        let at = match lines.last() {
            Some(last) if last.width() == 0 => lines.len() - 1,
            _ => lines.len(),
        };
        lines.insert(at, line);
    }
}

/// A muted note under a message's body (`changed 3 files (+12 −4) ·
/// /diff`), indented as the body, cut to `width`, before the blank line
/// that ends the message.
pub fn add_note(lines: &mut Vec<Line<'static>>, note: &str, width: u16, ctx: &RenderCtx) {
    let said = truncate(&format!("  {note}"), usize::from(width).max(1));
    let line = Line::styled(said, ctx.theme.dim());
    let at = match lines.last() {
        Some(last) if last.width() == 0 => lines.len() - 1,
        _ => lines.len(),
    };
    lines.insert(at, line);
}
