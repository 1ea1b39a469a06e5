//! What the App makes of a room operation's answer. The frames the
//! operation caused came first on the same socket, so a success needs
//! nothing more; a failure is said as a sentence (`client::explain`), and
//! a line that surely was not acted on comes back to the input.

use crate::client::explain;
use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::protocol::{Addressee, CancelResponse, CleanupResponse, InterruptResponse};
use crate::tui::app::App;
use crate::tui::link::LinkToast;

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
                self.failed("your message was not sent", err, &answer.op);
            }
            RoomOp::Exec(cmd) => self.failed(&format!("`{cmd}` was not run"), err, &answer.op),
            RoomOp::Interrupt(_) => self.stop_failed("the interrupt", err),
            RoomOp::Cancel(_) => self.stop_failed("cancelling", err),
            RoomOp::Cleanup => self.stop_failed("the cleanup", err),
            // Answered in src/tui/rename.rs, src/tui/term_view.rs,
            // src/tui/procs.rs, src/tui/undo.rs, src/tui/approvals.rs and
            // src/tui/model.rs.
            RoomOp::Rename(_)
            | RoomOp::TermOpen(_)
            | RoomOp::TermDetach(_)
            | RoomOp::TermClose(_)
            | RoomOp::ProcessStart { .. }
            | RoomOp::ProcessKill(_)
            | RoomOp::ProcessFollow(_)
            | RoomOp::ProcessUnfollow(_)
            | RoomOp::CheckpointCreate(_)
            | RoomOp::CheckpointRestore(_)
            | RoomOp::CheckpointDelete(_)
            | RoomOp::Fork { .. }
            | RoomOp::SetPolicy(_)
            | RoomOp::Approve { .. }
            | RoomOp::InviteCreate(_)
            | RoomOp::SetModel(_) => {}
        }
    }

    fn on_success(&mut self, answer: &Answer) {
        match &answer.op {
            RoomOp::Message { to, .. } => {
                if *to == Addressee::Agent {
                    self.pending_messages = self.pending_messages.saturating_sub(1);
                }
            }
            RoomOp::Exec(_)
            | RoomOp::Rename(_)
            | RoomOp::TermOpen(_)
            | RoomOp::TermDetach(_)
            | RoomOp::TermClose(_)
            | RoomOp::ProcessStart { .. }
            | RoomOp::ProcessKill(_)
            | RoomOp::ProcessFollow(_)
            | RoomOp::ProcessUnfollow(_)
            | RoomOp::CheckpointCreate(_)
            | RoomOp::CheckpointRestore(_)
            | RoomOp::CheckpointDelete(_)
            | RoomOp::Fork { .. }
            | RoomOp::SetPolicy(_)
            | RoomOp::Approve { .. }
            | RoomOp::InviteCreate(_)
            | RoomOp::SetModel(_) => {}
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

    /// An interrupt, cancel or cleanup failed: say why.
    fn stop_failed(&mut self, what: &str, err: &RpcError) {
        match err {
            // Why the connection is down is said once, by its own toast.
            RpcError::NotSent(_) | RpcError::Lost(_) => self.link_toast(
                LinkToast::Note,
                format!("You are not connected: {what} did not go through"),
            ),
            _ => self.toast(
                format!("{} failed: {}", capitalized(what), explain::rpc(err)),
                true,
            ),
        }
    }

    /// An operation failed: say so. When the backend surely did nothing,
    /// put the line back if the input is free (it is in the history
    /// anyway); when it may have, say where to look instead.
    fn failed(&mut self, what: &str, err: &RpcError, op: &RoomOp) {
        let Some((line, mode)) = self.line_for(op) else {
            return;
        };
        // A command the backend failed on midway (a 5xx: its room stopped
        // while it ran) may have run; a 503 is a sandbox still starting.
        let ran_maybe = matches!(op, RoomOp::Exec(_))
            && matches!(err, RpcError::Failed(s) if s.status >= 500 && s.status != 503);
        let back = err.surely_not_done() && !ran_maybe && self.composer.is_empty();
        let back_note = if back {
            " (it is back in the input)"
        } else {
            ""
        };
        match err {
            // Why the connection is down is said once, by its own toast;
            // these go with it when it is back.
            RpcError::NotSent(_) => self.link_toast(
                LinkToast::Note,
                format!("You are not connected: {what}{back_note}"),
            ),
            RpcError::Lost(_) => self.link_toast(
                LinkToast::Note,
                format!(
                    "The connection dropped before the server answered `{line}`: it may have been done (see the chat and the output)"
                ),
            ),
            RpcError::Failed(_) if ran_maybe => {
                let cmd = match op {
                    RoomOp::Exec(cmd) => cmd.as_str(),
                    _ => line.as_str(),
                };
                self.toast(
                    format!(
                        "`{cmd}` may have run: {} (see the output)",
                        explain::rpc(err)
                    ),
                    true,
                );
            }
            RpcError::Failed(_) | RpcError::Refused(_) => self.toast(
                format!("{}: {}{back_note}", capitalized(what), explain::rpc(err)),
                true,
            ),
        }
        if back {
            self.composer.set_text(&line);
            self.composer.mode = mode;
        }
    }
}

/// `what` with a capital first letter, to start a sentence.
fn capitalized(what: &str) -> String {
    let mut chars = what.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
