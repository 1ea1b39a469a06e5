//! One model for everything a pane shows: a cell (a chat message, the
//! agent's live reply, a command run) renders itself as lines for a width.
//! Panes only ever ask cells for their height and, for the visible ones,
//! their lines.

use crate::tui::theme::Theme;
use ratatui::text::Line;
use std::rc::Rc;

/// What rendering needs besides the cell itself.
#[derive(Debug, Clone, Copy)]
pub struct RenderCtx {
    pub theme: Theme,
    pub tz: time::UtcOffset,
    pub now_ms: i64,
}

/// Rendered lines of a cell (shared with its cache).
pub type Lines = Rc<Vec<Line<'static>>>;

/// Something a pane shows.
pub trait Cell {
    /// Its lines at `width`.
    fn lines(&self, width: u16, ctx: &RenderCtx) -> Lines;

    /// How many lines it takes at `width`; cells that know it without
    /// rendering say so.
    fn height(&self, width: u16, ctx: &RenderCtx) -> usize {
        self.lines(width, ctx).len()
    }
}

/// The spinner's frames.
pub const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The spinner's frame at `now_ms` (a new one every 100 ms).
pub fn spinner(now_ms: i64) -> &'static str {
    SPINNER[((now_ms / 100).rem_euclid(SPINNER.len() as i64)) as usize]
}

/// `HH:MM` of a `ts` in the local offset.
pub fn clock(ts_ms: i64, tz: time::UtcOffset) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts_ms) * 1_000_000)
        .map(|t| t.to_offset(tz))
        .map(|t| format!("{:02}:{:02}", t.hour(), t.minute()))
        .unwrap_or_else(|_| "--:--".into())
}

/// `12s`, `3m04s`: an elapsed time for people.
pub fn elapsed(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}
