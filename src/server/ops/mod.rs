//! The room operations of docs/protocol.md, shared by HTTP and the
//! socket's `rpc`. Each is one module (its request type, its parser, what
//! it does in the room) and one line in the `operations!` table below,
//! which gives it its rpc method and its HTTP route (none for what only a
//! socket can do).

mod cancel;
mod checkpoint;
mod cleanup;
mod exec;
mod fields;
mod interrupt;
mod invite;
mod message;
mod policy;
mod process;
mod rename;

pub(crate) use exec::Exec;
pub(crate) use fields::Fields;
pub(crate) use invite::InviteCreate;
pub(crate) use message::Message;
pub(crate) use policy::Approve;
pub(crate) use process::ProcessStart;

use super::auth::Caller;
use super::errors::ApiError;
use super::room::RoomActor;
use crate::protocol::Details;
use axum::http::StatusCode;
use serde_json::{Map, Value};
use std::future::Future;
use tokio::sync::oneshot;

/// A successful answer: its status (200 or 207) and body, serialized in
/// the field order of its type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: String,
}

impl Reply {
    /// 200 with `body`.
    pub(crate) fn ok(body: impl serde::Serialize) -> Self {
        Reply {
            status: StatusCode::OK,
            body: serde_json::to_string(&body).unwrap_or_else(|_| "null".into()),
        }
    }
}

impl axum::response::IntoResponse for Reply {
    fn into_response(self) -> axum::response::Response {
        let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
        (self.status, json, self.body).into_response()
    }
}

/// What an operation answers: a success body or an error answer.
pub(crate) type OpResult = Result<Reply, ApiError>;

/// Where an operation's answer goes (the HTTP handler or the rpc).
pub(crate) type Answer = oneshot::Sender<OpResult>;

/// One room operation.
pub(crate) trait Operation: Sized + Send + 'static {
    /// Reads the operation from its request object; problems go to `f`.
    /// `None` when a required field is missing or bad.
    fn parse(f: &mut Fields<'_>) -> Option<Self>;

    /// Performs it in the room's actor, for `caller`; the answer goes to
    /// `answer` (at once, or when the work it started ends).
    fn apply(
        self,
        room: &mut RoomActor,
        caller: Caller,
        answer: Answer,
    ) -> impl Future<Output = ()> + Send;
}

/// Declares the operations: `Variant => module::Type, "method",
/// Some((HTTP method, "/path"));` (or `None`: no HTTP route) gives the
/// `Method` enum, the `Op` enum and their dispatch. A path's `{id}` is
/// the body's field that the route names (`/processes/{id}`: `processId`).
macro_rules! operations {
    ($($variant:ident => $module:ident::$ty:ident, $name:literal, $path:expr;)*) => {
        /// The method of a room operation: its rpc `method` and HTTP route.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Method {
            $($variant),*
        }

        impl Method {
            /// Every operation, in the table's order.
            pub(crate) const ALL: &[Method] = &[$(Method::$variant),*];

            /// Its rpc `method`.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name),*
                }
            }

            /// Its HTTP route below `/api/rooms/{room}`, if it has one.
            pub(crate) fn route(self) -> Option<(Verb, &'static str)> {
                match self {
                    $(Method::$variant => $path),*
                }
            }
        }

        /// A room operation, parsed.
        #[derive(Debug, Clone, PartialEq)]
        pub(crate) enum Op {
            $($variant($module::$ty)),*
        }

        impl Op {
            fn parse_as(method: Method, f: &mut Fields<'_>) -> Option<Op> {
                match method {
                    $(Method::$variant => $module::$ty::parse(f).map(Op::$variant)),*
                }
            }

            /// Its method.
            pub(crate) fn method(&self) -> Method {
                match self {
                    $(Op::$variant(_) => Method::$variant),*
                }
            }

            /// Performs the operation in the room's actor.
            pub(crate) async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
                match self {
                    $(Op::$variant(op) => op.apply(room, caller, answer).await),*
                }
            }
        }
    };
}

/// The HTTP method of an operation's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Post,
    Delete,
}

operations! {
    Message => message::Message, "message", Some((Verb::Post, "/message"));
    Exec => exec::Exec, "exec", Some((Verb::Post, "/sandbox/exec"));
    Interrupt => interrupt::Interrupt, "interrupt", Some((Verb::Post, "/sandbox/interrupt"));
    Cancel => cancel::Cancel, "cancel", Some((Verb::Post, "/cancel"));
    Cleanup => cleanup::Cleanup, "cleanup", Some((Verb::Post, "/cleanup"));
    Rename => rename::Rename, "rename", None;
    ProcessStart => process::ProcessStart, "process_start", Some((Verb::Post, "/processes"));
    ProcessKill => process::ProcessKill, "process_kill", Some((Verb::Delete, "/processes/{id}"));
    CheckpointCreate => checkpoint::CheckpointCreate, "checkpoint_create", Some((Verb::Post, "/checkpoints"));
    CheckpointRestore => checkpoint::CheckpointRestore, "checkpoint_restore", Some((Verb::Post, "/checkpoints/{id}/restore"));
    CheckpointDelete => checkpoint::CheckpointDelete, "checkpoint_delete", Some((Verb::Delete, "/checkpoints/{id}"));
    Fork => checkpoint::Fork, "fork", Some((Verb::Post, "/fork"));
    InviteCreate => invite::InviteCreate, "invite_create", Some((Verb::Post, "/invites"));
    InviteRevoke => invite::InviteRevoke, "invite_revoke", Some((Verb::Delete, "/invites/{id}"));
    SetRole => invite::SetRole, "set_role", Some((Verb::Post, "/invites/{id}/role"));
    SetPolicy => policy::SetPolicy, "set_policy", Some((Verb::Post, "/policy"));
    Approve => policy::Approve, "approve", Some((Verb::Post, "/approve"));
}

/// The body field a route's `{id}` fills: the route's first segment
/// names the kind (`/processes/{id}`: `processId`).
pub(crate) fn path_id_field(path: &str) -> &'static str {
    if path.starts_with("/checkpoints/") {
        "checkpointId"
    } else if path.starts_with("/invites/") {
        "inviteId"
    } else {
        "processId"
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

/// An operation with who asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) op: Op,
    pub(crate) caller: Caller,
}

/// Parses operation `method` from `obj` for `caller` (whose name the
/// body's `userId` replaces). `details` holds problems found before (the
/// room id); every problem of the body is added to them.
pub(crate) fn parse(
    method: Method,
    obj: &Map<String, Value>,
    details: Details,
    mut caller: Caller,
) -> Result<Request, ApiError> {
    let mut f = Fields::new(obj, details);
    if let Some(name) = f.name("userId") {
        caller.call_itself(name);
    }
    let op = Op::parse_as(method, &mut f);
    let op = f.finish(op)?;
    // What the body says comes first (a 400), then whether the caller's
    // role may do it (a 403), before anything is done.
    caller.may(op.action())?;
    Ok(Request { op, caller })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth::Access;
    use serde_json::json;

    fn anonymous() -> Caller {
        Caller::new(None, Access::Server, None)
    }

    fn parsed(method: Method, body: Value) -> Result<Request, ApiError> {
        parse(
            method,
            body.as_object().unwrap(),
            Details::new(),
            anonymous(),
        )
    }

    fn details(method: Method, body: Value) -> Details {
        parsed(method, body).unwrap_err().body.details.unwrap()
    }

    #[test]
    fn every_bad_field_is_named() {
        let d = details(
            Method::Exec,
            json!({"cmd":"", "timeoutMs":-1, "cwd":3, "env":{"1x":"a","ok":2}, "userId":""}),
        );
        let keys: Vec<_> = d.keys().cloned().collect();
        assert_eq!(keys, ["cmd", "cwd", "env", "timeoutMs", "userId"]);
        assert_eq!(d["env"].len(), 2);
        let d = details(Method::Message, json!({"text":"x".repeat(8001)}));
        assert_eq!(d["text"], ["must be at most 8000 characters"]);
        assert_eq!(details(Method::Message, json!({}))["text"], ["is required"]);
        assert_eq!(
            details(Method::Message, json!({"text":"  \n"}))["text"],
            ["must not be empty"]
        );
        assert!(details(Method::Exec, json!({"cmd":"a\u{0}b"})).contains_key("cmd"));
        // A bad name is refused for every operation.
        assert!(details(Method::Cancel, json!({"userId": 3})).contains_key("userId"));
        assert_eq!(
            details(Method::Message, json!({"text":"hi","to":"everyone"}))["to"],
            [r#"must be "agent" or "room""#]
        );
        assert!(details(Method::Message, json!({"text":"hi","to":1})).contains_key("to"));
        assert_eq!(details(Method::Rename, json!({}))["name"], ["is required"]);
        assert_eq!(
            details(Method::Rename, json!({"name":"x".repeat(33)}))["name"],
            ["must be at most 32 characters"]
        );
        assert!(details(Method::Rename, json!({"name":"  "})).contains_key("name"));
    }

    #[test]
    fn good_bodies_parse() {
        let body = json!({"text":"é".repeat(8000), "userId": null});
        let caller = Caller::new(Some("ada".into()), Access::Server, None);
        let request = parse(
            Method::Message,
            body.as_object().unwrap(),
            Details::new(),
            caller,
        )
        .unwrap();
        assert!(matches!(
            request.op,
            Op::Message(message::Message {
                to: crate::protocol::Addressee::Agent,
                ..
            })
        ));
        assert_eq!(request.caller.name.as_deref(), Some("ada"));
        let room = parsed(Method::Message, json!({"text":"ok thanks","to":"room"})).unwrap();
        assert!(matches!(
            room.op,
            Op::Message(message::Message {
                to: crate::protocol::Addressee::Room,
                ..
            })
        ));
        let rename = parsed(Method::Rename, json!({"name":" ann "})).unwrap();
        assert_eq!(rename.op, Op::Rename(rename::Rename { name: "ann".into() }));
        let request = parsed(
            Method::Exec,
            json!({"cmd":"ls","env":{"A_1":"x"},"timeoutMs":5,"userId":"bob"}),
        )
        .unwrap();
        assert!(matches!(
            request.op,
            Op::Exec(Exec {
                timeout_ms: Some(5),
                ..
            })
        ));
        assert_eq!(request.caller.name.as_deref(), Some("bob"));
    }

    #[test]
    fn methods_are_named_once() {
        for method in Method::ALL {
            assert_eq!(method.name().parse::<Method>(), Ok(*method));
        }
        assert!("nope".parse::<Method>().is_err());
    }
}
