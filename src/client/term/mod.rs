//! The client's side of the room's shared terminal (docs/protocol.md "The
//! shared terminal"): what the socket remembers of an attachment (link),
//! the screen kept from the frames (screen), keys as the bytes a terminal
//! sends (keys) and mouse events as their bytes (mouse), the commands that need a terminal (needs), and `duet
//! term`, which attaches the person's own terminal (attach).

pub mod keys;
pub(crate) mod link;
pub mod mouse;
pub mod needs;
pub mod screen;

/// The key that detaches `duet term` and gives the TUI's focus back from
/// the terminal view: Ctrl+] (as in telnet), the byte 0x1d.
pub const DETACH_BYTE: u8 = 0x1d;
/// How the detach key is written for people.
pub const DETACH_LABEL: &str = "Ctrl+]";
