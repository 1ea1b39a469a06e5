//! The room's shared terminal (docs/protocol.md "The shared terminal"):
//! one task per terminal that owns the sandbox's pseudo-terminal, keeps its
//! screen with a terminal emulator, sizes it by the "smallest" rule and
//! sends its output to the sockets attached to it, on a broadcast of its
//! own (the room's broadcast carries only `open` and `exit`, which every
//! socket gets). The room's actor starts it and is told when it starts,
//! resizes and ends; the sockets attach, type and resize through its handle.

mod screen;
mod screens;
mod size;
pub(crate) mod socket;
mod spans;
mod stale;

use super::errors::ApiError;
use super::room::sleep_until;
use crate::protocol::{ServerFrame, TermFrame, TermSize};
use crate::sandbox::{Sandbox, TermEvent, TermRequest};
use axum::extract::ws::Utf8Bytes;
use base64::Engine;
use futures_util::FutureExt;
use screen::Screen;
use screens::ScreenFeed;
use size::Viewers;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

/// Frames buffered per attached socket; one that falls further behind is
/// sent a fresh snapshot instead.
const FRAMES_CAPACITY: usize = 256;
/// Bulk output (a flood) is gathered this long into one frame; a little
/// output (a keystroke's echo, a prompt) goes out at once.
const GATHER: Duration = Duration::from_millis(4);
/// A sandbox that never says where a resize fell among the output has the
/// screen take the size after this long anyway (sockets attaching are not
/// left waiting).
const RESIZE_UNSAID: Duration = Duration::from_secs(2);
/// What counts as bulk: more than a line or two waiting.
const BULK: usize = 1024;
/// The most output one frame carries.
const FRAME_BYTES: usize = 64 * 1024;
/// How long a terminal whose task failed waits for the sandbox to end its
/// shell, so that the next one can open there.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// The error of an attachment to a terminal that ended meanwhile.
const ENDED: &str = "the terminal ended";

/// What an attached socket receives from the terminal.
#[derive(Debug, Clone)]
pub(crate) enum TermOut {
    /// A `data`, `screen` or `resize` frame, serialized.
    Frame(Utf8Bytes),
    /// The terminal ended; the `exit` frame.
    Exit(Utf8Bytes),
}

/// A socket's attachment: what it is sent first and its feed.
pub(crate) struct Attached {
    pub(crate) term_id: String,
    pub(crate) size: TermSize,
    /// The `data` frame with `snapshot: true`, or (`screen`) the `screen`
    /// frame with `full: true`.
    pub(crate) snapshot: Utf8Bytes,
    /// It gets `screen` frames instead of `data` frames.
    pub(crate) screen: bool,
    pub(crate) frames: broadcast::Receiver<TermOut>,
}

impl Attached {
    /// The `resize` frame of the terminal's size now: what a socket that
    /// attaches again after falling behind is sent before the snapshot,
    /// since a resize may be among the frames it missed.
    pub(crate) fn size_frame(&self) -> Utf8Bytes {
        frame_text(TermFrame::Resize {
            term_id: self.term_id.clone(),
            cols: self.size.cols,
            rows: self.size.rows,
        })
    }
}

/// What the room's actor is told by its terminal.
pub(crate) enum TermNews {
    /// It runs; `ack` once everyone was told (`open`), so that sockets
    /// attach after the `open` frame; `false`: the room no longer wants it.
    Started {
        term_id: String,
        by: String,
        size: TermSize,
        ack: oneshot::Sender<bool>,
    },
    Resized {
        term_id: String,
        size: TermSize,
    },
    Ended {
        term_id: String,
        exit_code: Option<i32>,
        /// Why, when it ended unexpectedly (`exit`'s `reason`).
        reason: Option<String>,
    },
}

/// Requests to a terminal's task.
enum Request {
    Attach {
        conn: u64,
        size: Option<TermSize>,
        screen: bool,
        reply: AttachReply,
    },
    Detach {
        conn: u64,
    },
    Resize {
        conn: u64,
        size: TermSize,
    },
    /// `conn` became a viewer: attached still, its size no longer counts.
    ForgetSize {
        conn: u64,
    },
    Input(Vec<u8>),
    Close,
    Screen {
        reply: oneshot::Sender<String>,
    },
}

/// Handle to a terminal. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TermHandle {
    pub(crate) term_id: String,
    requests: mpsc::UnboundedSender<Request>,
}

impl TermHandle {
    /// Attaches `conn` (for `screen` frames when `screen`); the answer
    /// carries the snapshot and the feed.
    pub(crate) async fn attach(
        &self,
        conn: u64,
        size: Option<TermSize>,
        screen: bool,
    ) -> Result<Attached, ApiError> {
        let (reply, answer) = oneshot::channel();
        let gone = || ApiError::internal(ENDED);
        self.requests
            .send(Request::Attach {
                conn,
                size,
                screen,
                reply,
            })
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    pub(crate) fn detach(&self, conn: u64) {
        let _ = self.requests.send(Request::Detach { conn });
    }

    pub(crate) fn resize(&self, conn: u64, size: TermSize) {
        let _ = self.requests.send(Request::Resize { conn, size });
    }

    /// `conn` watches on, but its window no longer sizes the terminal.
    pub(crate) fn forget_size(&self, conn: u64) {
        let _ = self.requests.send(Request::ForgetSize { conn });
    }

    pub(crate) fn input(&self, bytes: Vec<u8>) {
        let _ = self.requests.send(Request::Input(bytes));
    }

    /// Whether its task is over (it answers nothing any more).
    pub(crate) fn is_gone(&self) -> bool {
        self.requests.is_closed()
    }

    /// Ends the terminal for everyone.
    pub(crate) fn close(&self) {
        let _ = self.requests.send(Request::Close);
    }

    /// The screen as text; `None` when the terminal has ended.
    pub(crate) async fn screen(&self) -> Option<String> {
        let (reply, answer) = oneshot::channel();
        self.requests.send(Request::Screen { reply }).ok()?;
        answer.await.ok()
    }
}

/// What a terminal needs from its room.
pub(crate) struct Launch {
    pub(crate) sandbox: Arc<dyn Sandbox>,
    pub(crate) by: String,
    pub(crate) size: TermSize,
    /// Unattached and silent this long, it is closed.
    pub(crate) idle: Duration,
    /// Where the room's actor hears from it.
    pub(crate) news: mpsc::UnboundedSender<TermNews>,
}

/// Whether an attachment failed because the terminal ended as it came
/// (the room opens a new one once it heard).
pub(crate) fn ended_meanwhile(error: &ApiError) -> bool {
    error.body.error == ENDED
}

/// Starts a terminal; it opens in the sandbox in the background, and
/// sockets that attach meanwhile wait for it.
pub(crate) fn spawn(launch: Launch) -> TermHandle {
    let term_id = format!("t{:012x}", rand::random::<u64>() >> 16);
    let (requests, rx) = mpsc::unbounded_channel();
    tokio::spawn(run(term_id.clone(), launch, rx));
    TermHandle { term_id, requests }
}

/// The terminal's task.
struct Hub {
    term_id: String,
    sandbox: Arc<dyn Sandbox>,
    news: mpsc::UnboundedSender<TermNews>,
    screen: Screen,
    /// The size the programs are given (the "smallest" rule's).
    size: TermSize,
    /// The size the screen and the sockets have: the programs' as of the
    /// output read so far.
    shown: TermSize,
    /// Scroll-region resets a program still writes for an old height.
    stale: stale::StaleRegion,
    /// Sockets to answer once the screen has the programs' size: whether
    /// each wants `screen` frames, and where its answer goes.
    attaching: Vec<(bool, AttachReply)>,
    /// When the programs were last given a size the screen has not taken.
    resize_asked: Option<Instant>,
    viewers: Viewers,
    frames: broadcast::Sender<TermOut>,
    /// The sockets attached for `screen` frames.
    screens: ScreenFeed,
    /// Output not yet sent, and since when it waits.
    pending: Vec<u8>,
    pending_since: Option<Instant>,
    last_sent: Option<Instant>,
    /// Since when it has been unattached and silent.
    quiet_since: Instant,
}

async fn run(term_id: String, launch: Launch, mut rx: mpsc::UnboundedReceiver<Request>) {
    let Launch {
        sandbox,
        by,
        size,
        idle,
        news,
    } = launch;
    let mut events = match sandbox.term_open(size).await {
        Ok(events) => events,
        Err(e) => {
            let error = format!("the terminal could not start: {e}");
            fail_waiting(&mut rx, &error);
            let _ = news.send(TermNews::Ended {
                term_id,
                exit_code: None,
                reason: None,
            });
            return;
        }
    };
    let (ack, acked) = oneshot::channel();
    let started = TermNews::Started {
        term_id: term_id.clone(),
        by,
        size,
        ack,
    };
    if news.send(started).is_err() || !acked.await.unwrap_or(false) {
        sandbox.term_send(TermRequest::Close);
        fail_waiting(&mut rx, ENDED);
        return;
    }
    let (frames, _) = broadcast::channel(FRAMES_CAPACITY);
    let mut hub = Hub {
        term_id,
        sandbox,
        news,
        screen: Screen::new(size),
        size,
        shown: size,
        stale: stale::StaleRegion::default(),
        attaching: Vec::new(),
        resize_asked: None,
        viewers: Viewers::default(),
        frames,
        screens: ScreenFeed::new(),
        pending: Vec::new(),
        pending_since: None,
        last_sent: None,
        quiet_since: Instant::now(),
    };
    // Nothing the terminal does may end it for the room without a word: a
    // panic in its task is caught, the shell closed, and the room told why.
    let served = AssertUnwindSafe(hub.serve_until_end(&mut events, &mut rx, idle))
        .catch_unwind()
        .await;
    let (exit_code, reason) = match served {
        Ok(end) => end,
        Err(panic) => {
            let reason = format!("the terminal failed: {}", panic_text(&*panic));
            tracing::error!(term = %hub.term_id, "{reason}");
            hub.sandbox.term_send(TermRequest::Close);
            // The sandbox ends its shell before it can open the next one.
            let _ = tokio::time::timeout(CLOSE_WAIT, async {
                while let Some(event) = events.recv().await {
                    if matches!(event, TermEvent::Exit(..)) {
                        break;
                    }
                }
            })
            .await;
            (None, Some(reason))
        }
    };
    hub.pending.clear();
    let exit = frame_text(TermFrame::Exit {
        term_id: hub.term_id.clone(),
        exit_code,
        reason: reason.clone(),
    });
    hub.screens.send(TermOut::Exit(exit.clone()));
    let _ = hub.frames.send(TermOut::Exit(exit));
    fail_waiting(&mut rx, ENDED);
    for (_, reply) in hub.attaching.drain(..) {
        let _ = reply.send(Err(ApiError::internal(ENDED)));
    }
    let _ = hub.news.send(TermNews::Ended {
        term_id: hub.term_id.clone(),
        exit_code,
        reason,
    });
}

/// What a panic said.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "it panicked".to_string())
}

/// Answers the sockets that wait to attach to a terminal that is not there.
fn fail_waiting(rx: &mut mpsc::UnboundedReceiver<Request>, error: &str) {
    rx.close();
    while let Ok(request) = rx.try_recv() {
        if let Request::Attach { reply, .. } = request {
            let _ = reply.send(Err(ApiError::internal(error)));
        }
    }
}

/// Where an attach is answered.
type AttachReply = oneshot::Sender<Result<Attached, ApiError>>;

/// A `duet_term` frame, serialized.
fn frame_text(frame: TermFrame) -> Utf8Bytes {
    super::room::frame_text(&ServerFrame::Term(frame))
}

impl Hub {
    /// Runs the terminal until it ends: its exit code, and why when it
    /// ended unexpectedly.
    async fn serve_until_end(
        &mut self,
        events: &mut crate::sandbox::TermEvents,
        rx: &mut mpsc::UnboundedReceiver<Request>,
        idle: Duration,
    ) -> (Option<i32>, Option<String>) {
        let mut reachable = true;
        let end = loop {
            let flush_at = self.pending_since.map(|t| t + GATHER);
            let screen_at = self.screens.due();
            let idle_at = self.viewers.is_empty().then(|| self.quiet_since + idle);
            let resize_at = self.resize_asked.map(|t| t + RESIZE_UNSAID);
            tokio::select! {
                biased;
                // People first: a key (Ctrl+C) or a resize is not kept
                // waiting behind a flood of output.
                request = rx.recv(), if reachable => match request {
                    Some(request) => self.serve(request),
                    // The room unloaded: nobody can reach the terminal.
                    None => {
                        reachable = false;
                        self.sandbox.term_send(TermRequest::Close);
                    }
                },
                event = events.recv() => match event {
                    Some(TermEvent::Output(bytes)) => self.output(bytes),
                    Some(TermEvent::Resized(size)) => self.resized(size),
                    Some(TermEvent::Exit(code, error)) => {
                        if let Some(error) = &error {
                            tracing::info!(term = %self.term_id, "terminal ended: {error}");
                        }
                        break (code, error);
                    }
                    None => {
                        let lost = "the terminal's connection to the sandbox was lost";
                        break (None, Some(lost.to_string()));
                    }
                },
                () = sleep_until(flush_at) => self.flush(),
                () = sleep_until(screen_at) => self.screens.tick(&self.term_id, self.screen.emulator()),
                () = sleep_until(resize_at) => {
                    tracing::warn!(term = %self.term_id, "the sandbox did not say where a resize fell: the screen takes it now");
                    self.resized(self.size);
                }
                () = sleep_until(idle_at) => {
                    tracing::info!(term = %self.term_id, "terminal unattached and silent: closing it");
                    self.quiet_since = Instant::now();
                    self.sandbox.term_send(TermRequest::Close);
                }
            }
        };
        self.flush();
        self.screens.tick(&self.term_id, self.screen.emulator());
        end
    }

    fn serve(&mut self, request: Request) {
        match request {
            Request::Attach {
                conn,
                size,
                screen,
                reply,
            } => {
                self.viewers.attach(conn, size);
                self.resize_to_viewers();
                self.attaching.push((screen, reply));
                self.answer_attaching();
            }
            Request::Detach { conn } => {
                if self.viewers.detach(conn) {
                    self.quiet_since = Instant::now();
                    self.resize_to_viewers();
                }
            }
            Request::Resize { conn, size } => {
                if self.viewers.resize(conn, size) {
                    self.resize_to_viewers();
                }
            }
            Request::ForgetSize { conn } => {
                if self.viewers.forget_size(conn) {
                    self.resize_to_viewers();
                }
            }
            Request::Input(bytes) => self.sandbox.term_send(TermRequest::Input(bytes)),
            Request::Close => self.sandbox.term_send(TermRequest::Close),
            Request::Screen { reply } => {
                let _ = reply.send(self.screen.text());
            }
        }
    }

    /// Answers the sockets that attach once the screen has the size the
    /// programs were given (the answer names it, the snapshot is drawn at it).
    fn answer_attaching(&mut self) {
        if self.shown != self.size {
            return;
        }
        for (screen, reply) in std::mem::take(&mut self.attaching) {
            // Everything before the snapshot is in it; everything after
            // comes on the feed.
            let (snapshot, frames) = if screen {
                self.screens
                    .subscribe(&self.term_id, self.screen.emulator())
            } else {
                self.flush();
                (self.snapshot(), self.frames.subscribe())
            };
            let attached = Attached {
                term_id: self.term_id.clone(),
                size: self.shown,
                snapshot,
                screen,
                frames,
            };
            let _ = reply.send(Ok(attached));
        }
    }

    /// The `data` frame that redraws the screen.
    fn snapshot(&self) -> Utf8Bytes {
        frame_text(TermFrame::Data {
            term_id: self.term_id.clone(),
            data: base64::engine::general_purpose::STANDARD.encode(self.screen.snapshot()),
            snapshot: true,
        })
    }

    fn output(&mut self, bytes: Vec<u8>) {
        let bytes = self.stale.fix(bytes);
        self.screen.feed(&bytes);
        self.quiet_since = Instant::now();
        self.screens.changed();
        // A flood keeps the output coming: the frame due goes out between.
        if self.screens.is_due() {
            self.screens.tick(&self.term_id, self.screen.emulator());
        }
        self.pending.extend_from_slice(&bytes);
        let quiet = self.last_sent.is_none_or(|t| t.elapsed() >= GATHER);
        if quiet || self.pending.len() < BULK || self.pending.len() >= FRAME_BYTES {
            self.flush();
        } else {
            self.pending_since.get_or_insert_with(Instant::now);
        }
    }

    /// Sends the output gathered so far.
    fn flush(&mut self) {
        self.pending_since = None;
        if self.pending.is_empty() {
            return;
        }
        self.last_sent = Some(Instant::now());
        let bytes = std::mem::take(&mut self.pending);
        for chunk in bytes.chunks(FRAME_BYTES) {
            let frame = frame_text(TermFrame::Data {
                term_id: self.term_id.clone(),
                data: base64::engine::general_purpose::STANDARD.encode(chunk),
                snapshot: false,
            });
            let _ = self.frames.send(TermOut::Frame(frame));
        }
    }

    /// Applies the "smallest" rule: a new size goes to the programs; the
    /// screen, the attached sockets and the room follow when the sandbox
    /// says where among the output they got it (`resized`), so that
    /// nothing drawn for one size is read at another.
    fn resize_to_viewers(&mut self) {
        let size = self.viewers.size(self.size);
        if size == self.size {
            return;
        }
        self.size = size;
        self.resize_asked = Some(Instant::now());
        self.sandbox.term_send(TermRequest::Resize(size));
    }

    /// The programs got `size` here, among their output: the screen, the
    /// attached sockets and the room take it.
    fn resized(&mut self, size: TermSize) {
        if size == self.size {
            self.resize_asked = None;
        }
        if size == self.shown {
            return self.answer_attaching();
        }
        self.flush();
        self.screens.tick(&self.term_id, self.screen.emulator());
        self.stale.resized(self.shown.rows, size.rows);
        self.shown = size;
        self.screen.resize(size);
        let frame = frame_text(TermFrame::Resize {
            term_id: self.term_id.clone(),
            cols: size.cols,
            rows: size.rows,
        });
        let _ = self.frames.send(TermOut::Frame(frame.clone()));
        self.screens
            .resized(&self.term_id, frame, self.screen.emulator());
        let _ = self.news.send(TermNews::Resized {
            term_id: self.term_id.clone(),
            size,
        });
        self.answer_attaching();
    }
}
