//! Measuring and wrapping text by display width (graphemes and
//! `unicode-width`, never `len()`), so CJK and emoji line up.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Display width of `s` in terminal cells.
pub fn width(s: &str) -> usize {
    s.graphemes(true).map(grapheme_width).sum()
}

/// Width of one grapheme: at least 1 for printable ones, so nothing is
/// drawn on top of something else.
pub fn grapheme_width(g: &str) -> usize {
    if g.chars().all(char::is_control) {
        0
    } else {
        UnicodeWidthStr::width(g).max(1)
    }
}

/// `s` cut to at most `max` cells, with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = grapheme_width(g);
        if used + w > max - 1 {
            break;
        }
        out.push_str(g);
        used += w;
    }
    out.push('…');
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_count_twice() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("漢字"), 4);
        assert_eq!(width("👍🏽"), 2);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(truncate("漢字漢字", 5), "漢字…");
        assert_eq!(truncate("abc", 3), "abc");
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
}
