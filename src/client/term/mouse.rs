//! Mouse events as the bytes xterm sends for them, for the TUI's terminal
//! view: only when the program in the shared terminal asked for them, in
//! the encoding it asked for (`duet term` needs none of this: it passes its
//! own terminal's bytes on, with the program's modes mirrored).

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use vt100::{MouseProtocolEncoding, MouseProtocolMode};

/// The bytes for `event` at `col`, `row` (0-based, in the terminal), or
/// none when the program's mode does not report it.
pub fn mouse_bytes(
    event: &MouseEvent,
    col: u16,
    row: u16,
    mode: MouseProtocolMode,
    encoding: MouseProtocolEncoding,
) -> Option<Vec<u8>> {
    use MouseEventKind as Kind;
    let button = |b: MouseButton| match b {
        MouseButton::Left => 0u8,
        MouseButton::Middle => 1,
        MouseButton::Right => 2,
    };
    // (the button's code, a release, a motion)
    let (code, release, motion) = match event.kind {
        Kind::Down(b) => (button(b), false, false),
        Kind::Up(b) => (button(b), true, false),
        Kind::Drag(b) => (button(b), false, true),
        Kind::Moved => (3, false, true),
        Kind::ScrollUp => (64, false, false),
        Kind::ScrollDown => (65, false, false),
        Kind::ScrollLeft => (66, false, false),
        Kind::ScrollRight => (67, false, false),
    };
    let reported = match mode {
        MouseProtocolMode::None => false,
        MouseProtocolMode::Press => !release && !motion,
        MouseProtocolMode::PressRelease => !motion,
        MouseProtocolMode::ButtonMotion => !matches!(event.kind, Kind::Moved),
        MouseProtocolMode::AnyMotion => true,
    };
    if !reported {
        return None;
    }
    let mods = event.modifiers;
    let mut code = code
        + 4 * u8::from(mods.contains(KeyModifiers::SHIFT))
        + 8 * u8::from(mods.contains(KeyModifiers::ALT))
        + 16 * u8::from(mods.contains(KeyModifiers::CONTROL))
        + 32 * u8::from(motion);
    let (x, y) = (u32::from(col) + 1, u32::from(row) + 1);
    if encoding == MouseProtocolEncoding::Sgr {
        let end = if release { 'm' } else { 'M' };
        return Some(format!("\x1b[<{code};{x};{y}{end}").into_bytes());
    }
    // The older encodings cannot say which button was released.
    if release {
        code = (code & !3) | 3;
    }
    let mut out = b"\x1b[M".to_vec();
    out.push(32 + code);
    for v in [x, y] {
        let v = v + 32;
        match encoding {
            MouseProtocolEncoding::Utf8 => {
                let c = char::from_u32(v.min(2047))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            // One byte: positions past 223 cannot be said.
            _ => out.push(u8::try_from(v).ok()?),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: MouseEventKind, mods: KeyModifiers) -> MouseEvent {
        MouseEvent {
            kind,
            column: 0,
            row: 0,
            modifiers: mods,
        }
    }

    const NONE: KeyModifiers = KeyModifiers::NONE;

    #[test]
    fn sgr_says_the_button_the_place_and_a_release() {
        let down = event(MouseEventKind::Down(MouseButton::Left), NONE);
        let sgr = MouseProtocolEncoding::Sgr;
        let mode = MouseProtocolMode::PressRelease;
        assert_eq!(
            mouse_bytes(&down, 4, 2, mode, sgr).unwrap(),
            b"\x1b[<0;5;3M"
        );
        let up = event(MouseEventKind::Up(MouseButton::Left), NONE);
        assert_eq!(mouse_bytes(&up, 4, 2, mode, sgr).unwrap(), b"\x1b[<0;5;3m");
        let wheel = event(MouseEventKind::ScrollDown, KeyModifiers::CONTROL);
        assert_eq!(
            mouse_bytes(&wheel, 0, 0, mode, sgr).unwrap(),
            b"\x1b[<81;1;1M"
        );
    }

    #[test]
    fn the_default_encoding_is_offset_bytes() {
        let down = event(MouseEventKind::Down(MouseButton::Right), NONE);
        let mode = MouseProtocolMode::Press;
        let bytes = mouse_bytes(&down, 9, 19, mode, MouseProtocolEncoding::Default).unwrap();
        assert_eq!(bytes, [0x1b, b'[', b'M', 32 + 2, 32 + 10, 32 + 20]);
        let far = mouse_bytes(&down, 300, 0, mode, MouseProtocolEncoding::Default);
        assert_eq!(far, None, "past 223 columns the old encoding has no byte");
        let utf8 = mouse_bytes(&down, 300, 0, mode, MouseProtocolEncoding::Utf8).unwrap();
        assert_eq!(&utf8[..4], [0x1b, b'[', b'M', 32 + 2]);
        assert_eq!(
            std::str::from_utf8(&utf8[4..]).unwrap().chars().next(),
            Some('\u{14d}')
        );
    }

    #[test]
    fn only_what_the_mode_asks_for_is_reported() {
        let moved = event(MouseEventKind::Moved, NONE);
        let drag = event(MouseEventKind::Drag(MouseButton::Left), NONE);
        let up = event(MouseEventKind::Up(MouseButton::Left), NONE);
        let sgr = MouseProtocolEncoding::Sgr;
        assert_eq!(
            mouse_bytes(&moved, 0, 0, MouseProtocolMode::None, sgr),
            None
        );
        assert_eq!(mouse_bytes(&up, 0, 0, MouseProtocolMode::Press, sgr), None);
        assert_eq!(
            mouse_bytes(&drag, 0, 0, MouseProtocolMode::PressRelease, sgr),
            None
        );
        assert_eq!(
            mouse_bytes(&drag, 0, 0, MouseProtocolMode::ButtonMotion, sgr).unwrap(),
            b"\x1b[<32;1;1M"
        );
        assert_eq!(
            mouse_bytes(&moved, 0, 0, MouseProtocolMode::ButtonMotion, sgr),
            None
        );
        assert_eq!(
            mouse_bytes(&moved, 0, 0, MouseProtocolMode::AnyMotion, sgr).unwrap(),
            b"\x1b[<35;1;1M"
        );
    }
}
