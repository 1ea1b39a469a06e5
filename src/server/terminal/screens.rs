//! The terminal's `screen` frames (docs/protocol.md "The shared
//! terminal"): built from the screen at most once a tick for every socket
//! attached with `screen: true`, serialized once and shared; a delta holds
//! the lines changed since the previous frame, a `full` one every line.

use super::spans::{Painted, paint};
use super::{TermOut, frame_text};
use crate::emulator::Emulator;
use crate::protocol::{ScreenLine, TermFrame};
use axum::extract::ws::Utf8Bytes;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::Instant;

/// The shortest time between two frames: at most 20 a second.
pub(super) const TICK: Duration = Duration::from_millis(50);
/// Frames buffered per screen socket; one that falls further behind is
/// sent a `full` frame instead.
const CAPACITY: usize = 16;

pub(super) struct ScreenFeed {
    sender: broadcast::Sender<TermOut>,
    /// What the sockets were last sent (`None`: nobody watched since).
    last: Option<Painted>,
    /// When the next frame goes out (`None`: nothing changed).
    due: Option<Instant>,
    last_tick: Option<Instant>,
}

impl ScreenFeed {
    pub(super) fn new() -> ScreenFeed {
        ScreenFeed {
            sender: broadcast::channel(CAPACITY).0,
            last: None,
            due: None,
            last_tick: None,
        }
    }

    fn watched(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// When the next frame is due, if one is.
    pub(super) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// The screen changed: a frame is due at the next tick.
    pub(super) fn changed(&mut self) {
        if !self.watched() {
            self.last = None;
            return;
        }
        if self.due.is_none() {
            let now = Instant::now();
            self.due = Some(self.last_tick.map_or(now, |t| (t + TICK).max(now)));
        }
    }

    /// Whether the next frame is due by now.
    pub(super) fn is_due(&self) -> bool {
        self.due.is_some_and(|t| t <= Instant::now())
    }

    /// Sends the lines that changed since the last frame (nothing when
    /// nothing did).
    pub(super) fn tick(&mut self, term_id: &str, emulator: &Emulator) {
        self.due = None;
        if !self.watched() {
            self.last = None;
            return;
        }
        let now = paint(emulator);
        let frame = match &self.last {
            Some(prev) if (prev.cols, prev.rows) == (now.cols, now.rows) => {
                let lines: Vec<ScreenLine> = changed_lines(prev, &now);
                if lines.is_empty() && prev.cursor == now.cursor && prev.modes == now.modes {
                    return;
                }
                screen_frame(term_id, &now, false, lines)
            }
            _ => screen_frame(term_id, &now, true, all_lines(&now)),
        };
        self.last = Some(now);
        self.last_tick = Some(Instant::now());
        let _ = self.sender.send(TermOut::Frame(frame));
    }

    /// A new socket's `full` frame and its feed from there on: what changed
    /// before goes to the others first, so that both agree from here.
    pub(super) fn subscribe(
        &mut self,
        term_id: &str,
        emulator: &Emulator,
    ) -> (Utf8Bytes, broadcast::Receiver<TermOut>) {
        self.tick(term_id, emulator);
        let now = paint(emulator);
        let full = screen_frame(term_id, &now, true, all_lines(&now));
        self.last = Some(now);
        (full, self.sender.subscribe())
    }

    /// The size changed: its `resize` frame, then a `full` frame at the new
    /// size.
    pub(super) fn resized(&mut self, term_id: &str, resize: Utf8Bytes, emulator: &Emulator) {
        self.due = None;
        if !self.watched() {
            self.last = None;
            return;
        }
        let _ = self.sender.send(TermOut::Frame(resize));
        self.last_tick = Some(Instant::now());
        let now = paint(emulator);
        let full = screen_frame(term_id, &now, true, all_lines(&now));
        self.last = Some(now);
        let _ = self.sender.send(TermOut::Frame(full));
    }

    /// Something every screen socket is sent as it is (the `exit`).
    pub(super) fn send(&self, out: TermOut) {
        let _ = self.sender.send(out);
    }
}

fn all_lines(painted: &Painted) -> Vec<ScreenLine> {
    (0..painted.rows)
        .zip(&painted.lines)
        .map(|(y, spans)| ScreenLine {
            y,
            spans: spans.clone(),
        })
        .collect()
}

fn changed_lines(prev: &Painted, now: &Painted) -> Vec<ScreenLine> {
    (0..now.rows)
        .zip(now.lines.iter().zip(&prev.lines))
        .filter(|(_, (now, prev))| now != prev)
        .map(|(y, (spans, _))| ScreenLine {
            y,
            spans: spans.clone(),
        })
        .collect()
}

fn screen_frame(term_id: &str, painted: &Painted, full: bool, lines: Vec<ScreenLine>) -> Utf8Bytes {
    frame_text(TermFrame::Screen {
        term_id: term_id.to_string(),
        cols: painted.cols,
        rows: painted.rows,
        full,
        lines,
        cursor: painted.cursor,
        modes: painted.modes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TermSize;
    use serde_json::Value;

    fn next(rx: &mut broadcast::Receiver<TermOut>) -> Option<Value> {
        match rx.try_recv() {
            Ok(TermOut::Frame(text)) => serde_json::from_str(text.as_str()).ok(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_delta_holds_the_changed_lines_and_nothing_goes_when_nothing_changed() {
        let mut emulator = Emulator::new(TermSize { cols: 20, rows: 5 });
        emulator.process(b"one\r\ntwo\r\n");
        let mut feed = ScreenFeed::new();
        let (full, mut rx) = feed.subscribe("t1", &emulator);
        let full: Value = serde_json::from_str(full.as_str()).unwrap();
        assert_eq!(full["full"], true);
        assert_eq!(full["lines"].as_array().unwrap().len(), 5);
        assert_eq!(
            full["lines"][1],
            serde_json::json!({"y":1,"spans":[{"t":"two"}]})
        );
        feed.tick("t1", &emulator);
        assert!(next(&mut rx).is_none(), "nothing changed: no frame");
        emulator.process(b"three");
        feed.changed();
        assert!(
            feed.is_due(),
            "the first change after a quiet tick goes at once"
        );
        feed.tick("t1", &emulator);
        let delta = next(&mut rx).unwrap();
        assert!(delta.get("full").is_none());
        assert_eq!(
            delta["lines"],
            serde_json::json!([{"y":2,"spans":[{"t":"three"}]}])
        );
        assert_eq!(
            delta["cursor"],
            serde_json::json!({"x":5,"y":2,"visible":true})
        );
        // A cursor move alone is a frame without lines.
        emulator.process(b"\x1b[H");
        feed.changed();
        assert!(!feed.is_due(), "coalesced: not before the tick");
        feed.tick("t1", &emulator);
        let moved = next(&mut rx).unwrap();
        assert_eq!(moved["lines"], serde_json::json!([]));
        assert_eq!(moved["cursor"]["y"], 0);
    }
}
