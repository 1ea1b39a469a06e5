//! The room's people and its approval policy (docs/protocol.md "Invites,
//! roles and approvals"): invites made, revoked and given other roles (the
//! sockets of an invite told at once), the policy and allow list, and the
//! agent's commands that wait for a person's answer.

use super::{OutFrame, RoomActor, frame_text, state};
use crate::protocol::{
    Approval, ApprovalFrame, DecidedResponse, Event, Invite, InviteCreated, InviteResponse,
    NOT_APPROVED_IN_TIME, POLICY_OFF, Policy, PolicyResponse, RevokeResponse, RoomRole,
    allowed_without_asking, denied_by, now_ms,
};
use crate::server::auth::{Caller, new_invite_token, token_hash};
use crate::server::errors::ApiError;
use crate::server::ops::{Answer, Approve, InviteCreate, Reply};
use crate::server::store_access::{InviteRow, PolicyRow};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tokio::sync::oneshot;

/// Decided approval ids remembered, so that a late second answer is a 409.
const DECIDED_KEPT: usize = 256;

/// What the sockets of an invite are told through the room's broadcast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AccessNews {
    /// The invite has this role now.
    Role { invite_id: String, role: RoomRole },
    /// The invite was revoked: its sockets close with 4401.
    Revoked { invite_id: String },
}

/// Whether an agent's command may run, as its turn learns it.
pub(crate) type Verdict = Result<(), String>;

/// An agent's command waiting for an answer.
struct Open {
    approval: Approval,
    verdict: oneshot::Sender<Verdict>,
}

/// The room's invites, policy and open approvals.
pub(super) struct RoomAccess {
    invites: Vec<InviteRow>,
    policy: PolicyRow,
    open: Vec<Open>,
    decided: VecDeque<String>,
    next_approval: u64,
    /// The invite each connection joined with.
    members: BTreeMap<u64, String>,
}

impl RoomAccess {
    pub(super) fn new(invites: Vec<InviteRow>, policy: PolicyRow) -> Self {
        RoomAccess {
            invites,
            policy,
            open: Vec::new(),
            decided: VecDeque::new(),
            next_approval: 1,
            members: BTreeMap::new(),
        }
    }

    pub(super) fn policy(&self) -> Policy {
        self.policy.policy
    }

    /// The state's `approvals`.
    pub(super) fn approvals(&self) -> Vec<Approval> {
        self.open.iter().map(|o| o.approval.clone()).collect()
    }

    /// Notes the invite connection `conn` joined with.
    pub(super) fn joined(&mut self, conn: u64, invite: Option<String>) {
        if let Some(invite) = invite {
            self.members.insert(conn, invite);
        }
    }

    pub(super) fn left(&mut self, conn: u64) {
        self.members.remove(&conn);
    }

    /// The usable invite `id` of the room, or the 404.
    fn usable(&mut self, id: &str) -> Result<&mut InviteRow, ApiError> {
        self.invites
            .iter_mut()
            .find(|row| row.invite.id == id && row.usable())
            .ok_or_else(|| {
                ApiError::not_found(
                    "no such invite",
                    "inviteId",
                    format!("no invite {id:?} in this room"),
                )
            })
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

impl RoomActor {
    /// The state's `allow`: the server's entries, then the room's.
    pub(super) fn allow_list(&self) -> Vec<String> {
        let mut list = self.shared.approval_allow.clone();
        list.extend(self.access.policy.allow.iter().cloned());
        list
    }

    /// `invite_create`: a new invite and its token, shown this once.
    pub(crate) async fn create_invite(
        &mut self,
        request: InviteCreate,
        caller: Caller,
        answer: Answer,
    ) {
        if !self.shared.has_token {
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
        let draft = Invite {
            id: String::new(),
            role: request.role,
            name: request.name,
            expires_at: now + request.expires_in * 1000,
            created_at: now,
            by: caller.name_or_anonymous(),
        };
        let hash = token_hash(&token);
        let stored = self
            .shared
            .store
            .insert_invite(self.id.clone(), draft, hash.clone())
            .await;
        let reply = match stored {
            Ok(invite) => {
                self.access.invites.push(InviteRow {
                    room: self.id.clone(),
                    invite: invite.clone(),
                    token_hash: hash,
                    revoked: false,
                });
                let url = invite_url(caller.base.as_deref(), &self.id, &token);
                Ok(Reply::ok(InviteCreated { invite, token, url }))
            }
            Err(e) => Err(ApiError::internal(format!(
                "the invite could not be stored: {e}"
            ))),
        };
        let _ = answer.send(reply);
    }

    /// `invite_revoke`: its token stops working and its sockets close.
    pub(crate) async fn revoke_invite(&mut self, id: String, answer: Answer) {
        let row = match self.access.usable(&id) {
            Ok(row) => row,
            Err(e) => {
                let _ = answer.send(Err(e));
                return;
            }
        };
        row.revoked = true;
        if let Err(e) = self
            .shared
            .store
            .revoke_invite(self.id.clone(), id.clone())
            .await
        {
            let _ = answer.send(Err(ApiError::internal(format!(
                "the revocation could not be stored: {e}"
            ))));
            return;
        }
        self.tell_members(AccessNews::Revoked { invite_id: id }, None);
        let _ = answer.send(Ok(Reply::ok(RevokeResponse { revoked: true })));
    }

    /// `set_role`: the invite's role, for its sockets at once.
    pub(crate) async fn set_role(&mut self, id: String, role: RoomRole, answer: Answer) {
        let invite = match self.access.usable(&id) {
            Ok(row) => {
                row.invite.role = role;
                row.invite.clone()
            }
            Err(e) => {
                let _ = answer.send(Err(e));
                return;
            }
        };
        let stored = self
            .shared
            .store
            .set_invite_role(self.id.clone(), id.clone(), role)
            .await;
        if let Err(e) = stored {
            let _ = answer.send(Err(ApiError::internal(format!(
                "the role could not be stored: {e}"
            ))));
            return;
        }
        let members: Vec<u64> = self
            .access
            .members
            .iter()
            .filter(|(_, invite)| **invite == id)
            .map(|(conn, _)| *conn)
            .collect();
        for (conn, user) in &mut self.presence {
            if members.contains(conn) {
                user.role = role;
            }
        }
        let presence = frame_text(&self.presence_frame());
        self.tell_members(
            AccessNews::Role {
                invite_id: id,
                role,
            },
            Some(presence),
        );
        let _ = answer.send(Ok(Reply::ok(InviteResponse { invite })));
    }

    /// Sends `news` to the room's sockets with `text` for everyone (none:
    /// only the invite's sockets act on it).
    fn tell_members(&self, news: AccessNews, text: Option<axum::extract::ws::Utf8Bytes>) {
        // Tunnels and previews of the invite hear it too.
        let _ = self
            .shared
            .access_news
            .send(Arc::new((self.id.clone(), news.clone())));
        let frame = OutFrame {
            access: Some(news),
            ..OutFrame::plain(text.unwrap_or_default())
        };
        let _ = self.frames.send(Arc::new(frame));
    }

    /// `set_policy`: the policy (and the room's own allow list), kept; a
    /// new policy is recorded as `by`'s.
    pub(crate) async fn set_policy(
        &mut self,
        policy: Policy,
        allow: Option<Vec<String>>,
        by: String,
        answer: Answer,
    ) {
        let mut row = self.access.policy.clone();
        row.policy = policy;
        let allow_changed = allow.as_ref().is_some_and(|a| *a != row.allow);
        if let Some(allow) = allow {
            row.allow = allow;
        }
        let policy_changed = row.policy != self.access.policy.policy;
        if policy_changed || allow_changed {
            if let Err(e) = self
                .shared
                .store
                .set_policy(self.id.clone(), row.clone())
                .await
            {
                let _ = answer.send(Err(ApiError::internal(format!(
                    "the policy could not be stored: {e}"
                ))));
                return;
            }
            self.access.policy = row;
            let mut changes = Vec::new();
            if policy_changed {
                changes.push(state::Change::Field("policy", policy.as_str().into()));
            }
            if allow_changed {
                changes.push(state::Change::Field("allow", self.allow_list().into()));
            }
            self.publish(&changes);
            if policy_changed {
                self.record_or_log(Event::Policy { by, policy }).await;
            }
        }
        let _ = answer.send(Ok(Reply::ok(PolicyResponse { policy })));
    }

    /// The turn `turn_id` wants to run `cmd`: under `auto` (or a command
    /// the allow list matches) at once, under `off` never, under `ask`
    /// once a person approves it.
    pub(super) fn ask_to_run(
        &mut self,
        turn_id: String,
        cmd: String,
        verdict: oneshot::Sender<Verdict>,
    ) {
        let live = self
            .current
            .as_ref()
            .is_some_and(|c| c.id == turn_id && !c.cancel.is_cancelled());
        if !live {
            let _ = verdict.send(Err(crate::ai::CANCELLED.into()));
            return;
        }
        match self.access.policy() {
            Policy::Auto => {
                let _ = verdict.send(Ok(()));
            }
            Policy::Off => {
                let _ = verdict.send(Err(POLICY_OFF.into()));
            }
            Policy::Ask if allowed_without_asking(&cmd, &self.allow_list()) => {
                let _ = verdict.send(Ok(()));
            }
            Policy::Ask => self.open_approval(turn_id, cmd, verdict),
        }
    }

    fn open_approval(&mut self, turn_id: String, cmd: String, verdict: oneshot::Sender<Verdict>) {
        let approval_id = format!("a{}", self.access.next_approval);
        self.access.next_approval += 1;
        self.broadcast(&crate::protocol::ServerFrame::Approval(
            ApprovalFrame::Request {
                approval_id: approval_id.clone(),
                turn_id: turn_id.clone(),
                cmd: cmd.clone(),
            },
        ));
        self.access.open.push(Open {
            approval: Approval {
                approval_id: approval_id.clone(),
                turn_id,
                cmd,
            },
            verdict,
        });
        self.publish_approvals();
        let inbox = self.inbox.clone();
        let wait = self.shared.approval_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = inbox
                .send(super::Command::ApprovalTimeout { approval_id })
                .await;
        });
    }

    fn publish_approvals(&mut self) {
        let approvals = serde_json::to_value(self.access.approvals()).unwrap_or_default();
        self.publish(&[state::Change::Field("approvals", approvals)]);
    }

    /// Takes open approval `id` out, decided by `by`: everyone is told.
    fn decide(&mut self, id: &str, approved: bool, by: String) -> Option<Open> {
        let at = self
            .access
            .open
            .iter()
            .position(|o| o.approval.approval_id == id)?;
        let open = self.access.open.remove(at);
        self.access.decided.push_back(id.to_string());
        while self.access.decided.len() > DECIDED_KEPT {
            self.access.decided.pop_front();
        }
        self.broadcast(&crate::protocol::ServerFrame::Approval(
            ApprovalFrame::Decided {
                approval_id: id.to_string(),
                approved,
                by,
            },
        ));
        self.publish_approvals();
        Some(open)
    }

    /// `approve`: a person's answer to an agent's command.
    pub(crate) fn approve(&mut self, request: Approve, by: String, answer: Answer) {
        let id = request.approval_id;
        match self.decide(&id, request.approved, by.clone()) {
            Some(open) => {
                let verdict = if request.approved {
                    Ok(())
                } else {
                    Err(denied_by(&by))
                };
                let _ = answer.send(Ok(Reply::ok(DecidedResponse { decided: true })));
                let _ = open.verdict.send(verdict);
            }
            None if self.access.decided.contains(&id) => {
                let _ = answer.send(Err(ApiError::conflict(
                    "already decided",
                    "approvalId",
                    format!("approval {id:?} was decided already"),
                )));
            }
            None => {
                let _ = answer.send(Err(ApiError::not_found(
                    "no such approval",
                    "approvalId",
                    format!("no approval {id:?} in this room"),
                )));
            }
        }
    }

    /// Nobody answered approval `id` in time.
    pub(super) fn approval_timed_out(&mut self, id: String) {
        if let Some(open) = self.decide(&id, false, "duet".into()) {
            let _ = open.verdict.send(Err(NOT_APPROVED_IN_TIME.into()));
        }
    }

    /// The turn `turn_id` was cancelled: its open requests are withdrawn.
    pub(super) fn withdraw_approvals(&mut self, turn_id: &str) {
        let (withdrawn, kept): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.access.open)
            .into_iter()
            .partition(|o| o.approval.turn_id == turn_id);
        self.access.open = kept;
        if withdrawn.is_empty() {
            return;
        }
        for open in withdrawn {
            let id = open.approval.approval_id;
            self.broadcast(&crate::protocol::ServerFrame::Approval(
                ApprovalFrame::Withdrawn {
                    approval_id: id.clone(),
                },
            ));
            self.access.decided.push_back(id);
            let _ = open.verdict.send(Err(crate::ai::CANCELLED.into()));
        }
        self.publish_approvals();
    }
}
