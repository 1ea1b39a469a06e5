//! The chat pane: its title (older pages) and its cells.

use crate::tui::app::{App, Pane};
use crate::tui::view::layout::pane_inner;
use crate::tui::view::pane::{draw_cells, other_pane, title_style};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Draws the chat pane in `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    let mut title = vec![Span::styled(" Chat ", title_style(app, Pane::Chat))];
    title.extend(other_pane(app, area, Pane::Output));
    if app.chat.loading_older {
        title.push(Span::styled("loading older… ", theme.dim()));
    } else if app.chat.has_more && app.chat_scroll.offset > 0 {
        title.push(Span::styled("PgUp: older ", theme.dim()));
    }
    let border = if app.focus == Pane::Chat {
        theme.focused()
    } else {
        theme.border()
    };
    frame.render_widget(
        Block::default()
            .borders(Borders::TOP)
            .border_style(border)
            .title(Line::from(title)),
        area,
    );
    let inner = pane_inner(Pane::Chat, area, false);
    if inner.height == 0 {
        return;
    }
    if app.chat.is_empty() {
        let hint = Paragraph::new(vec![
            Line::styled("No messages yet.", theme.dim()),
            Line::styled(
                "Type to ask the agent; !cmd runs a command; Ctrl+T talks to the room.",
                theme.dim(),
            ),
        ])
        .wrap(ratatui::widgets::Wrap { trim: true });
        frame.render_widget(hint, inner);
        return;
    }
    draw_cells(frame, app, Pane::Chat, inner);
}
