//! The terminal view in the output pane: the room's shared terminal drawn
//! by `tui-term` from the attached screen, letterboxed in the pane's
//! top-left corner when the terminal is smaller (another window is), with
//! who types into it and the key that gives focus back in its title.

use crate::client::term::DETACH_LABEL;
use crate::tui::app::{App, Pane};
use crate::tui::term_view::toggle_key;
use crate::tui::view::pane::title_style;
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

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

/// Draws the terminal inside the output pane's `inner` rectangle.
pub fn draw(frame: &mut Frame, app: &App, inner: Rect) {
    let size = app.term.screen.size();
    let rect = Rect {
        width: size.cols.min(inner.width),
        height: size.rows.min(inner.height),
        ..inner
    };
    let screen = app.term.screen.screen();
    let focused = app.terminal_focused() && app.modals.is_empty();
    frame.render_widget(
        tui_term::widget::PseudoTerminal::new(screen).cursor(
            // The real cursor marks it while it has the keys.
            tui_term::widget::Cursor::default().visibility(!focused && app.term.attached),
        ),
        rect,
    );
    if !app.term.attached {
        frame.render_widget(
            Paragraph::new(Line::styled(
                "attaching to the room's terminal…",
                app.theme.dim(),
            )),
            Rect { height: 1, ..inner },
        );
        return;
    }
    let (row, col) = screen.cursor_position();
    if focused && !screen.hide_cursor() && col < rect.width && row < rect.height {
        frame.set_cursor_position(Position::new(rect.x + col, rect.y + row));
    }
}
