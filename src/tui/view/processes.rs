//! The processes view (F4, `/ps`), over the panes: the room's background
//! processes as `duet ps` lists them (the selected one marked), the
//! listening ports with the URL to open, and the followed process's log,
//! its end in view.

use crate::client::ps::{port_table, process_table};
use crate::tui::app::App;
use crate::tui::keymap::{self, PROCESS_KEYS};
use crate::tui::procs::{Stream, ended_words, named};
use crate::tui::text::{hard_wrap, truncate};
use crate::tui::view::overlay::centered;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// Widest the view gets.
const MAX_WIDTH: u16 = 120;

/// Draws the view over `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(MAX_WIDTH),
        area.height.saturating_sub(2),
    );
    if rect.width < 10 || rect.height < 5 {
        return;
    }
    let inner_w = usize::from(rect.width.saturating_sub(2));
    let inner_h = usize::from(rect.height.saturating_sub(2));
    let procs = &app.procs;
    let mut top: Vec<Line> = Vec::new();
    if procs.list.is_empty() {
        top.push(Line::styled(
            "  No background processes: /bg CMD starts one (a dev server, a watcher).",
            theme.dim(),
        ));
    } else {
        let table = process_table(&procs.list, app.now_ms);
        for (i, row) in table.lines().enumerate() {
            let text = truncate(&format!("  {row}"), inner_w);
            let line = match i.checked_sub(1) {
                None => Line::styled(text, theme.dim()),
                Some(n) if n == procs.selected => {
                    let marked = truncate(&format!("▶ {row}"), inner_w);
                    Line::styled(marked, theme.focused().add_modifier(Modifier::BOLD))
                }
                Some(_) => Line::raw(text),
            };
            top.push(line);
        }
    }
    top.push(Line::default());
    if procs.ports.is_empty() {
        top.push(Line::styled(
            "  No ports listening in the sandbox.",
            theme.dim(),
        ));
    } else {
        for (i, row) in port_table(&procs.ports, &app.session.server)
            .lines()
            .enumerate()
        {
            let text = truncate(&format!("  {row}"), inner_w);
            top.push(if i == 0 {
                Line::styled(text, theme.dim())
            } else {
                Line::styled(text, theme.link())
            });
        }
    }
    top.push(Line::default());
    let keys = PROCESS_KEYS
        .iter()
        .filter_map(|b| {
            let key = match b.keys.first()? {
                // A letter is pressed as written (`k`, not Shift+K).
                keymap::Key {
                    code: crossterm::event::KeyCode::Char(c),
                    ..
                } => c.to_string(),
                other => keymap::label(other),
            };
            Some(match b.action {
                keymap::Action::Up => return None,
                keymap::Action::Down => "Up/Down select".to_string(),
                action => format!("{key} {}", short(action)),
            })
        })
        .collect::<Vec<_>>()
        .join(" · ");
    let footer = Line::styled(truncate(&format!("  {keys}"), inner_w), theme.dim());
    // The log takes what is left, its newest lines in view.
    let room = inner_h.saturating_sub(top.len() + 1);
    let mut log: Vec<Line> = Vec::new();
    match &procs.followed {
        Some(followed) => {
            let process = procs.list.iter().find(|p| p.id == followed.id);
            let title = match process {
                Some(p) if p.status == crate::protocol::ProcessStatus::Running => {
                    format!("Log of {} · following", named(p))
                }
                Some(p) => format!(
                    "Log of {} · {}",
                    named(p),
                    ended_words(p.status, p.exit_code)
                ),
                None => format!("Log of {}", followed.id),
            };
            log.push(Line::styled(
                truncate(&format!("  {title}"), inner_w),
                theme.agent(),
            ));
            let mut body: Vec<Line> = followed
                .lines()
                .into_iter()
                .flat_map(|(stream, text)| {
                    let style = match stream {
                        Stream::Stdout => ratatui::style::Style::default(),
                        Stream::Stderr => theme.warn(),
                    };
                    hard_wrap(&text.replace('\t', "    "), inner_w.saturating_sub(2))
                        .into_iter()
                        .map(move |piece| Line::styled(format!("  {piece}"), style))
                })
                .collect();
            if !followed.answered && body.is_empty() {
                body.push(Line::styled("  …", theme.dim()));
            } else if body.is_empty() {
                body.push(Line::styled("  (no output yet)", theme.dim()));
            }
            let skip = body.len().saturating_sub(room.saturating_sub(1));
            log.extend(body.into_iter().skip(skip));
        }
        None if !procs.list.is_empty() => log.push(Line::styled(
            "  Enter follows the selected process's log.",
            theme.dim(),
        )),
        None => {}
    }
    let mut lines = top;
    lines.extend(log);
    let used = lines.len();
    lines.extend(std::iter::repeat_n(
        Line::default(),
        inner_h.saturating_sub(used + 1),
    ));
    lines.truncate(inner_h.saturating_sub(1));
    lines.push(footer);
    let running = procs.running();
    let title = Line::from(vec![
        Span::raw(" Processes "),
        Span::styled(
            match running {
                0 => String::new(),
                1 => "· 1 running ".into(),
                n => format!("· {n} running "),
            },
            theme.dim(),
        ),
    ]);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focused())
                .title(title),
        ),
        rect,
    );
}

/// What a key of the view does, in a word or two for its footer.
fn short(action: keymap::Action) -> &'static str {
    use keymap::Action;
    match action {
        Action::Follow => "follow",
        Action::Kill => "stop",
        _ => "close",
    }
}
