//! The `duet` command line as a person runs it against a test backend.

use super::Server;
use std::process::{Command, Output};

/// `duet ARGS…` against `server`'s room `room`, as ada, with its token.
pub fn duet(server: &Server, room: &str, args: &[&str]) -> Output {
    duet_with(&server.url(""), room, server.token.as_deref(), args)
}

/// `duet ARGS…` against the backend at `url` and its room `room`, as ada,
/// with `token` (none: no token at all).
pub fn duet_with(url: &str, room: &str, token: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
    cmd.arg(args[0])
        .args(["--server", url, "--room", room])
        .args(&args[1..])
        .env_remove("DUET_TOKEN")
        .env_remove("DUET_SERVER")
        .env("DUET_NAME", "ada");
    if let Some(token) = token {
        cmd.env("DUET_TOKEN", token);
    }
    cmd.output().expect("duet runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
