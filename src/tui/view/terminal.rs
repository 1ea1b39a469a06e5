//! The terminal view in the output pane: the room's shared terminal drawn
//! by `tui-term` from the attached screen, letterboxed in the pane's
//! top-left corner when the terminal is smaller (another window is), the
//! part around the cursor when it is larger (the pane is under 20×5), with
//! who types into it and the key that gives focus back in its title.

use crate::client::term::DETACH_LABEL;
use crate::tui::app::{App, Pane};
use crate::tui::term_view::toggle_key;
use crate::tui::view::pane::title_style;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

/// The title's parts after " Terminal ": its size, who types, the keys.
pub fn title(app: &App) -> Vec<Span<'static>> {
    let theme = app.theme;
    let size = app.term.screen.size();
    let mut spans = vec![Span::styled(" Terminal ", title_style(app, Pane::Output))];
    let state = if app.term.attached {
        format!("{}×{} ", size.cols, size.rows)
    } else {
        "attaching… ".to_string()
    };
    spans.push(Span::styled(state, theme.dim()));
    let names: Vec<&str> = app.term.typing.iter().map(|t| t.name.as_str()).collect();
    let typing = match names.as_slice() {
        [] => None,
        [one] => Some(format!("· {one} is typing ")),
        [a, b] => Some(format!("· {a} and {b} are typing ")),
        many => Some(format!("· {} people are typing ", many.len())),
    };
    if let Some(typing) = typing {
        spans.push(Span::styled(typing, theme.warn()));
    }
    let keys = if app.terminal_focused() {
        format!("· {DETACH_LABEL} gives the keys back ")
    } else {
        format!("· Tab: keys to it · {} hides it ", toggle_key())
    };
    spans.push(Span::styled(keys, theme.dim()));
    spans
}

/// Draws the terminal inside the output pane's `inner` rectangle. A pane
/// smaller than the terminal (it is never smaller than 20×5) shows the
/// part around the cursor, so that the prompt row stays in sight.
pub fn draw(frame: &mut Frame, app: &App, inner: Rect) {
    let size = app.term.screen.size();
    let rect = Rect {
        width: size.cols.min(inner.width),
        height: size.rows.min(inner.height),
        ..inner
    };
    let screen = app.term.screen.screen();
    let focused = app.terminal_focused() && app.modals.is_empty();
    let widget = tui_term::widget::PseudoTerminal::new(screen).cursor(
        // The real cursor marks it while it has the keys.
        tui_term::widget::Cursor::default().visibility(!focused && app.term.attached),
    );
    let (row, col) = screen.cursor_position();
    let (top, left) = window_origin((row, col), (size.cols, size.rows), rect);
    if (top, left) == (0, 0) {
        frame.render_widget(widget, rect);
    } else {
        // Drawn whole off screen, then the window around the cursor copied in.
        let whole = Rect::new(0, 0, size.cols, size.rows);
        let mut drawn = Buffer::empty(whole);
        widget.render(whole, &mut drawn);
        let out = frame.buffer_mut();
        for y in 0..rect.height {
            for x in 0..rect.width {
                if let (Some(cell), Some(to)) = (
                    drawn.cell((left + x, top + y)),
                    out.cell_mut((rect.x + x, rect.y + y)),
                ) {
                    *to = cell.clone();
                }
            }
        }
    }
    if !app.term.attached {
        // Over the first row whole: no cell of the old screen stays beside it.
        let row = Rect { height: 1, ..inner };
        frame.render_widget(Clear, row);
        frame.render_widget(
            Paragraph::new(Line::styled(
                "attaching to the room's terminal…",
                app.theme.dim(),
            )),
            row,
        );
        return;
    }
    let (row, col) = (row.saturating_sub(top), col.saturating_sub(left));
    if focused && !screen.hide_cursor() && col < rect.width && row < rect.height {
        frame.set_cursor_position(Position::new(rect.x + col, rect.y + row));
    }
}

/// The terminal's first row and column that a window `rect` shows: the
/// top-left corner while the cursor is in sight there, else as little
/// further as brings it into the window's last row (or column).
fn window_origin(cursor: (u16, u16), (cols, rows): (u16, u16), rect: Rect) -> (u16, u16) {
    let shift = |at: u16, span: u16, total: u16| {
        if at < span {
            0
        } else {
            (at + 1 - span).min(total.saturating_sub(span))
        }
    };
    (
        shift(cursor.0, rect.height, rows),
        shift(cursor.1, rect.width, cols),
    )
}
