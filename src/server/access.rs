//! The check every way in (HTTP, rpc, terminal frames, files, previews,
//! tunnels) asks before it does anything, against the one role table of
//! the protocol (`protocol::Action`, docs/protocol.md's "Invites, roles
//! and approvals").

use super::errors::ApiError;
pub(crate) use crate::protocol::Action;
use crate::protocol::RoomRole;

/// Whether `role` may do `action`.
pub(crate) fn may(role: RoomRole, action: Action) -> bool {
    action.allows(role)
}

/// `Ok` when `role` may do `action`; otherwise the 403 of the contract.
pub(crate) fn check(role: RoomRole, action: Action) -> Result<(), ApiError> {
    action
        .check(role)
        .map_err(|words| ApiError::forbidden("role", words))
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
}
