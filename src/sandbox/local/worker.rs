//! The server side of a room's sandbox: a task that owns the helper
//! process, starts it on first use, runs queued commands one at a time,
//! serves interrupts and destruction while a command runs, and stops the
//! sandbox when it has been idle.

use super::connect::PortLink;
use super::proc_slots::ProcSlots;
use super::term_slot::TermSlot;
use super::wire::{self, Done, Request, Setup};
use super::{
    Chunk, ExecOutcome, ExecSpec, Limits, ProcEvent, ProcEvents, ProcSignal, RestartReason,
    SandboxError, SandboxPlace, ShellRestart, TermEvent, TermEvents, TermRequest,
};
use crate::protocol::{TermSize, WORKSPACE};
use crate::support::Utf8Stream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Notify, mpsc, oneshot, watch};

/// What waits in a sandbox's queue, run one at a time in order.
pub(super) enum Work {
    Exec(Job),
    /// Stop the sandbox, then change its workspace (a restore).
    Replace(Replace),
}

/// A change of the workspace that needs the sandbox stopped.
pub(super) struct Replace {
    pub change: Box<dyn FnOnce() -> Result<(), SandboxError> + Send>,
    pub reply: oneshot::Sender<Result<(), SandboxError>>,
}

/// A queued command.
pub(super) struct Job {
    pub exec_id: String,
    pub spec: ExecSpec,
    pub on_output: super::OnOutput,
    pub reply: oneshot::Sender<Result<ExecOutcome, SandboxError>>,
}

/// Requests served even while a command runs.
pub(super) enum Control {
    Interrupt {
        exec_id: Option<String>,
        hard: bool,
        reply: oneshot::Sender<bool>,
    },
    Destroy {
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Open the shared terminal (starting the sandbox if need be).
    TermOpen {
        size: TermSize,
        reply: oneshot::Sender<Result<TermEvents, SandboxError>>,
    },
    /// Input, a resize or the close for the terminal.
    Term(TermRequest),
    /// Start a background process (starting the sandbox if need be).
    ProcStart {
        id: String,
        cmd: String,
        reply: oneshot::Sender<Result<ProcEvents, SandboxError>>,
    },
    /// Signal a background process.
    ProcSignal { id: String, signal: ProcSignal },
}

/// What a running sandbox reports into, shared by the worker, the reader
/// of its frames and the room's handle.
#[derive(Clone)]
pub(super) struct Feeds {
    pub terminal: Arc<TermSlot>,
    pub procs: Arc<ProcSlots>,
    pub ports: Arc<watch::Sender<Vec<u16>>>,
    pub link: Arc<PortLink>,
    /// Bumped when a sandbox starts or stops: the reader of an older one
    /// ends nothing of a newer one.
    generation: Arc<AtomicU64>,
}

impl Default for Feeds {
    fn default() -> Self {
        Feeds {
            terminal: Arc::default(),
            procs: Arc::default(),
            ports: Arc::new(watch::channel(Vec::new()).0),
            link: Arc::default(),
            generation: Arc::default(),
        }
    }
}

impl Feeds {
    /// The sandbox of `generation` is gone: its terminal and processes
    /// ended, nothing listens.
    async fn gone(&self, generation: u64, why: &str) {
        if self.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        self.terminal.end(None, Some(why.into())).await;
        self.procs.end_all(why).await;
        self.ports.send_replace(Vec::new());
        self.link.set_sandbox(None);
    }

    /// Whether anything runs that keeps the sandbox from its idle stop.
    fn holding(&self) -> bool {
        self.terminal.running() || self.procs.running() > 0
    }
}

/// What the supervisor said.
enum Event {
    Output(u8, Vec<u8>),
    Done(Done, String),
}

/// A running sandbox.
struct Process {
    child: Child,
    stdin: ChildStdin,
    events: mpsc::Receiver<Event>,
    /// Ended when the sandbox stops (its reader may see that later).
    feeds: Feeds,
    generation: u64,
}

/// Time a sandbox gets to report that it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Slack beyond a command's timeout before the sandbox counts as wedged.
const WEDGE_SLACK: Duration = Duration::from_secs(10);

/// What one room's worker shares with its handle.
pub(super) struct Shared {
    pub place: Arc<SandboxPlace>,
    pub limits: Arc<Limits>,
    /// Commands queued or running.
    pub pending: Arc<AtomicUsize>,
    /// Told when the sandbox stops for being idle.
    pub stopped: Arc<Notify>,
    pub feeds: Feeds,
}

/// Serves one room's sandbox until its last handle is dropped.
pub(super) async fn run(
    shared: Shared,
    mut jobs: mpsc::UnboundedReceiver<Work>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let Shared {
        place,
        limits,
        pending,
        stopped,
        feeds,
    } = shared;
    let mut process: Option<Process> = None;
    loop {
        let idle = tokio::time::sleep(limits.idle_stop);
        tokio::select! {
            // A queued command comes before a control message: an interrupt
            // sent right after its command must find it running, not idle.
            biased;
            work = jobs.recv() => {
                match work {
                    None => break,
                    Some(Work::Exec(job)) => {
                        let queue = Queue { control: &mut control, jobs: &mut jobs, pending: &pending, feeds: &feeds };
                        run_job(&place, &limits, &mut process, job, queue).await;
                    }
                    Some(Work::Replace(replace)) => {
                        stop(&place, &mut process).await;
                        let changed = tokio::task::spawn_blocking(replace.change)
                            .await
                            .unwrap_or_else(|e| Err(SandboxError::Failed(e.to_string())));
                        let _ = replace.reply.send(changed);
                    }
                }
                pending.fetch_sub(1, Ordering::SeqCst);
            }
            ctl = control.recv() => match ctl {
                None => break,
                Some(Control::Interrupt { reply, .. }) => { let _ = reply.send(false); }
                Some(Control::Destroy { reply }) => {
                    let result = destroy(&place, &mut process, &mut jobs, &pending).await;
                    let _ = reply.send(result);
                }
                Some(Control::TermOpen { size, reply }) => {
                    match started(&place, &limits, &mut process, &feeds).await {
                        Ok(p) => { let _ = reply.send(term_open(p, &feeds.terminal, size).await); }
                        Err(e) => { let _ = reply.send(Err(e)); }
                    }
                }
                Some(Control::Term(request)) => {
                    if let Some(p) = process.as_mut() {
                        term_request(p, request).await;
                    }
                }
                Some(Control::ProcStart { id, cmd, reply }) => {
                    match started(&place, &limits, &mut process, &feeds).await {
                        Ok(p) => { let _ = reply.send(proc_start(p, &feeds.procs, id, cmd).await); }
                        Err(e) => { let _ = reply.send(Err(e)); }
                    }
                }
                Some(Control::ProcSignal { id, signal }) => {
                    if let Some(p) = process.as_mut() {
                        proc_signal(p, id, signal).await;
                    }
                }
            },
            // A running terminal or process keeps the sandbox up.
            _ = idle, if process.is_some() && !feeds.holding() => {
                tracing::info!(room = %place.room, "sandbox idle: stopping it (its files stay)");
                stop(&place, &mut process).await;
                stopped.notify_one();
            }
        }
    }
    stop(&place, &mut process).await;
}

/// What a running command shares the worker's attention with.
struct Queue<'a> {
    control: &'a mut mpsc::UnboundedReceiver<Control>,
    jobs: &'a mut mpsc::UnboundedReceiver<Work>,
    pending: &'a AtomicUsize,
    feeds: &'a Feeds,
}

async fn run_job(
    place: &SandboxPlace,
    limits: &Limits,
    process: &mut Option<Process>,
    mut job: Job,
    queue: Queue<'_>,
) {
    let Queue {
        control,
        jobs,
        pending,
        feeds,
    } = queue;
    let started_at = Instant::now();
    let proc_ = match started(place, limits, process, feeds).await {
        Ok(p) => p,
        Err(e) => {
            let _ = job.reply.send(Err(e));
            return;
        }
    };
    let request = Request::Run {
        cmd: job.spec.cmd.clone(),
        cwd: job.spec.cwd.clone(),
        env: job.spec.env.clone(),
        timeout_ms: job.spec.timeout.as_millis() as u64,
        output_cap: job.spec.output_cap,
    };
    if send(&mut proc_.stdin, &request).await.is_err() {
        stop(place, process).await;
        let _ = job
            .reply
            .send(Err(SandboxError::Start("the sandbox stopped".into())));
        return;
    }
    let mut outcome = ExecOutcome::default();
    let mut decoders = [Utf8Stream::default(), Utf8Stream::default()];
    let wedged = tokio::time::sleep(job.spec.timeout + WEDGE_SLACK);
    tokio::pin!(wedged);
    let ended = loop {
        tokio::select! {
            event = proc_.events.recv() => match event {
                Some(Event::Output(kind, bytes)) => {
                    let stream = usize::from(kind == wire::STDERR);
                    let text = decoders[stream].push(&bytes);
                    emit(&mut outcome, &mut job.on_output, stream, text);
                }
                Some(Event::Done(done, session)) => {
                    outcome.exit_code = done.exit_code;
                    outcome.timed_out = done.timed_out;
                    outcome.interrupted = done.interrupted;
                    outcome.truncated = done.truncated;
                    outcome.error = done.error;
                    outcome.cwd = done.cwd;
                    outcome.restart = done.restart;
                    outcome.session_id = session;
                    break Ok(());
                }
                None => break Err((
                    RestartReason::Stopped,
                    "the sandbox stopped unexpectedly; it starts again with the next command",
                )),
            },
            ctl = control.recv() => match ctl {
                Some(Control::Interrupt { exec_id, hard, reply }) => {
                    let ours = exec_id.as_deref().is_none_or(|id| id == job.exec_id);
                    if ours {
                        let _ = send(&mut proc_.stdin, &Request::Interrupt { hard }).await;
                    }
                    let _ = reply.send(ours);
                }
                Some(Control::Destroy { reply }) => {
                    let result = destroy(place, process, jobs, pending).await;
                    let _ = reply.send(result);
                    let _ = job.reply.send(Err(SandboxError::Destroyed));
                    return;
                }
                Some(Control::TermOpen { size, reply }) => {
                    let _ = reply.send(term_open(proc_, &feeds.terminal, size).await);
                }
                Some(Control::Term(request)) => term_request(proc_, request).await,
                Some(Control::ProcStart { id, cmd, reply }) => {
                    let _ = reply.send(proc_start(proc_, &feeds.procs, id, cmd).await);
                }
                Some(Control::ProcSignal { id, signal }) => proc_signal(proc_, id, signal).await,
                None => break Err((RestartReason::Stopped, "the room closed")),
            },
            _ = &mut wedged => {
                outcome.timed_out = true;
                break Err((RestartReason::Timeout, "the sandbox stopped answering and was restarted"));
            }
        }
    };
    for (stream, decoder) in decoders.iter_mut().enumerate() {
        let rest = decoder.finish();
        emit(&mut outcome, &mut job.on_output, stream, rest);
    }
    if let Err((reason, message)) = ended {
        // The whole sandbox goes: the next command starts a fresh shell.
        stop(place, process).await;
        outcome.exit_code = None;
        outcome.error = Some(message.to_string());
        outcome.cwd = Some(WORKSPACE.to_string());
        outcome.restart = Some(ShellRestart {
            reason,
            reset: true,
        });
    }
    outcome.duration = started_at.elapsed();
    let _ = job.reply.send(Ok(outcome));
}

fn emit(outcome: &mut ExecOutcome, on_output: &mut super::OnOutput, stream: usize, text: String) {
    if text.is_empty() {
        return;
    }
    if stream == 0 {
        outcome.stdout.push_str(&text);
        on_output(Chunk::Stdout(text));
    } else {
        outcome.stderr.push_str(&text);
        on_output(Chunk::Stderr(text));
    }
}

/// Opens the shared terminal in a running sandbox.
async fn term_open(
    process: &mut Process,
    terminal: &TermSlot,
    size: TermSize,
) -> Result<TermEvents, SandboxError> {
    if terminal.running() {
        return Err(SandboxError::Start("a terminal runs already".into()));
    }
    let (tx, rx) = mpsc::channel(256);
    terminal.set(Some(tx));
    let request = Request::TermOpen {
        cols: size.cols,
        rows: size.rows,
    };
    if let Err(e) = send(&mut process.stdin, &request).await {
        terminal.set(None);
        return Err(SandboxError::Start(format!("the sandbox stopped: {e}")));
    }
    Ok(rx)
}

/// Passes input, a resize or the close to the terminal.
async fn term_request(process: &mut Process, request: TermRequest) {
    use base64::Engine;
    let request = match request {
        TermRequest::Input(bytes) => Request::TermInput {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        },
        TermRequest::Resize(size) => Request::TermResize {
            cols: size.cols,
            rows: size.rows,
        },
        TermRequest::Close => Request::TermClose,
    };
    // A sandbox that stopped ends the terminal through its reader.
    let _ = send(&mut process.stdin, &request).await;
}

/// Starts a background process in a running sandbox.
async fn proc_start(
    process: &mut Process,
    procs: &ProcSlots,
    id: String,
    cmd: String,
) -> Result<ProcEvents, SandboxError> {
    let (tx, rx) = mpsc::channel(256);
    procs.insert(id.clone(), tx);
    if let Err(e) = send(
        &mut process.stdin,
        &Request::ProcStart {
            id: id.clone(),
            cmd,
        },
    )
    .await
    {
        procs.end(&id, None, None).await;
        return Err(SandboxError::Start(format!("the sandbox stopped: {e}")));
    }
    Ok(rx)
}

/// Signals a background process's group.
async fn proc_signal(process: &mut Process, id: String, signal: ProcSignal) {
    let signal = match signal {
        ProcSignal::Term => libc::SIGTERM,
        ProcSignal::Kill => libc::SIGKILL,
    };
    // A sandbox that stopped ends its processes through its reader.
    let _ = send(&mut process.stdin, &Request::ProcSignal { id, signal }).await;
}

/// The running sandbox, started first if need be.
async fn started<'a>(
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

async fn send(stdin: &mut ChildStdin, request: &Request) -> std::io::Result<()> {
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
    let exe = super::helper_exe().map_err(|e| fail(&e))?;
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
    let sandbox = tokio::task::spawn_blocking(move || helper.and_then(super::connect::sandbox_pid))
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
            wire::TERM_EXIT => {
                let exit: wire::TermExit = serde_json::from_slice(&payload).unwrap_or_default();
                feeds.terminal.end(exit.exit_code, exit.error).await;
                continue;
            }
            wire::PROC_OUT => {
                if let Some((id, stream, bytes)) = super::background::parse_output(&payload)
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
        .workspace
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
        super::ready_workspace(&place, &limits)?;
        if place.uid.is_none() {
            return Ok(Vec::new());
        }
        let flavor = super::enforcement().cgroups;
        match super::cgroups::create(
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
async fn stop(place: &SandboxPlace, process: &mut Option<Process>) {
    if let Some(mut p) = process.take() {
        let _ = p.child.kill().await;
        p.feeds.gone(p.generation, "the sandbox stopped").await;
        p.feeds.generation.fetch_add(1, Ordering::SeqCst);
        let flavor = super::enforcement().cgroups;
        let name = opaque(place);
        let _ = tokio::task::spawn_blocking(move || super::cgroups::remove(flavor, &name)).await;
    }
}

async fn destroy(
    place: &SandboxPlace,
    process: &mut Option<Process>,
    jobs: &mut mpsc::UnboundedReceiver<Work>,
    pending: &AtomicUsize,
) -> Result<(), String> {
    stop(place, process).await;
    while let Ok(work) = jobs.try_recv() {
        match work {
            Work::Exec(job) => {
                let _ = job.reply.send(Err(SandboxError::Destroyed));
            }
            Work::Replace(replace) => {
                let failed = SandboxError::Failed("the room was cleaned up".into());
                let _ = replace.reply.send(Err(failed));
            }
        }
        pending.fetch_sub(1, Ordering::SeqCst);
    }
    let workspace = place.workspace.clone();
    tokio::task::spawn_blocking(move || {
        super::disk::exclusively(&workspace, || {
            super::disk::release(&workspace)
                .map_err(|e| format!("cannot unmount the workspace: {e}"))?;
            super::remove_workspace(&workspace)
        })
    })
    .await
    .map_err(|e| e.to_string())?
}
