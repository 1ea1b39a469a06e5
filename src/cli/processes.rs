//! `duet ps`, `duet bg`, `duet logs`, `duet kill` and `duet port`: the
//! room's background processes and ports from the shell (tables and
//! tunnels: `client::ps`, `client::tunnel`).

use super::{ClientArgs, client};
use crate::client::commands::client_for;
use crate::client::commands::shell_join;
use crate::client::explain;
use crate::client::http::HttpError;
use crate::client::processes::{self, Listing};
use crate::client::ps::said;
use crate::client::ps::*;
use crate::client::tunnel::*;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use tokio::net::TcpListener;

#[derive(Debug, Clone, Args)]
pub struct PsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print `{processes, ports}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct BgArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Its name in the room (default: the program's name); `--name` is
    /// yours, as for every client command
    #[arg(short = 'n', long = "process-name", value_name = "NAME")]
    pub process_name: Option<String>,
    /// The command and its arguments, after `--`
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The process: its id (`p1`), or its name when only one has it
    pub process: String,
    /// Follow its output live until it ends
    #[arg(short, long)]
    pub follow: bool,
}

#[derive(Debug, Clone, Args)]
pub struct KillArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The process: its id (`p1`), or its name when only one has it
    pub process: String,
}

#[derive(Debug, Clone, Args)]
pub struct PortArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The port inside the sandbox (1–65535)
    #[arg(value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// The port to listen on here, on 127.0.0.1 (default: PORT; 0 picks a
    /// free one and prints it)
    #[arg(long)]
    pub local: Option<u16>,
}

/// `duet ps [--json]`
pub async fn ps(args: PsArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let listing = match tokio::try_join!(client.processes(), client.ports()) {
        Ok((processes, ports)) => Listing { processes, ports },
        Err(err) => return failed(&err),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
    } else {
        let now = crate::protocol::now_ms();
        out.write_all(table(&listing, client.base(), now).as_bytes())?;
        if client.token().is_some() && !listing.ports.is_empty() {
            writeln!(
                out,
                "(a browser opens a port once with ?token=TOKEN after its URL; a cookie keeps it in)"
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `duet bg [--name N] -- CMD…`: the id on stdout, a sentence on stderr.
pub async fn bg(args: BgArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let cmd = shell_join(&args.cmd);
    match client
        .start_process(&cmd, args.process_name.as_deref())
        .await
    {
        Ok(process) => {
            println!("{}", process.id);
            eprintln!(
                "started {} ({}): `duet logs {}` shows its output, `duet kill {}` stops it",
                process.id, process.name, process.id, process.id
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
    }
}

/// `duet logs ID [-f]`: stdout to stdout, stderr to stderr.
pub async fn logs(args: LogsArgs) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    if args.follow {
        return crate::client::follow::follow(&settings, &args.process).await;
    }
    let client = client_for(&settings)?;
    let id = match resolve(&client, &args.process).await {
        Ok(process) => process.map_or(args.process.clone(), |p| p.id),
        Err(why) => return said(&why),
    };
    match client.process_logs(&id).await {
        Ok(logs) => {
            write_out(logs.stdout.as_bytes(), false)?;
            write_out(logs.stderr.as_bytes(), true)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
    }
}

/// `duet kill ID`: what became of it.
pub async fn kill(args: KillArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let found = match resolve(&client, &args.process).await {
        Ok(found) => found,
        Err(why) => return said(&why),
    };
    let id = found
        .as_ref()
        .map_or(args.process.as_str(), |p| p.id.as_str());
    let shown = found
        .as_ref()
        .map_or_else(|| id.to_string(), |p| format!("{} ({})", p.id, p.name));
    match client.kill_process(id).await {
        Ok(true) => {
            println!("killed {shown}");
            Ok(ExitCode::SUCCESS)
        }
        Ok(false) => {
            // It ended meanwhile: say how, from the room's list.
            let how = match client.processes().await {
                Ok(list) => list
                    .iter()
                    .find(|p| p.id == id)
                    .map(|p| format!(" ({})", processes::status_word(p)))
                    .unwrap_or_default(),
                Err(_) => String::new(),
            };
            println!("{shown} had already ended{how}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
    }
}

fn failed(err: &HttpError) -> anyhow::Result<ExitCode> {
    said(&explain::http(err))
}

/// `duet port PORT [--local L]`: runs until Ctrl+C.
pub async fn port(args: PortArgs) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    crate::support::install_tls();
    let url = match tunnel_url(client.base(), client.room(), args.port, client.token()) {
        Ok(url) => url,
        Err(why) => return said(&why),
    };
    let wanted = local_addr(args.port, args.local);
    let listener = match TcpListener::bind(wanted).await {
        Ok(listener) => listener,
        Err(err) => return said(&format!("cannot listen on {wanted}: {err}")),
    };
    let addr = listener.local_addr()?;
    let mut interrupt = crate::client::interrupt::Interrupt::new()?;
    println!(
        "duet: listening on {addr}, forwarding to port {} in room {}",
        args.port,
        client.room()
    );
    use std::io::Write;
    std::io::stdout().flush()?;
    let base = client.base().to_string();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let url = url.clone();
                    let base = base.clone();
                    let port = args.port;
                    tokio::spawn(async move {
                        if let Err(why) = carry(tcp, &url, &base, port).await {
                            eprintln!("duet: the connection from {peer} to port {port}: {why}");
                        }
                    });
                }
                Err(err) => {
                    eprintln!("duet: cannot accept a connection on {addr}: {err}");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
            () = interrupt.recv() => {
                eprintln!("duet: stopped forwarding {addr} to port {}", args.port);
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}
