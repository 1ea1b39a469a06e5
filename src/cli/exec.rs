//! `duet exec` and `duet cleanup`: one command in the room's sandbox,
//! and the room cleaned up, from the shell.

use super::ClientArgs;
use crate::client::commands::client_for;
use crate::client::commands::{EXIT_NEEDS_TERMINAL, exit_code, shell_join};
use crate::protocol::ExecRequest;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Wall-clock timeout in milliseconds (capped by the server)
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Working directory for this command only
    #[arg(long)]
    pub cwd: Option<String>,
    /// Send a command that needs a terminal (`top`, `vim`, `python3` with
    /// no script) anyway, instead of pointing to `duet term`
    #[arg(long)]
    pub no_tty_check: bool,
    /// The command and its arguments, after `--`
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
}

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
    let settings = super::settings(&args.client)?;
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
    let settings = super::settings(&args)?;
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
