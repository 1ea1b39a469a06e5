//! `duet cp`, `duet ls` and `duet rm`: the room's workspace from the
//! shell (its paths' rules: `client::cp`, `client::ls`).

use super::{ClientArgs, client};
use crate::client::commands::client_for;
use crate::client::cp::*;
use crate::client::http::{HttpClient, HttpError};
use crate::client::ls::*;
use crate::protocol::EntryType;
use anyhow::bail;
use clap::Args;
use std::io::Read;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct CpArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Where from: a local file, `-`, or `:PATH` in the workspace
    pub from: String,
    /// Where to: a local file or folder, `-`, or `:PATH` in the workspace
    pub to: String,
}

#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The folder, relative to /workspace (or inside it)
    pub dir: Option<String>,
    /// Print `{entries}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RmArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Delete folders too, with everything in them
    #[arg(short, long)]
    pub recursive: bool,
    /// The files (or folders), relative to /workspace (or inside it)
    #[arg(required = true)]
    pub paths: Vec<String>,
}

/// `duet cp FROM TO`
pub async fn cp(args: CpArgs) -> anyhow::Result<ExitCode> {
    let (from, to) = match (End::parse(&args.from), End::parse(&args.to)) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(why), _) | (_, Err(why)) => {
            eprintln!("duet: {why}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    let done = match (&from, &to) {
        (End::Remote(remote), End::Local(path)) => {
            download(&client, remote, path, true)
                .await
                .map(|saved| match saved {
                    Saved::Written { to, size } => {
                        format!("{size} bytes from :{remote} to {}", to.display())
                    }
                    Saved::Exists { to, .. } => format!("{} left as it was", to.display()),
                })
        }
        (End::Remote(remote), End::Std) => match get(&client, remote).await {
            Ok(bytes) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)?;
                out.flush()?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(err) => Err(err),
        },
        (End::Local(path), End::Remote(remote)) => upload(&client, path, remote)
            .await
            .map(|answer| format!("{} bytes to :{}", answer.size, answer.path)),
        (End::Std, End::Remote(remote)) => {
            let target = upload_target(&End::Std, remote)?;
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes)?;
            put(&client, &target, bytes)
                .await
                .map(|answer| format!("{} bytes to :{}", answer.size, answer.path))
        }
        _ => bail!(
            "one end must be in the workspace (`:PATH`) and the other here: `duet cp LOCAL :PATH` or `duet cp :PATH LOCAL`"
        ),
    };
    match done {
        Ok(said) => {
            eprintln!("{said}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("duet: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `duet ls [DIR] [--json]`.
pub async fn ls(args: LsArgs) -> anyhow::Result<ExitCode> {
    let dir = match relative(args.dir.as_deref().unwrap_or("")) {
        Ok(dir) => dir,
        Err(why) => return crate::client::ps::said(&why),
    };
    let client = client(&args.client)?;
    let entries = match client.list_dir(&dir).await {
        Ok(entries) => entries,
        Err(err) => return crate::client::ps::said(&path_error(&dir, true, &err)),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let listing = crate::protocol::ListingResponse { entries };
        writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
    } else if entries.is_empty() {
        writeln!(out, "{} is empty", shown_dir(&dir))?;
    } else {
        out.write_all(table(&entries, super::local_offset()).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `duet rm [-r] PATH…`: each path in turn; a folder needs `-r`. Fails
/// when any path could not be deleted (the others still are).
pub async fn rm(args: RmArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let mut failed = false;
    for path in &args.paths {
        match remove(&client, path, args.recursive).await {
            Ok(done) => println!("{done}"),
            Err(why) => {
                eprintln!("duet: {why}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Deletes one path; what was done, or why not.
async fn remove(client: &HttpClient, path: &str, recursive: bool) -> Result<String, String> {
    let target = relative(path)?;
    if target.is_empty() {
        return Err(format!(
            "{WORKSPACE} itself cannot be deleted: name what is in it"
        ));
    }
    // The parent's listing says what it is (a symlink is not followed).
    let (parent, name) = target.rsplit_once('/').unwrap_or(("", target.as_str()));
    let entries = client.list_dir(parent).await.map_err(|err| match &err {
        HttpError::Status(s) if s.status == 404 => {
            format!(
                "{}: no such file or folder in the room's workspace",
                shown(&target)
            )
        }
        _ => path_error(parent, true, &err),
    })?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Err(format!(
            "{}: no such file or folder in the room's workspace",
            shown(&target)
        ));
    };
    if entry.kind == EntryType::Dir && !recursive {
        return Err(format!(
            "{} is a folder: `duet rm -r {}` deletes it with everything in it",
            shown(&target),
            path.trim()
        ));
    }
    client
        .delete_file(&target)
        .await
        .map_err(|err| path_error(&target, false, &err))?;
    let what = if entry.kind == EntryType::Dir {
        "the folder "
    } else {
        ""
    };
    Ok(format!("deleted {what}{}", shown(&target)))
}
