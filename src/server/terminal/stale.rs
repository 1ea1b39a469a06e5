//! A program can still write for the terminal's old height after a resize
//! made it taller: it draws until it reads its SIGWINCH. Its reset of the
//! scroll region then names the old height (`ESC [ 1 ; old r`), which at
//! the new height is a region of the top rows only, and the full redraw it
//! sends next scrolls inside it, garbled (vim under a window that comes
//! and goes). Until the program clears the screen for that redraw, such a
//! reset means the whole screen, as it did when it was written: it is
//! rewritten as one (`ESC [ r`) in the bytes everyone is sent.

/// The old height while stale output may still come; none otherwise.
#[derive(Default)]
pub(super) struct StaleRegion {
    old_rows: Option<u16>,
}

/// Clearing the whole screen: the program's redraw for the new size.
const CLEAR: &[u8] = b"\x1b[2J";
/// A scroll region of the whole screen, whatever its height.
const FULL: &[u8] = b"\x1b[r";

impl StaleRegion {
    /// The terminal's height changed from `from` rows to `to`.
    pub(super) fn resized(&mut self, from: u16, to: u16) {
        self.old_rows = (to > from).then_some(from);
    }

    /// `bytes`, with the resets of the old height before the next clear
    /// made whole-screen ones.
    pub(super) fn fix(&mut self, bytes: Vec<u8>) -> Vec<u8> {
        let Some(rows) = self.old_rows else {
            return bytes;
        };
        let stale = format!("\x1b[1;{rows}r").into_bytes();
        let end = match find(&bytes, CLEAR) {
            Some(at) => {
                self.old_rows = None;
                at
            }
            None => bytes.len(),
        };
        if find(&bytes[..end], &stale).is_none() {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..end];
        while let Some(at) = find(rest, &stale) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(FULL);
            rest = &rest[at + stale.len()..];
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
