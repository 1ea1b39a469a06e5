//! `exec` (`POST /api/rooms/{room}/sandbox/exec` `{cmd, timeoutMs?, cwd?,
//! env?, clientId?, userId?}`): runs a command in the room's sandbox;
//! answers `ExecResponse` when it ends. `clientId` names it for an
//! `interrupt` until then (a client with no socket learns no `execId`).

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::valid_env_name;
use crate::server::room::{Origin, RoomActor, Then};
use serde_json::Value;
use std::collections::BTreeMap;

/// A command for the room's sandbox.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Exec {
    pub(crate) cmd: String,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) cwd: Option<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) client_id: Option<String>,
}

impl Operation for Exec {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
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
        let env = env(f);
        let client_id = f.client_id("clientId");
        Some(Exec {
            cmd: cmd?,
            timeout_ms,
            cwd,
            env,
            client_id,
        })
    }

    /// Runs a person's command; `answer` gets `{result, sandboxName}`.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let spec = room
            .shared
            .policy
            .spec(self.cmd.clone(), self.timeout_ms, self.cwd, self.env);
        let by = caller.name_or_anonymous();
        let then = Then::Http(answer);
        let origin = Origin {
            by,
            connection: caller.connection(),
            client_id: self.client_id,
        };
        room.launch(self.cmd, spec, origin, then).await;
    }
}

/// The `env` object: names and string values, each problem named.
fn env(f: &mut Fields<'_>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    match f.get("env") {
        None => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                if !valid_env_name(key) {
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
    env
}
