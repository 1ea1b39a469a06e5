//! The invite operations (docs/protocol.md "Invites, roles and
//! approvals"): `invite_create` (`POST …/invites {role, expiresIn?,
//! name?}`), `invite_revoke` (`DELETE …/invites/{id}`) and `set_role`
//! (`POST …/invites/{id}/role {role}`). Owners only (the access table).

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{
    DEFAULT_INVITE_SECS, Invite, InviteCreated, InviteResponse, MAX_INVITE_SECS, RevokeResponse,
    RoomRole, now_ms,
};
use crate::server::auth::{Access, new_invite_token, token_hash};
use crate::server::errors::ApiError;
use crate::server::room::{AccessNews, RoomActor, Touched};
use crate::server::store_access::InviteRow;

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

    /// A new invite and its token, shown this once.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        if !room.shared.has_token {
            let e = ApiError::conflict(
                "invites need a token",
                "token",
                "this server has no token, so everyone in it is an owner: start it with \
                 --token (or DUET_TOKEN) to invite people with roles",
            );
            let _ = answer.send(Err(e));
            return;
        }
        let token = new_invite_token();
        let now = now_ms() as u64;
        // An invite made with an invite ends no later than that one: a
        // revoked or expired owner's invite leaves nothing that outlives it.
        let mut expires_at = now + self.expires_in * 1000;
        if let Access::Invite(maker) = &caller.access {
            expires_at = expires_at.min(maker.expires_at);
        }
        let draft = Invite {
            id: String::new(),
            role: self.role,
            name: self.name,
            expires_at,
            created_at: now,
            by: caller.name_or_anonymous(),
        };
        let hash = token_hash(&token);
        let stored = room
            .shared
            .store
            .insert_invite(room.id.clone(), draft, hash.clone())
            .await;
        let reply = match stored {
            Ok(invite) => {
                room.access.invites.push(InviteRow {
                    room: room.id.clone(),
                    invite: invite.clone(),
                    token_hash: hash,
                    revoked: false,
                });
                let url = invite_url(caller.base.as_deref(), &room.id, &token);
                Ok(Reply::ok(InviteCreated { invite, token, url }))
            }
            Err(e) => Err(ApiError::internal(format!(
                "the invite could not be stored: {e}"
            ))),
        };
        let _ = answer.send(reply);
    }
}

/// The room's link with `token`, for `duet join`.
fn invite_url(base: Option<&str>, room: &str, token: &str) -> String {
    let base = base.unwrap_or("http://127.0.0.1:7878");
    crate::protocol::link::link(base, room, Some(token))
        .map(|link| {
            if link.contains("://") {
                link
            } else {
                format!("http://{link}")
            }
        })
        .unwrap_or_else(|| format!("{base}/{room}"))
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
        let id = self.invite_id;
        let row = match room.access.usable(&id) {
            Ok(row) => row,
            Err(e) => {
                let _ = answer.send(Err(e));
                return;
            }
        };
        row.revoked = true;
        if let Err(e) = room
            .shared
            .store
            .revoke_invite(room.id.clone(), id.clone())
            .await
        {
            let _ = answer.send(Err(ApiError::internal(format!(
                "the revocation could not be stored: {e}"
            ))));
            return;
        }
        room.tell_members(AccessNews::Revoked { invite_id: id }, None);
        let _ = answer.send(Ok(Reply::ok(RevokeResponse { revoked: true })));
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

    /// The invite's role, for its sockets at once.
    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        let SetRole {
            invite_id: id,
            role,
        } = self;
        let invite = match room.access.usable(&id) {
            Ok(row) => {
                row.invite.role = role;
                row.invite.clone()
            }
            Err(e) => {
                let _ = answer.send(Err(e));
                return;
            }
        };
        let stored = room
            .shared
            .store
            .set_invite_role(room.id.clone(), id.clone(), role)
            .await;
        if let Err(e) = stored {
            let _ = answer.send(Err(ApiError::internal(format!(
                "the role could not be stored: {e}"
            ))));
            return;
        }
        let members: Vec<u64> = room
            .access
            .members
            .iter()
            .filter(|(_, invite)| **invite == id)
            .map(|(conn, _)| *conn)
            .collect();
        for (conn, user) in &mut room.presence {
            if members.contains(conn) {
                user.role = role;
            }
        }
        let touched: Vec<Touched> = members.into_iter().map(Touched::Changed).collect();
        let presence = room.presence_news(&touched);
        room.tell_members(
            AccessNews::Role {
                invite_id: id,
                role,
            },
            Some(presence),
        );
        let _ = answer.send(Ok(Reply::ok(InviteResponse { invite })));
    }
}
