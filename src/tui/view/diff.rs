//! The `/diff` view over the panes: the diff's lines from its scroll on,
//! each on one row (a long one cut, with `…`), what it compares in the
//! title, where it is and the keys at the bottom.

use crate::tui::app::App;
use crate::tui::text::width;
use crate::tui::view::overlay::scroll_mark;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_segmentation::UnicodeSegmentation;

/// Where the view is drawn in `area`: all of it but a margin.
pub fn rect(area: Rect) -> Rect {
    let margin_x = if area.width >= 60 { 2 } else { 0 };
    let margin_y = if area.height >= 20 { 1 } else { 0 };
    Rect {
        x: area.x + margin_x,
        y: area.y + margin_y,
        width: area.width.saturating_sub(2 * margin_x),
        height: area.height.saturating_sub(2 * margin_y),
    }
}

pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let Some(view) = &app.diffs.view else {
        return;
    };
    let theme = app.theme;
    let rect = rect(area);
    if rect.width < 4 || rect.height < 3 {
        return;
    }
    let cells = usize::from(rect.width - 2);
    let shown = usize::from(rect.height - 2);
    let lines: Vec<Line> = if view.lines.is_empty() {
        vec![Line::styled(
            cut_text(
                &format!("Nothing changed since checkpoint {}.", view.from),
                cells,
            ),
            theme.dim(),
        )]
    } else {
        let scroll = view.scroll.min(view.lines.len().saturating_sub(shown));
        view.lines
            .iter()
            .skip(scroll)
            .take(shown)
            .map(|line| cut(line, cells, theme.dim()))
            .collect()
    };
    let title = cut_text(
        &format!(" since {} · {} ", view.from, view.stat.said()),
        cells,
    );
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.focused())
        .title(title);
    let total = u16::try_from(view.lines.len()).unwrap_or(u16::MAX);
    let scroll = u16::try_from(view.scroll).unwrap_or(u16::MAX);
    let mark = scroll_mark(scroll, rect.height - 2, total);
    let keys = " Esc close ";
    if cells >= width(keys) + mark.as_ref().map_or(0, |m| m.width()) + 2 {
        block = block.title_bottom(Line::styled(keys, theme.dim()));
    }
    if let Some(mark) = mark {
        block = block.title_bottom(mark.right_aligned());
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// `line` cut to `cells`, its last cell a `…` (in `mark`'s style) when
/// something was cut.
fn cut(line: &Line<'static>, cells: usize, mark: ratatui::style::Style) -> Line<'static> {
    if line.width() <= cells {
        return line.clone();
    }
    let room = cells.saturating_sub(1);
    let mut used = 0;
    let mut spans = Vec::new();
    'spans: for span in &line.spans {
        let mut piece = String::new();
        for g in span.content.graphemes(true) {
            let w = width(g);
            if used + w > room {
                if !piece.is_empty() {
                    spans.push(Span::styled(piece, span.style));
                }
                break 'spans;
            }
            used += w;
            piece.push_str(g);
        }
        spans.push(Span::styled(piece, span.style));
    }
    if cells > 0 {
        spans.push(Span::styled("…", mark));
    }
    Line::from(spans).style(line.style)
}

fn cut_text(text: &str, cells: usize) -> String {
    crate::tui::text::truncate(text, cells)
}
