//! What the socket actor remembers of the shared terminal: whether this
//! client is attached (and with which window size), so that after a
//! reconnect it attaches again; and the input frames bytes become.

use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::protocol::{
    ClientFrame, MAX_TERM_INPUT, ServerFrame, TermFrame, TermSize, TerminalState,
};
use base64::Engine;

/// This connection's attachment to the room's terminal.
#[derive(Debug, Default)]
pub(crate) struct Attachment {
    /// Attached, or asked to be: the window size to give (`None` inside:
    /// none given).
    wanted: Option<Option<TermSize>>,
    /// The terminal the last `term_open` answered.
    term_id: Option<String>,
}

impl Attachment {
    /// A call the UI asked for: opening attaches, detaching or closing
    /// ends the attachment.
    pub(crate) fn on_call(&mut self, op: &RoomOp) {
        match op {
            RoomOp::TermOpen(size) => self.wanted = Some(*size),
            RoomOp::TermDetach(_) | RoomOp::TermClose(_) => *self = Attachment::default(),
            _ => {}
        }
    }

    /// A `term_open` answer says which terminal this is; a refusal ends
    /// the attachment (a lost answer does not: the next connection
    /// attaches again).
    pub(crate) fn on_answer(&mut self, answer: &Answer) {
        if !matches!(answer.op, RoomOp::TermOpen(_)) {
            return;
        }
        match (&answer.result, answer.decode::<TerminalState>()) {
            (_, Ok(terminal)) => self.term_id = Some(terminal.term_id),
            (Err(RpcError::Lost(_) | RpcError::NotSent(_)), _) => {}
            _ => *self = Attachment::default(),
        }
    }

    /// The terminal ended: the server detached every socket.
    pub(crate) fn on_frame(&mut self, frame: &ServerFrame) {
        if let ServerFrame::Term(TermFrame::Exit { term_id, .. }) = frame
            && self.term_id.as_deref() == Some(term_id.as_str())
        {
            *self = Attachment::default();
        }
    }

    /// The window changed size: the next attachment gives the new one.
    pub(crate) fn resized(&mut self, size: TermSize) {
        if let Some(wanted) = &mut self.wanted {
            *wanted = Some(size);
        }
    }

    /// The `term_open` a fresh connection sends, when attached.
    pub(crate) fn reattach(&self) -> Option<RoomOp> {
        self.wanted.map(RoomOp::TermOpen)
    }
}

/// `duet_term_input` frames for `bytes`: at most 64 KiB decoded each
/// (docs/protocol.md), so a large paste goes in pieces, in order.
pub fn input_frames(term_id: &str, bytes: &[u8]) -> Vec<ClientFrame> {
    bytes
        .chunks(MAX_TERM_INPUT)
        .map(|chunk| ClientFrame::TermInput {
            term_id: term_id.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(chunk),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opened(term_id: &str) -> Answer {
        Answer {
            op: RoomOp::TermOpen(Some(TermSize { cols: 80, rows: 24 })),
            result: Ok(json!({"termId": term_id, "cols": 80, "rows": 24})),
        }
    }

    #[test]
    fn an_attached_client_attaches_again_with_its_latest_size() {
        let mut link = Attachment::default();
        assert_eq!(link.reattach(), None);
        link.on_call(&RoomOp::TermOpen(Some(TermSize { cols: 80, rows: 24 })));
        link.on_answer(&opened("t1"));
        link.resized(TermSize {
            cols: 100,
            rows: 30,
        });
        assert_eq!(
            link.reattach(),
            Some(RoomOp::TermOpen(Some(TermSize {
                cols: 100,
                rows: 30
            })))
        );
        // A lost answer keeps the attachment: the next connection retries.
        link.on_answer(&Answer {
            op: RoomOp::TermOpen(None),
            result: Err(RpcError::Lost("dropped".into())),
        });
        assert!(link.reattach().is_some());
    }

    #[test]
    fn detaching_the_terminals_exit_or_a_refusal_end_the_attachment() {
        let mut link = Attachment::default();
        link.on_call(&RoomOp::TermOpen(None));
        link.on_call(&RoomOp::TermDetach(None));
        assert_eq!(link.reattach(), None);

        link.on_call(&RoomOp::TermOpen(None));
        link.on_answer(&opened("t1"));
        // Another terminal's end is not ours.
        link.on_frame(&ServerFrame::Term(TermFrame::Exit {
            term_id: "t0".into(),
            exit_code: Some(0),
            reason: None,
        }));
        assert!(link.reattach().is_some());
        link.on_frame(&ServerFrame::Term(TermFrame::Exit {
            term_id: "t1".into(),
            exit_code: Some(0),
            reason: None,
        }));
        assert_eq!(link.reattach(), None);

        link.on_call(&RoomOp::TermOpen(None));
        link.on_answer(&Answer {
            op: RoomOp::TermOpen(None),
            result: Err(RpcError::Refused("no".into())),
        });
        assert_eq!(link.reattach(), None);
    }

    #[test]
    fn a_large_paste_goes_in_frames_of_at_most_64_kib() {
        let bytes: Vec<u8> = (0..MAX_TERM_INPUT * 2 + 10).map(|i| i as u8).collect();
        let frames = input_frames("t1", &bytes);
        assert_eq!(frames.len(), 3);
        let mut back = Vec::new();
        for frame in frames {
            let ClientFrame::TermInput { term_id, data } = frame else {
                panic!("not an input frame");
            };
            assert_eq!(term_id, "t1");
            let piece = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            assert!(piece.len() <= MAX_TERM_INPUT);
            back.extend(piece);
        }
        assert_eq!(back, bytes);
        assert!(input_frames("t1", b"").is_empty());
    }
}
