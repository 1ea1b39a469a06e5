//! One-shot client subcommands: `duet exec` (not for commands that need a
//! terminal: see `client::term::needs`), `duet cleanup`.

use crate::cli::{ClientArgs, ExecArgs};
use crate::client::http::HttpClient;
use crate::config::{self, ClientSettings};
use crate::protocol::ExecRequest;
use crate::support::shell_quote;
use anyhow::Context;
use std::io::Write;
use std::process::ExitCode;

/// Exit code of a command that timed out (as `timeout(1)`).
pub const EXIT_TIMED_OUT: u8 = 124;
/// Exit code of an interrupted command (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit code of a command not sent because it needs a terminal (a usage
/// error: `duet term` runs it).
pub const EXIT_NEEDS_TERMINAL: u8 = 2;

/// `duet exec -- CMD…`: the command's stdout and stderr on ours, its exit
/// code as ours.
pub async fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let cmd = shell_join(&args.cmd);
    if !args.no_tty_check
        && let Some(program) = crate::client::term::needs::needs_terminal(&cmd)
    {
        eprintln!("duet: {}", crate::client::term::needs::exec_hint(&program));
        return Ok(ExitCode::from(EXIT_NEEDS_TERMINAL));
    }
    let settings = config::load(&args.client, data_dir_from_env())?;
    let client = client_for(&settings)?;
    let request = ExecRequest {
        cmd,
        timeout_ms: args.timeout_ms,
        cwd: args.cwd.clone(),
        env: None,
        user_id: None,
    };
    let response = match client.exec(request).await {
        Ok(response) => response,
        Err(err) => {
            eprintln!("duet: {}", crate::client::explain::http(&err));
            return Ok(ExitCode::FAILURE);
        }
    };
    let result = response.result;
    let mut out = std::io::stdout().lock();
    out.write_all(result.stdout.as_bytes())?;
    out.flush()?;
    let mut err = std::io::stderr().lock();
    err.write_all(result.stderr.as_bytes())?;
    if result.truncated {
        writeln!(err, "duet: output truncated by the server's cap")?;
    }
    err.flush()?;
    Ok(ExitCode::from(exit_code(
        result.exit_code,
        result.timed_out,
        result.interrupted,
    )))
}

/// `duet cleanup`: clears the room's history and destroys its sandbox.
pub async fn cleanup(args: ClientArgs) -> anyhow::Result<ExitCode> {
    let settings = config::load(&args, data_dir_from_env())?;
    let client = client_for(&settings)?;
    match client.cleanup().await {
        Ok(answer) => match answer.errors.filter(|e| !e.is_empty()) {
            None => {
                println!("cleaned up room {}", answer.room_id);
                Ok(ExitCode::SUCCESS)
            }
            Some(errors) => {
                println!("cleaned up room {}, with errors:", answer.room_id);
                for error in errors {
                    eprintln!("duet: {error}");
                }
                Ok(ExitCode::FAILURE)
            }
        },
        Err(err) => {
            eprintln!("duet: {}", crate::client::explain::http(&err));
            Ok(ExitCode::FAILURE)
        }
    }
}

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

/// The data directory the command line (`--data-dir`, before or after the
/// subcommand) or the environment (`DUET_DATA_DIR`) names.
pub(crate) fn data_dir_from_env() -> Option<std::path::PathBuf> {
    crate::cli::data_dir().or_else(|| {
        std::env::var_os("DUET_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(Into::into)
    })
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
