//! A table drawn in the room it has: bordered with aligned columns, the
//! columns that do not fit wrapped in their cells; with no room for that,
//! one record (`Header: value` lines) per row.

use crate::tui::text::{Spans, spans_width, width, wrap_words};
use crate::tui::theme::Theme;
use pulldown_cmark::Alignment;
use ratatui::style::Modifier;
use ratatui::text::Span;

/// A table's column is at least this wide, and wide enough for its
/// longest word up to `LONG_WORD` (a longer word is cut); a table that
/// cannot give every column that much becomes records.
const MIN_COLUMN: usize = 5;
const LONG_WORD: usize = 16;

/// A table being read.
pub(super) struct Table {
    pub(super) aligns: Vec<Alignment>,
    /// The header row first.
    pub(super) rows: Vec<Vec<Spans>>,
}

/// A table in `avail` cells: bordered with aligned columns, the columns
/// that do not fit wrapped in their cells; with no room for that, one
/// record (`Header: value` lines) per row.
pub(super) fn table_lines(table: &Table, avail: usize, theme: Theme) -> Vec<Spans> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let cells = |c: usize| table.rows.iter().filter_map(move |row| row.get(c));
    let natural: Vec<usize> = (0..columns)
        .map(|c| {
            cells(c)
                .map(|cell| spans_width(cell))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let words: Vec<usize> = (0..columns)
        .map(|c| cells(c).map(|cell| longest_word(cell)).max().unwrap_or(0))
        .collect();
    // `│ ` before each column, ` ` after, and the last `│`.
    let borders = 3 * columns + 1;
    match fit(&natural, &words, avail.saturating_sub(borders)) {
        Some(widths) => bordered(table, &widths, theme),
        None => records(table, avail, theme),
    }
}

/// The widest word of a cell.
fn longest_word(cell: &[Span]) -> usize {
    let text: String = cell.iter().map(|s| s.content.as_ref()).collect();
    text.split_whitespace().map(width).max().unwrap_or(0)
}

/// Column widths within `room`: the natural ones when they fit; else each
/// column holds its longest word (up to `LONG_WORD`, at least
/// `MIN_COLUMN`) and what is left goes, a cell at a time, to the narrowest
/// column still short of its natural width; `None` when not even the words fit.
fn fit(natural: &[usize], words: &[usize], room: usize) -> Option<Vec<usize>> {
    if natural.iter().sum::<usize>() <= room {
        return Some(natural.to_vec());
    }
    let mut widths: Vec<usize> = natural
        .iter()
        .zip(words)
        .map(|(&n, &w)| n.min(w.clamp(MIN_COLUMN, LONG_WORD)))
        .collect();
    let left = room.checked_sub(widths.iter().sum())?;
    for _ in 0..left {
        // The narrowest column still short of its natural width grows.
        let short = (0..widths.len())
            .filter(|&c| widths[c] < natural[c])
            .min_by_key(|&c| widths[c]);
        match short {
            Some(c) => widths[c] += 1,
            None => break,
        }
    }
    Some(widths)
}

fn bordered(table: &Table, widths: &[usize], theme: Theme) -> Vec<Spans> {
    let border = theme.gutter();
    let rule = |left: &str, mid: &str, right: &str| {
        let inner: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        vec![Span::styled(
            format!("{left}{}{right}", inner.join(mid)),
            border,
        )]
    };
    let wrapped: Vec<Vec<Vec<Spans>>> = table
        .rows
        .iter()
        .map(|row| {
            widths
                .iter()
                .enumerate()
                .map(|(c, &w)| {
                    let cell = row.get(c).cloned().unwrap_or_default();
                    wrap_words(&cell, w, w)
                })
                .collect()
        })
        .collect();
    let tall = wrapped
        .iter()
        .skip(1)
        .any(|row| row.iter().any(|cell| cell.len() > 1));
    let mut out = vec![rule("┌", "┬", "┐")];
    for (r, row) in wrapped.iter().enumerate() {
        // Under the header; between rows too when some row wraps.
        if r == 1 || (r > 1 && tall) {
            out.push(rule("├", "┼", "┤"));
        }
        let height = row.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let mut line = vec![Span::styled("│", border)];
            for (c, cell) in row.iter().enumerate() {
                let content = cell.get(i).cloned().unwrap_or_default();
                let pad = widths[c].saturating_sub(spans_width(&content));
                let (before, after) = match table.aligns.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                line.push(Span::raw(" ".repeat(before + 1)));
                let header = r == 0;
                line.extend(content.into_iter().map(|s| {
                    if header {
                        let style = s.style.add_modifier(Modifier::BOLD);
                        s.style(style)
                    } else {
                        s
                    }
                }));
                line.push(Span::raw(" ".repeat(after + 1)));
                line.push(Span::styled("│", border));
            }
            out.push(line);
        }
    }
    out.push(rule("└", "┴", "┘"));
    out
}

/// Each row as `Header: value` lines, a blank line between rows.
fn records(table: &Table, avail: usize, theme: Theme) -> Vec<Spans> {
    let header = table.rows.first().cloned().unwrap_or_default();
    let mut out: Vec<Spans> = Vec::new();
    for (r, row) in table.rows.iter().enumerate().skip(1) {
        if r > 1 {
            out.push(Vec::new());
        }
        for (c, cell) in row.iter().enumerate() {
            let name: String = header
                .get(c)
                .map(|h| h.iter().map(|s| s.content.as_ref()).collect())
                .unwrap_or_default();
            let mut spans = vec![Span::styled(
                format!("{name}: "),
                theme.dim().add_modifier(Modifier::BOLD),
            )];
            spans.extend(cell.iter().cloned());
            for (i, piece) in wrap_words(&spans, avail, avail.saturating_sub(2).max(1))
                .into_iter()
                .enumerate()
            {
                let mut line = if i > 0 {
                    vec![Span::raw("  ")]
                } else {
                    Vec::new()
                };
                line.extend(piece);
                out.push(line);
            }
        }
    }
    if table.rows.len() == 1 {
        // Only a header: its names in a line.
        let mut line = Vec::new();
        for (i, cell) in header.into_iter().enumerate() {
            if i > 0 {
                line.push(Span::raw("  "));
            }
            line.extend(cell);
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::render;
    use super::super::tests::{COLOR, text};

    #[test]
    fn tables_fit_or_become_records() {
        let md = "| name | n |\n|:--|--:|\n| ada | 1 |\n| bob | 22 |\n";
        let lines = render(md, 40, COLOR);
        assert_eq!(
            text(&lines),
            [
                "┌──────┬────┐",
                "│ name │  n │",
                "├──────┼────┤",
                "│ ada  │  1 │",
                "│ bob  │ 22 │",
                "└──────┴────┘",
            ]
        );
        let lines = render(md, 10, COLOR);
        assert_eq!(
            text(&lines),
            ["name: ada", "n: 1", "", "name: bob", "n: 22"]
        );
    }

    #[test]
    fn column_widths_share_what_is_left() {
        assert_eq!(fit(&[3, 4], &[3, 4], 10), Some(vec![3, 4]));
        assert_eq!(fit(&[3, 40, 30], &[3, 8, 6], 33), Some(vec![3, 15, 15]));
        assert_eq!(fit(&[3, 40, 12], &[3, 8, 12], 30), Some(vec![3, 15, 12]));
        assert_eq!(fit(&[30, 40], &[12, 10], 21), None, "the words do not fit");
    }
}
