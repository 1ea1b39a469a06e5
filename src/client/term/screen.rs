//! The shared terminal's screen as this client keeps it: a `vt100`
//! emulator fed by the `duet_term` frames of the terminal it attached to.
//! Clients draw from it and never write the terminal's bytes raw, so a
//! program in the sandbox cannot set the person's clipboard (OSC 52) or
//! have their terminal answer queries into the shared shell.

use crate::emulator::Emulator;
use crate::protocol::{TermFrame, TermSize, TerminalState};
use base64::Engine;

/// What a frame did to the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not for this screen (another terminal, or a phase it does not draw).
    Nothing,
    /// The screen changed.
    Drawn,
    /// The terminal ended (its exit code; `None`: closed or killed).
    Exited(Option<i32>),
}

/// The screen of the terminal this client is attached to.
pub struct TermScreen {
    term_id: Option<String>,
    /// Guarded: no frame can bring the client down.
    parser: Emulator,
}

impl TermScreen {
    /// A blank screen of `size`, attached to nothing yet.
    pub fn new(size: TermSize) -> TermScreen {
        TermScreen {
            term_id: None,
            parser: Emulator::new(size),
        }
    }

    /// `term_open` answered: frames of this terminal draw here, at its size.
    pub fn attached(&mut self, terminal: &TerminalState) {
        if self.term_id.as_deref() != Some(terminal.term_id.as_str()) {
            *self = TermScreen::new(TermSize {
                cols: terminal.cols,
                rows: terminal.rows,
            });
            self.term_id = Some(terminal.term_id.clone());
        } else {
            self.set_size(terminal.cols, terminal.rows);
        }
    }

    /// The terminal drawn here, while attached.
    pub fn term_id(&self) -> Option<&str> {
        self.term_id.as_deref()
    }

    /// Stops drawing frames (detached, or the terminal ended); the last
    /// screen stays to look at.
    pub fn detached(&mut self) {
        self.term_id = None;
    }

    /// The terminal's size as last said.
    pub fn size(&self) -> TermSize {
        self.parser.size()
    }

    /// The emulator's screen: cells, cursor and input modes.
    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// The screen's text, rows joined by newlines (trailing blanks cut).
    pub fn text(&self) -> String {
        self.parser.contents()
    }

    /// Applies a frame of the terminal this screen is attached to.
    pub fn apply(&mut self, frame: &TermFrame) -> Seen {
        let ours = |id: &str| self.term_id.as_deref() == Some(id);
        match frame {
            TermFrame::Data {
                term_id,
                data,
                snapshot,
            } if ours(term_id) => {
                let bytes = match base64::engine::general_purpose::STANDARD.decode(data) {
                    Ok(bytes) => bytes,
                    Err(err) => {
                        tracing::debug!(%err, "ignored terminal output that is not base64");
                        return Seen::Nothing;
                    }
                };
                if *snapshot {
                    // A redraw of the whole screen: start from a blank one.
                    self.parser = Emulator::new(self.size());
                }
                self.parser.process(&bytes);
                Seen::Drawn
            }
            TermFrame::Resize {
                term_id,
                cols,
                rows,
            } if ours(term_id) => {
                self.set_size(*cols, *rows);
                Seen::Drawn
            }
            TermFrame::Exit {
                term_id, exit_code, ..
            } if ours(term_id) => {
                self.term_id = None;
                Seen::Exited(*exit_code)
            }
            _ => Seen::Nothing,
        }
    }

    fn set_size(&mut self, cols: u16, rows: u16) {
        self.parser.set_size(TermSize { cols, rows });
    }
}

impl std::fmt::Debug for TermScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermScreen")
            .field("term_id", &self.term_id)
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

impl Clone for TermScreen {
    fn clone(&self) -> TermScreen {
        TermScreen {
            term_id: self.term_id.clone(),
            parser: self.parser.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(term_id: &str, bytes: &[u8], snapshot: bool) -> TermFrame {
        TermFrame::Data {
            term_id: term_id.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            snapshot,
        }
    }

    fn attached() -> TermScreen {
        let mut screen = TermScreen::new(TermSize::DEFAULT);
        screen.attached(&TerminalState {
            term_id: "t1".into(),
            cols: 20,
            rows: 4,
        });
        screen
    }

    #[test]
    fn output_draws_and_a_snapshot_redraws_from_blank() {
        let mut screen = attached();
        assert_eq!(screen.size(), TermSize { cols: 20, rows: 4 });
        assert_eq!(
            screen.apply(&data("t1", b"$ ls\r\nfile\r\n", false)),
            Seen::Drawn
        );
        assert_eq!(screen.text(), "$ ls\nfile");
        assert_eq!(screen.apply(&data("t1", b"$ top", true)), Seen::Drawn);
        assert_eq!(screen.text(), "$ top");
        // Another terminal's frames, and bad base64, draw nothing.
        assert_eq!(screen.apply(&data("t2", b"x", false)), Seen::Nothing);
        let bad = TermFrame::Data {
            term_id: "t1".into(),
            data: "%%".into(),
            snapshot: false,
        };
        assert_eq!(screen.apply(&bad), Seen::Nothing);
        assert_eq!(screen.text(), "$ top");
    }

    #[test]
    fn resize_and_exit_follow_the_terminal() {
        let mut screen = attached();
        let resize = TermFrame::Resize {
            term_id: "t1".into(),
            cols: 30,
            rows: 5,
        };
        assert_eq!(screen.apply(&resize), Seen::Drawn);
        assert_eq!(screen.size(), TermSize { cols: 30, rows: 5 });
        let exit = TermFrame::Exit {
            term_id: "t1".into(),
            exit_code: Some(3),
            reason: None,
        };
        assert_eq!(screen.apply(&exit), Seen::Exited(Some(3)));
        assert_eq!(screen.term_id(), None);
        assert_eq!(screen.apply(&data("t1", b"late", false)), Seen::Nothing);
    }

    #[test]
    fn a_copy_shows_the_same_screen_and_modes() {
        let mut screen = attached();
        screen.apply(&data("t1", b"\x1b[?1h\x1b[?2004hhello", false));
        let copy = screen.clone();
        assert_eq!(copy.text(), "hello");
        assert!(copy.screen().application_cursor());
        assert!(copy.screen().bracketed_paste());
    }
}
