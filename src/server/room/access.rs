//! The room's people and its approval policy (docs/protocol.md "Invites,
//! roles and approvals"): the invites, what the sockets of an invite are
//! told at once, the policy and allow list, and the agent's commands that
//! wait for a person's answer (the operations themselves are in
//! `ops/invite.rs` and `ops/policy.rs`).

use super::{OutFrame, RoomActor, state};
use crate::protocol::{
    Approval, ApprovalFrame, NOT_APPROVED_IN_TIME, POLICY_OFF, Policy, RoomRole,
    allowed_without_asking,
};
use crate::server::errors::ApiError;
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
pub(in crate::server) struct Open {
    approval: Approval,
    pub(in crate::server) verdict: oneshot::Sender<Verdict>,
}

/// The room's invites, policy and open approvals.
pub(in crate::server) struct RoomAccess {
    pub(in crate::server) invites: Vec<InviteRow>,
    pub(in crate::server) policy: PolicyRow,
    open: Vec<Open>,
    pub(in crate::server) decided: VecDeque<String>,
    next_approval: u64,
    /// The invite each connection joined with.
    pub(in crate::server) members: BTreeMap<u64, String>,
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
    pub(in crate::server) fn usable(&mut self, id: &str) -> Result<&mut InviteRow, ApiError> {
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

impl RoomActor {
    /// The state's `allow`: the server's entries, then the room's.
    pub(in crate::server) fn allow_list(&self) -> Vec<String> {
        let mut list = self.shared.approval_allow.clone();
        list.extend(self.access.policy.allow.iter().cloned());
        list
    }

    /// Sends `news` to the room's sockets with `frame`'s texts for
    /// everyone (none: only the invite's sockets act on it).
    pub(in crate::server) fn tell_members(&self, news: AccessNews, frame: Option<OutFrame>) {
        // Tunnels and previews of the invite hear it too.
        let _ = self
            .shared
            .access_news
            .send(Arc::new((self.id.clone(), news.clone())));
        let frame = OutFrame {
            access: Some(news),
            ..frame.unwrap_or_else(|| OutFrame::plain(Default::default()))
        };
        let _ = self.frames.send(Arc::new(frame));
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
    pub(in crate::server) fn decide(
        &mut self,
        id: &str,
        approved: bool,
        by: String,
    ) -> Option<Open> {
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
