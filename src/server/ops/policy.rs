//! The approval operations (docs/protocol.md "Invites, roles and
//! approvals"): `set_policy` (`POST …/policy {policy, allow?}`) and
//! `approve` (`POST …/approve {approvalId, approved}`).

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{DecidedResponse, Event, Policy, PolicyResponse, denied_by};
use crate::server::errors::ApiError;
use crate::server::room::{Change, RoomActor};

/// Most entries a room's allow list holds, and the longest entry.
const ALLOW_ENTRIES: usize = 64;
const ALLOW_ENTRY_CHARS: usize = 200;

/// Set the room's policy (and maybe its own allow list).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetPolicy {
    pub(crate) policy: Policy,
    pub(crate) allow: Option<Vec<String>>,
}

impl Operation for SetPolicy {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let policy = if f.get("policy").is_none() {
            f.problem("policy", "is required");
            None
        } else {
            let policy = f.string("policy").and_then(|p| Policy::parse(&p));
            if policy.is_none() {
                f.problem("policy", "must be auto, ask or off");
            }
            policy
        };
        let allow = match f.get("allow") {
            None => None,
            Some(value) => {
                let entries: Option<Vec<String>> = value.as_array().and_then(|items| {
                    items
                        .iter()
                        .map(|e| {
                            e.as_str()
                                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                        })
                        .collect()
                });
                match entries {
                    Some(list)
                        if list.len() <= ALLOW_ENTRIES
                            && list.iter().all(|e| {
                                !e.is_empty() && e.chars().count() <= ALLOW_ENTRY_CHARS
                            }) =>
                    {
                        Some(list)
                    }
                    _ => {
                        f.problem(
                            "allow",
                            "must be an array of at most 64 commands, each 1 to 200 characters",
                        );
                        None
                    }
                }
            }
        };
        Some(SetPolicy {
            policy: policy?,
            allow,
        })
    }

    /// The policy (and the room's own allow list), kept; a new policy
    /// is recorded as the caller's.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let SetPolicy { policy, allow } = self;
        let mut row = room.access.policy.clone();
        row.policy = policy;
        let allow_changed = allow.as_ref().is_some_and(|a| *a != row.allow);
        if let Some(allow) = allow {
            row.allow = allow;
        }
        let policy_changed = row.policy != room.access.policy.policy;
        if policy_changed || allow_changed {
            if let Err(e) = room
                .shared
                .store
                .set_policy(room.id.clone(), row.clone())
                .await
            {
                let _ = answer.send(Err(ApiError::internal(format!(
                    "the policy could not be stored: {e}"
                ))));
                return;
            }
            room.access.policy = row;
            let mut changes = Vec::new();
            if policy_changed {
                changes.push(Change::Field("policy", policy.as_str().into()));
            }
            if allow_changed {
                changes.push(Change::Field("allow", room.allow_list().into()));
            }
            room.publish(&changes);
            if policy_changed {
                let by = caller.name_or_anonymous();
                room.record_or_log(Event::Policy { by, policy }).await;
            }
        }
        let _ = answer.send(Ok(Reply::ok(PolicyResponse { policy })));
    }
}

/// Answer an agent's command that waits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Approve {
    pub(crate) approval_id: String,
    pub(crate) approved: bool,
}

impl Operation for Approve {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let approval_id = f.required_text("approvalId");
        let approved = match f.get("approved") {
            Some(serde_json::Value::Bool(b)) => Some(*b),
            None => {
                f.problem("approved", "is required");
                None
            }
            Some(_) => {
                f.problem("approved", "must be true or false");
                None
            }
        };
        Some(Approve {
            approval_id: approval_id?,
            approved: approved?,
        })
    }

    /// A person's answer to an agent's command.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let by = caller.name_or_anonymous();
        let id = self.approval_id;
        match room.decide(&id, self.approved, by.clone()) {
            Some(open) => {
                let verdict = if self.approved {
                    Ok(())
                } else {
                    Err(denied_by(&by))
                };
                let _ = answer.send(Ok(Reply::ok(DecidedResponse { decided: true })));
                let _ = open.verdict.send(verdict);
            }
            None if room.access.decided.contains(&id) => {
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
}
