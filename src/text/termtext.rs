//! Command output made fit for a pane: colours (SGR) kept, cursor moves,
//! screen clears, titles and other controls removed, `\r` progress lines
//! resolved to their last state, tabs expanded; kept in bounded memory as
//! head and tail with a count of the lines folded away.

use std::collections::VecDeque;

/// Lines kept from the start of an output.
pub const HEAD_LINES: usize = 20;
/// Lines kept from the end of an output.
pub const TAIL_LINES: usize = 500;
/// A line longer than this (in bytes) is cut into several.
pub const MAX_LINE_BYTES: usize = 4096;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One finished line of output (SGR sequences still inside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutLine {
    pub text: String,
    pub stream: Stream,
}

/// Where the escape-sequence parser is between two chunks.
#[derive(Debug, Clone, Default, PartialEq)]
enum Esc {
    #[default]
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [`, with the bytes so far.
    Csi(String),
    /// Inside a string sequence (OSC, DCS, …) until BEL or ESC \.
    StringSeq,
    /// ESC seen inside a string sequence.
    StringEscape,
    /// After ESC and an intermediate byte (e.g. `ESC ( B`).
    Intermediate,
}

/// The line being written on one stream.
#[derive(Debug, Clone, Default)]
struct Partial {
    text: String,
    /// Visible cells so far (for tab stops).
    col: usize,
    esc: Esc,
    /// A `\r` was seen; what comes next decides (newline or overwrite).
    cr: bool,
}

/// The output of one command, cleaned and bounded.
#[derive(Debug, Clone, Default)]
pub struct OutputBuffer {
    head: Vec<OutLine>,
    tail: VecDeque<OutLine>,
    folded: usize,
    stdout: Partial,
    stderr: Partial,
}

impl OutputBuffer {
    /// An empty output.
    pub fn new() -> OutputBuffer {
        OutputBuffer::default()
    }

    /// Builds the output of a finished command from its two streams.
    pub fn from_streams(stdout: &str, stderr: &str) -> OutputBuffer {
        let mut out = OutputBuffer::new();
        out.push(Stream::Stdout, stdout);
        out.push(Stream::Stderr, stderr);
        out.finish();
        out
    }

    /// Adds a chunk of one stream.
    pub fn push(&mut self, stream: Stream, chunk: &str) {
        let mut done = Vec::new();
        let partial = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        for c in chunk.chars() {
            feed(partial, c, &mut |text| done.push(text));
        }
        for text in done {
            self.commit(OutLine { text, stream });
        }
    }

    /// Ends both streams: their unfinished lines become lines.
    pub fn finish(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let partial = match stream {
                Stream::Stdout => &mut self.stdout,
                Stream::Stderr => &mut self.stderr,
            };
            let text = std::mem::take(partial).text;
            if !text.is_empty() {
                self.commit(OutLine { text, stream });
            }
        }
    }

    fn commit(&mut self, line: OutLine) {
        if self.head.len() < HEAD_LINES {
            self.head.push(line);
            return;
        }
        self.tail.push_back(line);
        if self.tail.len() > TAIL_LINES {
            self.tail.pop_front();
            self.folded += 1;
        }
    }

    /// Lines folded away between head and tail.
    pub fn folded(&self) -> usize {
        self.folded
    }

    /// The lines kept from the start.
    pub fn head(&self) -> &[OutLine] {
        &self.head
    }

    /// The lines kept from the end, then the unfinished lines.
    pub fn tail(&self) -> impl Iterator<Item = OutLine> + '_ {
        let partials = [
            (Stream::Stdout, &self.stdout),
            (Stream::Stderr, &self.stderr),
        ]
        .into_iter()
        .filter(|(_, p)| !p.text.is_empty())
        .map(|(stream, p)| OutLine {
            text: p.text.clone(),
            stream,
        });
        self.tail.iter().cloned().chain(partials)
    }

    /// Lines shown: head, tail and unfinished ones (not the fold marker).
    pub fn line_count(&self) -> usize {
        self.head.len()
            + self.tail.len()
            + usize::from(!self.stdout.text.is_empty())
            + usize::from(!self.stderr.text.is_empty())
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.line_count() == 0
    }

    /// All kept lines as plain text (tests, copying).
    pub fn plain_lines(&self) -> Vec<String> {
        self.head
            .iter()
            .cloned()
            .chain(self.tail())
            .map(|l| strip_sgr(&l.text))
            .collect()
    }
}

/// One stream cleaned as its chunks come, line by line (what `duet ask`
/// prints): the same cleaning as `OutputBuffer`, nothing kept.
#[derive(Debug, Clone, Default)]
pub struct LineCleaner(Partial);

impl LineCleaner {
    /// Adds a chunk; answers the lines it finished.
    pub fn push(&mut self, chunk: &str) -> Vec<String> {
        let mut done = Vec::new();
        for c in chunk.chars() {
            feed(&mut self.0, c, &mut |text| done.push(text));
        }
        done
    }

    /// Ends the stream: its unfinished line, if any.
    pub fn finish(&mut self) -> Option<String> {
        let text = std::mem::take(&mut self.0).text;
        (!text.is_empty()).then_some(text)
    }
}

/// Feeds one character to a stream's line; calls `done` with each
/// finished line.
fn feed(p: &mut Partial, c: char, done: &mut impl FnMut(String)) {
    match std::mem::take(&mut p.esc) {
        Esc::None => {}
        Esc::Start => {
            p.esc = match c {
                '[' => Esc::Csi(String::new()),
                ']' | 'P' | 'X' | '^' | '_' => Esc::StringSeq,
                ' '..='/' => Esc::Intermediate,
                _ => Esc::None,
            };
            return;
        }
        Esc::Csi(mut params) => {
            if ('\u{40}'..='\u{7e}').contains(&c) {
                // Colours and text attributes are kept; cursor moves,
                // erases and modes are not.
                if c == 'm' && params.len() < 64 {
                    p.text.push_str("\x1b[");
                    p.text.push_str(&params);
                    p.text.push('m');
                }
            } else if ('\u{20}'..='\u{3f}').contains(&c) {
                params.push(c);
                p.esc = Esc::Csi(params);
            }
            return;
        }
        Esc::StringSeq => {
            p.esc = match c {
                '\u{7}' => Esc::None,
                '\u{1b}' => Esc::StringEscape,
                _ => Esc::StringSeq,
            };
            return;
        }
        Esc::StringEscape => {
            p.esc = if c == '\\' { Esc::None } else { Esc::StringSeq };
            return;
        }
        Esc::Intermediate => {
            if (' '..='/').contains(&c) {
                p.esc = Esc::Intermediate;
            }
            return;
        }
    }
    if p.cr {
        p.cr = false;
        if c != '\n' {
            // A carriage return without a newline: the line is rewritten;
            // keep its last state only.
            p.text.clear();
            p.col = 0;
        }
    }
    match c {
        '\n' => {
            p.col = 0;
            done(std::mem::take(&mut p.text));
        }
        '\r' => p.cr = true,
        '\u{1b}' => p.esc = Esc::Start,
        '\t' => {
            let spaces = 8 - p.col % 8;
            p.text.extend(std::iter::repeat_n(' ', spaces));
            p.col += spaces;
        }
        c if c.is_control() => {}
        c => {
            p.text.push(c);
            p.col += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if p.text.len() >= MAX_LINE_BYTES {
                p.col = 0;
                done(std::mem::take(&mut p.text));
            }
        }
    }
}

/// Removes SGR sequences (the only ones left after cleaning).
pub fn strip_sgr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_esc = false;
    for c in text.chars() {
        if in_esc {
            if c == 'm' {
                in_esc = false;
            }
        } else if c == '\u{1b}' {
            in_esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// Cleans a whole text at once (an output already complete).
pub fn clean(text: &str) -> Vec<String> {
    let mut buffer = OutputBuffer::new();
    buffer.push(Stream::Stdout, text);
    buffer.finish();
    buffer
        .head
        .into_iter()
        .chain(buffer.tail)
        .map(|l| l.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_stay_and_cursor_controls_go() {
        assert_eq!(
            clean("\x1b[31mred\x1b[0m \x1b[2K\x1b[1Gok\x1b]0;title\x07!\n"),
            vec!["\x1b[31mred\x1b[0m ok!"]
        );
        assert_eq!(clean("\x1b[?1049hfull\x1b[?1049l\x1b(Bx"), vec!["fullx"]);
    }

    #[test]
    fn carriage_returns_keep_the_last_state() {
        assert_eq!(clean("10%\r50%\r100%\ndone\r\n"), vec!["100%", "done"]);
    }

    #[test]
    fn tabs_expand_to_stops_of_eight() {
        assert_eq!(clean("a\tb\n漢\tc"), vec!["a       b", "漢      c"]);
    }

    #[test]
    fn chunks_split_anywhere_give_the_same_lines() {
        let text = "\x1b[32mgreen\x1b[0m\r\nline 2\x1b]0;t\x1b\\\rover\n";
        let whole = clean(text);
        for cut in 0..text.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let mut b = OutputBuffer::new();
            b.push(Stream::Stdout, &text[..cut]);
            b.push(Stream::Stdout, &text[cut..]);
            b.finish();
            let got: Vec<String> = b.head.iter().map(|l| l.text.clone()).collect();
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn long_outputs_keep_head_and_tail_and_count_the_rest() {
        let text: String = (0..10_000).map(|i| format!("{i}\n")).collect();
        let b = OutputBuffer::from_streams(&text, "");
        assert_eq!(b.head().len(), HEAD_LINES);
        assert_eq!(b.folded(), 10_000 - HEAD_LINES - TAIL_LINES);
        let lines = b.plain_lines();
        assert_eq!(lines.first().map(String::as_str), Some("0"));
        assert_eq!(lines.last().map(String::as_str), Some("9999"));
    }

    #[test]
    fn a_line_cleaner_gives_lines_as_they_end() {
        let mut c = LineCleaner::default();
        assert_eq!(c.push("a\x1b[2Kb\r"), Vec::<String>::new());
        assert_eq!(c.push("\nc\td"), vec!["ab"]);
        assert_eq!(c.finish().as_deref(), Some("c       d"));
        assert_eq!(c.finish(), None);
    }

    #[test]
    fn streams_do_not_mix_their_unfinished_lines() {
        let mut b = OutputBuffer::new();
        b.push(Stream::Stdout, "out-");
        b.push(Stream::Stderr, "err\n");
        b.push(Stream::Stdout, "put\n");
        assert_eq!(b.plain_lines(), vec!["err", "out-put"]);
    }
}
