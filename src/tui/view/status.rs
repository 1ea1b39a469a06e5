//! The status bar (server, room, connection, people, how to join), the
//! presence column and the hints line (messages queued while offline, "X
//! is typing" or key hints).

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

/// One part of the status bar: the forms it can take, longest first (an
/// empty one drops it), and when it gives way to the others.
struct Part {
    forms: Vec<String>,
    style: ratatui::style::Style,
    /// Parts with a lower number are shortened first.
    gives_way: u8,
}

/// Draws the status bar. When it does not fit, parts give way in turn
/// (the server, then who is here, then the words around the rest) so
/// that the join hint stays whole and runnable; only alone is it cut.
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let (conn, conn_style) = connection(app);
    let symbol = conn
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let online = matches!(app.conn, ConnState::Connected { .. });
    let hint = &app.session.join_hint;
    let mut parts = vec![
        Part {
            forms: vec![format!(" {} ", app.session.room), String::new()],
            style: theme.status().add_modifier(ratatui::style::Modifier::BOLD),
            gives_way: 5,
        },
        Part {
            forms: vec![conn, symbol],
            style: theme.status().patch(conn_style),
            gives_way: 4,
        },
        Part {
            forms: here(app),
            style: theme.status(),
            // Offline, who was here (and as of when) matters more than
            // how to join.
            gives_way: if online { 2 } else { 3 },
        },
        Part {
            // Online, the hint is never dropped (only cut, when alone).
            forms: [format!(" · join: {hint}"), format!(" · {hint}")]
                .into_iter()
                .chain((!online).then(String::new))
                .collect(),
            style: theme.status(),
            gives_way: if online { 3 } else { 2 },
        },
        Part {
            forms: vec![format!(" · {}", app.session.server), String::new()],
            style: theme.status(),
            gives_way: 1,
        },
    ];
    let total = usize::from(area.width);
    let used = |parts: &[Part]| parts.iter().map(|p| width(&p.forms[0])).sum::<usize>();
    while used(&parts) > total {
        let next = parts
            .iter_mut()
            .filter(|p| p.forms.len() > 1)
            .min_by_key(|p| p.gives_way);
        match next {
            Some(part) => {
                part.forms.remove(0);
            }
            None => break,
        }
    }
    let mut spans = Vec::new();
    let mut used = 0;
    for part in parts {
        let text = &part.forms[0];
        let w = width(text);
        if used + w > total {
            let left = total.saturating_sub(used);
            if left > 1 {
                spans.push(Span::styled(truncate(text, left), part.style));
                used += left;
            }
            break;
        }
        used += w;
        spans.push(Span::styled(text.clone(), part.style));
    }
    spans.push(Span::styled(
        " ".repeat(total.saturating_sub(used)),
        theme.status(),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The forms of `· 2 here`: with the names when there is no presence
/// column, and "(as of 14:02, offline)" while the connection is down.
fn here(app: &App) -> Vec<String> {
    let people = app.presence.len();
    let (stale, stale_short) = match app.presence_as_of() {
        Some(ts) => (
            format!(" (as of {}, offline)", crate::tui::cell::clock(ts, app.tz)),
            " (offline)".to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let count = format!(" · {people} here{stale}");
    let short = format!(" · {people} here{stale_short}");
    if app.size.0 >= crate::tui::view::layout::WIDE || people == 0 {
        return vec![count, short, String::new()];
    }
    let mut names: Vec<&str> = app.presence.iter().map(|u| u.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    vec![
        format!("{count}: {}", names.join(", ")),
        count,
        short,
        String::new(),
    ]
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
    // Offline: these are the people as of when the connection dropped.
    let stale = app.presence_as_of().map(|ts| {
        Line::styled(
            truncate(
                &format!("as of {}", crate::tui::cell::clock(ts, app.tz)),
                avail,
            ),
            theme.warn(),
        )
    });
    let lines: Vec<Line> = stale
        .into_iter()
        .chain(app.presence.iter().map(|user| {
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
        }))
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
    let line = if let Some(first) = app.outbox.first() {
        let more = match app.outbox.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let first = first.lines().next().unwrap_or_default();
        let text = if matches!(app.conn, ConnState::Connected { .. }) {
            format!("⧗ sending{more}: {first}")
        } else {
            format!("⧗ queued, sends when back online{more}: {first}")
        };
        Line::styled(truncate(&text, total), theme.warn())
    } else if !app.typing.is_empty() {
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
            let w = width(&key) + width(what) + 3;
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
