//! The output pane: its title (how many commands) and its cells, one per
//! command run (src/tui/exec_cell.rs); or the room's terminal, while F3
//! shows it (view/terminal.rs).

use crate::tui::app::{App, Pane};
use crate::tui::view::layout::pane_inner;
use crate::tui::view::pane::{draw_cells, other_pane, title_style};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Draws the output pane in `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect, wide: bool) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    let count = app.execs.runs().len();
    let title = if app.term.shown {
        crate::tui::view::terminal::title(app)
    } else {
        let mut title = vec![
            Span::styled(" Output ", title_style(app, Pane::Output)),
            Span::styled(
                match count {
                    0 => String::new(),
                    1 => "1 command ".to_string(),
                    n => format!("{n} commands "),
                },
                theme.dim(),
            ),
        ];
        title.extend(other_pane(app, area, Pane::Chat));
        title
    };
    let title = Line::from(title);
    let borders = if wide {
        Borders::TOP | Borders::LEFT
    } else {
        Borders::TOP
    };
    let border = if app.focus == Pane::Output {
        theme.focused()
    } else {
        theme.border()
    };
    frame.render_widget(
        Block::default()
            .borders(borders)
            .border_style(border)
            .title(title),
        area,
    );
    let inner = pane_inner(Pane::Output, area, wide);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if app.term.shown {
        crate::tui::view::terminal::draw(frame, app, inner);
        return;
    }
    if count == 0 {
        frame.render_widget(
            Paragraph::new(Line::styled("No commands yet: !cmd runs one.", theme.dim()))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    }
    draw_cells(frame, app, Pane::Output, inner);
}
