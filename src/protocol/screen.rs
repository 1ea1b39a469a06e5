//! The shared terminal's screen as data (docs/protocol.md "The shared
//! terminal", `screen` frames): lines of spans of equal attributes, the
//! cursor and the input modes, for a client that paints the screen
//! instead of emulating a terminal (the browser page).

use serde::{Deserialize, Serialize};

/// A colour: a palette index (0..255) or true colour (`"#rrggbb"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SpanColor {
    Index(u8),
    Rgb(String),
}

impl SpanColor {
    /// `"#rrggbb"`.
    pub fn rgb(r: u8, g: u8, b: u8) -> SpanColor {
        SpanColor::Rgb(format!("#{r:02x}{g:02x}{b:02x}"))
    }
}

/// Cells of equal attributes, side by side. A wide character is one
/// character of `t` that covers two columns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub t: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fg: Option<SpanColor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bg: Option<SpanColor>,
    /// Bold.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub b: bool,
    /// Dim.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub d: bool,
    /// Italic.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub i: bool,
    /// Underline.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub u: bool,
    /// Inverse.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub r: bool,
}

impl Span {
    /// Whether it draws the same way as `other` (text aside).
    pub fn same_look(&self, other: &Span) -> bool {
        self.fg == other.fg
            && self.bg == other.bg
            && (self.b, self.d, self.i, self.u, self.r)
                == (other.b, other.d, other.i, other.u, other.r)
    }

    /// Whether it is drawn as the terminal's background (no colour, no
    /// underline, no inverse): trailing blanks like it may be left out.
    pub fn is_plain_background(&self) -> bool {
        self.bg.is_none() && !self.u && !self.r
    }
}

/// One row of the screen (`y` from 0 at the top).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenLine {
    pub y: u16,
    pub spans: Vec<Span>,
}

/// Where the cursor is (0-based column and row) and whether it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenCursor {
    pub x: u16,
    pub y: u16,
    pub visible: bool,
}

/// The input modes a client needs to draw and to type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreenModes {
    pub alt_screen: bool,
    pub app_cursor: bool,
    pub bracketed_paste: bool,
}
