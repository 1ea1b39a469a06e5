//! `duet exec` and `duet cleanup`: one command in the room's sandbox,
//! and the room cleaned up, from the shell.

use super::ClientArgs;
use crate::client::commands::client_for;
use crate::client::commands::{EXIT_INTERRUPTED, EXIT_NEEDS_TERMINAL, exit_code, shell_join};
use crate::client::http::HttpError;
use crate::protocol::{ExecRequest, InterruptResponse};
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
    // Named by us, so that a Ctrl+C can interrupt it in the room: its
    // `execId` comes only with the answer.
    let client_id = crate::client::rpc::new_client_id();
    let request = ExecRequest {
        cmd: cmd.clone(),
        timeout_ms: args.timeout_ms,
        cwd: args.cwd.clone(),
        env: None,
        client_id: Some(client_id.clone()),
        user_id: None,
    };
    let mut ctrl_c = crate::client::interrupt::Interrupt::new()?;
    let answer = client.exec(request);
    tokio::pin!(answer);
    let mut interrupting = false;
    let answer = loop {
        tokio::select! {
            answer = &mut answer => break answer,
            () = ctrl_c.recv() => {
                if interrupting {
                    eprintln!("duet: left `{cmd}`, which may still run in the room");
                    return Ok(ExitCode::from(EXIT_INTERRUPTED));
                }
                interrupting = true;
                match client.interrupt_named(&client_id).await {
                    // Still waiting behind another: it never runs, nothing to wait for.
                    Ok(answer) if answer.withdrawn => {
                        eprintln!("duet: `{cmd}` was still waiting behind another command: withdrawn, it never runs");
                        return Ok(ExitCode::from(EXIT_INTERRUPTED));
                    }
                    said => eprintln!("duet: {}", interrupt_said(said)),
                }
            }
        }
    };
    let response = match answer {
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

/// What came of a Ctrl+C's interrupt of our command in the room (its
/// answer then says so).
fn interrupt_said(answer: Result<InterruptResponse, HttpError>) -> String {
    match answer {
        Ok(answer) if answer.interrupted => {
            "interrupting the command (Ctrl+C again to leave it)".to_string()
        }
        Ok(_) => {
            "the room runs no command of this call to interrupt yet (Ctrl+C again to leave it)"
                .to_string()
        }
        Err(err) => format!(
            "the command was not interrupted: {} (Ctrl+C again to leave it)",
            crate::client::explain::http(&err)
        ),
    }
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
