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

/// One part of the status bar: the forms it can take, longest first (an
/// empty one drops it), and when it gives way to the others.
struct Part {
    forms: Vec<String>,
    style: Style,
    /// Parts with a lower number are shortened first.
    gives_way: u8,
}

/// Draws the status bar: room, who you are, connection, people, the
/// shell's directory, how to join, the server. When it does not fit,
/// parts give way in turn: the round trip, the server, the names of who
/// is here, the directory (shortened step by step), your name; the join
/// hint is not dropped while online (cut at the end if it must).
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let bar = theme.status();
    let (conn, conn_style) = connection(app);
    let online = matches!(app.conn, ConnState::Connected { .. });
    let part = |forms: Vec<String>, gives_way| Part {
        forms,
        style: bar,
        gives_way,
    };
    let hint = &app.session.join_hint;
    let (count, names) = here(app);
    // The room, the connection and the count stay: a long join hint is
    // cut at the end rather than them.
    let mut parts = vec![
        Part {
            style: bar.add_modifier(Modifier::BOLD),
            ..part(vec![format!(" {} ", app.session.room)], 9)
        },
        part(vec![format!("as {} ", app.session.name), String::new()], 5),
        // The round trip is the first thing to go.
        Part {
            style: bar.patch(conn_style),
            ..part(
                match app.conn {
                    ConnState::Connected { rtt_ms: Some(_) } => {
                        vec![conn, "● connected".to_string()]
                    }
                    _ => vec![conn],
                },
                1,
            )
        },
        part(vec![count], 7),
        part(vec![names, String::new()], 3),
    ];
    if let Some(cwd) = &app.shell_cwd {
        let forms = dir_forms(cwd).into_iter().map(|f| format!(" · cwd {f}"));
        parts.push(part(forms.chain([String::new()]).collect(), 4));
    }
    // Online, the hint is never dropped (only cut at the end).
    parts.push(part(
        [format!(" · join: {hint}")]
            .into_iter()
            .chain((!online).then(String::new))
            .collect(),
        6,
    ));
    parts.push(part(
        vec![format!(" · {}", app.session.server), String::new()],
        2,
    ));
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
    spans.push(Span::styled(" ".repeat(total.saturating_sub(used)), bar));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The shorter and shorter ways to write a directory: whole, with
/// `/workspace` as `~w`, then cut from the left at each `/` (`…/src/app`,
/// `…/app`): the end of a path says where one is.
pub fn dir_forms(dir: &str) -> Vec<String> {
    let mut forms = vec![dir.to_string()];
    let short = match dir.strip_prefix(crate::protocol::WORKSPACE) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~w{rest}"),
        _ => dir.to_string(),
    };
    let cuts = short
        .match_indices('/')
        .map(|(i, _)| &short[i..])
        .filter(|tail| tail.len() > 1 && tail.len() < short.len())
        .map(|tail| format!("…{tail}"));
    forms.push(short.clone());
    forms.extend(cuts);
    forms.dedup();
    forms
}

/// `· 2 here` and, when there is no presence column, `: ada, bob`.
fn here(app: &App) -> (String, String) {
    let people = app.presence.len();
    let count = format!(" · {people} here");
    if app.size.0 >= crate::tui::view::layout::WIDE || people == 0 {
        return (count, String::new());
    }
    let mut names: Vec<&str> = app.presence.iter().map(|u| u.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    (count, format!(": {}", names.join(", ")))
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
