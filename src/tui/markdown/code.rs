//! A code block drawn: `╭─ lang`, its lines behind a `│` gutter with
//! syntax colour, a long line going on behind `↪`, `╰─`.

use crate::tui::highlight;
use crate::tui::text::{CONTINUED, Spans, width, wrap_marked};
use crate::tui::theme::Theme;
use ratatui::text::Span;

/// What code lines stand behind.
const GUTTER: &str = "│ ";
/// Tabs in code take this many cells.
const TAB: &str = "    ";

/// A code block of `cells` cells: `╭─ lang`, its lines behind `│` with
/// syntax colour (a long line continues on the next behind `↪`), `╰─`.
pub fn code_block(lang: &str, code: &str, cells: usize, theme: Theme) -> Vec<Spans> {
    let title = if lang.is_empty() {
        "╭─".to_string()
    } else {
        crate::tui::text::truncate(&format!("╭─ {lang}"), cells.max(2))
    };
    let mut out = vec![vec![Span::styled(title, theme.gutter())]];
    let code = code.replace('\t', TAB);
    for line in highlight::highlight(lang, &code).iter() {
        let spans: Spans = line
            .iter()
            .map(|(token, text)| Span::styled(text.clone(), theme.syntax(*token)))
            .collect();
        out.extend(behind_gutter(GUTTER, &spans, cells, theme));
    }
    out.push(vec![Span::styled("╰─", theme.gutter())]);
    out
}

/// One line of code or output behind `mark` (`│ `, `╭ $ `), cut to
/// `cells`: what does not fit goes on behind `│ ↪ `.
pub fn behind_gutter(mark: &'static str, spans: &[Span], cells: usize, theme: Theme) -> Vec<Spans> {
    let avail = cells.saturating_sub(width(mark)).max(1);
    let rest = cells
        .saturating_sub(width(GUTTER) + width(CONTINUED))
        .max(1);
    wrap_marked(spans, avail, rest)
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut row = if i == 0 {
                vec![Span::styled(mark, theme.gutter())]
            } else {
                vec![
                    Span::styled(GUTTER, theme.gutter()),
                    Span::styled(CONTINUED, theme.dim()),
                ]
            };
            row.extend(piece);
            row
        })
        .collect()
}

/// Code without the line end its block closes with.
pub(super) fn strip_newline(mut code: String) -> String {
    if code.ends_with('\n') {
        code.pop();
    }
    code
}
