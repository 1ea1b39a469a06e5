//! What the room's frames do to the App: full states, deltas, presence,
//! typing, the agent's streamed reply, command output, the shell's
//! directory, cleanup.

use crate::client::deltas::Delta;
use crate::protocol::{
    AiPhase, Checkpoint, DuetMessage, ExecFrame, ExecRecord, PortState, Process, ServerFrame,
    ShellState, TerminalState,
};
use crate::protocol::{Approval, Policy};
use crate::tui::app::{App, Effect, Pane, TYPING_MS, Typist};
use crate::tui::approvals::You;
use crate::tui::chat::LiveTurn;
use crate::tui::scroll::Scroll;
use serde_json::Value;

/// How a field of a `duet_state` patch applies; answers whether the view
/// changed. Fields not in [`PATCH_FIELDS`] are ignored (docs/protocol.md:
/// a client ignores fields it does not know).
type PatchField = fn(&mut App, Value) -> bool;

/// The room state's fields a patch may carry, by name. `messages` and
/// `execs` travel as `duet_message` and `duet_exec`; a backend that
/// patches them anyway is understood.
const PATCH_FIELDS: &[(&str, PatchField)] = &[
    ("messages", |app, value| {
        match serde_json::from_value::<Vec<DuetMessage>>(value) {
            Ok(messages) => {
                app.apply_messages(&messages);
                true
            }
            Err(err) => app.bad_patch("messages", &err),
        }
    }),
    ("execs", |app, value| {
        match serde_json::from_value::<Vec<ExecRecord>>(value) {
            Ok(records) => app.apply_records(&records),
            Err(err) => app.bad_patch("execs", &err),
        }
    }),
    ("shell", |app, value| {
        match serde_json::from_value::<ShellState>(value) {
            Ok(shell) => app.set_cwd(shell.cwd),
            Err(err) => app.bad_patch("shell", &err),
        }
    }),
    ("terminal", |app, value| {
        match serde_json::from_value::<Option<TerminalState>>(value) {
            Ok(terminal) => app.set_terminal(terminal),
            Err(err) => app.bad_patch("terminal", &err),
        }
    }),
    ("processes", |app, value| {
        match serde_json::from_value::<Vec<Process>>(value) {
            Ok(list) => app.set_processes(list),
            Err(err) => app.bad_patch("processes", &err),
        }
    }),
    ("ports", |app, value| {
        match serde_json::from_value::<Vec<PortState>>(value) {
            Ok(ports) => app.set_ports(ports),
            Err(err) => app.bad_patch("ports", &err),
        }
    }),
    ("checkpoints", |app, value| {
        match serde_json::from_value::<Vec<Checkpoint>>(value) {
            Ok(list) => app.set_checkpoints(list),
            Err(err) => app.bad_patch("checkpoints", &err),
        }
    }),
    ("policy", |app, value| {
        match serde_json::from_value::<Policy>(value) {
            Ok(policy) => app.set_policy(policy),
            Err(err) => app.bad_patch("policy", &err),
        }
    }),
    ("allow", |app, value| {
        match serde_json::from_value::<Vec<String>>(value) {
            Ok(allow) => app.set_allow(allow),
            Err(err) => app.bad_patch("allow", &err),
        }
    }),
    ("approvals", |app, value| {
        match serde_json::from_value::<Vec<Approval>>(value) {
            Ok(open) => app.set_approvals(open),
            Err(err) => app.bad_patch("approvals", &err),
        }
    }),
];

impl App {
    pub(crate) fn on_frame(&mut self, frame: ServerFrame, effects: &mut Vec<Effect>) -> bool {
        match frame {
            ServerFrame::Identity { .. } | ServerFrame::Rpc(_) => false,
            ServerFrame::Approval(frame) => self.on_approval_frame(frame),
            ServerFrame::You {
                id,
                name,
                role,
                invite_id,
            } => self.on_you(
                You {
                    id,
                    name,
                    role,
                    invite_id,
                },
                effects,
            ),
            ServerFrame::Process(frame) => self.on_process_frame(frame),
            ServerFrame::Term(frame) => self.on_term_frame(frame),
            ServerFrame::State { state } => {
                self.apply_messages(&state.messages);
                self.apply_records(&state.execs);
                if let Some(shell) = state.shell {
                    self.set_cwd(shell.cwd);
                }
                self.set_terminal(state.terminal);
                self.set_processes(state.processes);
                self.set_ports(state.ports);
                self.set_checkpoints(state.checkpoints);
                self.set_policy(state.policy);
                self.set_allow(state.allow);
                self.set_approvals(state.approvals);
                true
            }
            ServerFrame::Error { error, .. } if self.term_input_refused(&error) => true,
            ServerFrame::StateError { error } | ServerFrame::Error { error, .. } => {
                self.toast(format!("backend: {error}"), true);
                true
            }
            ServerFrame::Presence { users } => {
                self.presence = users;
                let ids: Vec<&str> = self.presence.iter().map(|u| u.id.as_str()).collect();
                self.typing.retain(|t| ids.contains(&t.id.as_str()));
                self.term.typing.retain(|t| ids.contains(&t.id.as_str()));
                true
            }
            // The socket hands on whole lists, deltas applied.
            ServerFrame::PresenceDelta(_) => false,
            ServerFrame::Typing {
                id,
                name,
                term_id: Some(_),
            } => self.on_term_typing(id, name),
            ServerFrame::Typing { id, name, .. } => {
                if id == self.session.connection_id {
                    return false;
                }
                let until_ms = self.now_ms + TYPING_MS;
                match self.typing.iter_mut().find(|t| t.id == id) {
                    Some(t) => t.until_ms = until_ms,
                    None => self.typing.push(Typist { id, name, until_ms }),
                }
                true
            }
            ServerFrame::Ai {
                phase,
                turn_id,
                text,
                error,
                by_connection,
            } => {
                let now = self.now_ms;
                if phase == AiPhase::Start {
                    self.agent_turn_began();
                }
                self.with_anchor(Pane::Chat, |app| {
                    let chat = &mut app.chat;
                    // A frame of another turn starts a fresh live reply.
                    if chat.turn.as_ref().is_none_or(|t| t.turn_id != turn_id) {
                        chat.turn = Some(LiveTurn {
                            turn_id: turn_id.clone(),
                            text: String::new(),
                            started_ms: now,
                            ended: false,
                            by_connection: None,
                        });
                    }
                    let Some(turn) = chat.turn.as_mut() else {
                        return;
                    };
                    match phase {
                        // A later round of the same turn streams on.
                        AiPhase::Start => {
                            turn.ended = false;
                            turn.by_connection = by_connection.or(turn.by_connection.take());
                        }
                        AiPhase::Delta => {
                            turn.ended = false;
                            turn.text.push_str(text.as_deref().unwrap_or(""));
                        }
                        AiPhase::End => turn.ended = true,
                        AiPhase::Error => chat.turn = None,
                    }
                });
                // An ended turn's reason is stored as a system message and
                // shows in the chat; it is logged here for the record.
                if let Some(error) = error {
                    tracing::debug!(%error, "agent turn ended with an error");
                }
                true
            }
            ServerFrame::Exec(frame) => {
                let now = self.now_ms;
                let mut changed = false;
                if let ExecFrame::Complete { cwd: Some(cwd), .. } = &frame {
                    changed |= self.set_cwd(cwd.clone());
                }
                let shown =
                    self.with_anchor(Pane::Output, |app| app.execs.apply_frame(&frame, now));
                if shown {
                    self.mark_unseen(Pane::Output);
                }
                // A person's command is also a line of the chat (unless
                // `/clear` hid it here); only its start adds a line.
                let in_chat = match &frame {
                    ExecFrame::Start { exec_id, .. } if !self.execs.is_hidden(exec_id) => {
                        let added = self
                            .with_anchor(Pane::Chat, |app| app.chat.apply_exec_frame(&frame, now));
                        if added {
                            self.mark_unseen(Pane::Chat);
                        }
                        added
                    }
                    ExecFrame::Complete { .. } => self.chat.apply_exec_frame(&frame, now),
                    _ => false,
                };
                changed |= in_chat;
                changed || shown
            }
            ServerFrame::Cleanup { by } => {
                self.set_cwd(crate::protocol::WORKSPACE.to_string());
                self.chat.clear_all();
                self.execs.clear_all();
                // The cleanup killed every process: nothing to follow;
                // it deleted the checkpoints too.
                self.procs.followed = None;
                self.checkpoints = Default::default();
                self.forget_diffs();
                self.chat_scroll = Scroll::default();
                self.output_scroll = Scroll::default();
                self.toast(format!("{by} cleaned up the room"), false);
                true
            }
        }
    }

    /// A full list of the latest messages (a state): it replaces the view
    /// from its first message on.
    fn apply_messages(&mut self, messages: &[DuetMessage]) {
        let first = !self.got_state;
        self.got_state = true;
        let mut grew = false;
        self.with_anchor(Pane::Chat, |app| {
            grew = app.chat.apply_state(messages, first);
        });
        if grew {
            self.mark_unseen(Pane::Chat);
        }
    }

    /// A state delta: one message by id, or a patch field by field.
    pub(crate) fn on_delta(&mut self, delta: Delta) -> bool {
        match delta {
            Delta::Message { message } => {
                let mut grew = false;
                self.with_anchor(Pane::Chat, |app| grew = app.chat.apply_message(message));
                if grew {
                    self.mark_unseen(Pane::Chat);
                }
                // As a state would: the latest 100 in view, older ones a
                // page away; never under the eyes of someone scrolled up.
                if self.chat_scroll.following() {
                    self.chat.keep_latest(crate::protocol::STATE_MESSAGES);
                }
                true
            }
            Delta::State { patch } => {
                let mut changed = false;
                for (field, value) in patch {
                    if let Some((_, apply)) = PATCH_FIELDS.iter().find(|(name, _)| *name == field) {
                        changed |= apply(self, value);
                    }
                }
                changed
            }
        }
    }

    fn apply_records(&mut self, records: &[ExecRecord]) -> bool {
        let changed = self.with_anchor(Pane::Output, |app| app.execs.apply_records(records));
        if changed {
            self.mark_unseen(Pane::Output);
        }
        // People's commands are lines of the chat too, unless `/clear`
        // hid them here.
        let in_chat = self.with_anchor(Pane::Chat, |app| {
            let execs = &app.execs;
            let shown = records.iter().filter(|r| !execs.is_hidden(&r.exec_id));
            app.chat.apply_exec_records(shown)
        });
        changed | in_chat
    }

    /// Where the room's next command runs, as the backend last said.
    /// Answers whether it changed.
    pub(crate) fn set_cwd(&mut self, cwd: String) -> bool {
        let changed = self.shell_cwd.as_deref() != Some(cwd.as_str());
        self.shell_cwd = Some(cwd);
        changed
    }

    /// A patch field of a known name with a value of the wrong shape.
    fn bad_patch(&mut self, field: &str, err: &serde_json::Error) -> bool {
        tracing::debug!(%field, %err, "ignored a patch field of the wrong shape");
        false
    }
}
