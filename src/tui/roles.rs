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

/// Something a person does in the room that not every role may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deed {
    AskAgent,
    RunCommand,
    /// Interrupt a command, cancel a turn.
    Stop,
    Cleanup,
    /// `PUT` and `DELETE` of files.
    ChangeFiles,
    StartProcess,
    KillProcess,
    /// `term_open` when no terminal runs.
    OpenTerminal,
    /// `duet_term_input`, `duet_term_resize`.
    TypeInTerminal,
    CloseTerminal,
    /// Create, restore (`/undo`) and delete checkpoints.
    Checkpoints,
    Fork,
    SetPolicy,
    /// Answer an agent's command waiting for a person.
    Approve,
    /// Invites and roles.
    Invite,
}

/// One row of the table: the least role that may, and what it is as the
/// refusal says it ("a viewer may not …").
pub struct Rule {
    pub deed: Deed,
    pub least: RoomRole,
    pub what: &'static str,
}

/// The contract's table, for what the TUI does. Everything not listed
/// (reading, chat to the room, typing, renaming, following a log,
/// watching the terminal) every role may.
pub const RULES: &[Rule] = &[
    rule(Deed::AskAgent, RoomRole::Writer, "ask the agent"),
    rule(Deed::RunCommand, RoomRole::Writer, "run commands"),
    rule(
        Deed::Stop,
        RoomRole::Writer,
        "stop commands or the agent's turns",
    ),
    rule(Deed::Cleanup, RoomRole::Owner, "clean the room up"),
    rule(Deed::ChangeFiles, RoomRole::Writer, "write or delete files"),
    rule(
        Deed::StartProcess,
        RoomRole::Writer,
        "start background processes",
    ),
    rule(
        Deed::KillProcess,
        RoomRole::Writer,
        "stop background processes",
    ),
    rule(
        Deed::OpenTerminal,
        RoomRole::Writer,
        "open the shared terminal (it can watch one that runs)",
    ),
    rule(
        Deed::TypeInTerminal,
        RoomRole::Writer,
        "type into the shared terminal",
    ),
    rule(
        Deed::CloseTerminal,
        RoomRole::Writer,
        "close the shared terminal",
    ),
    rule(
        Deed::Checkpoints,
        RoomRole::Writer,
        "take, restore or delete checkpoints",
    ),
    rule(Deed::Fork, RoomRole::Owner, "fork the room"),
    rule(Deed::SetPolicy, RoomRole::Writer, "change the policy"),
    rule(
        Deed::Approve,
        RoomRole::Writer,
        "answer the agent's approval requests",
    ),
    rule(
        Deed::Invite,
        RoomRole::Owner,
        "invite people or change roles",
    ),
];

const fn rule(deed: Deed, least: RoomRole, what: &'static str) -> Rule {
    Rule { deed, least, what }
}

/// What the keys of the keymap do, where a role matters.
pub const KEY_DEEDS: &[(Action, Deed)] = &[
    (Action::ModeAsk, Deed::AskAgent),
    (Action::ModeRun, Deed::RunCommand),
    (Action::Escape, Deed::Stop),
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

/// The deed a room operation is, if a role matters to it.
pub fn op_deed(op: &RoomOp) -> Option<Deed> {
    Some(match op {
        RoomOp::Message { to, .. } if *to == crate::protocol::Addressee::Agent => Deed::AskAgent,
        RoomOp::Exec(_) => Deed::RunCommand,
        RoomOp::Interrupt(_) | RoomOp::Cancel(_) => Deed::Stop,
        RoomOp::Cleanup => Deed::Cleanup,
        RoomOp::TermClose(_) => Deed::CloseTerminal,
        RoomOp::ProcessStart { .. } => Deed::StartProcess,
        RoomOp::ProcessKill(_) => Deed::KillProcess,
        RoomOp::CheckpointCreate(_)
        | RoomOp::CheckpointRestore(_)
        | RoomOp::CheckpointDelete(_) => Deed::Checkpoints,
        RoomOp::Fork { .. } => Deed::Fork,
        RoomOp::SetPolicy(_) => Deed::SetPolicy,
        RoomOp::Approve { .. } => Deed::Approve,
        RoomOp::InviteCreate(_) => Deed::Invite,
        RoomOp::Message { .. }
        | RoomOp::Rename(_)
        | RoomOp::TermOpen(_)
        | RoomOp::TermDetach(_)
        | RoomOp::ProcessFollow(_)
        | RoomOp::ProcessUnfollow(_) => return None,
    })
}

/// The deed a dialog would do when answered yes: it closes when the role
/// no longer may.
fn modal_deed(modal: &Modal) -> Option<Deed> {
    match modal {
        Modal::ConfirmCleanup => Some(Deed::Cleanup),
        Modal::ConfirmStop(stop) => op_deed(&stop.op),
        Modal::ConfirmRestore(_) => Some(Deed::Checkpoints),
        Modal::Approval(_) => Some(Deed::Approve),
        _ => None,
    }
}

/// Whether `role` may do `deed`; `Err` is the sentence that says not.
pub fn allowed(role: RoomRole, deed: Deed) -> Result<(), String> {
    let Some(rule) = RULES.iter().find(|r| r.deed == deed) else {
        return Ok(());
    };
    if role >= rule.least {
        return Ok(());
    }
    Err(crate::client::explain::not_allowed(&format!(
        "{} may not {}",
        crate::client::access::a_role(role),
        rule.what
    )))
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
        for rule in RULES {
            assert!(allowed(Owner, rule.deed).is_ok());
        }
        assert_eq!(op_deed(&RoomOp::to_room("hi")), None);
        assert_eq!(op_deed(&RoomOp::to_agent("hi")), Some(Deed::AskAgent));
    }
}
