//! A socket's side of the shared terminal: its attachment (the feed it
//! forwards), the rpc arguments and client frames it reads, and the rule
//! that each `exit` reaches it once, whether from the terminal's feed or
//! the room's broadcast.

use super::{Attached, TermHandle, TermOut};
use crate::protocol::{MAX_TERM_INPUT, TermSize};
use crate::server::errors::{ApiError, add_detail};
use axum::extract::ws::Utf8Bytes;
use base64::Engine;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

/// What the terminal's feed gave a socket.
pub(crate) enum Feed {
    /// A frame to send.
    Send(Utf8Bytes),
    /// The terminal ended: its `exit` frame, unless the socket had it.
    Ended(Option<Utf8Bytes>),
    /// The socket fell behind: it attaches again, for a fresh snapshot
    /// (a `full` screen frame when it gets `screen` frames: the flag).
    Behind(TermHandle, bool),
}

/// The socket's terminal, if it attached to one.
#[derive(Default)]
pub(crate) struct TermSide {
    attached: Option<(TermHandle, broadcast::Receiver<TermOut>)>,
    /// It gets `screen` frames instead of `data` frames.
    screen: bool,
    /// The terminal whose `exit` this socket was sent.
    ended: Option<String>,
}

impl TermSide {
    /// Attaches (again): frames before `attached.snapshot` are not sent.
    pub(crate) fn attach(&mut self, handle: TermHandle, attached: Attached) {
        self.screen = attached.screen;
        self.attached = Some((handle, attached.frames));
    }

    /// The terminal this socket is attached to, when `term_id` names it.
    pub(crate) fn handle(&self, term_id: &str) -> Option<&TermHandle> {
        self.attached
            .as_ref()
            .map(|(handle, _)| handle)
            .filter(|h| h.term_id == term_id)
    }

    /// This socket (`conn`) became a viewer: it watches on, and its window
    /// no longer sizes the terminal.
    pub(crate) fn forget_size(&self, conn: u64) {
        if let Some((handle, _)) = &self.attached {
            handle.forget_size(conn);
        }
    }

    /// Detaches (the socket asked, or left); false when it was not attached
    /// to `term_id`.
    pub(crate) fn detach(&mut self, conn: u64, term_id: Option<&str>) -> bool {
        let ours = match (&self.attached, term_id) {
            (Some((handle, _)), Some(id)) => handle.term_id == id,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if ours && let Some((handle, _)) = self.attached.take() {
            handle.detach(conn);
        }
        ours
    }

    /// Stops reading the feed without telling the terminal: the socket
    /// stays attached there, its size counted, and attaches again (it fell
    /// behind).
    pub(crate) fn drop_feed(&mut self) {
        self.attached = None;
    }

    /// The next thing from the terminal; never resolves when not attached.
    pub(crate) async fn next(&mut self) -> Feed {
        let Some((handle, frames)) = &mut self.attached else {
            return std::future::pending().await;
        };
        match frames.recv().await {
            Ok(TermOut::Frame(text)) => Feed::Send(text),
            Ok(TermOut::Exit(text)) => {
                let term_id = handle.term_id.clone();
                self.attached = None;
                Feed::Ended(self.first_exit(term_id, text))
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                Feed::Behind(handle.clone(), self.screen)
            }
            // The terminal's task is over without its `exit` on the feed:
            // the room's `exit` (with why) is the one this socket gets.
            Err(broadcast::error::RecvError::Closed) => {
                self.attached = None;
                Feed::Ended(None)
            }
        }
    }

    /// A room frame announcing that `term_id` ended: the frames the
    /// terminal sent before it (when attached), then the frame unless this
    /// socket had it.
    pub(crate) fn room_exit(&mut self, term_id: &str, text: &Utf8Bytes) -> Vec<Utf8Bytes> {
        let mut out = Vec::new();
        if let Some((handle, frames)) = &mut self.attached
            && handle.term_id == term_id
        {
            while let Ok(TermOut::Frame(frame)) = frames.try_recv() {
                out.push(frame);
            }
            self.attached = None;
        }
        out.extend(self.first_exit(term_id.to_string(), text.clone()));
        out
    }

    fn first_exit(&mut self, term_id: String, text: Utf8Bytes) -> Option<Utf8Bytes> {
        if self.ended.as_deref() == Some(term_id.as_str()) {
            return None;
        }
        self.ended = Some(term_id);
        Some(text)
    }
}

/// `term_open`'s `{cols?, rows?, screen?}`: the window (both or neither),
/// and whether the socket gets `screen` frames instead of `data`.
pub(crate) fn open_args(args: &Map<String, Value>) -> Result<(Option<TermSize>, bool), ApiError> {
    let size = open_size(args);
    let screen = match args.get("screen") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(screen)) => Ok(*screen),
        Some(_) => Err("must be true or false"),
    };
    match (size, screen) {
        (Ok(size), Ok(screen)) => Ok((size, screen)),
        (Err(mut e), Err(problem)) => {
            if let Some(details) = e.body.details.as_mut() {
                add_detail(details, "screen", problem);
            }
            Err(e)
        }
        (Err(e), Ok(_)) => Err(e),
        (Ok(_), Err(problem)) => Err(ApiError::field("screen", problem)),
    }
}

/// `term_open`'s `{cols?, rows?}`: both or neither.
fn open_size(args: &Map<String, Value>) -> Result<Option<TermSize>, ApiError> {
    let cols = args.get("cols").filter(|v| !v.is_null());
    let rows = args.get("rows").filter(|v| !v.is_null());
    let mut details = Default::default();
    let size = match (cols, rows) {
        (None, None) => None,
        (cols, rows) => {
            let (cols, rows) = (cols.and_then(Value::as_i64), rows.and_then(Value::as_i64));
            for (field, problem) in TermSize::problems(cols, rows) {
                add_detail(&mut details, field, problem);
            }
            Some(TermSize::clamped(cols.unwrap_or(0), rows.unwrap_or(0)))
        }
    };
    if details.is_empty() {
        Ok(size)
    } else {
        Err(ApiError::invalid(details))
    }
}

/// The `termId` an rpc names.
pub(crate) fn term_id(args: &Map<String, Value>) -> Result<String, ApiError> {
    match args.get("termId").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => Ok(id.to_string()),
        _ => Err(ApiError::field("termId", "must be a terminal's id")),
    }
}

/// The bytes of a `duet_term_input` frame.
pub(crate) fn input_bytes(data: &str) -> Result<Vec<u8>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("duet_term_input: data must be base64: {e}"))?;
    if bytes.len() > MAX_TERM_INPUT {
        return Err(format!(
            "duet_term_input: at most {MAX_TERM_INPUT} bytes per frame"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn open_takes_both_sizes_or_neither() {
        assert_eq!(open_size(&obj(json!({}))).unwrap(), None);
        assert_eq!(
            open_size(&obj(json!({"cols": 100, "rows": 30}))).unwrap(),
            Some(TermSize {
                cols: 100,
                rows: 30
            })
        );
        let bad = open_size(&obj(json!({"cols": 100}))).unwrap_err();
        let details = bad.body.details.unwrap();
        assert!(details.contains_key("rows") && !details.contains_key("cols"));
        let bad = open_size(&obj(json!({"cols": "wide", "rows": 2.5}))).unwrap_err();
        assert_eq!(bad.body.details.unwrap().len(), 2);
        // Any whole number is taken, within the bounds.
        let clamped = |cols: i64, rows: i64| open_size(&obj(json!({"cols": cols, "rows": rows})));
        assert_eq!(
            clamped(0, 9000).unwrap(),
            Some(TermSize {
                cols: TermSize::MIN_COLS,
                rows: TermSize::MAX_ROWS
            })
        );
        assert_eq!(
            clamped(-5, 1).unwrap(),
            Some(TermSize {
                cols: TermSize::MIN_COLS,
                rows: TermSize::MIN_ROWS
            })
        );
        assert_eq!(
            clamped(65535, 65535).unwrap(),
            Some(TermSize {
                cols: TermSize::MAX_COLS,
                rows: TermSize::MAX_ROWS
            })
        );
    }

    #[tokio::test]
    async fn a_screen_socket_that_fell_behind_attaches_again_for_screen_frames() {
        let (requests, _rx) = tokio::sync::mpsc::unbounded_channel();
        let handle = TermHandle {
            term_id: "t1".into(),
            requests,
        };
        for screen in [true, false] {
            let (sender, frames) = broadcast::channel(1);
            let attached = Attached {
                term_id: "t1".into(),
                size: TermSize::DEFAULT,
                snapshot: Utf8Bytes::from_static("{}"),
                screen,
                frames,
            };
            let mut side = TermSide::default();
            side.attach(handle.clone(), attached);
            for _ in 0..3 {
                sender
                    .send(TermOut::Frame(Utf8Bytes::from_static("{}")))
                    .unwrap();
            }
            match side.next().await {
                Feed::Behind(again, flag) => {
                    assert_eq!(again.term_id, "t1");
                    assert_eq!(flag, screen, "it asks again for what it had");
                }
                _ => panic!("a socket past its frames is behind"),
            }
        }
    }

    #[test]
    fn screen_is_a_flag_named_with_the_size_when_both_are_wrong() {
        assert_eq!(open_args(&obj(json!({}))).unwrap(), (None, false));
        assert_eq!(
            open_args(&obj(json!({"screen": true}))).unwrap(),
            (None, true)
        );
        let bad = open_args(&obj(json!({"screen": "yes"}))).unwrap_err();
        assert_eq!(bad.body.details.unwrap().len(), 1);
        let bad = open_args(&obj(json!({"screen": 1, "cols": 80}))).unwrap_err();
        let details = bad.body.details.unwrap();
        assert!(details.contains_key("screen") && details.contains_key("rows"));
    }

    #[test]
    fn input_is_base64_and_bounded() {
        assert_eq!(input_bytes("aGk=").unwrap(), b"hi");
        assert!(input_bytes("not base64!").is_err());
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_TERM_INPUT + 1]);
        assert!(input_bytes(&big).is_err());
    }
}
