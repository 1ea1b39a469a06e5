//! Measuring and wrapping text by display width (graphemes and
//! `unicode-width`, never `len()`), so CJK and emoji line up; plain
//! strings and styled spans alike.

use ratatui::style::Style;
use ratatui::text::Span;
use std::ops::Range;

pub use crate::text::{grapheme_width, truncate, width};
use unicode_segmentation::UnicodeSegmentation;

/// The mark that starts a line continued from the one above (code and
/// command output, which are cut where they must be, not reflowed).
pub const CONTINUED: &str = "↪ ";

/// Word-wraps one line (no `\n` inside) to `max` cells with `textwrap`:
/// breaks at spaces where it can, inside words where it must (never at
/// hyphens: `drwxr-xr-x` stays whole). Spaces at a break are dropped,
/// nothing else; always answers at least one (possibly empty) line.
pub fn wrap(line: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    if width(line) <= max {
        return vec![line.to_string()];
    }
    // Leading spaces are the first line's indent, not a word of their own
    // (else an indented line starts with an empty one).
    let words = line.trim_start_matches(' ');
    let indent = &line[..line.len() - words.len()];
    let (indent, words) = if width(indent) < max {
        (indent, words)
    } else {
        ("", line)
    };
    let options = textwrap::Options::new(max)
        .initial_indent(indent)
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    let lines: Vec<String> = textwrap::wrap(words, options)
        .into_iter()
        .map(|l| l.into_owned())
        .collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

/// Hard-wraps by cells only (no word breaking): what the composer uses, so
/// that the cursor maps to a cell simply.
pub fn hard_wrap(line: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = vec![String::new()];
    let mut used = 0;
    for g in line.graphemes(true) {
        let w = grapheme_width(g);
        if used + w > max && used > 0 {
            lines.push(String::new());
            used = 0;
        }
        if let Some(last) = lines.last_mut() {
            last.push_str(g);
        }
        used += w;
    }
    lines
}

/// Styled text of one line.
pub type Spans = Vec<Span<'static>>;

/// The width of styled text.
pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// Word-wraps styled prose: the first line gets `first` cells, the others
/// `rest`. Breaks at spaces (dropping them), inside a word only when it is
/// longer than a line; a leading indent stays on the first line.
pub fn wrap_words(spans: &[Span<'_>], first: usize, rest: usize) -> Vec<Spans> {
    wrap_styled(spans, first, rest, false)
}

/// Cuts styled code or output into lines of `first`, then `rest` cells,
/// keeping every character: after the last space of a line when a third
/// of the line is before it (a word stays whole), else at the last cell. The
/// caller marks the lines after the first (`CONTINUED`).
pub fn wrap_marked(spans: &[Span<'_>], first: usize, rest: usize) -> Vec<Spans> {
    wrap_styled(spans, first, rest, true)
}

/// One grapheme of styled text.
struct Piece<'a> {
    text: &'a str,
    style: Style,
    /// Which span it came from (pieces of one span merge again).
    span: usize,
    width: usize,
    space: bool,
}

fn wrap_styled(spans: &[Span<'_>], first: usize, rest: usize, keep: bool) -> Vec<Spans> {
    let pieces: Vec<Piece> = spans
        .iter()
        .enumerate()
        .flat_map(|(span, s)| {
            s.content.graphemes(true).map(move |g| Piece {
                text: g,
                style: s.style,
                span,
                width: grapheme_width(g),
                space: g == " ",
            })
        })
        .collect();
    break_lines(&pieces, first, rest, keep)
        .into_iter()
        .map(|range| join(&pieces[range]))
        .collect()
}

/// Where the lines of `pieces` begin and end (see `wrap_words` and
/// `wrap_marked`); always at least one line.
fn break_lines(pieces: &[Piece], first: usize, rest: usize, keep: bool) -> Vec<Range<usize>> {
    let mut lines: Vec<Range<usize>> = Vec::new();
    let (mut start, mut used, mut i) = (0, 0, 0);
    // The last space a line may break at, and the cells before it.
    let mut space: Option<(usize, usize)> = None;
    let mut word_seen = false;
    let skip_spaces = |mut at: usize| {
        while at < pieces.len() && pieces[at].space {
            at += 1;
        }
        at
    };
    while i < pieces.len() {
        let piece = &pieces[i];
        let limit = if lines.is_empty() { first } else { rest }.max(1);
        if used > 0 && used + piece.width > limit {
            if !keep && piece.space {
                lines.push(start..i);
                i = skip_spaces(i);
                (start, used, space, word_seen) = (i, 0, None, false);
                continue;
            }
            match space {
                Some((at, before)) if !keep || before * 3 >= limit => {
                    lines.push(start..if keep { at + 1 } else { at });
                    start = if keep { at + 1 } else { skip_spaces(at) };
                    used = pieces[start..i].iter().map(|p| p.width).sum();
                }
                _ => {
                    lines.push(start..i);
                    (start, used) = (i, 0);
                }
            }
            space = None;
            word_seen = used > 0;
            continue;
        }
        if piece.space && (keep || word_seen) {
            space = Some((i, used));
        }
        word_seen |= !piece.space;
        used += piece.width;
        i += 1;
    }
    lines.push(start..pieces.len());
    if !keep {
        // Spaces before a break are not part of the line.
        for line in &mut lines {
            while line.end > line.start && pieces[line.end - 1].space {
                line.end -= 1;
            }
        }
    }
    lines
}

/// Pieces back into spans, one per run of the same span.
fn join(pieces: &[Piece]) -> Spans {
    let mut out: Spans = Vec::new();
    let mut last = None;
    for piece in pieces {
        match out.last_mut() {
            Some(span) if last == Some(piece.span) => span.content.to_mut().push_str(piece.text),
            _ => out.push(Span::styled(piece.text.to_string(), piece.style)),
        }
        last = Some(piece.span);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_count_twice() {
        assert_eq!(width("漢字"), 4);
        assert_eq!(truncate("漢字漢字", 5), "漢字…");
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_loses_no_word() {
        assert_eq!(wrap("hello big world", 9), vec!["hello big", "world"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("漢字漢字漢", 4), vec!["漢字", "漢字", "漢"]);
        assert_eq!(wrap("drwxr-xr-x 2 root", 12), vec!["drwxr-xr-x 2", "root"]);
        assert_eq!(wrap("  indented code", 10), vec!["  indented", "code"]);
        assert_eq!(
            wrap("    x", 3),
            vec!["", "x"],
            "an indent wider than the line"
        );
        assert_eq!(wrap("", 4), vec![""]);
        let text = "the quick brown fox jumps over the lazy dog 漢字 👍 ok";
        for w in 1..20 {
            let lines = wrap(text, w);
            assert_eq!(
                lines.concat().replace(' ', ""),
                text.replace(' ', ""),
                "{w}: {lines:?}"
            );
            assert!(lines.iter().all(|l| width(l) <= w.max(2)), "{w}: {lines:?}");
        }
    }

    #[test]
    fn hard_wrap_fills_each_line() {
        assert_eq!(hard_wrap("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(hard_wrap("", 4), vec![""]);
        assert_eq!(hard_wrap("a漢字", 2), vec!["a", "漢", "字"]);
    }

    fn plain(lines: Vec<Spans>) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn styled_prose_wraps_at_spaces_and_keeps_its_styles() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = [
            Span::raw("the "),
            Span::styled("quick brown", bold),
            Span::raw(" fox"),
        ];
        let lines = wrap_words(&spans, 9, 9);
        assert_eq!(plain(lines.clone()), ["the quick", "brown fox"]);
        assert_eq!(lines[0][1].style, bold);
        assert_eq!(lines[1][0].style, bold);
        assert_eq!(
            plain(wrap_words(&[Span::raw("  indented words")], 10, 10)),
            ["  indented", "words"]
        );
        assert_eq!(
            plain(wrap_words(&[Span::raw("abcdefghij")], 4, 4)),
            ["abcd", "efgh", "ij"]
        );
        assert_eq!(
            plain(wrap_words(&[Span::raw("• one two")], 6, 4)),
            ["• one", "two"]
        );
        assert_eq!(plain(wrap_words(&[], 4, 4)), [""]);
    }

    #[test]
    fn marked_wrapping_keeps_every_character() {
        let line = "-rw-r--r-- 1 root root   12 a-file-with-a-long-name.txt";
        for w in 3..60 {
            let lines = plain(wrap_marked(&[Span::raw(line)], w, w.saturating_sub(2)));
            assert_eq!(lines.concat(), line, "{w}: {lines:?}");
            assert!(lines[0].chars().count() <= w.max(1), "{w}: {lines:?}");
        }
        // A word stays whole when the line can break before it.
        assert_eq!(
            plain(wrap_marked(
                &[Span::raw("let x = compute_something();")],
                16,
                14
            )),
            ["let x = ", "compute_someth", "ing();"]
        );
        assert_eq!(
            plain(wrap_marked(&[Span::raw("ls -la /tmp")], 8, 6)),
            ["ls -la ", "/tmp"]
        );
        assert_eq!(
            plain(wrap_marked(&[Span::raw("漢字漢字")], 3, 3)),
            ["漢", "字", "漢", "字"]
        );
    }
}
