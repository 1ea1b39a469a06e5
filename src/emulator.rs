//! A terminal emulator (vt100) that no byte sequence or size can bring
//! down. vt100 panics on some geometries and sequences (a line wrapping
//! in a one-row screen, a wide character stranded at the edge by a
//! resize: `grid.rs:689`, `screen.rs:896`); the shared terminal's screen
//! on the server and the client's copy of it must outlive any of them.
//! Every call into vt100 is guarded: on a panic the emulator is rebuilt
//! from what could still be read of its screen (else blank), and the
//! bytes that caused it are dropped.

use crate::protocol::TermSize;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The smallest grid vt100 keeps without panicking on ordinary output.
const FLOOR: u16 = 2;

pub struct Emulator {
    parser: vt100::Parser,
    /// How many times it had to be rebuilt (for tests and logs).
    failures: u64,
}

impl Emulator {
    /// A blank screen of `size` (kept within 2×2 and the largest size).
    pub fn new(size: TermSize) -> Emulator {
        Emulator {
            parser: parser(size),
            failures: 0,
        }
    }

    /// Feeds output bytes; false when vt100 failed on them (the screen
    /// was rebuilt without them).
    pub fn process(&mut self, bytes: &[u8]) -> bool {
        let parser = &mut self.parser;
        if catch_unwind(AssertUnwindSafe(|| parser.process(bytes))).is_ok() {
            return true;
        }
        self.rebuild("output");
        false
    }

    /// Resizes the screen; false when vt100 failed (the screen was rebuilt
    /// at the new size).
    pub fn set_size(&mut self, size: TermSize) -> bool {
        let (rows, cols) = floor(size);
        let parser = &mut self.parser;
        let resized = catch_unwind(AssertUnwindSafe(|| {
            parser.screen_mut().set_size(rows, cols);
        }));
        if resized.is_ok() {
            return true;
        }
        self.rebuild("a resize");
        // The rebuilt one has the old size (the resize did not happen).
        self.parser = rebuilt(&self.parser, size);
        false
    }

    /// The emulator's screen, to read cells, cursor and modes.
    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// The screen's size.
    pub fn size(&self) -> TermSize {
        let (rows, cols) = self.parser.screen().size();
        TermSize { cols, rows }
    }

    /// Bytes that redraw the screen (contents, colours, cursor, modes) on
    /// a blank one; empty when vt100 cannot say.
    pub fn state_formatted(&self) -> Vec<u8> {
        formatted(&self.parser).unwrap_or_default()
    }

    /// The screen as text; empty when vt100 cannot say.
    pub fn contents(&self) -> String {
        let screen = self.parser.screen();
        catch_unwind(AssertUnwindSafe(|| screen.contents())).unwrap_or_default()
    }

    /// How many times vt100 failed and the screen was rebuilt.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// Replaces a parser that panicked: a fresh one of the same size with
    /// the old screen drawn into it when it can still be read.
    fn rebuild(&mut self, during: &str) {
        self.failures += 1;
        tracing::warn!("the terminal emulator failed on {during}; its screen was rebuilt");
        let size = self.size();
        self.parser = rebuilt(&self.parser, size);
    }
}

impl Clone for Emulator {
    /// The emulator cannot be copied: a copy is the same screen drawn
    /// again (contents and input modes) into a fresh one.
    fn clone(&self) -> Emulator {
        Emulator {
            parser: rebuilt(&self.parser, self.size()),
            failures: self.failures,
        }
    }
}

/// A fresh parser of `size` showing what `old` shows, as far as vt100 can
/// read and redraw it.
fn rebuilt(old: &vt100::Parser, size: TermSize) -> vt100::Parser {
    let mut fresh = parser(size);
    if let Some(bytes) = formatted(old) {
        let drawn = catch_unwind(AssertUnwindSafe(|| fresh.process(&bytes)));
        if drawn.is_err() {
            fresh = parser(size);
        }
    }
    fresh
}

fn formatted(parser: &vt100::Parser) -> Option<Vec<u8>> {
    let screen = parser.screen();
    catch_unwind(AssertUnwindSafe(|| screen.state_formatted())).ok()
}

/// The grid vt100 is given: at least 2×2, at most the protocol's largest
/// terminal (a huge one costs memory, not correctness).
fn floor(size: TermSize) -> (u16, u16) {
    (
        size.rows.clamp(FLOOR, TermSize::MAX_ROWS),
        size.cols.clamp(FLOOR, TermSize::MAX_COLS),
    )
}

fn parser(size: TermSize) -> vt100::Parser {
    let (rows, cols) = floor(size);
    vt100::Parser::new(rows, cols, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    fn size(cols: u16, rows: u16) -> TermSize {
        TermSize { cols, rows }
    }

    /// The bytes that made vt100 0.16.2 panic (`grid.rs:689`): a line
    /// that wraps in a one-row screen.
    #[test]
    fn a_wrapping_line_in_a_tiny_screen_does_not_bring_it_down() {
        let mut emulator = Emulator::new(size(1, 1));
        emulator.process(&[b'x'; 300]);
        emulator.set_size(size(0, 0));
        emulator.process("你好 wide 你好\r\n".repeat(20).as_bytes());
        emulator.set_size(size(20, 5));
        assert!(emulator.process(b"\x1b[2J\x1b[Hstill here"));
        assert!(emulator.contents().starts_with("still here"));
    }

    /// A wide character stranded at the edge by a narrowing resize, then
    /// overwritten (vt100 0.16.2 `screen.rs:896`).
    #[test]
    fn a_wide_character_cut_by_a_resize_does_not_bring_it_down() {
        let mut emulator = Emulator::new(size(10, 3));
        emulator.process("\x1b[1;9H你".as_bytes());
        emulator.set_size(size(9, 3));
        emulator.process(b"\x1b[1;9Hx");
        emulator.process(b"\x1b[2J\x1b[Hok");
        assert!(emulator.contents().starts_with("ok"));
    }

    /// Random sizes (zero and huge included) and random bytes, biased
    /// towards escape sequences and wide characters: the emulator always
    /// answers and keeps working. Seeded, so a failure repeats.
    #[test]
    fn fuzzed_sizes_and_bytes_never_escape() {
        const ROUNDS: usize = 4000;
        let pieces: [&[u8]; 12] = [
            b"\x1b[",
            b"\x1b]",
            b"\x1b[?1049h",
            b"\x1b[?1049l",
            b"\x1b[r",
            b"\x1b[2;1r",
            b"\x07",
            b"\r\n",
            "你".as_bytes(),
            "\u{301}".as_bytes(),
            b"\x1b[65535;65535H",
            b"\x1b[1;999r",
        ];
        let mut rng = StdRng::seed_from_u64(23);
        let mut emulator = Emulator::new(TermSize::DEFAULT);
        for _ in 0..ROUNDS {
            match rng.random_range(0..4) {
                0 => {
                    let pick = |rng: &mut StdRng| match rng.random_range(0..4) {
                        0 => 0,
                        1 => 1,
                        2 => u16::MAX,
                        _ => rng.random_range(0..300),
                    };
                    let (cols, rows) = (pick(&mut rng), pick(&mut rng));
                    emulator.set_size(size(cols, rows));
                }
                _ => {
                    let mut bytes = Vec::new();
                    for _ in 0..rng.random_range(1..40) {
                        if rng.random_bool(0.5) {
                            let piece = pieces[rng.random_range(0..pieces.len())];
                            bytes.extend_from_slice(piece);
                        } else {
                            bytes.push(rng.random());
                        }
                        if rng.random_bool(0.2) {
                            let line = b"y".repeat(rng.random_range(0..400));
                            bytes.extend_from_slice(&line);
                        }
                    }
                    emulator.process(&bytes);
                }
            }
            let _ = emulator.state_formatted();
        }
        emulator.set_size(size(30, 6));
        emulator.process(b"\x1b[?1049l\x1b[r\x1b[2J\x1b[Hmarker-ok");
        assert!(emulator.contents().contains("marker-ok"));
        eprintln!(
            "fuzz: {ROUNDS} rounds, vt100 failed {} times",
            emulator.failures()
        );
    }
}
