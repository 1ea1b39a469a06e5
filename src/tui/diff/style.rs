//! A diff's lines as the `/diff` view draws them: file headers bold,
//! other headers dim, hunk headers in colour, `+` and `-` in green and
//! red before their code, and the code syntax-coloured by the file's
//! extension (the chat's highlighter, `tui::highlight`). Each hunk's new
//! side (context and added lines) and old side (context and removed
//! lines) are coloured as two blocks of code, so a line reads in its
//! context (a string or comment that spans lines stays one).

use crate::tui::diff::parse::{DiffLine, Kind, Parsed, language};
use crate::tui::highlight::{self, Token};
use crate::tui::theme::Theme;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Tabs in code take this many cells.
const TAB: &str = "    ";

/// The lines of `parsed`, styled, a blank one between files; a binary
/// file's patch data is one line that says it is not shown.
pub fn styled(parsed: &Parsed, theme: Theme) -> Vec<Line<'static>> {
    let colours = code_colours(parsed);
    let mut out = Vec::with_capacity(parsed.lines.len());
    let mut in_binary = false;
    for (i, line) in parsed.lines.iter().enumerate() {
        if line.kind == Kind::Binary {
            if !in_binary {
                out.push(Line::styled("  (binary content, not shown)", theme.dim()));
            }
            in_binary = true;
            continue;
        }
        in_binary = false;
        let text = printable(&line.text);
        // A blank row between files.
        if line.kind == Kind::File && !out.is_empty() {
            out.push(Line::default());
        }
        out.push(match line.kind {
            Kind::File => Line::styled(text, Style::default().add_modifier(Modifier::BOLD)),
            Kind::Meta | Kind::NoNewline | Kind::Binary => Line::styled(text, theme.dim()),
            Kind::Hunk => Line::styled(text, theme.focused()),
            Kind::Added | Kind::Removed | Kind::Context => {
                code_line(line, colours.get(i).and_then(Option::as_ref), theme)
            }
        });
    }
    out
}

/// `+`, `-` or a space, then the code in its colours (tinted on an added
/// or removed line).
fn code_line(line: &DiffLine, runs: Option<&Vec<(Token, String)>>, theme: Theme) -> Line<'static> {
    let (sign, sign_style, tint) = match line.kind {
        Kind::Added => ("+", theme.ok(), theme.diff_tint(true)),
        Kind::Removed => ("-", theme.error(), theme.diff_tint(false)),
        _ => (" ", Style::default(), Style::default()),
    };
    let mut spans = vec![Span::styled(sign, sign_style)];
    match runs {
        Some(runs) => spans.extend(
            runs.iter()
                .map(|(token, text)| Span::styled(text.clone(), theme.syntax(*token).patch(tint))),
        ),
        None => spans.push(Span::styled(printable(code_of(&line.text)), tint)),
    }
    Line::from(spans)
}

/// A code line without its sign.
fn code_of(text: &str) -> &str {
    let mut chars = text.chars();
    chars.next();
    chars.as_str()
}

/// Each line's coloured runs (code lines of a file whose language the
/// highlighter knows), by index into `parsed.lines`.
fn code_colours(parsed: &Parsed) -> Vec<Option<Vec<(Token, String)>>> {
    let mut out = vec![None; parsed.lines.len()];
    let mut hunk: Vec<usize> = Vec::new();
    for (i, line) in parsed.lines.iter().enumerate() {
        match line.kind {
            Kind::Added | Kind::Removed | Kind::Context => hunk.push(i),
            Kind::NoNewline => {}
            _ => colour_hunk(parsed, &std::mem::take(&mut hunk), &mut out),
        }
    }
    colour_hunk(parsed, &hunk, &mut out);
    out
}

/// Colours one hunk's lines: its new side, then its old side.
fn colour_hunk(parsed: &Parsed, hunk: &[usize], out: &mut [Option<Vec<(Token, String)>>]) {
    let Some(file) = hunk
        .first()
        .and_then(|&i| parsed.lines.get(i))
        .and_then(|l| l.file)
        .and_then(|f| parsed.files.get(f))
    else {
        return;
    };
    let lang = language(&file.path);
    for side in [Kind::Added, Kind::Removed] {
        let lines: Vec<usize> = hunk
            .iter()
            .copied()
            .filter(|&i| {
                parsed
                    .lines
                    .get(i)
                    .is_some_and(|l| l.kind == side || l.kind == Kind::Context)
            })
            .collect();
        let code: Vec<String> = lines
            .iter()
            .filter_map(|&i| parsed.lines.get(i))
            .map(|l| printable(code_of(&l.text)))
            .collect();
        let coloured = highlight::highlight(lang, &code.join("\n"));
        for (n, &i) in lines.iter().enumerate() {
            let Some(line) = parsed.lines.get(i) else {
                continue;
            };
            // A context line takes its colours from the new side.
            if side == Kind::Removed && line.kind == Kind::Context {
                continue;
            }
            if let (Some(runs), Some(slot)) = (coloured.get(n), out.get_mut(i)) {
                *slot = Some(runs.clone());
            }
        }
    }
}

/// Text a terminal shows as it is: tabs as spaces, other control
/// characters (an escape in a file's content) as `�`.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str(TAB),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::diff::parse::parse;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn code_keeps_its_text_and_gets_colour_by_extension() {
        let diff = "diff --git a/m.rs b/m.rs\n--- a/m.rs\n+++ b/m.rs\n@@ -1,2 +1,2 @@\n fn main() {\n-    let x = 1;\n+    let x = \"two\";\n\\ No newline at end of file\n";
        let lines = styled(&parse(diff), Theme::DARK);
        let shown: Vec<String> = lines.iter().map(text).collect();
        let expected: Vec<&str> = diff.lines().collect();
        assert_eq!(shown, expected);
        let added = &lines[6];
        assert_eq!(added.spans[0].style, Theme::DARK.ok());
        let string = added
            .spans
            .iter()
            .find(|s| s.content.contains("two"))
            .unwrap();
        assert_eq!(
            string.style,
            Theme::DARK
                .syntax(Token::String)
                .patch(Theme::DARK.diff_tint(true))
        );
        let keyword = lines[4].spans.iter().find(|s| s.content == "fn").unwrap();
        assert_eq!(keyword.style, Theme::DARK.syntax(Token::Keyword));
    }

    #[test]
    fn binary_data_and_control_characters_are_not_drawn() {
        let diff = "diff --git a/x.bin b/x.bin\nGIT binary patch\nliteral 2\nJcmZ?d00001\n\ndiff --git a/t b/t\n@@ -0,0 +1 @@\n+\u{1b}[2Jtab\there\n";
        let shown: Vec<String> = styled(&parse(diff), Theme::PLAIN)
            .iter()
            .map(text)
            .collect();
        assert_eq!(
            shown,
            [
                "diff --git a/x.bin b/x.bin",
                "GIT binary patch",
                "  (binary content, not shown)",
                "",
                "diff --git a/t b/t",
                "@@ -0,0 +1 @@",
                "+\u{fffd}[2Jtab    here",
            ]
        );
    }
}
