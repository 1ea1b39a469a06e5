//! The command line: its mode in the title and the prompt (always
//! visible: whom a line is for), the text, the cursor.

use crate::tui::app::App;
use crate::tui::composer::Mode;
use crate::tui::text::width;
use crate::tui::view::layout::{PROMPT_WIDTH, composer_lines};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// Draws the input in `area` and places the cursor.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    let (label, prompt, style) = match app.composer.mode {
        Mode::Ask => (" to the agent · !cmd runs ", "› ", theme.agent()),
        Mode::Room if app.may(crate::tui::roles::Deed::AskAgent).is_err() => (
            " to the room (as a viewer, you chat; you cannot ask the agent) ",
            "» ",
            theme.person(&app.session.name),
        ),
        Mode::Room => (
            " to the room, no agent · @agent asks it ",
            "» ",
            theme.person(&app.session.name),
        ),
        Mode::Run => (" run in the sandbox ", "$ ", theme.command()),
    };
    let has_border = area.height >= 2;
    if has_border {
        frame.render_widget(
            Block::default()
                .borders(Borders::TOP)
                .border_style(theme.border())
                .title(Span::styled(label, style)),
            area,
        );
    }
    let inner = Rect {
        y: area.y + u16::from(has_border),
        height: area.height - u16::from(has_border),
        ..area
    };
    if inner.height == 0 {
        return;
    }
    let text = app.composer.text();
    let lines = composer_lines(text, inner.width);
    let (cursor_row, cursor_col) = cursor_cell(text, app.composer.cursor(), inner.width);
    // Keep the cursor's line in view.
    let first = (cursor_row + 1).saturating_sub(usize::from(inner.height));
    let shown: Vec<Line> = lines
        .iter()
        .enumerate()
        .skip(first)
        .take(usize::from(inner.height))
        .map(|(i, l)| {
            let lead = if i == 0 { prompt } else { "  " };
            Line::from(vec![Span::styled(lead, style), Span::raw(l.clone())])
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
    // While the terminal has the keys, the cursor is the terminal's.
    if app.modals.is_empty() && !app.terminal_focused() {
        let x = inner.x + PROMPT_WIDTH + cursor_col as u16;
        let y = inner.y + (cursor_row - first) as u16;
        if x < inner.x + inner.width && y < inner.y + inner.height {
            frame.set_cursor_position(Position::new(x, y));
        }
    }
}

/// The (row, column) cell of the cursor among the wrapped lines.
pub fn cursor_cell(text: &str, cursor: usize, width_cells: u16) -> (usize, usize) {
    let before = &text[..cursor.min(text.len())];
    let lines = composer_lines(before, width_cells);
    let row = lines.len().saturating_sub(1);
    let col = lines.last().map_or(0, |l| width(l));
    let avail = usize::from(width_cells.saturating_sub(PROMPT_WIDTH)).max(1);
    // At the very end of a full line the cursor goes to the next line.
    if col >= avail {
        (row + 1, 0)
    } else {
        (row, col)
    }
}
