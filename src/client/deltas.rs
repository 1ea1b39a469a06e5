//! State deltas (docs/protocol.md "State deltas"): the frames a socket
//! opened with `deltas=1` gets instead of a full `cf_agent_state` after
//! every change. Read here, beside `ServerFrame`, until src/protocol/mod.rs
//! carries them.

use crate::protocol::DuetMessage;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One delta frame (a message is most of them; the socket boxes each).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type")]
#[allow(clippy::large_enum_variant)]
pub enum Delta {
    /// A message was stored or changed: replace it by id, or insert it.
    #[serde(rename = "duet_message")]
    Message { message: DuetMessage },
    /// Fields of the room state other than `messages` and `execs` changed:
    /// the new values by field name.
    #[serde(rename = "duet_state")]
    State { patch: Map<String, Value> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_have_the_wire_shape() {
        let frame: Delta = serde_json::from_str(
            r#"{"type":"duet_message","message":{"id":"7","role":"user","userId":"ada","text":"hi","ts":1}}"#,
        )
        .unwrap();
        assert!(matches!(frame, Delta::Message { message } if message.id == "7"));
        let frame: Delta =
            serde_json::from_str(r#"{"type":"duet_state","patch":{"shell":{"cwd":"/w"}}}"#)
                .unwrap();
        assert!(matches!(frame, Delta::State { patch } if patch.contains_key("shell")));
    }
}
