//! The room operations of docs/protocol.md, declared once: each one's rpc
//! `method`, its HTTP route below `/api/rooms/{room}` (or none: only a
//! socket can do it) and the actions of the role table it may be. The
//! server's router, rpc dispatch and access check, and the client's rpc
//! calls, all read this table (docs/operations.json lists it too, for the
//! worker).

use super::Addressee;
use super::access::Action;

/// The HTTP method of an operation's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Post,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Post => "POST",
            Verb::Delete => "DELETE",
        }
    }
}

/// Declares the operations: `Variant, "method", route, [actions];`.
macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident, $name:literal, $route:expr, [$($action:ident),+];)*) => {
        /// A room operation: its rpc `method`, HTTP route and actions.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[$doc])* $variant),*
        }

        impl Method {
            /// Every operation, in the table's order.
            pub const ALL: &[Method] = &[$(Method::$variant),*];

            /// Its rpc `method`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name),*
                }
            }

            /// Its HTTP route below `/api/rooms/{room}`, if it has one. A
            /// path's `{id}` is the body's field that the route names
            /// (`Method::id_field`).
            pub fn route(self) -> Option<(Verb, &'static str)> {
                match self {
                    $(Method::$variant => $route),*
                }
            }

            /// What it may be, as the role table names it; the first is
            /// the least it needs (`message` to the room, `term_open` of a
            /// running terminal).
            pub fn actions(self) -> &'static [Action] {
                match self {
                    $(Method::$variant => &[$(Action::$action),+]),*
                }
            }
        }
    };
}

methods! {
    /// `[{text, to?, clientId?}]`: for the agent (a turn) or the room.
    Message, "message", Some((Verb::Post, "/message")), [ChatToRoom, AskAgent];
    Exec, "exec", Some((Verb::Post, "/sandbox/exec")), [RunCommand];
    Interrupt, "interrupt", Some((Verb::Post, "/sandbox/interrupt")), [Interrupt];
    Cancel, "cancel", Some((Verb::Post, "/cancel")), [Cancel];
    Cleanup, "cleanup", Some((Verb::Post, "/cleanup")), [Cleanup];
    Rename, "rename", None, [Rename];
    /// Watches the running terminal, or opens one.
    TermOpen, "term_open", None, [Watch, OpenTerminal];
    TermDetach, "term_detach", None, [Watch];
    TermClose, "term_close", None, [CloseTerminal];
    ProcessStart, "process_start", Some((Verb::Post, "/processes")), [StartProcess];
    ProcessKill, "process_kill", Some((Verb::Delete, "/processes/{id}")), [KillProcess];
    ProcessFollow, "process_follow", None, [Watch];
    ProcessUnfollow, "process_unfollow", None, [Watch];
    CheckpointCreate, "checkpoint_create", Some((Verb::Post, "/checkpoints")), [TakeCheckpoint];
    CheckpointRestore, "checkpoint_restore", Some((Verb::Post, "/checkpoints/{id}/restore")), [RestoreCheckpoint];
    CheckpointDelete, "checkpoint_delete", Some((Verb::Delete, "/checkpoints/{id}")), [DeleteCheckpoint];
    Fork, "fork", Some((Verb::Post, "/fork")), [Fork];
    InviteCreate, "invite_create", Some((Verb::Post, "/invites")), [ManageInvites];
    InviteRevoke, "invite_revoke", Some((Verb::Delete, "/invites/{id}")), [ManageInvites];
    SetRole, "set_role", Some((Verb::Post, "/invites/{id}/role")), [SetRole];
    SetPolicy, "set_policy", Some((Verb::Post, "/policy")), [SetPolicy];
    Approve, "approve", Some((Verb::Post, "/approve")), [Approve];
    /// A socket ticket for a browser (it cannot send a bearer token).
    Ticket, "ticket", Some((Verb::Post, "/ticket")), [Watch];
}

impl Addressee {
    /// The action a message to it is: talking to the room, or asking the
    /// agent (`message`'s two actions).
    pub fn action(self) -> Action {
        match self {
            Addressee::Room => Action::ChatToRoom,
            Addressee::Agent => Action::AskAgent,
        }
    }
}

impl Method {
    /// The least it needs: its first action.
    pub fn action(self) -> Action {
        self.actions()[0]
    }

    /// The body field a route's `{id}` fills: the route's first segment
    /// names the kind (`/processes/{id}`: `processId`).
    pub fn id_field(self) -> Option<&'static str> {
        let (_, path) = self.route()?;
        if !path.contains("{id}") {
            return None;
        }
        Some(if path.starts_with("/checkpoints/") {
            "checkpointId"
        } else if path.starts_with("/invites/") {
            "inviteId"
        } else {
            "processId"
        })
    }
}

impl std::str::FromStr for Method {
    type Err = ();

    fn from_str(name: &str) -> Result<Method, ()> {
        Method::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or(())
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RoomRole;
    use serde_json::{Value, json};

    /// docs/operations.json, which the worker's tables are checked against too.
    fn declared() -> Value {
        serde_json::from_str(include_str!("../../docs/operations.json")).unwrap()
    }

    #[test]
    fn the_role_table_is_docs_operations_json() {
        let ours: Vec<Value> = Action::ALL
            .iter()
            .map(
                |a| json!({"action": a.name(), "role": a.least().as_str(), "refusal": a.refusal()}),
            )
            .collect();
        assert_eq!(Value::Array(ours), declared()["actions"]);
        let roles: Vec<&str> = [RoomRole::Viewer, RoomRole::Writer, RoomRole::Owner]
            .iter()
            .map(|r| r.as_str())
            .collect();
        assert_eq!(json!(roles), declared()["roles"]);
    }

    #[test]
    fn the_operation_table_is_docs_operations_json() {
        let ours: Vec<Value> = Method::ALL
            .iter()
            .map(|m| {
                let route = m
                    .route()
                    .map(|(verb, path)| format!("{} {path}", verb.as_str()));
                let actions: Vec<&str> = m.actions().iter().map(|a| a.name()).collect();
                json!({"method": m.name(), "route": route, "actions": actions})
            })
            .collect();
        assert_eq!(Value::Array(ours), declared()["operations"]);
    }

    #[test]
    fn methods_are_named_once() {
        for method in Method::ALL {
            assert_eq!(method.name().parse::<Method>(), Ok(*method));
        }
        assert!("nope".parse::<Method>().is_err());
        assert_eq!(Method::ProcessKill.id_field(), Some("processId"));
        assert_eq!(Method::SetRole.id_field(), Some("inviteId"));
        assert_eq!(Method::Exec.id_field(), None);
    }
}
