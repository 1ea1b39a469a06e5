//! `RoomSandbox`, a room's handle on its sandbox: it queues commands and
//! control messages for the room's worker task (worker.rs) and runs file
//! and checkpoint work on blocking threads, answering the `Sandbox` trait.

use super::worker::{self, Control, Job, Work};
use super::{
    Limits, SandboxPlace, archive, body, changes, checkpoints, files, pack, ready_workspace,
};
use crate::protocol::{DirEntry, TermSize};
use crate::sandbox::files::{FileBody, FileReader};
use crate::sandbox::{
    BoxFuture, ExecOutcome, ExecSpec, ForkSource, OnOutput, ProcEvents, ProcSignal, Pushed,
    Sandbox, SandboxError, TermEvents, TermRequest,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Handle to a room's sandbox worker. Cheap to clone; the worker starts
/// on the first request that needs it and ends when the last handle is
/// dropped.
#[derive(Clone)]
pub struct RoomSandbox {
    /// The worker's queues, once it runs: a room that only chats never
    /// has one (its task and queues cost memory while the room is loaded).
    queues: Arc<std::sync::OnceLock<Queues>>,
    /// Commands queued or running (the worker counts them down).
    pending: Arc<AtomicUsize>,
    /// Told by the worker when the sandbox stopped for being idle.
    stopped: Arc<tokio::sync::Notify>,
    /// What the running sandbox reports into (its terminal, processes,
    /// ports) and the way into its ports.
    feeds: worker::Feeds,
    place: Arc<SandboxPlace>,
    limits: Arc<Limits>,
    /// One change of the room's disk at a time (checkpoints, restores).
    disk_lock: Arc<tokio::sync::Mutex<()>>,
}

/// Where requests reach a running worker.
struct Queues {
    jobs: tokio::sync::mpsc::UnboundedSender<Work>,
    control: tokio::sync::mpsc::UnboundedSender<Control>,
}

impl RoomSandbox {
    /// A handle for the room; its worker starts with the first request
    /// that needs it (which must come inside a Tokio runtime), the
    /// sandbox itself on the first command.
    pub fn new(place: SandboxPlace, limits: Arc<Limits>) -> Self {
        RoomSandbox {
            queues: Arc::default(),
            pending: Arc::new(AtomicUsize::new(0)),
            stopped: Arc::new(tokio::sync::Notify::new()),
            feeds: worker::Feeds::default(),
            place: Arc::new(place),
            limits,
            disk_lock: Arc::default(),
        }
    }

    /// The worker's queues, starting it if it does not run yet.
    fn queues(&self) -> &Queues {
        self.queues.get_or_init(|| {
            let (jobs, jobs_rx) = tokio::sync::mpsc::unbounded_channel();
            let (control, control_rx) = tokio::sync::mpsc::unbounded_channel();
            let shared = worker::Shared {
                place: self.place.clone(),
                limits: self.limits.clone(),
                pending: self.pending.clone(),
                stopped: self.stopped.clone(),
                feeds: self.feeds.clone(),
            };
            tokio::spawn(worker::run(shared, jobs_rx, control_rx));
            Queues { jobs, control }
        })
    }

    /// Whether the worker was ever started.
    fn started(&self) -> bool {
        self.queues.get().is_some()
    }

    /// Runs `work` on a blocking thread with the room's place and limits.
    fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SandboxPlace, &Limits) -> Result<T, SandboxError> + Send + 'static,
    ) -> BoxFuture<Result<T, SandboxError>> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || work(&place, &limits))
                .await
                .map_err(failed)?
        })
    }

    /// Like `blocking`, one change of the room's disk at a time (a
    /// checkpoint never copies a workspace a restore empties).
    fn on_disk<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SandboxPlace, &Limits) -> Result<T, SandboxError> + Send + 'static,
    ) -> BoxFuture<Result<T, SandboxError>> {
        let turn = self.disk_lock.clone();
        let work = self.blocking(work);
        Box::pin(async move {
            let _turn = turn.lock_owned().await;
            work.await
        })
    }
}

/// What a host failure (an I/O error, a task that died) says.
fn failed(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed(e.to_string())
}

/// The workspace's files are read and written only once it is ready.
fn readied<T>(
    place: &SandboxPlace,
    limits: &Limits,
    work: impl FnOnce(&std::path::Path) -> Result<T, SandboxError>,
) -> Result<T, SandboxError> {
    ready_workspace(place, limits)
        .map_err(|e| SandboxError::Failed(format!("the workspace is not available: {e}")))?;
    work(&place.workspace)
}

impl Sandbox for RoomSandbox {
    fn exec(
        &self,
        exec_id: String,
        spec: ExecSpec,
        on_output: OnOutput,
    ) -> BoxFuture<Result<ExecOutcome, SandboxError>> {
        // Queued now, not when the future is first polled.
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.pending.fetch_add(1, Ordering::SeqCst);
        let queued = self.queues().jobs.send(Work::Exec(Box::new(Job {
            exec_id,
            spec,
            on_output,
            reply,
        })));
        if queued.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
        Box::pin(async move {
            queued.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        })
    }

    fn interrupt(&self, exec_id: Option<String>, hard: bool) -> BoxFuture<bool> {
        // Nothing ever ran: nothing to interrupt.
        if !self.started() {
            return Box::pin(async { false });
        }
        let control = self.queues().control.clone();
        Box::pin(async move {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let sent = control.send(Control::Interrupt {
                exec_id,
                hard,
                reply,
            });
            sent.is_ok() && answer.await.unwrap_or(false)
        })
    }

    fn destroy(&self) -> BoxFuture<Result<(), SandboxError>> {
        let control = self.queues().control.clone();
        Box::pin(async move {
            let gone = || failed("the sandbox worker is gone");
            let (reply, answer) = tokio::sync::oneshot::channel();
            control
                .send(Control::Destroy { reply })
                .map_err(|_| gone())?;
            answer
                .await
                .map_err(|_| gone())?
                .map_err(SandboxError::Failed)
        })
    }

    fn read_file(&self, path: String) -> BoxFuture<Result<Vec<u8>, SandboxError>> {
        self.blocking(move |place, limits| {
            if !place.workspace.exists() {
                return Err(SandboxError::NoFile);
            }
            readied(place, limits, |workspace| files::read(workspace, &path))
        })
    }

    fn open_file(&self, path: String) -> BoxFuture<Result<FileReader, SandboxError>> {
        self.blocking(move |place, limits| {
            if !place.workspace.exists() {
                return Err(SandboxError::NoFile);
            }
            readied(place, limits, |workspace| {
                files::open_regular(workspace, &path)
            })
        })
    }

    /// Written beside the old file as it arrives, and renamed over it at
    /// the end.
    fn write_file(&self, path: String, mut body: FileBody) -> BoxFuture<Result<u64, SandboxError>> {
        use futures_util::StreamExt;
        use tokio::io::AsyncWriteExt;
        let owner = self.place.owner();
        let upload = self.blocking(move |place, limits| {
            readied(place, limits, |workspace| {
                files::Upload::create(workspace, &path, owner)
            })
        });
        Box::pin(async move {
            let upload = upload.await?;
            let written = upload.file().try_clone().map_err(failed)?;
            let mut out = tokio::fs::File::from_std(written);
            let mut size = 0u64;
            while let Some(chunk) = body.next().await {
                let chunk = chunk?;
                size += chunk.len() as u64;
                out.write_all(&chunk).await.map_err(files::io_error)?;
            }
            out.flush().await.map_err(files::io_error)?;
            drop(out);
            // An error or a dropped request before here removes the new file.
            tokio::task::spawn_blocking(move || upload.finish())
                .await
                .map_err(failed)??;
            Ok(size)
        })
    }

    fn busy(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0
            || self.feeds.terminal.running()
            || self.feeds.procs.running() > 0
    }

    fn stopped(&self) -> BoxFuture<()> {
        // One waiter (the room): a stop nobody awaited is kept as a permit.
        let stopped = self.stopped.clone();
        Box::pin(async move { stopped.notified().await })
    }

    fn term_open(&self, size: TermSize) -> BoxFuture<Result<TermEvents, SandboxError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self
            .queues()
            .control
            .send(Control::TermOpen { size, reply });
        Box::pin(async move {
            sent.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        })
    }

    fn term_send(&self, request: TermRequest) {
        let _ = self.queues().control.send(Control::Term(request));
    }

    fn process_start(
        &self,
        id: String,
        cmd: String,
    ) -> BoxFuture<Result<ProcEvents, SandboxError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self
            .queues()
            .control
            .send(Control::ProcStart { id, cmd, reply });
        Box::pin(async move {
            sent.map_err(|_| SandboxError::Destroyed)?;
            answer.await.map_err(|_| SandboxError::Destroyed)?
        })
    }

    fn process_signal(&self, id: String, signal: ProcSignal) {
        let _ = self
            .queues()
            .control
            .send(Control::ProcSignal { id, signal });
    }

    fn ports(&self) -> tokio::sync::watch::Receiver<Vec<u16>> {
        self.feeds.ports.subscribe()
    }

    fn port_connect(&self, port: u16) -> BoxFuture<Result<tokio::net::TcpStream, SandboxError>> {
        let link = self.feeds.link.clone();
        Box::pin(async move { link.connect(port).await })
    }

    fn list_dir(&self, path: String) -> BoxFuture<Result<Vec<DirEntry>, SandboxError>> {
        self.blocking(move |place, limits| files::list(place, limits, &path))
    }

    fn delete_path(&self, path: String) -> BoxFuture<Result<(), SandboxError>> {
        self.blocking(move |place, limits| files::delete_path(place, limits, &path))
    }

    fn checkpoint_create(&self, id: String) -> BoxFuture<Result<u64, SandboxError>> {
        self.on_disk(move |place, limits| checkpoints::create(place, limits, &id))
    }

    /// Queued as work of the sandbox (behind the commands queued before
    /// it), which stops the sandbox before the copy.
    fn checkpoint_restore(&self, id: String) -> BoxFuture<Result<(), SandboxError>> {
        let gone = || failed("the sandbox worker is gone");
        let turn = self.disk_lock.clone();
        let (place, limits) = (self.place.clone(), self.limits.clone());
        let (jobs, pending) = (self.queues().jobs.clone(), self.pending.clone());
        Box::pin(async move {
            let _turn = turn.lock_owned().await;
            let (reply, answer) = tokio::sync::oneshot::channel();
            let replace = worker::Replace {
                change: Box::new(move || checkpoints::restore(&place, &limits, &id)),
                reply,
            };
            pending.fetch_add(1, Ordering::SeqCst);
            if jobs.send(Work::Replace(replace)).is_err() {
                pending.fetch_sub(1, Ordering::SeqCst);
                return Err(gone());
            }
            answer.await.unwrap_or_else(|_| Err(gone()))
        })
    }

    fn checkpoint_delete(&self, id: String) -> BoxFuture<Result<(), SandboxError>> {
        self.on_disk(move |place, _| checkpoints::delete(place, &id))
    }

    fn fork_source(
        &self,
        checkpoint: Option<String>,
    ) -> BoxFuture<Result<ForkSource, SandboxError>> {
        let path = self.on_disk(move |place, limits| {
            checkpoints::fork_source(place, limits, checkpoint.as_deref())
        });
        Box::pin(async move { Ok(ForkSource(Box::new(path.await?))) })
    }

    fn fork_from(&self, source: ForkSource) -> BoxFuture<Result<(), SandboxError>> {
        let from = source.0.downcast::<PathBuf>();
        let copy = self.on_disk(move |place, limits| {
            let from = from.map_err(|_| failed("a fork from another kind of sandbox"))?;
            checkpoints::fork_from(place, limits, &from)
        });
        Box::pin(copy)
    }

    /// Unpacked on a blocking thread as the body arrives (a few chunks
    /// in flight: memory stays flat), one change of the disk at a time.
    fn archive_put(
        &self,
        path: String,
        mut body: FileBody,
        mirror: bool,
    ) -> BoxFuture<Result<Pushed, SandboxError>> {
        use futures_util::StreamExt;
        let (chunks, arriving) = tokio::sync::mpsc::channel(8);
        let unpack = self.on_disk(move |place, limits| {
            archive::put(
                place,
                limits,
                &path,
                body::BodyReader::new(arriving),
                mirror,
            )
        });
        Box::pin(async move {
            let feed = async move {
                let mut skipped = 0usize;
                let mut unpacking = true;
                while let Some(chunk) = body.next().await {
                    if unpacking {
                        let broke = chunk.is_err();
                        unpacking = chunks.send(chunk).await.is_ok();
                        if broke {
                            break;
                        }
                        continue;
                    }
                    // The unpacking ended early (a refused member, a full
                    // disk): the rest is read, up to a bound, so that the
                    // client gets to read the answer.
                    match chunk {
                        Ok(bytes) if skipped < DRAIN_LIMIT => skipped += bytes.len(),
                        _ => break,
                    }
                }
            };
            let ((), pushed) = tokio::join!(feed, unpack);
            pushed
        })
    }

    /// The tar is written on a blocking thread into a few chunks in
    /// flight; a reader that goes away stops the walk.
    fn archive_get(&self, path: String) -> BoxFuture<Result<FileBody, SandboxError>> {
        let opened = self.blocking(move |place, limits| pack::open_folder(place, limits, &path));
        Box::pin(async move {
            let root = opened.await?;
            let (chunks, out) = tokio::sync::mpsc::channel(8);
            tokio::task::spawn_blocking(move || {
                let mut writer = pack::ChunkWriter::new(chunks.clone());
                if let Err(e) = pack::write_tar(root, &mut writer) {
                    // The answer breaks off rather than end as a whole tar.
                    let _ = chunks.blocking_send(Err(SandboxError::Failed(format!(
                        "the archive broke off: {e}"
                    ))));
                }
            });
            let body: FileBody = Box::pin(tokio_stream_of(out));
            Ok(body)
        })
    }

    fn diff(&self, id: String, paths: Vec<String>) -> BoxFuture<Result<String, SandboxError>> {
        self.blocking(move |place, limits| changes::diff(place, limits, &id, &paths))
    }
}

/// How much of a refused push's body is still read so that its client
/// reads the answer (beyond it, the connection is dropped).
const DRAIN_LIMIT: usize = 256 * 1024 * 1024;

/// The chunks a channel receives, as a stream.
fn tokio_stream_of<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
