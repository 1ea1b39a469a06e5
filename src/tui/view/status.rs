//! The status bar (server, room, connection, people, how to join), the
//! presence column and the hints line ("X is typing" or key hints).

use crate::client::socket::ConnState;
use crate::tui::app::App;
use crate::tui::keymap;
use crate::tui::text::{truncate, width};
use ratatui::Frame;
use ratatui::layout::Rect;
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

/// Draws the status bar.
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let (conn, conn_style) = connection(app);
    let people = app.presence.len();
    let parts: Vec<(String, ratatui::style::Style)> = vec![
        (
            format!(" {} ", app.session.room),
            theme.status().add_modifier(ratatui::style::Modifier::BOLD),
        ),
        (conn, theme.status().patch(conn_style)),
        // Who is here before the join hint: a long hint is cut, not them.
        (here(app, people), theme.status()),
        (
            format!(" · join: {}", app.session.join_hint),
            theme.status(),
        ),
        (format!(" · {}", app.session.server), theme.status()),
    ];
    let total = usize::from(area.width);
    let mut used = 0;
    let mut spans = Vec::new();
    for (text, style) in parts {
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
    spans.push(Span::styled(
        " ".repeat(total.saturating_sub(used)),
        theme.status(),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
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
        for (key, what) in keymap::hints() {
            let w = width(&key) + width(what) + 4;
            if used + w > total {
                break;
            }
            used += w;
            spans.push(Span::styled(key, theme.command()));
            spans.push(Span::styled(format!(" {what}   "), theme.dim()));
        }
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}
