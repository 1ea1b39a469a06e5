//! The approval operations (docs/protocol.md "Invites, roles and
//! approvals"): `set_policy` (`POST …/policy {policy, allow?}`) and
//! `approve` (`POST …/approve {approvalId, approved}`).

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::Policy;
use crate::server::room::RoomActor;

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

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let by = caller.name_or_anonymous();
        room.set_policy(self.policy, self.allow, by, answer).await;
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

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.approve(self, caller.name_or_anonymous(), answer);
    }
}
