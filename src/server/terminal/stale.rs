//! A program can still write for the terminal's old height after a resize
//! made it taller: it draws until it reads its SIGWINCH. Its reset of the
//! scroll region then names the old height (`ESC [ 1 ; old r`), which at
//! the new height is a region of the top rows only, and the full redraw it
//! sends next scrolls inside it, garbled (vim under a window that comes
//! and goes). Until the program clears the screen for that redraw, and
//! only for a moment after the resize, such a reset means the whole
//! screen, as it did when it was written: it is rewritten as one
//! (`ESC [ r`) in the bytes everyone is sent.

use std::time::{Duration, Instant};

/// The old height, and until when stale output may still come.
#[derive(Default)]
pub(super) struct StaleRegion {
    old: Option<(u16, Instant)>,
}

/// Clearing the whole screen: the program's redraw for the new size.
const CLEAR: &[u8] = b"\x1b[2J";
/// A scroll region of the whole screen, whatever its height.
const FULL: &[u8] = b"\x1b[r";
/// How long after a resize output can still be drawn for the old size (a
/// program handles its SIGWINCH within moments; the reminder comes at
/// 200 ms). A region of the old height set later is meant as one.
const STALE_FOR: Duration = Duration::from_secs(1);

impl StaleRegion {
    /// The terminal's height changed from `from` rows to `to`.
    pub(super) fn resized(&mut self, from: u16, to: u16) {
        self.old = (to > from).then(|| (from, Instant::now() + STALE_FOR));
    }

    /// `bytes`, with the resets of the old height before the next clear
    /// made whole-screen ones.
    pub(super) fn fix(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        self.fix_at(bytes, Instant::now())
    }

    /// `fix`, with the output read at `now`.
    fn fix_at(&mut self, bytes: Vec<u8>, now: Instant) -> Vec<u8> {
        let Some((rows, until)) = self.old else {
            return bytes;
        };
        if now > until {
            self.old = None;
            return bytes;
        }
        let end = match find(&bytes, CLEAR) {
            Some(at) => {
                self.old = None;
                at
            }
            None => bytes.len(),
        };
        let stale = format!("\x1b[1;{rows}r").into_bytes();
        let mut out = Vec::new();
        let mut rest = &bytes[..end];
        while let Some(at) = find(rest, &stale) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(FULL);
            rest = &rest[at + stale.len()..];
        }
        if out.is_empty() {
            return bytes;
        }
        out.extend_from_slice(rest);
        out.extend_from_slice(&bytes[end..]);
        out
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vim's scroll at 7 rows, read after the terminal grew to 30, then its
    /// redraw: the reset is whole-screen, the redraw untouched.
    const VIM: &[u8] =
        b"\x1b[1;6r\x1b[6;1H\r\n\x1b[1;7r\x1b[5;2Hok\x1b[H\x1b[2Jnarrow\r\n\x1b[1;7r";

    #[test]
    fn a_reset_of_the_old_height_before_the_redraw_is_whole_screen() {
        let mut stale = StaleRegion::default();
        stale.resized(7, 30);
        let fixed = stale.fix(VIM.to_vec());
        assert_eq!(
            fixed,
            b"\x1b[1;6r\x1b[6;1H\r\n\x1b[r\x1b[5;2Hok\x1b[H\x1b[2Jnarrow\r\n\x1b[1;7r"
        );
        // After the redraw began, a region of 7 rows is meant as one.
        assert_eq!(stale.fix(b"\x1b[1;7r".to_vec()), b"\x1b[1;7r");
    }

    #[test]
    fn a_reset_of_the_old_height_long_after_the_resize_is_left_alone() {
        let mut stale = StaleRegion::default();
        stale.resized(7, 30);
        let later = Instant::now() + STALE_FOR + Duration::from_millis(1);
        assert_eq!(stale.fix_at(VIM.to_vec(), later), VIM);
    }

    #[test]
    fn shrinking_or_no_resize_leaves_the_bytes_alone() {
        let mut stale = StaleRegion::default();
        assert_eq!(stale.fix(VIM.to_vec()), VIM);
        stale.resized(30, 7);
        assert_eq!(stale.fix(VIM.to_vec()), VIM);
    }

    #[test]
    fn the_redraw_on_a_vt100_screen_fills_it_from_the_top() {
        let mut stale = StaleRegion::default();
        let mut screen = vt100::Parser::new(7, 40, 0);
        screen.process(b"\x1b[1;6r");
        screen.screen_mut().set_size(30, 40);
        stale.resized(7, 30);
        let mut redraw = b"\x1b[1;7r\x1b[H\x1b[2J".to_vec();
        for n in 0..20 {
            redraw.extend_from_slice(format!("line {n}\r\n").as_bytes());
        }
        screen.process(&stale.fix(redraw));
        assert_eq!(screen.screen().contents_between(0, 0, 0, 40), "line 0");
        assert_eq!(screen.screen().contents_between(19, 0, 19, 40), "line 19");
    }
}
