//! `/name NEW`: this connection's name changes in the room (rpc
//! `rename`, no reconnect); the status bar and later messages carry it,
//! and the socket joins under it next time (src/client/rpc.rs).

use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::tui::app::{App, Effect};

impl App {
    /// Asks the backend for the name `name`; a name the protocol refuses
    /// is refused here, in the server's words.
    pub(crate) fn rename(&mut self, name: &str, effects: &mut Vec<Effect>) -> Result<(), String> {
        if let Some(problem) = crate::protocol::name_problem(name) {
            return Err(format!(
                "Cannot rename you to {name:?}: the name {problem}."
            ));
        }
        if name == self.session.name {
            return Err(format!("You are already {name}."));
        }
        effects.push(Effect::Call(RoomOp::Rename(name.to_string())));
        Ok(())
    }

    /// The answer of a `rename`.
    pub(crate) fn on_renamed(&mut self, answer: Answer, effects: &mut Vec<Effect>) {
        let RoomOp::Rename(asked) = &answer.op else {
            return;
        };
        match &answer.result {
            Ok(body) => {
                let name = body.get("name").and_then(|n| n.as_str()).unwrap_or(asked);
                self.session.name = name.to_string();
                effects.push(Effect::NameChanged(name.to_string()));
                self.toast(format!("you are now {name}"), false);
            }
            // A backend without `rename`: join again under the name.
            Err(RpcError::Refused(_)) => {
                self.session.name = asked.clone();
                effects.push(Effect::Rejoin(asked.clone()));
                self.toast(format!("you are now {asked} (joined again)"), false);
            }
            Err(err) => {
                self.toast(refusal(asked, err), true);
                if err.surely_not_done() && self.composer.is_empty() {
                    self.composer.set_text(&format!("/name {asked}"));
                }
            }
        }
    }
}

/// Why a rename failed, as a sentence: the backend's reasons about the
/// name when it gave them (a 400 with `details.name`), else the error.
fn refusal(asked: &str, err: &RpcError) -> String {
    let reasons = match err {
        RpcError::Failed(status) => status
            .details
            .as_ref()
            .and_then(|d| d.get("name"))
            .filter(|r| !r.is_empty()),
        _ => None,
    };
    match reasons {
        Some(reasons) => format!(
            "Cannot rename you to {asked:?}: the name {}.",
            reasons.join(" and ")
        ),
        None => format!("Cannot rename you to {asked:?}: {err}."),
    }
}
