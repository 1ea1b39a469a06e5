//! The screen as `screen` frames draw it (docs/protocol.md "The shared
//! terminal"): each row of the vt100 screen as spans of equal attributes,
//! the cursor and the input modes. Pure: reads the screen, never feeds it.

use crate::emulator::Emulator;
use crate::protocol::{ScreenCursor, ScreenModes, Span, SpanColor};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a screen frame shows, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Painted {
    pub(super) cols: u16,
    pub(super) rows: u16,
    pub(super) lines: Vec<Vec<Span>>,
    pub(super) cursor: ScreenCursor,
    pub(super) modes: ScreenModes,
}

/// Reads the whole screen; a screen vt100 cannot read is blank.
pub(super) fn paint(emulator: &Emulator) -> Painted {
    let screen = emulator.screen();
    let (rows, cols) = screen.size();
    let read = catch_unwind(AssertUnwindSafe(|| {
        let lines = (0..rows).map(|row| line(screen, row, cols)).collect();
        let (y, x) = screen.cursor_position();
        let cursor = ScreenCursor {
            // Past the last column (a wrap pending) it is drawn on the last.
            x: x.min(cols.saturating_sub(1)),
            y: y.min(rows.saturating_sub(1)),
            visible: !screen.hide_cursor(),
        };
        let modes = ScreenModes {
            alt_screen: screen.alternate_screen(),
            app_cursor: screen.application_cursor(),
            bracketed_paste: screen.bracketed_paste(),
        };
        (lines, cursor, modes)
    }));
    let (lines, cursor, modes) = read.unwrap_or_else(|_| {
        let blank = ScreenCursor {
            x: 0,
            y: 0,
            visible: true,
        };
        (
            vec![Vec::new(); usize::from(rows)],
            blank,
            ScreenModes::default(),
        )
    });
    Painted {
        cols,
        rows,
        lines,
        cursor,
        modes,
    }
}

/// One row as spans from column 0; trailing blanks drawn as the
/// background are left out.
fn line(screen: &vt100::Screen, row: u16, cols: u16) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            continue;
        };
        // The right half of a wide character: its left half covers it.
        if cell.is_wide_continuation() {
            continue;
        }
        let mut look = Span {
            t: String::new(),
            fg: color(cell.fgcolor()),
            bg: color(cell.bgcolor()),
            b: cell.bold(),
            d: cell.dim(),
            i: cell.italic(),
            u: cell.underline(),
            r: cell.inverse(),
        };
        let text = if cell.has_contents() {
            cell.contents()
        } else {
            " "
        };
        match spans.last_mut() {
            Some(last) if last.same_look(&look) => last.t.push_str(text),
            _ => {
                look.t.push_str(text);
                spans.push(look);
            }
        }
    }
    while let Some(last) = spans.last_mut() {
        if !last.is_plain_background() {
            break;
        }
        let kept = last.t.trim_end_matches(' ').len();
        last.t.truncate(kept);
        if !last.t.is_empty() {
            break;
        }
        spans.pop();
    }
    spans
}

fn color(color: vt100::Color) -> Option<SpanColor> {
    match color {
        vt100::Color::Default => None,
        vt100::Color::Idx(i) => Some(SpanColor::Index(i)),
        vt100::Color::Rgb(r, g, b) => Some(SpanColor::rgb(r, g, b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TermSize;

    fn painted(cols: u16, rows: u16, bytes: &[u8]) -> Painted {
        let mut emulator = Emulator::new(TermSize { cols, rows });
        emulator.process(bytes);
        paint(&emulator)
    }

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.t.as_str()).collect()
    }

    #[test]
    fn equal_attributes_make_one_span_and_trailing_blanks_are_left_out() {
        let p = painted(30, 5, b"plain \x1b[1;31mbold red\x1b[0m tail   ");
        let row = &p.lines[0];
        assert_eq!(text(row), "plain bold red tail");
        assert_eq!(row.len(), 3, "{row:?}");
        assert_eq!(
            row[0],
            Span {
                t: "plain ".into(),
                ..Span::default()
            }
        );
        assert_eq!(row[1].t, "bold red");
        assert_eq!(row[1].fg, Some(SpanColor::Index(1)));
        assert!(row[1].b && !row[1].d && !row[1].i && !row[1].u && !row[1].r);
        assert_eq!(row[2].t, " tail");
        assert!(p.lines[1].is_empty(), "a blank line has no spans");
        assert_eq!((p.cursor.x, p.cursor.y, p.cursor.visible), (22, 0, true));
    }

    #[test]
    fn palette_and_true_colours_and_every_attribute() {
        let p = painted(
            40,
            5,
            b"\x1b[38;5;208;48;5;17ma\x1b[0m\x1b[38;2;1;2;255mb\x1b[0m\x1b[2;3;4;7mc\x1b[0m\x1b[44m  \x1b[0m",
        );
        let row = &p.lines[0];
        assert_eq!(row[0].fg, Some(SpanColor::Index(208)));
        assert_eq!(row[0].bg, Some(SpanColor::Index(17)));
        assert_eq!(row[1].fg, Some(SpanColor::Rgb("#0102ff".into())));
        assert!(row[2].d && row[2].i && row[2].u && row[2].r && !row[2].b);
        // Blanks on a colour are kept: they show.
        assert_eq!(row[3].t, "  ");
        assert_eq!(row[3].bg, Some(SpanColor::Index(4)));
        let json = serde_json::to_value(&row[..3]).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"t":"a","fg":208,"bg":17},
                {"t":"b","fg":"#0102ff"},
                {"t":"c","d":true,"i":true,"u":true,"r":true}
            ])
        );
    }

    #[test]
    fn a_wide_character_is_one_character_covering_two_columns() {
        let p = painted(20, 5, "a界b".as_bytes());
        assert_eq!(text(&p.lines[0]), "a界b");
        // a (1) + 界 (2) + b (1): the cursor is at column 4.
        assert_eq!(p.cursor.x, 4);
    }

    #[test]
    fn cursor_visibility_position_and_modes() {
        let p = painted(20, 5, b"\x1b[?25l\x1b[3;7H\x1b[?1h\x1b[?2004h");
        assert_eq!(
            p.cursor,
            ScreenCursor {
                x: 6,
                y: 2,
                visible: false
            }
        );
        assert!(p.modes.app_cursor && p.modes.bracketed_paste && !p.modes.alt_screen);
        let p = painted(20, 5, b"main\x1b[?1049halt");
        assert!(p.modes.alt_screen);
        assert_eq!(text(&p.lines[0]), "alt");
    }

    #[test]
    fn hostile_bytes_are_plain_text() {
        let p = painted(
            60,
            5,
            b"<script>alert(1)</script>\x1b]0;<img src=x>\x07\x1b]8;;javascript:x\x1b\\ln\xff\xfe\x00\x1b[999;999H",
        );
        let row = text(&p.lines[0]);
        assert!(row.starts_with("<script>alert(1)</script>ln"), "{row:?}");
        assert!(!row.contains("img") && !row.contains("javascript"));
        assert!(!row.chars().any(|c| c.is_control()), "{row:?}");
        assert_eq!((p.cursor.x, p.cursor.y), (59, 4));
    }
}
