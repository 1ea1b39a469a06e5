//! The shared terminal, as docs/protocol.md "The shared terminal" says,
//! over real sockets to a real backend and sandbox: the frames and their
//! order, the snapshot a late viewer gets, two people typing, detach, the
//! "smallest" size rule, exit, close, cleanup, the error shapes, isolation,
//! and the agent reading the screen. Backend-neutral: only the protocol.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, Ws};
use crate::common::{b64, unb64};
use duet::emulator::Emulator;
use duet::protocol::TermSize;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use std::time::Duration;

mod resize_race;
mod sandbox;
mod screen_bytes;
mod screens;
mod sharing;
mod sizes;

/// How long a screen may take to show what a test waits for.
const SCREEN_WAIT: Duration = Duration::from_secs(30);

/// A socket attached to the terminal, with the screen it has been sent
/// (kept by a terminal emulator, as a client would), and the other frames
/// it read meanwhile.
struct Viewer {
    ws: Ws,
    term_id: String,
    /// Guarded, as a client's: random output cannot bring the test down.
    screen: Emulator,
    others: Vec<Value>,
}

impl Viewer {
    /// Opens (or joins) the room's terminal from a new socket of `user`,
    /// with the window `size`; checks the answer and the snapshot after it.
    async fn attach(server: &Server, room: &str, user: &str, size: Option<(u16, u16)>) -> Viewer {
        let ws = server.joined(room, &format!("user={user}")).await;
        Viewer::attach_on(ws, size).await
    }

    async fn attach_on(mut ws: Ws, size: Option<(u16, u16)>) -> Viewer {
        let args = match size {
            Some((cols, rows)) => json!([{"cols": cols, "rows": rows}]),
            None => json!([]),
        };
        ws.send(json!({"type":"rpc","id":1,"method":"term_open","args":args}))
            .await;
        let mut others = Vec::new();
        let answer = loop {
            let frame = ws.next().await;
            if frame["type"] == "rpc" && frame["id"] == 1 {
                break frame;
            }
            others.push(frame);
        };
        assert_eq!(answer["success"], true, "{answer}");
        let result = &answer["result"];
        let term_id = result["termId"].as_str().unwrap().to_string();
        let (cols, rows) = (
            result["cols"].as_u64().unwrap() as u16,
            result["rows"].as_u64().unwrap() as u16,
        );
        // Right after the answer: the snapshot.
        let snapshot = ws.next().await;
        assert_eq!(snapshot["type"], "duet_term", "{snapshot}");
        assert_eq!(snapshot["phase"], "data");
        assert_eq!(snapshot["snapshot"], true);
        assert_eq!(snapshot["termId"], term_id.as_str());
        let mut screen = Emulator::new(TermSize { cols, rows });
        screen.process(&unb64(&snapshot["data"]));
        Viewer {
            ws,
            term_id,
            screen,
            others,
        }
    }

    fn text(&self) -> String {
        self.screen.screen().contents()
    }

    async fn type_in(&mut self, keys: &str) {
        let frame =
            json!({"type":"duet_term_input","termId":self.term_id,"data":b64(keys.as_bytes())});
        self.ws.send(frame).await;
    }

    /// Applies one frame; other frames are kept in `others`.
    fn apply(&mut self, frame: Value) {
        if frame["type"] != "duet_term" || frame["termId"] != self.term_id.as_str() {
            self.others.push(frame);
            return;
        }
        match frame["phase"].as_str() {
            Some("data") => {
                self.screen.process(&unb64(&frame["data"]));
            }
            Some("resize") => {
                let rows = frame["rows"].as_u64().unwrap() as u16;
                let cols = frame["cols"].as_u64().unwrap() as u16;
                self.screen.set_size(TermSize { cols, rows });
                self.others.push(frame);
            }
            _ => self.others.push(frame),
        }
    }

    /// Reads frames until the screen holds `what`.
    async fn until_screen(&mut self, what: &str) {
        let found = tokio::time::timeout(SCREEN_WAIT, async {
            while !self.text().contains(what) {
                let frame = self.ws.next().await;
                self.apply(frame);
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "{what:?} never showed; the screen:\n{}",
            self.text()
        );
    }

    /// Whether the screen holds `what` within `wait` (reading frames).
    async fn shows_within(&mut self, what: &str, wait: Duration) -> bool {
        tokio::time::timeout(wait, async {
            while !self.text().contains(what) {
                let frame = self.ws.next().await;
                self.apply(frame);
            }
        })
        .await
        .is_ok()
    }

    /// Reads frames until the shell waits at a prompt: the cursor's row
    /// ends with `$ ` just before the cursor. (A `$ ` anywhere on the
    /// screen may be an earlier prompt, and keys typed before the new one
    /// is drawn are echoed twice, once by the tty and once by readline.)
    async fn until_prompt(&mut self) {
        let at_prompt = |screen: &vt100::Screen| {
            let (row, col) = screen.cursor_position();
            let (_, cols) = screen.size();
            let line = screen.rows(0, cols).nth(row as usize).unwrap_or_default();
            let before: String = line
                .chars()
                .chain(std::iter::repeat(' '))
                .take(col as usize)
                .collect();
            before.ends_with("$ ")
        };
        let found = tokio::time::timeout(SCREEN_WAIT, async {
            while !at_prompt(self.screen.screen()) {
                let frame = self.ws.next().await;
                self.apply(frame);
            }
        })
        .await;
        assert!(found.is_ok(), "no prompt; the screen:\n{}", self.text());
    }

    /// Reads frames until one that `ok` accepts (also among those read
    /// before).
    async fn until_frame(&mut self, ok: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.others.iter().position(&ok) {
            return self.others.remove(i);
        }
        loop {
            let frame = self.ws.next().await;
            if ok(&frame) {
                return frame;
            }
            self.apply(frame);
        }
    }
}

/// A terminal frame of `phase` for `term_id`.
fn term_frame<'a>(phase: &'a str, term_id: &'a str) -> impl Fn(&Value) -> bool + 'a {
    move |f| f["type"] == "duet_term" && f["phase"] == phase && f["termId"] == term_id
}
