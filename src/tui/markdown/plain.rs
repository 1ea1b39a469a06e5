//! People's messages are not documents: their lines as typed (wrapped at
//! spaces), inline code set apart, and fenced code blocks drawn as code.

use super::code::code_block;
use crate::tui::text::{Spans, wrap_words};
use crate::tui::theme::Theme;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// A person's message: lines as typed (wrapped at spaces), inline code
/// set apart, and fenced code blocks drawn as code.
pub fn plain(text: &str, width: usize, style: Style, theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for piece in split_fences(text) {
        match piece {
            Piece::Text(line) => {
                let spans = inline_code(line, style, theme);
                out.extend(wrap_words(&spans, width, width).into_iter().map(Line::from));
            }
            Piece::Code { lang, code } => {
                out.extend(
                    code_block(lang, &code, width, theme)
                        .into_iter()
                        .map(Line::from),
                );
            }
        }
    }
    out
}

/// The code of each fenced block of a person's message, in order.
pub fn plain_code_blocks(text: &str) -> Vec<String> {
    split_fences(text)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Code { code, .. } => Some(code),
            Piece::Text(_) => None,
        })
        .collect()
}

/// A line of a person's message, or one of its fenced blocks.
enum Piece<'a> {
    Text(&'a str),
    Code { lang: &'a str, code: String },
}

/// A message's lines, its ``` fences (an unclosed one runs to the end)
/// made blocks.
fn split_fences(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut open: Option<(&str, Vec<&str>)> = None;
    for line in text.split('\n') {
        let fence = line.trim_start().strip_prefix("```");
        match (open.take(), fence) {
            (None, Some(lang)) => open = Some((lang.trim(), Vec::new())),
            (None, None) => pieces.push(Piece::Text(line)),
            (Some((lang, lines)), Some(_)) => pieces.push(Piece::Code {
                lang,
                code: lines.join("\n"),
            }),
            (Some((lang, mut lines)), None) => {
                lines.push(line);
                open = Some((lang, lines));
            }
        }
    }
    if let Some((lang, lines)) = open {
        pieces.push(Piece::Code {
            lang,
            code: lines.join("\n"),
        });
    }
    pieces
}

/// `text` with its `` `code` `` spans in the code style (without colour,
/// the backticks stay to show them).
fn inline_code(text: &str, style: Style, theme: Theme) -> Spans {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let code = &rest[open + 1..open + 1 + len];
        if !rest[..open].is_empty() {
            spans.push(Span::styled(rest[..open].to_string(), style));
        }
        spans.push(code_span(code, theme));
        rest = &rest[open + 2 + len..];
    }
    if !rest.is_empty() || spans.is_empty() {
        spans.push(Span::styled(rest.to_string(), style));
    }
    spans
}

/// Inline code: its colour, or its backticks without colour.
pub(super) fn code_span(code: &str, theme: Theme) -> Span<'static> {
    if theme.color {
        Span::styled(code.to_string(), theme.code())
    } else {
        Span::raw(format!("`{code}`"))
    }
}
