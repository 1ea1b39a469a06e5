//! The terminal's screen as the server keeps it, with a terminal emulator
//! (vt100, guarded: no output or size can bring it down): what a socket
//! that attaches is sent to redraw it, and what the agent reads of it.

use crate::emulator::Emulator;
use crate::protocol::TermSize;

/// Lines and bytes of the screen the agent is shown at most.
const AGENT_LINES: usize = 60;
const AGENT_BYTES: usize = 8 * 1024;

pub(super) struct Screen {
    parser: Emulator,
}

impl Screen {
    pub(super) fn new(size: TermSize) -> Self {
        Screen {
            parser: Emulator::new(size),
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    /// The emulator, to read the screen's cells.
    pub(super) fn emulator(&self) -> &Emulator {
        &self.parser
    }

    pub(super) fn resize(&mut self, size: TermSize) {
        self.parser.set_size(size);
    }

    /// Bytes that redraw the whole screen on a terminal of its size, from
    /// any state: the right buffer (main or alternate), contents, colours,
    /// cursor and input modes.
    pub(super) fn snapshot(&self) -> Vec<u8> {
        let screen = self.parser.screen();
        let mut out = Vec::new();
        out.extend_from_slice(if screen.alternate_screen() {
            b"\x1b[?1049h"
        } else {
            b"\x1b[?1049l"
        });
        out.extend_from_slice(&self.parser.state_formatted());
        out
    }

    /// The screen as text for the agent: its last lines, trailing blanks
    /// trimmed, bounded.
    pub(super) fn text(&self) -> String {
        let contents = self.parser.contents();
        let mut lines: Vec<&str> = contents.lines().map(str::trim_end).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let start = lines.len().saturating_sub(AGENT_LINES);
        let mut text = lines[start..].join("\n");
        if text.len() > AGENT_BYTES {
            let mut cut = text.len() - AGENT_BYTES;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = text[cut..].to_string();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_redraws_the_screen_on_a_fresh_emulator() {
        let mut screen = Screen::new(TermSize { cols: 20, rows: 5 });
        screen.feed(b"\x1b[31mred\x1b[m line\r\n$ half-typ");
        let mut viewer = vt100::Parser::new(5, 20, 0);
        viewer.process(&screen.snapshot());
        assert_eq!(viewer.screen().contents(), screen.parser.contents());
        assert_eq!(viewer.screen().cursor_position(), (1, 10));
        assert_eq!(
            viewer.screen().cursor_position(),
            screen.parser.screen().cursor_position()
        );
        assert_eq!(
            viewer.screen().cell(0, 0).map(|c| c.fgcolor()),
            Some(vt100::Color::Idx(1))
        );
    }

    #[test]
    fn the_alternate_screen_is_entered_and_left() {
        let mut screen = Screen::new(TermSize { cols: 20, rows: 5 });
        screen.feed(b"shell\r\n\x1b[?1049hin less");
        let mut viewer = vt100::Parser::new(5, 20, 0);
        viewer.process(&screen.snapshot());
        assert!(viewer.screen().alternate_screen());
        assert!(viewer.screen().contents().starts_with("in less"));
        screen.feed(b"\x1b[?1049l");
        viewer.process(&screen.snapshot());
        assert!(!viewer.screen().alternate_screen());
        assert!(viewer.screen().contents().starts_with("shell"));
    }

    #[test]
    fn the_agent_reads_the_last_lines_bounded() {
        let mut screen = Screen::new(TermSize {
            cols: 40,
            rows: 100,
        });
        for i in 0..90 {
            screen.feed(format!("line {i}   \r\n").as_bytes());
        }
        let text = screen.text();
        assert!(text.starts_with("line 30\n"), "{text}");
        assert!(text.ends_with("line 89"));
        assert!(!text.contains("   "));
    }
}
