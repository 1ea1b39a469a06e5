//! A room's sandbox process: started (the helper, its setup, its ready
//! frame), its frames read into the worker's events and the room's feeds,
//! and stopped.

use super::Feeds;
use crate::sandbox::local::wire::{Done, Request, Setup};
use crate::sandbox::local::{self as local, Limits, SandboxPlace, wire};
use crate::sandbox::{ProcEvent, SandboxError, TermEvent};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// What the supervisor said.
pub(super) enum Event {
    Output(u8, Vec<u8>),
    Done(Done, String),
}

/// A running sandbox.
pub(super) struct Process {
    child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) events: mpsc::Receiver<Event>,
    /// Ended when the sandbox stops (its reader may see that later).
    feeds: Feeds,
    generation: u64,
}

/// Time a sandbox gets to report that it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// The running sandbox, started first if need be.
pub(super) async fn started<'a>(
    place: &SandboxPlace,
    limits: &Limits,
    process: &'a mut Option<Process>,
    feeds: &Feeds,
) -> Result<&'a mut Process, SandboxError> {
    if process.is_none() {
        match start(place, limits, feeds).await {
            Ok(p) => *process = Some(p),
            Err(e) => {
                tracing::warn!(room = %place.room, "sandbox failed to start: {e}");
                return Err(e);
            }
        }
    }
    process
        .as_mut()
        .ok_or_else(|| SandboxError::Start("the sandbox did not start".into()))
}

pub(super) async fn send(stdin: &mut ChildStdin, request: &Request) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(request).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stdin.write_all(&line).await?;
    stdin.flush().await
}

/// Starts the helper and waits until its shell is ready.
async fn start(
    place: &SandboxPlace,
    limits: &Limits,
    feeds: &Feeds,
) -> Result<Process, SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError::Start(e.to_string());
    let cgroups = prepare(place, limits).await.map_err(|e| fail(&e))?;
    let exe = local::helper_exe().map_err(|e| fail(&e))?;
    let mut child = Command::new(exe)
        .arg("sandbox-init")
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(&e))?;
    let (Some(mut stdin), Some(mut stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(fail(&"the helper has no pipes"));
    };
    let setup = Setup {
        room: place.room.clone(),
        workspace: place.workspace.clone(),
        uid: place.uid,
        gid: place.owner().map(|(_, gid)| gid),
        home: place.folder.as_ref().map(|f| f.home.clone()),
        processes: limits.processes,
        cpu_seconds: limits.cpu_seconds,
        file_size: limits.file_size,
        open_files: limits.open_files,
        memory_bytes: limits.memory_bytes,
        tmp_bytes: limits.tmp_bytes,
        network: limits.network,
        cgroups,
    };
    let mut line = serde_json::to_vec(&setup).map_err(|e| fail(&e))?;
    line.push(b'\n');
    stdin.write_all(&line).await.map_err(|e| fail(&e))?;

    let room = place.room.clone();
    let log = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut last = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::warn!(room = %room, "sandbox: {line}");
            last = line;
        }
        last
    });
    let ready = tokio::time::timeout(START_TIMEOUT, wire::read_frame(&mut stdout)).await;
    match ready {
        Ok(Ok(Some((wire::READY, _)))) => {}
        other => {
            let _ = child.kill().await;
            let said = log.await.unwrap_or_default();
            let why = match other {
                Err(_) => "it did not answer in time".to_string(),
                Ok(Err(e)) => e.to_string(),
                _ if !said.is_empty() => said,
                _ => "the helper exited".to_string(),
            };
            return Err(SandboxError::Start(why));
        }
    }
    let generation = feeds.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let helper = child.id();
    let sandbox = tokio::task::spawn_blocking(move || helper.and_then(local::connect::sandbox_pid))
        .await
        .ok()
        .flatten();
    feeds.link.set_sandbox(sandbox);
    let (tx, events) = mpsc::channel(64);
    tokio::spawn(read_events(stdout, tx, feeds.clone(), generation));
    tracing::debug!(room = %place.room, "sandbox started");
    Ok(Process {
        child,
        stdin,
        events,
        feeds: feeds.clone(),
        generation,
    })
}

async fn read_events(
    mut stdout: tokio::process::ChildStdout,
    tx: mpsc::Sender<Event>,
    feeds: Feeds,
    generation: u64,
) {
    while let Ok(Some((kind, payload))) = wire::read_frame(&mut stdout).await {
        let event = match kind {
            wire::TERM_DATA => {
                if let Some(sender) = feeds.terminal.sender() {
                    let _ = sender.send(TermEvent::Output(payload)).await;
                }
                continue;
            }
            wire::TERM_RESIZED => {
                if let (Some(size), Some(sender)) =
                    (wire::parse_term_size(&payload), feeds.terminal.sender())
                {
                    let _ = sender.send(TermEvent::Resized(size)).await;
                }
                continue;
            }
            wire::TERM_EXIT => {
                let exit: wire::TermExit = serde_json::from_slice(&payload).unwrap_or_default();
                feeds.terminal.end(exit.exit_code, exit.error).await;
                continue;
            }
            wire::PROC_OUT => {
                if let Some((id, stream, bytes)) = local::background::parse_output(&payload)
                    && let Some(sender) = feeds.procs.sender(&id)
                {
                    let event = ProcEvent::Output {
                        stderr: stream == 1,
                        bytes: bytes.to_vec(),
                    };
                    let _ = sender.send(event).await;
                }
                continue;
            }
            wire::PROC_EXIT => {
                if let Ok(exit) = serde_json::from_slice::<wire::ProcExit>(&payload) {
                    feeds.procs.end(&exit.id, exit.exit_code, exit.error).await;
                }
                continue;
            }
            wire::PORTS => {
                if let Ok(ports) = serde_json::from_slice::<Vec<u16>>(&payload) {
                    feeds.ports.send_replace(ports);
                }
                continue;
            }
            wire::STDOUT | wire::STDERR => Event::Output(kind, payload),
            wire::DONE => {
                let value: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
                let session = value["session"].as_str().unwrap_or_default().to_string();
                let done = serde_json::from_value(value).unwrap_or_else(|e| Done {
                    error: Some(format!("unreadable result from the sandbox: {e}")),
                    ..Done::default()
                });
                Event::Done(done, session)
            }
            _ => continue,
        };
        if tx.send(event).await.is_err() {
            break;
        }
    }
    feeds.gone(generation, "the sandbox stopped").await;
}

/// The room's name on the host: its workspace folder's opaque name.
fn opaque(place: &SandboxPlace) -> String {
    place
        .home()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| place.room.clone())
}

/// Readies the workspace (and its quota) and the room's cgroups; returns
/// the cgroup folders the helper joins.
async fn prepare(
    place: &SandboxPlace,
    limits: &Limits,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let (place, limits) = (place.clone(), limits.clone());
    tokio::task::spawn_blocking(move || {
        local::ready_workspace(&place, &limits)?;
        if place.uid.is_none() {
            return Ok(Vec::new());
        }
        let flavor = local::enforcement().cgroups;
        match local::cgroups::create(
            flavor,
            &opaque(&place),
            limits.processes,
            limits.memory_bytes,
        ) {
            Ok(dirs) => Ok(dirs),
            Err(e) => {
                tracing::warn!(room = %place.room, "no cgroups for this room ({e}): rlimits only");
                Ok(Vec::new())
            }
        }
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Kills the sandbox (its PID namespace takes every process with it) and
/// removes the room's cgroups.
pub(super) async fn stop(place: &SandboxPlace, process: &mut Option<Process>) {
    if let Some(mut p) = process.take() {
        let _ = p.child.kill().await;
        p.feeds.gone(p.generation, "the sandbox stopped").await;
        p.feeds.generation.fetch_add(1, Ordering::SeqCst);
        let flavor = local::enforcement().cgroups;
        let name = opaque(place);
        let _ = tokio::task::spawn_blocking(move || local::cgroups::remove(flavor, &name)).await;
    }
}
