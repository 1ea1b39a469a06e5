//! The rules for names the protocol takes: room ids, a person's or a
//! process's name (and what "printable" leaves out), environment variable
//! names, and a room's sandbox name.

/// Whether `id` is a valid room id: 1–63 of `A-Za-z0-9_-`, first and last
/// alphanumeric.
pub fn valid_room_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= 63
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

/// Why a person's name is not acceptable, if it is not: 1–32 printable
/// characters.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let count = name.chars().count();
    if count == 0 {
        Some("must not be empty")
    } else if count > 32 {
        Some("must be at most 32 characters")
    } else if name.chars().any(unprintable) {
        Some("must be printable characters")
    } else {
        None
    }
}

/// Whether a name may not hold `c`: a control character, or one that is
/// invisible or moves other text (a line or paragraph separator, a
/// zero-width space, a bidirectional override that would show another's
/// name). The joiners (U+200C, U+200D) stay: scripts and emoji need them.
/// Its twin is worker/src/text.ts `unprintable`.
pub fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'
                | '\u{200e}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// Whether `name` may name an environment variable of a command:
/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The sandbox name of a room.
pub fn sandbox_name(room: &str) -> String {
    format!("sandbox-{room}")
}
