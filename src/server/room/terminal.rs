//! The room's side of its shared terminal (docs/protocol.md "The shared
//! terminal"): it starts one on the first `term_open`, keeps `terminal` in
//! the state, tells every socket when one opens and ends, and ends it on
//! `term_close` and cleanup. The terminal itself runs in its own task
//! (`server::terminal`).

use super::{RoomActor, outgoing, state};
use crate::protocol::{ServerFrame, TermFrame, TermSize, TerminalState};
use crate::server::errors::ApiError;
use crate::server::terminal::{self, TermHandle, TermNews};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Answers to `term_close`, told once the terminal has ended.
pub(super) type Closing = Vec<oneshot::Sender<Result<(), ApiError>>>;

impl RoomActor {
    /// The running terminal, or a new one opened by `by` at `size`.
    pub(super) fn open_terminal(
        &mut self,
        by: Option<String>,
        size: Option<TermSize>,
    ) -> Option<TermHandle> {
        // One whose task is over without a word (it cannot be reached)
        // is ended here, so that a new one opens at once.
        if self.terminal.as_ref().is_some_and(TermHandle::is_gone) {
            let reason = "the terminal stopped answering";
            self.end_terminal(None, Some(reason.to_string()));
        }
        if let Some(handle) = &self.terminal {
            return Some(handle.clone());
        }
        let by = by?;
        let handle = terminal::spawn(terminal::Launch {
            sandbox: self.sandbox.clone(),
            by,
            size: size.unwrap_or(TermSize::DEFAULT),
            idle: self.shared.terminal_idle,
            news: self.term_news.sender(mpsc::unbounded_channel),
        });
        self.terminal = Some(handle.clone());
        Some(handle)
    }

    /// `term_close`: ends the terminal `term_id`; answered once it ended.
    pub(super) fn close_terminal(
        &mut self,
        term_id: String,
        reply: oneshot::Sender<Result<(), ApiError>>,
    ) {
        match &self.terminal {
            Some(handle) if handle.term_id == term_id => {
                handle.close();
                self.closing.push(reply);
            }
            _ => {
                let _ = reply.send(Err(ApiError::not_found(
                    "no such terminal",
                    "termId",
                    "no terminal with this id runs in the room",
                )));
            }
        }
    }

    /// What the terminal's task says.
    pub(super) fn terminal_news(&mut self, news: TermNews) {
        let ours = |id: &str, me: &Option<TermHandle>| me.as_ref().is_some_and(|h| h.term_id == id);
        match news {
            TermNews::Started {
                term_id,
                by,
                size,
                ack,
            } => {
                let wanted = ours(&term_id, &self.terminal);
                if wanted {
                    self.broadcast(&ServerFrame::Term(TermFrame::Open {
                        term_id: term_id.clone(),
                        by,
                        cols: size.cols,
                        rows: size.rows,
                    }));
                    self.set_terminal_state(Some(TerminalState {
                        term_id,
                        cols: size.cols,
                        rows: size.rows,
                    }));
                }
                // One the room no longer wants (cleaned up meanwhile) ends.
                let _ = ack.send(wanted);
            }
            TermNews::Resized { term_id, size } => {
                if ours(&term_id, &self.terminal) {
                    self.set_terminal_state(Some(TerminalState {
                        term_id,
                        cols: size.cols,
                        rows: size.rows,
                    }));
                }
            }
            TermNews::Ended {
                term_id,
                exit_code,
                reason,
            } => {
                if ours(&term_id, &self.terminal) {
                    self.end_terminal(exit_code, reason);
                }
            }
        }
    }

    /// The terminal is over (it exited, was closed, failed, or the room is
    /// being cleaned up): everyone is told (why, when it failed), and those
    /// who closed it answered.
    pub(in crate::server) fn end_terminal(
        &mut self,
        exit_code: Option<i32>,
        reason: Option<String>,
    ) {
        let Some(handle) = self.terminal.take() else {
            return;
        };
        // Idempotent when it has ended already.
        handle.close();
        // One that never started (the sandbox failed) was never announced.
        let opened = self
            .terminal_state
            .as_ref()
            .is_some_and(|t| t.term_id == handle.term_id);
        if opened {
            let frame = ServerFrame::Term(TermFrame::Exit {
                term_id: handle.term_id.clone(),
                exit_code,
                reason,
            });
            let mut out = outgoing(super::frame_text(&frame), None);
            if let Some(frame) = Arc::get_mut(&mut out) {
                frame.term_exit = Some(handle.term_id.clone());
            }
            let _ = self.frames.send(out);
        }
        self.set_terminal_state(None);
        for reply in self.closing.drain(..) {
            let _ = reply.send(Ok(()));
        }
    }

    fn set_terminal_state(&mut self, terminal: Option<TerminalState>) {
        if self.terminal_state != terminal {
            self.terminal_state = terminal;
            let value = serde_json::to_value(&self.terminal_state).unwrap_or_default();
            self.publish(&[state::Change::Field("terminal", value)]);
        }
    }

    /// The terminal and its size, for a turn that wants its screen.
    pub(super) fn terminal_for_turn(&self) -> Option<(TermHandle, TermSize)> {
        let handle = self.terminal.clone()?;
        let state = self.terminal_state.as_ref()?;
        Some((
            handle,
            TermSize {
                cols: state.cols,
                rows: state.rows,
            },
        ))
    }
}
