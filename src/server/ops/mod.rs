//! The room operations of docs/protocol.md, shared by HTTP and the
//! socket's `rpc`. Their names, routes and actions are the protocol's
//! table (`protocol::ops::Method`); here each is one module (its request
//! type, its parser, what it does in the room) and one line of the
//! `operations!` table below, which binds the method to that module.

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
mod ticket;

pub(crate) use fields::Fields;

use super::auth::Caller;
use super::errors::ApiError;
use super::room::RoomActor;
pub(crate) use crate::protocol::ops::{Method, Verb};
use crate::protocol::{Action, Details};
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

/// Binds each operation of the protocol's table (`protocol::ops::Method`:
/// its name, route and actions) to the module that parses and performs
/// it: `Variant => module::Type;` for a room operation, and the methods a
/// socket answers itself (`socket { .. }`, in `ws/term.rs` and
/// `ws/process.rs`). Gives the `Op` enum and its dispatch.
macro_rules! operations {
    (room { $($variant:ident => $module:ident::$ty:ident;)* } socket { $($socket:ident),* }) => {
        /// A room operation, parsed.
        #[derive(Debug, Clone, PartialEq)]
        pub(crate) enum Op {
            $($variant($module::$ty)),*
        }

        impl Op {
            /// `None` for a method the socket answers itself.
            fn parse_as(method: Method, f: &mut Fields<'_>) -> Option<Option<Op>> {
                match method {
                    $(Method::$variant => Some($module::$ty::parse(f).map(Op::$variant)),)*
                    $(Method::$socket)|* => None,
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

operations! {
    room {
    Message => message::Message;
    Exec => exec::Exec;
    Interrupt => interrupt::Interrupt;
    Cancel => cancel::Cancel;
    Cleanup => cleanup::Cleanup;
    Rename => rename::Rename;
    ProcessStart => process::ProcessStart;
    ProcessKill => process::ProcessKill;
    CheckpointCreate => checkpoint::CheckpointCreate;
    CheckpointRestore => checkpoint::CheckpointRestore;
    CheckpointDelete => checkpoint::CheckpointDelete;
    Fork => checkpoint::Fork;
    InviteCreate => invite::InviteCreate;
    InviteRevoke => invite::InviteRevoke;
    SetRole => invite::SetRole;
    SetPolicy => policy::SetPolicy;
    Approve => policy::Approve;
    Ticket => ticket::Ticket;
    }
    socket { TermOpen, TermDetach, TermClose, ProcessFollow, ProcessUnfollow }
}

impl Op {
    /// What the operation does, as the role table names it: its method's
    /// one action, or for a message the one its addressee makes it.
    pub(crate) fn action(&self) -> Action {
        match self {
            Op::Message(m) => m.to.action(),
            other => other.method().action(),
        }
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
    let Some(op) = Op::parse_as(method, &mut f) else {
        return Err(ApiError::internal("answered by the socket, not the room"));
    };
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
            Op::Exec(exec::Exec {
                timeout_ms: Some(5),
                ..
            })
        ));
        assert_eq!(request.caller.name.as_deref(), Some("bob"));
    }
}
