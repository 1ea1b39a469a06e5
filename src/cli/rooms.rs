//! `duet rooms`: the rooms of a backend, for its owner (a lobby's view).

use super::ClientArgs;
use crate::client::commands::{server_url, token_for};
use crate::client::ps::said;
use crate::client::{explain, rooms};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct RoomsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print `{rooms}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

/// `duet rooms [--json]`: every room of the backend, newest change first.
pub async fn list(args: RoomsArgs) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    let server = server_url(&settings)?;
    let list = match rooms::list(&server, token_for(&settings).as_deref()).await {
        Ok(list) => list,
        Err(err) => return said(&explain::http(&err)),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let answer = crate::protocol::RoomsResponse { rooms: list };
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
    } else if list.is_empty() {
        writeln!(out, "no rooms yet (`duet --room NAME` opens one)")?;
    } else {
        out.write_all(rooms::table(&list, super::local_offset()).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
