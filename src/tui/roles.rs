//! Who may do what, from the client's side: docs/protocol.md's table "Who
//! may do what" for what a person does in the TUI, as one table beside the
//! keymap and the slash commands. What this person's role may not do is
//! refused here, before anything is sent, in the words of the server's 403
//! ("You are a viewer: a viewer may not run commands"), and drawn greyed
//! out in the help and the footer; a role that changes (`duet_you`)
//! applies at once. The backend decides in the end: this only spares the
//! person a round trip and a surprise.

use crate::client::rpc::RoomOp;
use crate::protocol::RoomRole;
use crate::tui::app::{App, Modal};
use crate::tui::composer::Mode;
use crate::tui::keymap::Action;

/// What a person does in the room, as the protocol's one role table
/// names it (its least role and the server's refusal words). Called
/// `Deed` here: the keymap's `Action` is what a key does.
pub use crate::protocol::Action as Deed;

/// What the keys of the keymap do, where a role matters.
pub const KEY_DEEDS: &[(Action, Deed)] = &[
    (Action::ModeAsk, Deed::AskAgent),
    (Action::ModeRun, Deed::RunCommand),
    (Action::Escape, Deed::Interrupt),
    (Action::Cleanup, Deed::Cleanup),
    (Action::Kill, Deed::KillProcess),
    (Action::Approvals, Deed::Approve),
];

/// The deed of a key's action, if a role matters to it.
pub fn key_deed(action: Action) -> Option<Deed> {
    KEY_DEEDS
        .iter()
        .find(|(a, _)| *a == action)
        .map(|(_, deed)| *deed)
}

/// The deed a room operation is.
pub fn op_deed(op: &RoomOp) -> Deed {
    op.action()
}

/// The deed a dialog would do when answered yes: it closes when the role
/// no longer may.
fn modal_deed(modal: &Modal) -> Option<Deed> {
    match modal {
        Modal::ConfirmCleanup => Some(Deed::Cleanup),
        Modal::ConfirmStop(stop) => Some(op_deed(&stop.op)),
        Modal::ConfirmRestore(_) => Some(Deed::RestoreCheckpoint),
        Modal::Approval(_) => Some(Deed::Approve),
        _ => None,
    }
}

/// Whether `role` may do `deed`; `Err` is the sentence that says not,
/// in the server's words ("You are a viewer: a viewer may not run
/// commands").
pub fn allowed(role: RoomRole, deed: Deed) -> Result<(), String> {
    deed.check(role)
        .map_err(|words| crate::client::explain::not_allowed(&words))
}

impl App {
    /// This connection's role in the room (an owner until the backend
    /// says otherwise: backends older than roles have only owners).
    pub fn role(&self) -> RoomRole {
        self.you.as_ref().map_or(RoomRole::Owner, |you| you.role)
    }

    /// Whether this person may do `deed`; `Err` says why not.
    pub fn may(&self, deed: Deed) -> Result<(), String> {
        allowed(self.role(), deed)
    }

    /// Whether a key's action is one this person may take (the help and
    /// the footer grey out the others).
    pub fn may_key(&self, action: Action) -> bool {
        key_deed(action).is_none_or(|deed| self.may(deed).is_ok())
    }

    /// Refuses `deed` with a toast when this person may not; answers
    /// whether it was refused.
    pub(crate) fn refused(&mut self, deed: Deed) -> bool {
        match self.may(deed) {
            Ok(()) => false,
            Err(why) => {
                // Said again, the toast counts (`×N`).
                self.toast(why, true);
                true
            }
        }
    }

    /// The role changed: dialogs that would do what it may not close, the input leaves a mode it cannot send in, and
    /// the approval requests open for those who may answer them.
    pub(crate) fn role_changed(&mut self) {
        let role = self.role();
        self.modals
            .retain(|m| modal_deed(m).is_none_or(|deed| allowed(role, deed).is_ok()));
        let mode_deed = match self.composer.mode {
            Mode::Ask => Some(Deed::AskAgent),
            Mode::Run => Some(Deed::RunCommand),
            Mode::Room => None,
        };
        if mode_deed.is_some_and(|deed| allowed(role, deed).is_err()) {
            self.composer.mode = Mode::Room;
        }
        self.offer_approval();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_follows_the_contract() {
        use RoomRole::*;
        assert_eq!(
            allowed(Viewer, Deed::RunCommand),
            Err("You are a viewer: a viewer may not run commands".into())
        );
        assert!(allowed(Writer, Deed::RunCommand).is_ok());
        assert!(allowed(Writer, Deed::Approve).is_ok());
        assert_eq!(
            allowed(Writer, Deed::Cleanup),
            Err("You are a writer: a writer may not clean the room up".into())
        );
        for deed in Deed::ALL {
            assert!(allowed(Owner, *deed).is_ok());
        }
        assert_eq!(op_deed(&RoomOp::to_room("hi")), Deed::ChatToRoom);
        assert!(allowed(Viewer, op_deed(&RoomOp::to_room("hi"))).is_ok());
        assert_eq!(op_deed(&RoomOp::to_agent("hi")), Deed::AskAgent);
    }
}
