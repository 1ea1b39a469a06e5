//! The command line: its mode in the title and the prompt (always
//! visible: whom a line is for), the text, the cursor.

use crate::tui::app::App;
use crate::tui::composer::Mode;
use crate::tui::text::width;
use crate::tui::view::layout::{PROMPT_WIDTH, composer_lines};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
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
    let selection = app.composer.selection();
    // Keep the cursor's line in view.
    let first = (cursor_row + 1).saturating_sub(usize::from(inner.height));
    let shown: Vec<Line> = lines
        .iter()
        .zip(line_starts(text, &lines))
        .enumerate()
        .skip(first)
        .take(usize::from(inner.height))
        .map(|(i, (l, start))| {
            let lead = if i == 0 { prompt } else { "  " };
            let mut spans = vec![Span::styled(lead, style)];
            spans.extend(selected(l, start, selection, theme.selection()));
            Line::from(spans)
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

/// The byte offset in `text` where each of its wrapped `lines` starts
/// (they are its pieces in order, the line ends left out).
fn line_starts(text: &str, lines: &[String]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(lines.len());
    let mut pieces = lines.iter();
    let mut at = 0;
    for logical in text.split('\n') {
        // This line's pieces: until they add up to it (an empty line has
        // one, empty).
        let mut used = 0;
        loop {
            let Some(piece) = pieces.next() else {
                return starts;
            };
            starts.push(at + used);
            used += piece.len();
            if used >= logical.len() {
                break;
            }
        }
        at += logical.len() + 1;
    }
    starts
}

/// A wrapped line starting at byte `start`, the part in `selection`
/// (byte range of the text) in `style`.
fn selected(
    line: &str,
    start: usize,
    selection: Option<(usize, usize)>,
    style: Style,
) -> Vec<Span<'static>> {
    let Some((from, to)) = selection else {
        return vec![Span::raw(line.to_string())];
    };
    let end = start + line.len();
    let (a, b) = (from.clamp(start, end) - start, to.clamp(start, end) - start);
    match (line.get(..a), line.get(a..b), line.get(b..)) {
        (Some(before), Some(inside), Some(after)) if a < b => vec![
            Span::raw(before.to_string()),
            Span::styled(inside.to_string(), style),
            Span::raw(after.to_string()),
        ],
        _ => vec![Span::raw(line.to_string())],
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_know_where_they_start_and_show_the_selection() {
        let text = "abcdef\n\nxy";
        let lines = composer_lines(text, PROMPT_WIDTH + 4);
        assert_eq!(lines, ["abcd", "ef", "", "xy"]);
        assert_eq!(line_starts(text, &lines), [0, 4, 7, 8]);
        let style = Style::default().add_modifier(ratatui::style::Modifier::REVERSED);
        let spans = selected("ef", 4, Some((5, 9)), style);
        let parts: Vec<(&str, Style)> = spans.iter().map(|s| (&*s.content, s.style)).collect();
        assert_eq!(
            parts,
            [
                ("e", Style::default()),
                ("f", style),
                ("", Style::default())
            ]
        );
        assert_eq!(selected("xy", 8, Some((0, 3)), style).len(), 1);
    }
}
