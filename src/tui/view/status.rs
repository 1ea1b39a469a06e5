//! The status bar (room, your name, connection, people, the shell's
//! directory, how to join, server), the presence column and the hints
//! line ("X is typing" or key hints, the current mode's marked).

use crate::client::socket::ConnState;
use crate::tui::app::App;
use crate::tui::composer::Mode;
use crate::tui::keymap::{self, Action};
use crate::tui::text::{truncate, width};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// The connection as words and a style.
pub fn connection(app: &App) -> (String, ratatui::style::Style) {
    let theme = app.theme;
    match &app.conn {
        ConnState::Connecting => ("◌ connecting".into(), theme.warn()),
        ConnState::Connected { rtt_ms: Some(ms) } => (format!("● connected {ms} ms"), theme.ok()),
        ConnState::Connected { rtt_ms: None } => ("● connected".into(), theme.ok()),
        ConnState::Reconnecting { in_secs, .. } => {
            (format!("◌ reconnecting in {in_secs} s"), theme.warn())
        }
        ConnState::Offline(why) => (format!("✗ offline: {why}"), theme.error()),
    }
}

/// The narrowest the shell's directory gets before it is dropped.
const MIN_CWD: usize = 6;

/// One item of the status bar; `rank` 0 is the most important: the
/// least important are dropped first when the bar is too narrow, after
/// their `short` form was tried.
struct Item {
    rank: u8,
    text: String,
    short: Option<String>,
    style: Style,
}

/// The rank of the shell's directory: shortened before it is dropped.
const CWD_RANK: u8 = 3;
const CWD_LABEL: &str = " · cwd ";

/// Draws the status bar: room, who you are, connection, people, the
/// shell's directory, how to join, the server.
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let (conn, conn_style) = connection(app);
    let people = app.presence.len();
    let bar = theme.status();
    let item = |rank, text, style| Item {
        rank,
        text,
        short: None,
        style,
    };
    let mut items = vec![
        item(
            0,
            format!(" {} ", app.session.room),
            bar.add_modifier(Modifier::BOLD),
        ),
        item(4, format!("as {} ", app.session.name), bar),
        item(1, conn, bar.patch(conn_style)),
        // Who is here before the join hint: a long hint is cut, not them.
        Item {
            short: Some(format!(" · {people} here")),
            ..item(2, here(app, people), bar)
        },
    ];
    if let Some(cwd) = &app.shell_cwd {
        items.push(item(CWD_RANK, cwd.clone(), bar));
    }
    items.push(item(5, format!(" · join: {}", app.session.join_hint), bar));
    items.push(item(6, format!(" · {}", app.session.server), bar));
    let total = usize::from(area.width);
    // The most important first, each whole while it fits; the directory
    // shortened to what is left; the rest dropped. The room and the
    // connection always stay (cut at the end if they must).
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].rank);
    let mut left = total;
    let mut keep = vec![false; items.len()];
    for i in order {
        let item = &mut items[i];
        if item.rank == CWD_RANK {
            let room = left.saturating_sub(width(CWD_LABEL));
            if room >= width(&item.text).min(MIN_CWD) {
                item.text = format!("{CWD_LABEL}{}", abbreviate_dir(&item.text, room));
                left -= width(&item.text);
                keep[i] = true;
            }
        } else {
            if width(&item.text) > left
                && let Some(short) = item.short.take()
            {
                item.text = short;
            }
            if width(&item.text) <= left || item.rank <= 1 {
                left = left.saturating_sub(width(&item.text));
                keep[i] = true;
            }
        }
    }
    let mut kept = keep.iter();
    items.retain(|_| kept.next().copied().unwrap_or(false));
    let mut used = 0;
    let mut spans = Vec::new();
    for Item { text, style, .. } in items {
        let w = width(&text);
        if used + w > total {
            let left = total.saturating_sub(used);
            if left > 1 {
                spans.push(Span::styled(truncate(&text, left), style));
                used += left;
            }
            break;
        }
        used += w;
        spans.push(Span::styled(text, style));
    }
    spans.push(Span::styled(" ".repeat(total.saturating_sub(used)), bar));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A directory in at most `max` cells: whole if it fits, else with
/// `/workspace` as `~w`, else cut from the left at a `/` (`…/src/app`):
/// the end of a path says where one is.
pub fn abbreviate_dir(dir: &str, max: usize) -> String {
    if width(dir) <= max {
        return dir.to_string();
    }
    let short = match dir.strip_prefix(crate::protocol::WORKSPACE) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~w{rest}"),
        _ => dir.to_string(),
    };
    if width(&short) <= max {
        return short;
    }
    let avail = max.saturating_sub(1);
    let at_slash = short
        .match_indices('/')
        .map(|(i, _)| &short[i..])
        .find(|tail| width(tail) <= avail);
    let tail = at_slash.map(str::to_string).unwrap_or_else(|| {
        // Not even the last part fits: its end, cell by cell.
        let mut tail: Vec<char> = Vec::new();
        for c in short.chars().rev() {
            let mut s: String = tail.iter().rev().collect();
            s.insert(0, c);
            if width(&s) > avail {
                break;
            }
            tail.push(c);
        }
        tail.iter().rev().collect()
    });
    format!("…{tail}")
}

/// `· 2 here`, with the names when there is no presence column.
fn here(app: &App, people: usize) -> String {
    if app.size.0 >= crate::tui::view::layout::WIDE || people == 0 {
        return format!(" · {people} here");
    }
    let mut names: Vec<&str> = app.presence.iter().map(|u| u.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    format!(" · {people} here: {}", names.join(", "))
}

/// Draws the presence column (wide layout).
pub fn draw_presence(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    frame.render_widget(
        Block::default()
            .borders(Borders::TOP | Borders::LEFT)
            .border_style(theme.border())
            .title(Span::styled(
                format!(" Here {} ", app.presence.len()),
                theme.dim(),
            )),
        area,
    );
    let inner = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(1),
        height: area.height.saturating_sub(1),
    };
    let avail = usize::from(inner.width).saturating_sub(1);
    let lines: Vec<Line> = app
        .presence
        .iter()
        .map(|user| {
            let me = user.id == app.session.connection_id;
            let typing = app.typing.iter().any(|t| t.id == user.id);
            let mark = if typing { "✎" } else { "●" };
            let label = if me {
                format!("{} (you)", user.name)
            } else {
                user.name.clone()
            };
            Line::from(vec![
                Span::styled(format!("{mark} "), theme.person(&user.name)),
                Span::styled(
                    truncate(&label, avail.saturating_sub(2)),
                    theme.person(&user.name),
                ),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Draws "X is typing…" or, when nobody types, the key hints.
pub fn draw_hints(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let total = usize::from(area.width);
    let line = if !app.typing.is_empty() {
        let names: Vec<&str> = app.typing.iter().map(|t| t.name.as_str()).collect();
        let text = match names.as_slice() {
            [one] => format!("{one} is typing…"),
            [a, b] => format!("{a} and {b} are typing…"),
            _ => format!("{} people are typing…", names.len()),
        };
        Line::styled(truncate(&text, total), theme.dim())
    } else {
        let mut spans = Vec::new();
        let mut used = 0;
        let current = match app.composer.mode {
            Mode::Ask => Action::ModeAsk,
            Mode::Room => Action::ModeRoom,
            Mode::Run => Action::ModeRun,
        };
        const GAP: &str = "   ";
        for (key, what, action) in keymap::hints() {
            // Only whole hints: `KEY what`, a gap between them.
            let gap = if spans.is_empty() { 0 } else { GAP.len() };
            let w = gap + width(&key) + 1 + width(what);
            if used + w > total {
                break;
            }
            used += w;
            let what_style = if action == current {
                theme.focused().add_modifier(Modifier::BOLD)
            } else {
                theme.dim()
            };
            if gap > 0 {
                spans.push(Span::raw(GAP));
            }
            spans.push(Span::styled(key, theme.command()));
            spans.push(Span::styled(format!(" {what}"), what_style));
        }
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}
