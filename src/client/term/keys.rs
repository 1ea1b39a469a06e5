//! Keys as the bytes a terminal sends for them (xterm's encoding), for
//! the TUI's terminal view: crossterm hands it key events, the program in
//! the shared terminal expects bytes. Cursor keys follow the program's
//! application-cursor mode; a paste is bracketed when it asked.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What the program asked of the keyboard (from its screen's modes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputModes {
    /// `ESC [ ? 1 h`: cursor keys send `ESC O A` instead of `ESC [ A`.
    pub application_cursor: bool,
    /// `ESC [ ? 2004 h`: pastes come between `ESC [ 200 ~` and `ESC [ 201 ~`.
    pub bracketed_paste: bool,
}

impl InputModes {
    /// The modes a screen's program set.
    pub fn of(screen: &vt100::Screen) -> InputModes {
        InputModes {
            application_cursor: screen.application_cursor(),
            bracketed_paste: screen.bracketed_paste(),
        }
    }
}

/// The bytes a terminal sends for `key`; nothing for a release, or a key
/// a terminal has no bytes for.
pub fn key_bytes(key: &KeyEvent, modes: InputModes) -> Option<Vec<u8>> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let mods = key.modifiers;
    let ctrl = mods.contains(KeyModifiers::CONTROL);
    let alt = mods.contains(KeyModifiers::ALT);
    // xterm's modifier parameter: 1 + Shift 1 + Alt 2 + Ctrl 4.
    let param =
        1 + u8::from(mods.contains(KeyModifiers::SHIFT)) + 2 * u8::from(alt) + 4 * u8::from(ctrl);
    let modified = param > 1;
    let csi = |tail: &str| format!("\x1b[{tail}").into_bytes();
    // Cursor keys and Home/End: SS3 in application mode, CSI 1;m with
    // modifiers.
    let cursor = |letter: char| {
        if modified {
            csi(&format!("1;{param}{letter}"))
        } else if modes.application_cursor {
            format!("\x1bO{letter}").into_bytes()
        } else {
            csi(&letter.to_string())
        }
    };
    // Keys written `CSI n ~` (with `;m` when modified).
    let tilde = |n: u8| {
        if modified {
            csi(&format!("{n};{param}~"))
        } else {
            csi(&format!("{n}~"))
        }
    };
    let with_alt = |mut bytes: Vec<u8>| {
        if alt {
            bytes.insert(0, 0x1b);
        }
        bytes
    };
    let bytes = match key.code {
        KeyCode::Char(c) if ctrl => with_alt(vec![control_byte(c)?]),
        KeyCode::Char(c) => with_alt(c.to_string().into_bytes()),
        KeyCode::Enter => with_alt(vec![b'\r']),
        KeyCode::Tab if mods.contains(KeyModifiers::SHIFT) => csi("Z"),
        KeyCode::Tab => with_alt(vec![b'\t']),
        KeyCode::BackTab => csi("Z"),
        KeyCode::Backspace if ctrl => with_alt(vec![0x08]),
        KeyCode::Backspace => with_alt(vec![0x7f]),
        KeyCode::Esc => with_alt(vec![0x1b]),
        KeyCode::Up => cursor('A'),
        KeyCode::Down => cursor('B'),
        KeyCode::Right => cursor('C'),
        KeyCode::Left => cursor('D'),
        KeyCode::Home => cursor('H'),
        KeyCode::End => cursor('F'),
        KeyCode::Insert => tilde(2),
        KeyCode::Delete => tilde(3),
        KeyCode::PageUp => tilde(5),
        KeyCode::PageDown => tilde(6),
        KeyCode::F(n @ 1..=4) => {
            let letter = char::from(b'P' + (n - 1));
            if modified {
                csi(&format!("1;{param}{letter}"))
            } else {
                format!("\x1bO{letter}").into_bytes()
            }
        }
        KeyCode::F(n @ 5..=12) => tilde([15, 17, 18, 19, 20, 21, 23, 24][usize::from(n - 5)]),
        _ => return None,
    };
    Some(bytes)
}

/// Ctrl with a character: the control byte a terminal sends.
fn control_byte(c: char) -> Option<u8> {
    Some(match c.to_ascii_lowercase() {
        c @ 'a'..='z' => c as u8 - b'a' + 1,
        ' ' | '@' | '2' => 0x00,
        '[' | '3' => 0x1b,
        '\\' | '4' => 0x1c,
        ']' | '5' => 0x1d,
        '^' | '6' => 0x1e,
        '_' | '-' | '7' => 0x1f,
        '?' | '8' => 0x7f,
        _ => return None,
    })
}

/// A paste as the bytes a terminal sends: bracketed when the program
/// asked, else with each line ending as Enter (`\r`) does.
pub fn paste_bytes(text: &str, modes: InputModes) -> Vec<u8> {
    if modes.bracketed_paste {
        // The text cannot end the bracket early.
        let inner = text.replace("\x1b[201~", "");
        format!("\x1b[200~{inner}\x1b[201~").into_bytes()
    } else {
        text.replace("\r\n", "\r").replace('\n', "\r").into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> Vec<u8> {
        key_bytes(&KeyEvent::new(code, mods), InputModes::default()).unwrap()
    }

    const NONE: KeyModifiers = KeyModifiers::NONE;

    #[test]
    fn characters_and_control_keys_are_the_bytes_a_terminal_sends() {
        assert_eq!(key(KeyCode::Char('a'), NONE), b"a");
        assert_eq!(key(KeyCode::Char('A'), KeyModifiers::SHIFT), b"A");
        assert_eq!(key(KeyCode::Char('é'), NONE), "é".as_bytes());
        assert_eq!(key(KeyCode::Char('c'), KeyModifiers::CONTROL), [0x03]);
        assert_eq!(key(KeyCode::Char('D'), KeyModifiers::CONTROL), [0x04]);
        assert_eq!(key(KeyCode::Char(' '), KeyModifiers::CONTROL), [0x00]);
        assert_eq!(key(KeyCode::Char('x'), KeyModifiers::ALT), b"\x1bx");
        assert_eq!(
            key(
                KeyCode::Char('b'),
                KeyModifiers::ALT | KeyModifiers::CONTROL
            ),
            [0x1b, 0x02]
        );
        assert_eq!(key(KeyCode::Enter, NONE), b"\r");
        assert_eq!(key(KeyCode::Tab, NONE), b"\t");
        assert_eq!(key(KeyCode::BackTab, KeyModifiers::SHIFT), b"\x1b[Z");
        assert_eq!(key(KeyCode::Backspace, NONE), [0x7f]);
        assert_eq!(key(KeyCode::Esc, NONE), [0x1b]);
    }

    #[test]
    fn cursor_keys_follow_the_application_cursor_mode() {
        assert_eq!(key(KeyCode::Up, NONE), b"\x1b[A");
        assert_eq!(key(KeyCode::Left, NONE), b"\x1b[D");
        assert_eq!(key(KeyCode::Home, NONE), b"\x1b[H");
        let app = InputModes {
            application_cursor: true,
            ..InputModes::default()
        };
        let up = KeyEvent::new(KeyCode::Up, NONE);
        assert_eq!(key_bytes(&up, app).unwrap(), b"\x1bOA");
        // Modified cursor keys are CSI 1;m whatever the mode.
        let ctrl_right = KeyEvent::new(KeyCode::Right, KeyModifiers::CONTROL);
        assert_eq!(key_bytes(&ctrl_right, app).unwrap(), b"\x1b[1;5C");
        assert_eq!(key(KeyCode::Up, KeyModifiers::SHIFT), b"\x1b[1;2A");
    }

    #[test]
    fn editing_and_function_keys_are_xterms() {
        assert_eq!(key(KeyCode::Delete, NONE), b"\x1b[3~");
        assert_eq!(key(KeyCode::PageUp, NONE), b"\x1b[5~");
        assert_eq!(key(KeyCode::PageDown, KeyModifiers::CONTROL), b"\x1b[6;5~");
        assert_eq!(key(KeyCode::F(1), NONE), b"\x1bOP");
        assert_eq!(key(KeyCode::F(4), KeyModifiers::SHIFT), b"\x1b[1;2S");
        assert_eq!(key(KeyCode::F(5), NONE), b"\x1b[15~");
        assert_eq!(key(KeyCode::F(12), NONE), b"\x1b[24~");
        assert_eq!(
            key_bytes(&KeyEvent::new(KeyCode::F(20), NONE), InputModes::default()),
            None
        );
        let release = KeyEvent::new_with_kind(KeyCode::Char('a'), NONE, KeyEventKind::Release);
        assert_eq!(key_bytes(&release, InputModes::default()), None);
    }

    #[test]
    fn a_paste_is_bracketed_only_when_the_program_asked() {
        assert_eq!(paste_bytes("a\nb\r\nc", InputModes::default()), b"a\rb\rc");
        let bracketed = InputModes {
            bracketed_paste: true,
            ..InputModes::default()
        };
        assert_eq!(
            paste_bytes("ls\x1b[201~rm\n", bracketed),
            b"\x1b[200~lsrm\n\x1b[201~"
        );
    }

    #[test]
    fn modes_are_read_from_the_programs_screen() {
        let mut parser = vt100::Parser::new(4, 20, 0);
        assert_eq!(InputModes::of(parser.screen()), InputModes::default());
        parser.process(b"\x1b[?1h\x1b[?2004h");
        assert_eq!(
            InputModes::of(parser.screen()),
            InputModes {
                application_cursor: true,
                bracketed_paste: true
            }
        );
    }
}
