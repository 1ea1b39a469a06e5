//! Who may do what: the one table of docs/protocol.md's "Invites, roles
//! and approvals", and the check every way in (HTTP, rpc, terminal
//! frames, files, previews, tunnels) asks before it does anything.

use super::errors::ApiError;
use super::ops::Op;
use crate::protocol::{Addressee, RoomRole};

/// Something a caller asks to do in a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// A message to the people of the room.
    ChatToRoom,
    Rename,
    /// Watching the running terminal, following a process's output.
    Watch,
    /// A port's preview, `GET` or `HEAD`.
    PreviewRead,
    AskAgent,
    RunCommand,
    Interrupt,
    Cancel,
    WriteFiles,
    StartProcess,
    KillProcess,
    /// A port's preview with another method or a WebSocket, or a tunnel.
    UsePort,
    OpenTerminal,
    TypeIntoTerminal,
    ResizeTerminal,
    CloseTerminal,
    TakeCheckpoint,
    RestoreCheckpoint,
    DeleteCheckpoint,
    SetPolicy,
    Approve,
    Cleanup,
    Fork,
    SetRole,
    ManageInvites,
}

/// The least role each action needs, and how a refusal names it
/// ("a viewer may not …").
const TABLE: &[(Action, RoomRole, &str)] = &[
    (Action::ChatToRoom, RoomRole::Viewer, "talk to the room"),
    (Action::Rename, RoomRole::Viewer, "change their name"),
    (Action::Watch, RoomRole::Viewer, "watch"),
    (Action::PreviewRead, RoomRole::Viewer, "open a preview"),
    (Action::AskAgent, RoomRole::Writer, "ask the agent"),
    (Action::RunCommand, RoomRole::Writer, "run commands"),
    (Action::Interrupt, RoomRole::Writer, "interrupt commands"),
    (Action::Cancel, RoomRole::Writer, "cancel the agent's turn"),
    (Action::WriteFiles, RoomRole::Writer, "change files"),
    (
        Action::StartProcess,
        RoomRole::Writer,
        "start background processes",
    ),
    (
        Action::KillProcess,
        RoomRole::Writer,
        "stop background processes",
    ),
    (
        Action::UsePort,
        RoomRole::Writer,
        "send requests to the sandbox's ports",
    ),
    (Action::OpenTerminal, RoomRole::Writer, "open the terminal"),
    (
        Action::TypeIntoTerminal,
        RoomRole::Writer,
        "type into the terminal",
    ),
    (
        Action::ResizeTerminal,
        RoomRole::Writer,
        "size the terminal",
    ),
    (
        Action::CloseTerminal,
        RoomRole::Writer,
        "close the terminal",
    ),
    (Action::TakeCheckpoint, RoomRole::Writer, "take checkpoints"),
    (
        Action::RestoreCheckpoint,
        RoomRole::Writer,
        "restore checkpoints",
    ),
    (
        Action::DeleteCheckpoint,
        RoomRole::Writer,
        "delete checkpoints",
    ),
    (Action::SetPolicy, RoomRole::Writer, "change the policy"),
    (Action::Approve, RoomRole::Writer, "answer approvals"),
    (Action::Cleanup, RoomRole::Owner, "clean the room up"),
    (Action::Fork, RoomRole::Owner, "fork the room"),
    (Action::SetRole, RoomRole::Owner, "change roles"),
    (Action::ManageInvites, RoomRole::Owner, "manage invites"),
];

/// The least role `action` needs, and its words.
fn rule(action: Action) -> (RoomRole, &'static str) {
    TABLE
        .iter()
        .find(|(a, _, _)| *a == action)
        .map_or((RoomRole::Owner, "do that"), |(_, role, words)| {
            (*role, *words)
        })
}

/// Whether `role` may do `action`.
pub(crate) fn may(role: RoomRole, action: Action) -> bool {
    role >= rule(action).0
}

/// `Ok` when `role` may do `action`; otherwise the 403 of the contract.
pub(crate) fn check(role: RoomRole, action: Action) -> Result<(), ApiError> {
    if may(role, action) {
        return Ok(());
    }
    let article = if role == RoomRole::Owner { "an" } else { "a" };
    Err(ApiError::forbidden(
        "role",
        format!("{article} {role} may not {}", rule(action).1),
    ))
}

impl Op {
    /// What the operation does, as the table names it.
    pub(crate) fn action(&self) -> Action {
        match self {
            Op::Message(m) if m.to == Addressee::Room => Action::ChatToRoom,
            Op::Message(_) => Action::AskAgent,
            Op::Exec(_) => Action::RunCommand,
            Op::Interrupt(_) => Action::Interrupt,
            Op::Cancel(_) => Action::Cancel,
            Op::Cleanup(_) => Action::Cleanup,
            Op::Rename(_) => Action::Rename,
            Op::ProcessStart(_) => Action::StartProcess,
            Op::ProcessKill(_) => Action::KillProcess,
            Op::CheckpointCreate(_) => Action::TakeCheckpoint,
            Op::CheckpointRestore(_) => Action::RestoreCheckpoint,
            Op::CheckpointDelete(_) => Action::DeleteCheckpoint,
            Op::Fork(_) => Action::Fork,
            Op::InviteCreate(_) | Op::InviteRevoke(_) => Action::ManageInvites,
            Op::SetRole(_) => Action::SetRole,
            Op::SetPolicy(_) => Action::SetPolicy,
            Op::Approve(_) => Action::Approve,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewers_watch_and_chat_writers_act_owners_manage() {
        assert!(may(RoomRole::Viewer, Action::ChatToRoom));
        assert!(may(RoomRole::Viewer, Action::Watch));
        assert!(!may(RoomRole::Viewer, Action::RunCommand));
        assert!(may(RoomRole::Writer, Action::RunCommand));
        assert!(may(RoomRole::Writer, Action::Approve));
        assert!(!may(RoomRole::Writer, Action::Cleanup));
        assert!(!may(RoomRole::Writer, Action::ManageInvites));
        assert!(may(RoomRole::Owner, Action::Fork));
        let refused = check(RoomRole::Viewer, Action::RunCommand).unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::FORBIDDEN);
        assert_eq!(refused.body.error, "forbidden");
        assert_eq!(
            refused.body.details.unwrap()["role"],
            ["a viewer may not run commands"]
        );
    }

    #[test]
    fn every_action_has_a_row() {
        for (action, _, words) in TABLE {
            assert_eq!(rule(*action).1, *words);
        }
    }
}
