//! `duet push`, `duet pull` and `duet diff`: a local folder into the
//! room's workspace and back, and what changed since (the client side:
//! `client::archive`).

use super::{ClientArgs, client};
use crate::client::archive::manifest::Manifest;
use crate::client::archive::push::{Push, changes};
use crate::client::archive::room_changes;
use crate::client::archive::watch::Watcher;
use crate::client::archive::{Progress, diff, pull};
use crate::client::http::HttpClient;
use crate::client::ls::{relative, shown_dir};
use crate::text::{bytes, files, grouped};
use anyhow::Context;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Clone, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// `[DIR] [:PATH]`: the local folder (default: the current one) and
    /// the workspace folder it goes into (default: `:`, /workspace itself)
    #[arg(num_args = 0..=2, value_name = "DIR | :PATH")]
    pub ends: Vec<String>,
    /// Make the workspace folder an exact mirror: delete what the local
    /// folder does not have (ignored files included)
    #[arg(long)]
    pub delete: bool,
    /// Send `.git/` too (it stays home by default)
    #[arg(long)]
    pub git: bool,
    /// After the push, keep pushing what changes until Ctrl+C
    #[arg(short, long)]
    pub watch: bool,
    /// Replace files that changed in the room since the last push without
    /// asking
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// `[:PATH] [DIR]`: the workspace folder (default: `:`, /workspace
    /// itself) and the local folder it goes into (default: the current
    /// one; `-` writes the tar to stdout)
    #[arg(num_args = 0..=2, value_name = ":PATH | DIR")]
    pub ends: Vec<String>,
    /// Replace local files that changed since the last push or pull
    /// without asking
    #[arg(short, long)]
    pub force: bool,
    /// Also delete the local files the room no longer has: only ones last
    /// pushed or pulled from here (one changed here since is asked about)
    #[arg(long)]
    pub delete: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Compare with this checkpoint (an id or a name; default: the last
    /// push)
    #[arg(long, value_name = "CHECKPOINT")]
    pub from: Option<String>,
    /// Only these files or folders (relative to /workspace)
    pub paths: Vec<String>,
}

/// A workspace end (`:PATH`) and a local one, in any order.
#[derive(Debug, PartialEq, Eq)]
struct Ends {
    remote: String,
    local: Option<String>,
}

fn ends(args: &[String]) -> Result<Ends, String> {
    let mut remote = None;
    let mut local = None;
    for arg in args {
        match arg.strip_prefix(':') {
            Some(path) if remote.is_none() => remote = Some(relative(path)?),
            None if local.is_none() => local = Some(arg.clone()),
            _ => return Err(format!("{arg}: one local folder and one :PATH at most")),
        }
    }
    Ok(Ends {
        remote: remote.unwrap_or_default(),
        local,
    })
}

/// `duet push [DIR] [:PATH] [--delete] [--git] [--watch]`.
pub async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let ends = match ends(&args.ends) {
        Ok(ends) => ends,
        Err(why) => return crate::client::ps::said(&why),
    };
    if ends.local.as_deref() == Some("-") {
        return crate::client::ps::said("`duet push` sends a folder: name it (default: .)");
    }
    let client = client(&args.client)?;
    let dir = PathBuf::from(ends.local.as_deref().unwrap_or("."));
    let push = Push::new(&dir, &ends.remote, args.git)?;
    let mut manifest = Manifest::load(client.base(), client.room());
    // Watching starts before the walk: nothing changed meanwhile is missed.
    let watcher = if args.watch {
        let watcher = Watcher::start(&push.root)
            .with_context(|| format!("cannot watch {}", push.root.display()))?;
        Some(watcher)
    } else {
        None
    };
    let started = Instant::now();
    let tree = push.walk().await?;
    for warning in &tree.warnings {
        eprintln!("duet: {warning}");
    }
    if !args.force {
        let asked = room_changes::in_the_way(
            &client,
            &push.root,
            &push.remote,
            &tree.entries,
            args.delete,
        )
        .await;
        match asked {
            Ok(found) if !found.is_empty() && !confirmed(&Conflicts::push(&found)) => {
                return Ok(ExitCode::FAILURE);
            }
            Ok(_) => {}
            Err(err) => {
                eprintln!(
                    "duet: nothing pushed: cannot tell what changed in the room since the last push: {err} (--force pushes anyway)"
                );
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    let bar = progress_bar(tree.bytes());
    let progress: Option<Progress> = bar.clone().map(|bar| {
        let progress: Progress = std::sync::Arc::new(move |done| bar.set_position(done));
        progress
    });
    let before = tree.entries.clone();
    let sent = push
        .send(
            &client,
            tree.entries,
            args.delete,
            progress,
            &mut manifest,
            true,
        )
        .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let pushed = match sent {
        Ok(pushed) => pushed,
        Err(err) => {
            eprintln!(
                "duet: cannot push {} to {}: {err:#}",
                dir.display(),
                shown_dir(&ends.remote)
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut line = format!(
        "pushed {}, {} in {:.1} s",
        files(pushed.files),
        bytes(pushed.bytes),
        started.elapsed().as_secs_f64()
    );
    if pushed.deleted > 0 {
        line.push_str(&format!(" (deleted {})", grouped(pushed.deleted)));
    }
    println!("{line}");
    if let Some(watcher) = watcher {
        return watch(&client, &push, watcher, before, manifest).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// A progress bar of `total` bytes on stderr, when it is a terminal.
fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}

/// `--watch`: after each batch of file events, what changed is pushed
/// (a tar of the changed files) and what went is deleted, one line each
/// time, until Ctrl+C.
async fn watch(
    client: &HttpClient,
    push: &Push,
    mut watcher: Watcher,
    mut last: Vec<crate::client::archive::walk::Entry>,
    mut manifest: Manifest,
) -> anyhow::Result<ExitCode> {
    let mut interrupt = crate::client::interrupt::Interrupt::new()?;
    eprintln!("watching {} (Ctrl+C stops)", push.root.display());
    loop {
        tokio::select! {
            () = interrupt.recv() => return Ok(ExitCode::SUCCESS),
            batch = watcher.changed() => if batch.is_none() {
                anyhow::bail!("the watch of {} stopped", push.root.display());
            },
        }
        let started = Instant::now();
        let tree = match push.walk().await {
            Ok(tree) => tree,
            Err(err) => {
                eprintln!("duet: {err:#}");
                continue;
            }
        };
        let found = changes(&last, &tree.entries);
        if found.is_empty() {
            continue;
        }
        match sync(client, push, &found, &mut manifest).await {
            Ok(()) => {
                let (count, size) = found.files_and_bytes();
                let mut line = format!("synced {} ({})", files(count), bytes(size));
                if !found.deleted.is_empty() {
                    line.push_str(&format!(
                        ", deleted {}",
                        grouped(found.deleted.len() as u64)
                    ));
                }
                println!("{line} in {} ms", started.elapsed().as_millis());
                last = tree.entries;
            }
            // Not taken as synced: the next change tries again.
            Err(err) => eprintln!("duet: cannot sync: {err:#}"),
        }
    }
}

/// Sends the changed entries (one small tar) and deletes what went.
async fn sync(
    client: &HttpClient,
    push: &Push,
    found: &crate::client::archive::push::Changes,
    manifest: &mut Manifest,
) -> anyhow::Result<()> {
    if !found.send.is_empty() {
        push.send(client, found.send.clone(), false, None, manifest, false)
            .await?;
    }
    for rel in &found.deleted {
        let path = join_remote(&push.remote, rel);
        match client.delete_file(&path).await {
            Ok(_) => {}
            Err(crate::client::http::HttpError::Status(s)) if s.status == 404 => {}
            Err(err) => return Err(err).with_context(|| format!("cannot delete {rel}")),
        }
        manifest.forget(&push.root.join(rel));
    }
    if !found.deleted.is_empty() {
        let _ = manifest.save();
    }
    Ok(())
}

/// A path of the pushed folder as a workspace path.
fn join_remote(remote: &str, rel: &str) -> String {
    if remote.is_empty() {
        rel.to_string()
    } else {
        format!("{remote}/{rel}")
    }
}

/// `duet pull [:PATH] [DIR] [--force] [--delete]`.
pub async fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let ends = match ends(&args.ends) {
        Ok(ends) => ends,
        Err(why) => return crate::client::ps::said(&why),
    };
    let client = client(&args.client)?;
    let shown = shown_dir(&ends.remote);
    if ends.local.as_deref() == Some("-") {
        return match pull::to_stdout(&client, &ends.remote).await {
            Ok(_) => Ok(ExitCode::SUCCESS),
            Err(err) => {
                eprintln!("duet: cannot pull {shown}: {err:#}");
                Ok(ExitCode::FAILURE)
            }
        };
    }
    let dir = PathBuf::from(ends.local.as_deref().unwrap_or("."));
    let started = Instant::now();
    let manifest = Manifest::load(client.base(), client.room());
    let fetched = pull::fetch(&client, &ends.remote, &dir, manifest, args.delete).await;
    let (staged, manifest) = match fetched {
        Ok(done) => done,
        Err(err) => {
            eprintln!("duet: cannot pull {shown}: {err:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if !staged.conflicts.is_empty()
        && !args.force
        && !confirmed(&Conflicts::pull(&staged.conflicts, &dir))
    {
        return Ok(ExitCode::FAILURE);
    }
    let (applied, warnings) = match pull::apply(staged, manifest).await {
        Ok(done) => done,
        Err(err) => {
            eprintln!("duet: cannot pull {shown} into {}: {err:#}", dir.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    for warning in &warnings {
        eprintln!("duet: {warning}");
    }
    let deleted = if args.delete {
        format!(", deleted {}", files(applied.deleted))
    } else {
        String::new()
    };
    println!(
        "pulled {}, {}{deleted} in {:.1} s",
        files(applied.files),
        bytes(applied.bytes),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Files a push or a pull would replace although they changed on the
/// other side since the last sync, and the words to ask with.
struct Conflicts<'a> {
    files: &'a [String],
    intro: String,
    question: &'static str,
    /// What is done when the answer is no.
    nothing: &'static str,
}

impl<'a> Conflicts<'a> {
    fn pull(files: &'a [String], dir: &Path) -> Conflicts<'a> {
        Conflicts {
            files,
            intro: format!(
                "these files in {} changed since they were last pushed or pulled, and the room's differ (or are deleted):",
                dir.display()
            ),
            question: "replace them with the room's?",
            nothing: "nothing pulled",
        }
    }

    fn push(files: &'a [String]) -> Conflicts<'a> {
        Conflicts {
            files,
            intro: "these files changed in the room since the last push, and this push would replace (or delete) them:".to_string(),
            question: "replace them with yours?",
            nothing: "nothing pushed",
        }
    }
}

/// Whether the person agrees to replace `conflicts`; without a terminal
/// to ask on, no (and says why).
fn confirmed(conflicts: &Conflicts) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", conflicts.intro);
    for path in conflicts.files {
        let _ = writeln!(err, "  {path}");
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        let _ = writeln!(
            err,
            "duet: {}: no terminal to ask on (--force replaces them)",
            conflicts.nothing
        );
        return false;
    }
    let _ = write!(err, "{} [y/N] ", conflicts.question);
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    let yes = std::io::stdin().read_line(&mut answer).is_ok()
        && matches!(answer.trim(), "y" | "Y" | "yes");
    if !yes {
        eprintln!("{}", conflicts.nothing);
    }
    yes
}

/// `duet diff [--from CHECKPOINT] [PATHS…]`.
pub async fn diff(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let mut paths = Vec::new();
    for path in &args.paths {
        match relative(path) {
            Ok(path) => paths.push(path),
            Err(why) => return crate::client::ps::said(&why),
        }
    }
    let client = client(&args.client)?;
    let text = match client.diff(args.from.as_deref(), &paths).await {
        Ok(text) => text,
        Err(err) => {
            eprintln!("duet: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let text = if std::io::stdout().is_terminal() && crate::support::colour_wanted() {
        diff::coloured(&text)
    } else {
        text
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_come_in_any_order() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            ends(&s(&[])).unwrap(),
            Ends {
                remote: String::new(),
                local: None
            }
        );
        assert_eq!(
            ends(&s(&["src", ":/workspace/app/"])).unwrap(),
            Ends {
                remote: "app".into(),
                local: Some("src".into())
            }
        );
        assert_eq!(ends(&s(&[":"])).unwrap().remote, "");
        assert!(ends(&s(&[":a", ":b"])).is_err());
        assert!(ends(&s(&["a", "b"])).is_err());
        assert!(ends(&s(&[":../x"])).is_err());
    }
}
