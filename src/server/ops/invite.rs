//! The invite operations (docs/protocol.md "Invites, roles and
//! approvals"): `invite_create` (`POST …/invites {role, expiresIn?,
//! name?}`), `invite_revoke` (`DELETE …/invites/{id}`) and `set_role`
//! (`POST …/invites/{id}/role {role}`). Owners only (the access table).

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::{DEFAULT_INVITE_SECS, MAX_INVITE_SECS, RoomRole};
use crate::server::room::RoomActor;

/// Invite someone with a role.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InviteCreate {
    pub(crate) role: RoomRole,
    /// Seconds it lasts.
    pub(crate) expires_in: u64,
    /// The name it fixes.
    pub(crate) name: Option<String>,
}

/// Reads a required `role`.
fn role(f: &mut Fields<'_>) -> Option<RoomRole> {
    if f.get("role").is_none() {
        f.problem("role", "is required");
        return None;
    }
    let role = f.string("role").and_then(|r| RoomRole::parse(&r));
    if role.is_none() {
        f.problem("role", "must be owner, writer or viewer");
    }
    role
}

impl Operation for InviteCreate {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let role = role(f);
        let expires_in = match f.get("expiresIn") {
            None => Some(DEFAULT_INVITE_SECS),
            Some(v) => match v.as_u64() {
                Some(s) if (1..=MAX_INVITE_SECS).contains(&s) => Some(s),
                _ => {
                    f.problem(
                        "expiresIn",
                        "must be a whole number of seconds from 1 to 31536000",
                    );
                    None
                }
            },
        };
        let name = f.name("name");
        Some(InviteCreate {
            role: role?,
            expires_in: expires_in?,
            name,
        })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.create_invite(self, caller, answer).await;
    }
}

/// Revoke an invite: its token stops working, its sockets close.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InviteRevoke {
    pub(crate) invite_id: String,
}

impl Operation for InviteRevoke {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(InviteRevoke {
            invite_id: f.required_text("inviteId")?,
        })
    }

    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        room.revoke_invite(self.invite_id, answer).await;
    }
}

/// Give an invite (and whoever uses it) another role, at once.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetRole {
    pub(crate) invite_id: String,
    pub(crate) role: RoomRole,
}

impl Operation for SetRole {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let invite_id = f.required_text("inviteId");
        let role = role(f);
        Some(SetRole {
            invite_id: invite_id?,
            role: role?,
        })
    }

    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        room.set_role(self.invite_id, self.role, answer).await;
    }
}
