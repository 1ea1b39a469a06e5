//! The server side of a room's sandbox: a task that owns the helper
//! process, starts it on first use, runs queued commands one at a time,
//! serves interrupts and destruction while a command runs, and stops the
//! sandbox when it has been idle (the process itself: launch.rs).

mod launch;

use super::connect::PortLink;
use super::proc_slots::ProcSlots;
use super::term_slot::TermSlot;
use super::wire::{self, Request};
use super::{
    Chunk, ExecOutcome, ExecSpec, Limits, ProcEvents, ProcSignal, RestartReason, SandboxError,
    SandboxPlace, ShellRestart, TermEvents, TermRequest,
};
use crate::protocol::{TermSize, WORKSPACE};
use crate::support::Utf8Stream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use launch::{Event, Process, send, started, stop};

/// What waits in a sandbox's queue, run one at a time in order.
pub(super) enum Work {
    /// Boxed: the queue allocates its slots a block at a time.
    Exec(Box<Job>),
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
                        run_job(&place, &limits, &mut process, *job, queue).await;
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
    // Withdrawn by an interrupt while it waited: it never runs.
    if !job.spec.start.start() {
        let _ = job.reply.send(Ok(ExecOutcome {
            exit_code: Some(128 + libc::SIGINT),
            stdout: String::new(),
            stderr: String::new(),
            truncated: false,
            timed_out: false,
            interrupted: true,
            error: None,
            duration: Duration::ZERO,
            session_id: String::new(),
            cwd: None,
            restart: None,
        }));
        return;
    }
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
    let place = place.clone();
    tokio::task::spawn_blocking(move || {
        super::disk::exclusively(&place.workspace, || {
            // A host folder has no image, and may be a mount of its own.
            if place.folder.is_none() {
                super::disk::release(&place.workspace)
                    .map_err(|e| format!("cannot unmount the workspace: {e}"))?;
            }
            super::remove_workspace(&place)
        })
    })
    .await
    .map_err(|e| e.to_string())?
}
