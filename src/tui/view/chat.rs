//! The chat pane: the visible slice of the chat, and "new below".

use crate::tui::app::{App, Pane};
use crate::tui::view::layout::pane_inner;
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
            Line::styled("Type to ask the agent; !cmd runs a command.", theme.dim()),
        ])
        .wrap(ratatui::widgets::Wrap { trim: true });
        frame.render_widget(hint, inner);
        return;
    }
    let lines = visible_lines(app, inner.width, usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines), inner);
    if app.chat_scroll.new_below {
        new_below(frame, app, inner);
    }
}

/// In the narrow layout, the title's pointer to the hidden pane, with a
/// dot when it has something new.
pub fn other_pane(app: &App, area: Rect, other: Pane) -> Vec<Span<'static>> {
    if app.size.0 >= crate::tui::view::layout::WIDE || area.width < 30 {
        return Vec::new();
    }
    let (name, unseen) = match other {
        Pane::Chat => ("Chat", app.unseen.0),
        Pane::Output => ("Output", app.unseen.1),
    };
    let mut spans = vec![Span::styled(format!("· Tab: {name} "), app.theme.dim())];
    if unseen {
        spans.push(Span::styled("● ", app.theme.warn()));
    }
    spans
}

/// The title style of a pane: bold when focused.
pub fn title_style(app: &App, pane: Pane) -> ratatui::style::Style {
    if app.focus == pane {
        app.theme
            .focused()
            .add_modifier(ratatui::style::Modifier::BOLD)
    } else {
        app.theme.dim()
    }
}

/// The `height` lines that end `offset` lines above the bottom, rendering
/// only the items they come from.
fn visible_lines(app: &App, width: u16, height: usize) -> Vec<Line<'static>> {
    let ctx = app.render_ctx();
    let mut skip = app.chat_scroll.offset;
    let mut out: Vec<Line<'static>> = Vec::with_capacity(height);
    'items: for i in (0..app.chat.len()).rev() {
        let lines = app.chat.item_lines(i, width, &ctx);
        for line in lines.iter().rev() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            out.push(line.clone());
            if out.len() == height {
                break 'items;
            }
        }
    }
    out.reverse();
    out
}

/// The "new below" marker on the last line of a pane.
pub fn new_below(frame: &mut Frame, app: &App, inner: Rect) {
    let label = " ↓ new below — End ";
    let width = (crate::tui::text::width(label) as u16).min(inner.width);
    let rect = Rect {
        x: inner.x + inner.width.saturating_sub(width),
        y: inner.y + inner.height.saturating_sub(1),
        width,
        height: 1,
    };
    frame.render_widget(
        Paragraph::new(Line::styled(label, app.theme.marker())),
        rect,
    );
}
