//! Plain text for people, the same in the terminal client and in the
//! command line's output: display widths (graphemes and `unicode-width`,
//! never `len()`, so CJK and emoji line up), sizes, one-line commands,
//! what a record says, what a turn cost, and command output made fit for
//! a pane.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

mod record;
pub mod termtext;
mod usage;
pub use record::{bytes, record_text};
pub use usage::{tokens, usage_line};

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

/// A size for people: `512 B`, `2.1 KB`, `3.0 MB` (units of 1024).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// A count for people, its thousands grouped: `2,006`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 file`, `2,006 files`.
pub fn files(n: u64) -> String {
    match n {
        1 => "1 file".to_string(),
        n => format!("{} files", grouped(n)),
    }
}

/// The first line of a command, with `…` when it has more.
pub fn one_line(cmd: &str) -> String {
    let first = cmd.lines().next().unwrap_or("");
    if cmd.trim_end().lines().nth(1).is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
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
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(2150), "2.1 KB");
        assert_eq!(human_size(3 << 20), "3.0 MB");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(2_006), "2,006");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
