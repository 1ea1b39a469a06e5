//! What the App makes of a room operation's answer. The frames the
//! operation caused came first on the same socket, so a success needs
//! nothing more; a failure is said whole, and a line that surely was not
//! acted on comes back to the input.

use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::protocol::{Addressee, CancelResponse, CleanupResponse, InterruptResponse};
use crate::tui::app::App;

impl App {
    pub(crate) fn on_answer(&mut self, answer: Answer) {
        let Err(err) = &answer.result else {
            self.on_success(&answer);
            return;
        };
        match &answer.op {
            RoomOp::Message { to, .. } => {
                if *to == Addressee::Agent {
                    self.pending_messages = self.pending_messages.saturating_sub(1);
                }
                self.failed("message not sent", err, &answer.op);
            }
            RoomOp::Exec(_) => self.failed("command not run", err, &answer.op),
            RoomOp::Interrupt(_) => self.toast(format!("interrupt failed: {err}"), true),
            RoomOp::Cancel(_) => self.toast(format!("cancel failed: {err}"), true),
            RoomOp::Cleanup => self.toast(format!("cleanup failed: {err}"), true),
            // Answered in src/tui/rename.rs.
            RoomOp::Rename(_) => {}
        }
    }

    fn on_success(&mut self, answer: &Answer) {
        match &answer.op {
            RoomOp::Message { to, .. } => {
                if *to == Addressee::Agent {
                    self.pending_messages = self.pending_messages.saturating_sub(1);
                }
            }
            RoomOp::Exec(_) | RoomOp::Rename(_) => {}
            RoomOp::Interrupt(_) => {
                let done = answer.decode::<InterruptResponse>().map(|a| a.interrupted);
                self.stopped("interrupt", done);
            }
            RoomOp::Cancel(_) => {
                let done = answer.decode::<CancelResponse>().map(|a| a.cancelled);
                self.stopped("cancel", done);
            }
            RoomOp::Cleanup => match answer.decode::<CleanupResponse>() {
                Ok(done) => {
                    if let Some(errors) = done.errors.filter(|e| !e.is_empty()) {
                        self.toast(
                            format!("cleanup partly failed: {}", errors.join("; ")),
                            true,
                        );
                    }
                }
                Err(err) => self.toast(format!("cleanup: {err}"), true),
            },
        }
    }

    /// An interrupt or cancel answered whether there was something to stop.
    fn stopped(&mut self, what: &str, done: Result<bool, String>) {
        match done {
            Ok(true) => {}
            Ok(false) => self.toast(format!("nothing to {what}"), false),
            Err(err) => self.toast(format!("{what}: {err}"), true),
        }
    }

    /// An operation failed: say so, whole. When the backend surely did
    /// nothing, put the line back if the input is free (it is in the
    /// history anyway); when it may have, say where to look instead.
    fn failed(&mut self, what: &str, err: &RpcError, op: &RoomOp) {
        let Some((line, mode)) = self.line_for(op) else {
            return;
        };
        if err.surely_not_done() {
            self.toast(format!("{what}: {err}"), true);
            if self.composer.is_empty() {
                self.composer.set_text(&line);
                self.composer.mode = mode;
            }
        } else {
            self.toast(format!("no answer for `{line}`: {err}"), true);
        }
    }
}
