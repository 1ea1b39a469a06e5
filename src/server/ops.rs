//! The room operations shared by HTTP and the socket's `rpc`: each parsed
//! from a JSON object field by field, so that every bad field is named.

use super::errors::{ApiError, add_detail};
use crate::protocol::{Details, MAX_TEXT_CHARS, name_problem};
use axum::http::StatusCode;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One request to a room, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// Store a user message and queue the agent's turn.
    Message { text: String, user: Option<String> },
    /// Run a command in the room's sandbox.
    Exec {
        cmd: String,
        timeout_ms: Option<u64>,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
        user: Option<String>,
    },
    /// Stop a running command.
    Interrupt { exec_id: Option<String> },
    /// End the agent's current turn.
    Cancel { turn_id: Option<String> },
    /// Clear the room and destroy its sandbox.
    Cleanup { user: Option<String> },
}

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

/// Field-by-field reader of a request object that collects every problem.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    details: Details,
}

impl<'a> Fields<'a> {
    /// The field's value; JSON `null` counts as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name).filter(|v| !v.is_null())
    }

    /// Records a problem with field `name`.
    fn problem(&mut self, name: &str, message: &str) {
        add_detail(&mut self.details, name, message);
    }

    /// An optional string field.
    fn string(&mut self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.problem(name, "must be a string");
                None
            }
        }
    }

    /// A required string field that is not blank.
    fn required_text(&mut self, name: &str) -> Option<String> {
        if self.get(name).is_none() {
            self.problem(name, "is required");
            return None;
        }
        let s = self.string(name)?;
        if s.trim().is_empty() {
            self.problem(name, "must not be empty");
            return None;
        }
        Some(s)
    }

    /// An optional person's name (`userId`).
    fn name(&mut self, name: &str) -> Option<String> {
        let s = self.string(name)?;
        match name_problem(&s) {
            Some(p) => {
                self.problem(name, p);
                None
            }
            None => Some(s),
        }
    }

    /// An optional string without NUL characters.
    fn plain_string(&mut self, name: &str) -> Option<String> {
        let s = self.string(name)?;
        if s.contains('\0') {
            self.problem(name, "must not contain NUL characters");
            return None;
        }
        Some(s)
    }

    /// `value` when no field had a problem, else the 400 naming them.
    fn finish<T>(self, value: T) -> Result<T, ApiError> {
        if self.details.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::invalid(self.details))
        }
    }
}

/// Whether `key` is an environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn env_key_ok(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses operation `method` (`message`, `exec`, `interrupt`, `cancel`,
/// `cleanup`) from `obj`. `details` holds problems found before (the room
/// id); `default_user` is the socket's `user`. `None` for an unknown method.
pub(crate) fn parse(
    method: &str,
    obj: &Map<String, Value>,
    details: Details,
    default_user: Option<&str>,
) -> Option<Result<Op, ApiError>> {
    let mut f = Fields { obj, details };
    let user = f.name("userId").or(default_user.map(str::to_string));
    let op = match method {
        "message" => {
            let text = f.required_text("text");
            if let Some(t) = &text
                && t.chars().count() > MAX_TEXT_CHARS
            {
                f.problem("text", "must be at most 8000 characters");
            }
            text.map(|text| Op::Message { text, user })
        }
        "exec" => exec(&mut f, user),
        "interrupt" => Some(Op::Interrupt {
            exec_id: f.string("execId"),
        }),
        "cancel" => Some(Op::Cancel {
            turn_id: f.string("turnId"),
        }),
        "cleanup" => Some(Op::Cleanup { user }),
        _ => return None,
    };
    Some(match op {
        Some(op) => f.finish(op),
        None => Err(ApiError::invalid(f.details)),
    })
}

/// The fields of `exec`.
fn exec(f: &mut Fields<'_>, user: Option<String>) -> Option<Op> {
    let cmd = f.required_text("cmd");
    if cmd.as_ref().is_some_and(|c| c.contains('\0')) {
        f.problem("cmd", "must not contain NUL characters");
    }
    let timeout_ms = match f.get("timeoutMs") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                f.problem(
                    "timeoutMs",
                    "must be a positive whole number of milliseconds",
                );
                None
            }
        },
    };
    let cwd = f.plain_string("cwd");
    if cwd.as_ref().is_some_and(|c| c.is_empty()) {
        f.problem("cwd", "must not be empty");
    }
    let mut env = BTreeMap::new();
    match f.get("env") {
        None => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                if !env_key_ok(key) {
                    f.problem(
                        "env",
                        &format!("{key:?} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"),
                    );
                }
                match value.as_str() {
                    Some(s) if !s.contains('\0') => {
                        env.insert(key.clone(), s.to_string());
                    }
                    Some(_) => f.problem("env", &format!("{key}: must not contain NUL characters")),
                    None => f.problem("env", &format!("{key}: must be a string")),
                }
            }
        }
        Some(_) => f.problem("env", "must be an object of strings"),
    }
    Some(Op::Exec {
        cmd: cmd?,
        timeout_ms,
        cwd,
        env,
        user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn details(method: &str, body: Value) -> Details {
        let obj = body.as_object().unwrap().clone();
        parse(method, &obj, Details::new(), None)
            .unwrap()
            .unwrap_err()
            .body
            .details
            .unwrap()
    }

    #[test]
    fn every_bad_field_is_named() {
        let d = details(
            "exec",
            json!({"cmd":"", "timeoutMs":-1, "cwd":3, "env":{"1x":"a","ok":2}, "userId":""}),
        );
        let keys: Vec<_> = d.keys().cloned().collect();
        assert_eq!(keys, ["cmd", "cwd", "env", "timeoutMs", "userId"]);
        assert_eq!(d["env"].len(), 2);
        let d = details("message", json!({"text":"x".repeat(8001)}));
        assert_eq!(d["text"], ["must be at most 8000 characters"]);
        assert_eq!(details("message", json!({}))["text"], ["is required"]);
        assert_eq!(
            details("message", json!({"text":"  \n"}))["text"],
            ["must not be empty"]
        );
        assert!(details("exec", json!({"cmd":"a\u{0}b"})).contains_key("cmd"));
    }

    #[test]
    fn good_bodies_parse() {
        let obj = json!({"text":"é".repeat(8000), "userId": null})
            .as_object()
            .unwrap()
            .clone();
        let op = parse("message", &obj, Details::new(), Some("ada"))
            .unwrap()
            .unwrap();
        assert!(matches!(op, Op::Message { user: Some(u), .. } if u == "ada"));
        let obj = json!({"cmd":"ls","env":{"A_1":"x"},"timeoutMs":5})
            .as_object()
            .unwrap()
            .clone();
        let op = parse("exec", &obj, Details::new(), None).unwrap().unwrap();
        assert!(matches!(
            op,
            Op::Exec {
                timeout_ms: Some(5),
                ..
            }
        ));
        assert!(parse("nope", &obj, Details::new(), None).is_none());
    }
}
