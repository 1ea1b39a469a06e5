//! `duet checkpoint`, `duet checkpoints`, `duet restore`, `duet undo` and
//! `duet fork`: the room's checkpoints from the command line, over HTTP
//! (finding one by name or id, and which one an undo restores:
//! `client::checkpoints`); and `duet export`, the room's history
//! (`client::export`).

use super::{ClientArgs, client};
use crate::client::checkpoints;
use crate::client::commands::client_for;
use crate::client::explain;
use crate::client::export::{Format, fetch, render};
use crate::client::http::HttpClient;
use crate::client::ps::said;
use crate::protocol::Checkpoint;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Its name: 1–64 of A-Z a-z 0-9 . _ -, the first a letter or digit
    /// (default: checkpoint-N); `--name` is yours, as for every client
    /// command
    #[arg(value_name = "NAME")]
    pub checkpoint: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckpointsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print `{checkpoints}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The checkpoint: its name, or its id (`c3`)
    pub checkpoint: String,
}

#[derive(Debug, Clone, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The new room's id (it must not exist yet)
    #[arg(value_name = "ROOM")]
    pub to: String,
    /// Start it from this checkpoint (its name or id) instead of the
    /// workspace as it is now
    #[arg(long, value_name = "NAME|ID")]
    pub from: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// md, json or cast (default: from the file's name, else md)
    #[arg(long, value_enum)]
    pub format: Option<crate::client::export::Format>,
    /// Write to this file instead of stdout
    #[arg(short, long)]
    pub output: Option<String>,
}

/// `duet checkpoint [NAME]`: a copy of /workspace now.
pub async fn checkpoint(args: CheckpointArgs) -> anyhow::Result<ExitCode> {
    if let Some(problem) = args
        .checkpoint
        .as_deref()
        .and_then(crate::protocol::checkpoint_name_problem)
    {
        return said(&format!(
            "checkpoint name {:?}: it {problem}",
            args.checkpoint.unwrap_or_default()
        ));
    }
    let client = client(&args.client)?;
    match client.create_checkpoint(args.checkpoint.as_deref()).await {
        Ok(c) => {
            println!("saved checkpoint {} ({})", c.name, about(&c));
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => said(&explain::http(&err)),
    }
}

/// `duet checkpoints [--json]`: the room's checkpoints, oldest first.
pub async fn list(args: CheckpointsArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let list = match client.checkpoints().await {
        Ok(list) => list,
        Err(err) => return said(&explain::http(&err)),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let answer = crate::protocol::CheckpointsResponse { checkpoints: list };
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
    } else if list.is_empty() {
        writeln!(
            out,
            "no checkpoints yet (`duet checkpoint NAME` takes one; the agent's turns that run \
             commands take one each)"
        )?;
    } else {
        out.write_all(checkpoints::table(&list, super::local_offset()).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `duet restore NAME|ID`.
pub async fn restore(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let found = match resolve(&client, &args.checkpoint).await {
        Ok(found) => found,
        Err(why) => return said(&why),
    };
    restore_one(&client, found, &args.checkpoint).await
}

/// `duet undo`: restores the newest automatic checkpoint (the one taken
/// before the agent's last turn that ran commands).
pub async fn undo(args: ClientArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args)?;
    let list = match client.checkpoints().await {
        Ok(list) => list,
        Err(err) => return said(&explain::http(&err)),
    };
    match checkpoints::undo_target(&list, None) {
        Ok(target) => restore_one(&client, Some(target.clone()), &target.id).await,
        Err(why) => said(&why),
    }
}

/// Restores `found` (or the id `wanted`, which the server answers for).
async fn restore_one(
    client: &HttpClient,
    found: Option<Checkpoint>,
    wanted: &str,
) -> anyhow::Result<ExitCode> {
    let id = found.as_ref().map_or(wanted, |c| c.id.as_str());
    match client.restore_checkpoint(id).await {
        Ok(_) => {
            let shown = found
                .as_ref()
                .map_or_else(|| id.to_string(), |c| format!("{} ({})", c.name, about(c)));
            println!("restored checkpoint {shown}: /workspace is as it was then");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => said(&explain::http(&err)),
    }
}

/// `duet fork ROOM [--from NAME|ID]`: a new room from this one's files.
pub async fn fork(args: ForkArgs) -> anyhow::Result<ExitCode> {
    if !crate::protocol::valid_room_id(&args.to) {
        return said(&format!(
            "room {:?} is not a valid room id: 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric",
            args.to
        ));
    }
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    let from = match &args.from {
        None => None,
        Some(wanted) => match resolve(&client, wanted).await {
            Ok(found) => Some(found.map_or_else(|| wanted.clone(), |c| c.id)),
            Err(why) => return said(&why),
        },
    };
    match client.fork(&args.to, from.as_deref()).await {
        Ok(room) => {
            let backend = crate::client::join::Backend::of(&settings);
            let hint =
                crate::client::join::come_back(&backend, client.base(), &room, &settings.name);
            println!(
                "forked room {} into room {room}; join it with: {hint}",
                client.room()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => said(&explain::http(&err)),
    }
}

/// `c3, 2.1 KB, 2026-01-02 10:00`: what a checkpoint is, after its name.
fn about(c: &Checkpoint) -> String {
    format!(
        "{}, {}, {}",
        c.id,
        crate::text::human_size(c.size),
        checkpoints::when(c.ts, super::local_offset())
    )
}

/// The listed checkpoint `wanted` names (a name, else an id); `None`
/// when none is listed so, and the server answers for the id (its 404
/// says so); `Err` when the list cannot be read.
async fn resolve(client: &HttpClient, wanted: &str) -> Result<Option<Checkpoint>, String> {
    let list = client
        .checkpoints()
        .await
        .map_err(|err| explain::http(&err))?;
    Ok(checkpoints::find(&list, wanted).ok().cloned())
}

/// `duet export [--format F] [-o FILE]`: the file (or stdout) and a line
/// saying what was written.
pub async fn export(args: ExportArgs) -> anyhow::Result<std::process::ExitCode> {
    use std::io::Write;
    let settings = super::settings(&args.client)?;
    let client = crate::client::commands::client_for(&settings)?;
    let format = args
        .format
        .or_else(|| args.output.as_deref().map(Format::of_path))
        .unwrap_or(Format::Md);
    let history = match fetch(&client).await {
        Ok(history) => history,
        Err(err) => {
            let why = crate::client::explain::http(&err);
            return crate::client::ps::said(&format!(
                "the room's history could not be read: {why}"
            ));
        }
    };
    let text = render(
        &history,
        format,
        crate::protocol::now_ms(),
        super::local_offset(),
    );
    match &args.output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(path) => {
            if let Err(e) = crate::client::export::write_file(path, &text) {
                return crate::client::ps::said(&e);
            }
            eprintln!(
                "wrote {path}: {} messages and {} commands of room {}",
                history.messages.len(),
                history.execs.len(),
                history.room
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
