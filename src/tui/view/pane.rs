//! What both panes share: the visible slice of their cells, the "new
//! below" marker, and their titles' parts.

use crate::tui::app::{App, Pane};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Draws the lines of `pane` in view inside `inner`, and the marker when
/// new lines are below.
pub fn draw_cells(frame: &mut Frame, app: &App, pane: Pane, inner: Rect) {
    let scroll = app.scroll(pane);
    let ctx = app.render_ctx();
    let lines = scroll.visible_lines(
        app.cells(pane),
        inner.width,
        usize::from(inner.height),
        &ctx,
    );
    frame.render_widget(Paragraph::new(lines), inner);
    if scroll.new_below {
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
