//! The room state as clients see it, and how a change of it reaches them
//! (docs/protocol.md "State deltas"): sockets without deltas get the full
//! `cf_agent_state`; sockets that asked for deltas get one `duet_message`
//! per stored or changed message and `duet_state {patch}` for any other
//! field. A new state field is one line in `StateRef` and a
//! `Change::Field` where it changes.

use super::{OutFrame, RoomActor, frame_text};
use crate::protocol::{
    Approval, Checkpoint, DuetMessage, ExecRecord, Policy, PortState, Process, ShellState,
    TerminalState,
};
use axum::extract::ws::Utf8Bytes;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;

/// `cf_agent_state`, serialized from borrowed state (same bytes as
/// `ServerFrame::State`).
#[derive(Serialize)]
#[serde(tag = "type", rename = "cf_agent_state")]
pub(super) struct StateFrame<'a> {
    pub(super) state: StateRef<'a>,
}

/// The fields of the room state, borrowed, in wire order.
#[derive(Serialize)]
pub(super) struct StateRef<'a> {
    pub(super) messages: &'a VecDeque<DuetMessage>,
    pub(super) execs: &'a VecDeque<ExecRecord>,
    pub(super) shell: &'a ShellState,
    pub(super) terminal: Option<&'a TerminalState>,
    pub(super) processes: &'a [Process],
    pub(super) ports: &'a [PortState],
    pub(super) checkpoints: &'a [Checkpoint],
    pub(super) policy: Policy,
    pub(super) approvals: &'a [Approval],
    pub(super) allow: &'a [String],
}

/// `duet_message`: one stored or changed message.
#[derive(Serialize)]
#[serde(tag = "type", rename = "duet_message")]
struct MessageFrame<'a> {
    message: &'a DuetMessage,
}

/// `duet_state`: new values of fields other than `messages` and `execs`.
#[derive(Serialize)]
#[serde(tag = "type", rename = "duet_state")]
struct PatchFrame {
    patch: serde_json::Map<String, serde_json::Value>,
}

/// One change of the room state.
pub(in crate::server) enum Change<'a> {
    /// A message was stored or changed.
    Message(&'a DuetMessage),
    /// Another field of the state has a new value (`shell`; `execs`
    /// stream as `duet_exec` instead).
    Field(&'static str, serde_json::Value),
}

/// The frames a deltas socket gets for `changes`: one per message, then
/// one patch holding every other field.
fn delta_frames(changes: &[Change<'_>]) -> Vec<Utf8Bytes> {
    let mut frames = Vec::with_capacity(changes.len());
    let mut patch = serde_json::Map::new();
    for change in changes {
        match change {
            Change::Message(message) => frames.push(frame_text(&MessageFrame { message })),
            Change::Field(name, value) => {
                patch.insert((*name).to_string(), value.clone());
            }
        }
    }
    if !patch.is_empty() {
        frames.push(frame_text(&PatchFrame { patch }));
    }
    frames
}

impl RoomActor {
    /// The current `cf_agent_state`, serialized once per change.
    pub(super) fn state_text(&mut self) -> Utf8Bytes {
        if let Some(text) = &self.state_cache {
            return text.clone();
        }
        let approvals = self.access.approvals();
        let allow = self.allow_list();
        let text = frame_text(&StateFrame {
            state: StateRef {
                messages: &self.messages,
                execs: &self.execs,
                shell: &self.shell,
                terminal: self.terminal_state.as_ref(),
                processes: &self.processes.listed,
                ports: &self.ports,
                checkpoints: &self.checkpoints.list,
                policy: self.access.policy(),
                approvals: &approvals,
                allow: &allow,
            },
        });
        self.state_cache = Some(text.clone());
        text
    }

    /// Tells every connection that the state changed by `changes`: the
    /// full state, or their deltas to sockets that asked for them.
    pub(in crate::server) fn publish(&mut self, changes: &[Change<'_>]) {
        self.state_cache = None;
        // The whole state only when a socket without deltas is there to get it.
        let full = if self.full_sockets.is_empty() {
            Utf8Bytes::default()
        } else {
            self.state_text()
        };
        let frame = OutFrame {
            deltas: Some(delta_frames(changes)),
            ..OutFrame::plain(full)
        };
        let _ = self.frames.send(Arc::new(frame));
    }

    /// Sends the full state to every connection, deltas or not (on
    /// connect and after a cleanup).
    pub(in crate::server) fn publish_whole(&mut self) {
        self.state_cache = None;
        let text = self.state_text();
        let _ = self.frames.send(super::outgoing(text, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Role, RoomState, ServerFrame};

    fn message() -> DuetMessage {
        DuetMessage {
            client_id: None,
            id: "000000000001".into(),
            role: Role::User,
            user_id: Some("ada".into()),
            text: "hi".into(),
            ts: 1,
            runs: None,
            ..DuetMessage::default()
        }
    }

    #[test]
    fn borrowed_state_frame_has_the_wire_bytes() {
        let messages: VecDeque<DuetMessage> = vec![message()].into();
        let execs = VecDeque::new();
        let shell = ShellState {
            cwd: "/workspace/app".into(),
        };
        let borrowed = frame_text(&StateFrame {
            state: StateRef {
                messages: &messages,
                execs: &execs,
                shell: &shell,
                terminal: None,
                processes: &[],
                ports: &[],
                checkpoints: &[],
                policy: Policy::Ask,
                approvals: &[],
                allow: &[],
            },
        });
        let owned = serde_json::to_string(&ServerFrame::State {
            state: RoomState {
                messages: messages.into(),
                execs: Vec::new(),
                shell: Some(shell),
                terminal: None,
                processes: Vec::new(),
                ports: Vec::new(),
                checkpoints: Vec::new(),
                policy: Policy::Ask,
                approvals: Vec::new(),
                allow: Vec::new(),
            },
        })
        .unwrap();
        assert_eq!(borrowed.as_str(), owned);
    }

    #[test]
    fn deltas_are_one_frame_per_message_and_one_patch() {
        let m = message();
        let frames = delta_frames(&[
            Change::Message(&m),
            Change::Field("terminal", serde_json::Value::Null),
            Change::Field("policy", "ask".into()),
        ]);
        let parsed: Vec<serde_json::Value> = frames
            .iter()
            .map(|f| serde_json::from_str(f.as_str()).unwrap())
            .collect();
        assert_eq!(
            parsed,
            [
                serde_json::json!({"type":"duet_message","message":m}),
                serde_json::json!({"type":"duet_state","patch":{"terminal":null,"policy":"ask"}}),
            ]
        );
    }
}
