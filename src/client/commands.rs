//! What the command line's client commands share: the backend, token and
//! HTTP client the settings name, a command as the shell would read it,
//! and the exit code `duet exec` ends with (its commands: `cli::exec`).

use crate::client::http::HttpClient;
use crate::config::ClientSettings;
use crate::support::shell_quote;
use anyhow::Context;

/// Exit code of a command that timed out (as `timeout(1)`).
pub const EXIT_TIMED_OUT: u8 = 124;
/// Exit code of an interrupted command (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit code of a command not sent because it needs a terminal (a usage
/// error: `duet term` runs it).
pub const EXIT_NEEDS_TERMINAL: u8 = 2;

/// The exit code `duet exec` ends with.
pub fn exit_code(code: Option<i32>, timed_out: bool, interrupted: bool) -> u8 {
    if timed_out {
        EXIT_TIMED_OUT
    } else if interrupted {
        EXIT_INTERRUPTED
    } else {
        match code {
            Some(c) => (c & 0xff) as u8,
            None => 1,
        }
    }
}

/// One argument is a shell line as written; several are quoted and joined,
/// so `duet exec -- sh -c 'echo $X'` runs what the person typed.
pub fn shell_join(args: &[String]) -> String {
    if let [single] = args {
        return single.clone();
    }
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The backend the settings name, else the running embedded one.
pub fn server_url(settings: &ClientSettings) -> anyhow::Result<String> {
    if let Some(server) = &settings.server {
        return Ok(server.clone());
    }
    crate::client::local::running_backend(&settings.data_dir).with_context(|| {
        format!(
            "no backend: no `duet` runs an embedded backend for {} and no server was given.\n\
             Start `duet` (a second terminal then finds its backend), or run `duet serve` \
             and pass --server http://127.0.0.1:8787 (or set DUET_SERVER)",
            settings.data_dir.display()
        )
    })
}

/// The token to send: the one given, else for the embedded backend of the
/// data directory, the token it keeps there.
pub fn token_for(settings: &ClientSettings) -> Option<String> {
    settings.token.clone().or_else(|| {
        settings
            .server
            .is_none()
            .then(|| crate::client::local::embedded_token(&settings.data_dir).ok())
            .flatten()
    })
}

/// The parameters of a short-lived socket of a command (`what` names it
/// in its connection id, e.g. `policy-…`) to the settings' room.
pub(crate) fn socket_params(
    settings: &ClientSettings,
    client: &HttpClient,
    what: &str,
    deltas: bool,
) -> anyhow::Result<crate::client::socket::SocketParams> {
    Ok(crate::client::socket::SocketParams {
        base: server_url(settings)?,
        room: client.room().to_string(),
        name: settings.name.clone(),
        token: token_for(settings),
        connection_id: format!("{what}-{:016x}", rand::random::<u64>()),
        deltas,
    })
}

pub(crate) fn client_for(settings: &ClientSettings) -> anyhow::Result<HttpClient> {
    let server = server_url(settings)?;
    let room = settings
        .room
        .as_deref()
        .context("no room: pass --room ROOM (or set DUET_ROOM)")?;
    Ok(HttpClient::new(
        &server,
        room,
        token_for(settings),
        &settings.name,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_command() {
        assert_eq!(exit_code(Some(0), false, false), 0);
        assert_eq!(exit_code(Some(3), false, false), 3);
        assert_eq!(exit_code(Some(-1), true, false), 124);
        assert_eq!(exit_code(None, false, true), 130);
        assert_eq!(exit_code(None, false, false), 1);
    }

    #[test]
    fn arguments_are_quoted_only_when_several() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_join(&v(&["echo hi | wc -c"])), "echo hi | wc -c");
        assert_eq!(shell_join(&v(&["ls", "-la", "/tmp"])), "ls -la /tmp");
        assert_eq!(
            shell_join(&v(&["sh", "-c", "echo $X 'a'"])),
            "sh -c 'echo $X '\\''a'\\'''"
        );
    }
}
