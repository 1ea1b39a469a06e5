//! The shared terminal's wire types (docs/protocol.md "The shared
//! terminal"): its size, its frames and its part of the room state.

use serde::{Deserialize, Serialize};

/// `terminal` of the room state: the shared terminal that runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalState {
    pub term_id: String,
    pub cols: u16,
    pub rows: u16,
}

/// A terminal's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermSize {
    pub cols: u16,
    pub rows: u16,
}

impl TermSize {
    /// The size of a terminal nobody gave a size for.
    pub const DEFAULT: TermSize = TermSize { cols: 80, rows: 24 };
    /// The narrowest terminal: a smaller window's size counts as this (a
    /// hidden or sliver pane must not squeeze the programs of everyone).
    pub const MIN_COLS: u16 = 20;
    /// The shortest terminal.
    pub const MIN_ROWS: u16 = 5;
    /// The widest terminal.
    pub const MAX_COLS: u16 = 500;
    /// The tallest terminal.
    pub const MAX_ROWS: u16 = 200;

    /// What is wrong with `cols` and `rows` as a size, by field: each
    /// must be a whole number (any: it is clamped).
    pub fn problems(cols: Option<i64>, rows: Option<i64>) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        for (field, value) in [("cols", cols), ("rows", rows)] {
            if value.is_none() {
                problems.push((field, "must be a whole number".to_string()));
            }
        }
        problems
    }

    /// A size a client gave, within the bounds: `MIN_COLS`–`MAX_COLS`
    /// wide, `MIN_ROWS`–`MAX_ROWS` tall.
    pub fn clamped(cols: i64, rows: i64) -> TermSize {
        let bound = |v: i64, min: u16, max: u16| {
            u16::try_from(v.clamp(i64::from(min), i64::from(max))).unwrap_or(min)
        };
        TermSize {
            cols: bound(cols, Self::MIN_COLS, Self::MAX_COLS),
            rows: bound(rows, Self::MIN_ROWS, Self::MAX_ROWS),
        }
    }
}

/// Decoded bytes one `duet_term_input` frame may carry.
pub const MAX_TERM_INPUT: usize = 64 * 1024;

/// `duet_term`, by phase (docs/protocol.md "The shared terminal").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum TermFrame {
    /// A terminal started (to every socket).
    #[serde(rename_all = "camelCase")]
    Open {
        term_id: String,
        by: String,
        cols: u16,
        rows: u16,
    },
    /// Output bytes, base64 (to attached sockets); `snapshot`: a redraw of
    /// the whole screen.
    #[serde(rename_all = "camelCase")]
    Data {
        term_id: String,
        data: String,
        #[serde(default, skip_serializing_if = "super::is_false")]
        snapshot: bool,
    },
    /// The screen as lines of spans (to sockets attached with `screen:
    /// true`, instead of `data`): every line when `full`, else the lines
    /// changed since the socket's previous one.
    #[serde(rename_all = "camelCase")]
    Screen {
        term_id: String,
        cols: u16,
        rows: u16,
        #[serde(default, skip_serializing_if = "super::is_false")]
        full: bool,
        lines: Vec<super::ScreenLine>,
        cursor: super::ScreenCursor,
        modes: super::ScreenModes,
    },
    /// The terminal's size changed (to attached sockets).
    #[serde(rename_all = "camelCase")]
    Resize {
        term_id: String,
        cols: u16,
        rows: u16,
    },
    /// The terminal ended (to every socket); `reason` when it ended
    /// unexpectedly (its emulator or its connection to the sandbox failed).
    #[serde(rename_all = "camelCase")]
    Exit {
        term_id: String,
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}
