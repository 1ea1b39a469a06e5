//! Where each part of the screen goes, as a pure function of the size and
//! the App, shared by drawing and by the update logic (page sizes, mouse
//! hit tests).

use crate::tui::app::{App, Pane};
use crate::tui::text::hard_wrap;
use ratatui::layout::{Constraint, Layout, Rect};

/// Below this width the chat and output panes are switched with Tab.
pub const WIDE: u16 = 100;
/// Width of the presence column in the wide layout.
pub const PRESENCE_WIDTH: u16 = 18;
/// In the wide layout the focused pane gets this share (percent) of the
/// width beside the presence column: the chat reads at about 70 columns
/// at 120, and Tab gives the room to the output instead.
pub const FOCUSED_SHARE: u16 = 70;
/// The focused chat's share stops growing past this many columns (or half
/// the panes, if more): beyond it, a wide window's columns go to the
/// output (50 columns at 140 rather than 37).
pub const CHAT_READ_WIDTH: u16 = 72;
/// The other pane keeps at least this many columns.
pub const SIDE_MIN: u16 = 28;
/// Most lines the input grows to.
pub const COMPOSER_MAX_LINES: usize = 6;

/// The rectangles of one frame; an absent part has a zero-sized rectangle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub chat: Rect,
    pub output: Rect,
    pub presence: Rect,
    /// "X is typing" or the key hints.
    pub hints: Rect,
    pub composer: Rect,
    pub status: Rect,
}

impl Areas {
    /// The rectangle of a pane.
    pub fn pane(&self, pane: Pane) -> Rect {
        match pane {
            Pane::Chat => self.chat,
            Pane::Output => self.output,
        }
    }
}

/// The prompt in front of the first input line.
pub const PROMPT_WIDTH: u16 = 2;

/// The input's lines at `width` (each hard-wrapped).
pub fn composer_lines(text: &str, width: u16) -> Vec<String> {
    let avail = usize::from(width.saturating_sub(PROMPT_WIDTH)).max(1);
    text.split('\n')
        .flat_map(|line| hard_wrap(line, avail))
        .collect()
}

/// Lays out a frame of `area`.
pub fn areas(app: &App, area: Rect) -> Areas {
    let status_h = u16::from(area.height >= 2);
    let hints_h = u16::from(area.height >= 12);
    let lines = composer_lines(app.composer.text(), area.width).len();
    let room_for_input = area.height.saturating_sub(status_h + hints_h + 2).max(1);
    let composer_h = (lines.min(COMPOSER_MAX_LINES) as u16 + 1).min(room_for_input);
    let [main, hints, composer, status] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(hints_h),
        Constraint::Length(composer_h),
        Constraint::Length(status_h),
    ])
    .areas(area);
    let mut out = Areas {
        hints,
        composer,
        status,
        ..Areas::default()
    };
    if area.width >= WIDE {
        let [panes, presence] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(PRESENCE_WIDTH)])
                .areas(main);
        let wide = (panes.width * FOCUSED_SHARE / 100).min(panes.width.saturating_sub(SIDE_MIN));
        // The terminal view keeps the wide share while shown, so that its
        // size does not change with the focus.
        let chat_width = match app.focus {
            Pane::Chat if !app.term.shown => wide.min(CHAT_READ_WIDTH.max(panes.width / 2)),
            _ => panes.width - wide,
        };
        let [chat, output] =
            Layout::horizontal([Constraint::Length(chat_width), Constraint::Fill(1)]).areas(panes);
        out.chat = chat;
        out.output = output;
        out.presence = presence;
    } else {
        match app.focus {
            Pane::Chat => out.chat = main,
            Pane::Output => out.output = main,
        }
    }
    out
}

/// The inside of a pane (below its title line; the output pane in the
/// wide layout also has a left border).
pub fn pane_inner(pane: Pane, rect: Rect, wide: bool) -> Rect {
    let left = u16::from(wide && pane == Pane::Output && rect.width > 0);
    Rect {
        x: rect.x + left,
        y: rect.y + u16::from(rect.height > 0),
        width: rect.width.saturating_sub(left),
        height: rect.height.saturating_sub(1),
    }
}
