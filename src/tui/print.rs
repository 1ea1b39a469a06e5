//! Lines drawn for a terminal outside the UI (`duet ask`): their styles
//! as SGR escapes, or plain text for a pipe.

use ratatui::backend::IntoCrossterm;
use ratatui::crossterm::style::StyledContent;
use ratatui::style::Style;
use ratatui::text::Line;
use std::fmt::Write;

/// `lines` as text, one per line: with escapes for their styles, or none
/// at all (and no trailing spaces).
pub fn to_text(lines: &[Line<'_>], escapes: bool) -> String {
    let mut out = String::new();
    for line in lines {
        let start = out.len();
        for span in &line.spans {
            let style = line.style.patch(span.style);
            if escapes && style != Style::default() {
                let _ = write!(
                    out,
                    "{}",
                    StyledContent::new(style.into_crossterm(), span.content.as_ref())
                );
            } else {
                out.push_str(&span.content);
            }
        }
        if !escapes {
            let kept = out[start..].trim_end().len();
            out.truncate(start + kept);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Span;

    #[test]
    fn styles_become_escapes_only_when_asked() {
        let lines = [
            Line::from(vec![
                Span::styled("bold", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(" and "),
                Span::styled("red", Style::new().fg(Color::Red)),
                Span::raw("   "),
            ]),
            Line::default(),
        ];
        assert_eq!(to_text(&lines, false), "bold and red\n\n");
        assert_eq!(
            to_text(&lines, true),
            "\x1b[1mbold\x1b[0m and \x1b[38;5;1mred\x1b[39m   \n\n"
        );
    }
}
