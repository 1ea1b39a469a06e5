//! Commands in the room's sandbox: queued by the actor in arrival order,
//! awaited in a spawned task, their output streamed straight to the room,
//! their end reported back to the actor, which records and answers them.

use super::super::errors::ApiError;
use super::{Answer, Command, Reply, RoomActor, records, send_frame};
use crate::protocol::{
    Event, ExecFrame, ExecRecord, ExecResponse, ExecResult, ExecSource, Run, SERVER_STOPPED,
    STATE_EXECS, STORED_OUTPUT_CAP, ServerFrame, WORKSPACE, cap_text, iso_timestamp, now_ms,
    sandbox_name,
};
use crate::sandbox::{Chunk, ExecOutcome, ExecSpec, SandboxError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Who waits for a command's end.
pub(crate) enum Then {
    /// An HTTP or rpc `exec`: answered with `{result, sandboxName}`.
    Http(Answer),
    /// The agent's turn: answered with a `Run`.
    Agent(oneshot::Sender<Run>),
}

/// A command launched and not yet done.
pub(crate) struct Launched {
    pub(crate) cmd: String,
    by: String,
    source: ExecSource,
    ts: i64,
    started: Instant,
    generation: u64,
    /// Its interrupt is recorded (once, however often people press Esc).
    interrupted: bool,
    /// What it printed so far, as it is stored.
    printed: Arc<Mutex<Printed>>,
    /// Stops the task that writes its output to the store as it comes.
    _writing: DropGuard,
    /// Withdraws it while it waits behind another (an interrupt).
    pub(crate) start: crate::sandbox::StartGate,
    /// The name its `exec` gave it, for an `interrupt` by `clientId`.
    pub(crate) client_id: Option<String>,
}

/// Who a command is for: the person's name, the socket that asked (its
/// `start` frame's `byConnection`) and the `clientId` its `exec` gave.
pub(crate) struct Origin {
    pub(crate) by: String,
    pub(crate) connection: Option<String>,
    pub(crate) client_id: Option<String>,
}

/// How often a running command's new output is written to the store: a
/// crash loses at most this much of it, and a chatty command costs one
/// write per period, not one per line.
const WRITE_EVERY: Duration = Duration::from_secs(1);

/// A running command's output as the store keeps it (the first
/// `STORED_OUTPUT_CAP` bytes of each stream).
#[derive(Default)]
pub(super) struct Printed {
    stdout: String,
    stderr: String,
    truncated: bool,
    /// Changed since the store last had it.
    dirty: bool,
}

impl Printed {
    /// Keeps what of `chunk` fits under the cap.
    fn push(&mut self, chunk: &Chunk) {
        let (stream, data) = match chunk {
            Chunk::Stdout(data) => (&mut self.stdout, data),
            Chunk::Stderr(data) => (&mut self.stderr, data),
        };
        let room = STORED_OUTPUT_CAP.saturating_sub(stream.len());
        let (kept, cut) = cap_text(data, room);
        if !kept.is_empty() || (cut && !self.truncated) {
            self.dirty = true;
        }
        stream.push_str(&kept);
        self.truncated |= cut;
    }
}

/// The lock of `printed`, even if a writer panicked (the text stays whole).
fn lock(printed: &Mutex<Printed>) -> std::sync::MutexGuard<'_, Printed> {
    printed.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command that ended, as reported to the actor.
pub(crate) struct ExecDone {
    exec_id: String,
    cmd: String,
    by: String,
    source: ExecSource,
    ts: i64,
    started: Instant,
    generation: u64,
    result: Result<ExecOutcome, SandboxError>,
    then: Then,
}

impl RoomActor {
    /// The turn that ran command `exec_id` (the agent's), while it goes
    /// on: records about the command wait for the turn's reply.
    pub(super) fn turn_of(&mut self, exec_id: &str) -> Option<&mut super::turn::CurrentTurn> {
        self.current
            .as_mut()
            .filter(|turn| !turn.discarded && turn.ran.iter().any(|id| id == exec_id))
    }

    /// Whether `event` is worth a record: a command's interrupt is
    /// recorded once.
    pub(super) fn is_news(&mut self, event: &Event) -> bool {
        match event {
            Event::Interrupt { exec_id, .. } => self
                .running
                .get_mut(exec_id)
                .is_none_or(|c| !std::mem::replace(&mut c.interrupted, true)),
            _ => true,
        }
    }

    /// Queues a command in the sandbox, announces it (with the socket that
    /// caused it) and streams its output; returns its id.
    pub(crate) async fn launch(
        &mut self,
        cmd: String,
        spec: ExecSpec,
        origin: Origin,
        then: Then,
    ) -> String {
        let Origin {
            by,
            connection: by_connection,
            client_id,
        } = origin;
        let n = self.next_exec;
        self.next_exec = n + 1;
        let exec_id = format!("x{n:011}");
        let source = match then {
            Then::Http(_) => ExecSource::User,
            Then::Agent(_) => ExecSource::Agent,
        };
        let ts = now_ms();
        let started = Instant::now();
        // Stored as it starts, its output as it comes: a crash leaves the
        // row, which the next start ends (store::close_unended).
        let row = ExecRecord {
            exec_id: exec_id.clone(),
            cmd: cmd.clone(),
            by: by.clone(),
            source,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: None,
            duration: 0,
            ts,
            truncated: false,
            error: None,
            timed_out: false,
            interrupted: false,
        };
        if let Err(e) = self
            .shared
            .store
            .start_exec(self.id.clone(), row.clone(), n + 1)
            .await
        {
            tracing::warn!(room = %self.id, "storing a starting command failed: {e}");
        }
        let printed = Arc::new(Mutex::new(Printed::default()));
        let writing = CancellationToken::new();
        self.keep_writing(row, printed.clone(), started, writing.clone());
        let launched = Launched {
            cmd: cmd.clone(),
            by: by.clone(),
            source,
            ts,
            started,
            generation: self.generation,
            interrupted: false,
            printed: printed.clone(),
            _writing: writing.drop_guard(),
            start: spec.start.clone(),
            client_id,
        };
        self.running.insert(exec_id.clone(), launched);
        self.broadcast(&ServerFrame::Exec(ExecFrame::Start {
            exec_id: exec_id.clone(),
            cmd: cmd.clone(),
            by: by.clone(),
            source,
            by_connection,
        }));
        let frames = self.frames.clone();
        let id = exec_id.clone();
        let on_output = Box::new(move |chunk: Chunk| {
            lock(&printed).push(&chunk);
            let frame = match chunk {
                Chunk::Stdout(data) => ExecFrame::Stdout {
                    exec_id: id.clone(),
                    data,
                },
                Chunk::Stderr(data) => ExecFrame::Stderr {
                    exec_id: id.clone(),
                    data,
                },
            };
            send_frame(&frames, &ServerFrame::Exec(frame), None);
        });
        let outcome = self.sandbox.exec(exec_id.clone(), spec, on_output);
        let inbox = self.inbox.clone();
        let done = ExecDone {
            exec_id: exec_id.clone(),
            cmd,
            by,
            source,
            ts,
            started,
            generation: self.generation,
            result: Err(SandboxError::Destroyed),
            then,
        };
        let shutdown = self.shared.shutdown.clone();
        tokio::spawn(async move {
            let result = tokio::select! {
                result = outcome => result,
                // The server stops: the room ends it as cut off by the stop
                // (its `complete` frame, then the answer to whoever waits).
                () = shutdown.cancelled() => Err(SandboxError::Failed(SERVER_STOPPED.to_string())),
            };
            let _ = inbox
                .send(Command::ExecDone(Box::new(ExecDone { result, ..done })))
                .await;
        });
        exec_id
    }

    /// Announces a command's end, records it and answers whoever waits.
    pub(super) async fn exec_done(&mut self, done: ExecDone) {
        let ExecDone {
            exec_id,
            cmd,
            by,
            source,
            ts,
            started,
            generation,
            result,
            then,
        } = done;
        let launched = self.running.remove(&exec_id);
        if let Some(current) = &mut self.current
            && current.running.as_deref() == Some(exec_id.as_str())
        {
            current.running = None;
        }
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => {
                let error = e.to_string();
                let duration = started.elapsed().as_millis() as u64;
                self.broadcast(&ServerFrame::Exec(ExecFrame::Complete {
                    exec_id: exec_id.clone(),
                    exit_code: None,
                    duration,
                    timed_out: false,
                    truncated: false,
                    interrupted: false,
                    error: Some(error.clone()),
                    cwd: None,
                }));
                // No shell runs now: the next command starts a fresh one.
                if generation == self.generation {
                    self.set_cwd(WORKSPACE.to_string());
                }
                // Recorded like any command: it was announced to everyone,
                // with what it printed before it failed.
                let (stdout, stderr, truncated) = launched
                    .map(|l| {
                        let printed = lock(&l.printed);
                        (
                            printed.stdout.clone(),
                            printed.stderr.clone(),
                            printed.truncated,
                        )
                    })
                    .unwrap_or_default();
                let record = ExecRecord {
                    exec_id,
                    cmd: cmd.clone(),
                    by,
                    source,
                    stdout,
                    stderr,
                    exit_code: None,
                    duration,
                    ts,
                    truncated,
                    error: Some(error.clone()),
                    timed_out: false,
                    interrupted: false,
                };
                self.record_exec(generation, record).await;
                match then {
                    Then::Http(reply) => {
                        let _ = reply.send(Err(ApiError::internal(error)));
                    }
                    Then::Agent(reply) => {
                        let _ = reply.send(Run::failed(cmd, error));
                    }
                }
                return;
            }
        };
        let duration = outcome.duration.as_millis() as u64;
        self.broadcast(&ServerFrame::Exec(ExecFrame::Complete {
            exec_id: exec_id.clone(),
            exit_code: outcome.exit_code,
            duration,
            timed_out: outcome.timed_out,
            truncated: outcome.truncated,
            interrupted: outcome.interrupted,
            error: outcome.error.clone(),
            cwd: outcome.cwd.clone(),
        }));
        let (stdout, cut_out) = cap_text(&outcome.stdout, STORED_OUTPUT_CAP);
        let (stderr, cut_err) = cap_text(&outcome.stderr, STORED_OUTPUT_CAP);
        let record = ExecRecord {
            exec_id,
            cmd: cmd.clone(),
            by,
            source,
            stdout,
            stderr,
            exit_code: outcome.exit_code,
            duration,
            ts,
            truncated: outcome.truncated || cut_out || cut_err,
            // What the live frame said, so that a reload reads the same.
            error: outcome.error.clone(),
            timed_out: outcome.timed_out,
            interrupted: outcome.interrupted,
        };
        self.record_exec(generation, record.clone()).await;
        if generation == self.generation {
            self.shell_after(&record, &outcome).await;
        }
        match then {
            Then::Http(reply) => {
                let result = ExecResult {
                    success: outcome.exit_code == Some(0)
                        && !outcome.timed_out
                        && !outcome.interrupted,
                    exit_code: outcome.exit_code,
                    stdout: outcome.stdout,
                    stderr: outcome.stderr,
                    command: cmd,
                    duration,
                    timestamp: iso_timestamp(ts),
                    session_id: Some(outcome.session_id).filter(|s| !s.is_empty()),
                    truncated: outcome.truncated,
                    timed_out: outcome.timed_out,
                    interrupted: outcome.interrupted,
                    error: outcome.error,
                };
                let _ = reply.send(Ok(Reply::ok(ExecResponse {
                    result,
                    sandbox_name: sandbox_name(&self.id),
                })));
            }
            Then::Agent(reply) => {
                let error = outcome.error.filter(|_| outcome.exit_code.is_none());
                let _ = reply.send(Run {
                    cmd,
                    stdout: record.stdout,
                    stderr: record.stderr,
                    exit_code: outcome.exit_code,
                    error,
                    truncated: record.truncated,
                    ..Run::default()
                });
            }
        }
    }

    /// Where the shell is after a command: the state's `shell.cwd`, and a
    /// `shell` record when the shell was replaced (not for an interrupt).
    async fn shell_after(&mut self, record: &ExecRecord, outcome: &ExecOutcome) {
        let Some(cwd) = outcome.cwd.clone() else {
            return;
        };
        self.set_cwd(cwd.clone());
        let replaced = outcome.restart.and_then(|restart| {
            records::shell_record(&record.exec_id, &record.cmd, &record.by, restart, &cwd)
        });
        let Some(draft) = replaced else {
            return;
        };
        // The agent's command runs in the current turn: after its reply.
        let turn = self
            .current
            .as_mut()
            .filter(|turn| record.source == ExecSource::Agent && !turn.discarded);
        if let Some(turn) = turn {
            turn.after_reply.push(draft);
        } else if let Err(e) = self.store(draft).await {
            tracing::warn!(room = %self.id, "storing a record failed: {}", e.body.error);
        }
    }

    /// Writes what the running command of `row` printed to its stored row,
    /// every `WRITE_EVERY` while it changed, until `stop`.
    fn keep_writing(
        &self,
        row: ExecRecord,
        printed: Arc<Mutex<Printed>>,
        started: Instant,
        stop: CancellationToken,
    ) {
        let store = self.shared.store.clone();
        let room = self.id.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(WRITE_EVERY) => {}
                }
                let rec = {
                    let mut printed = lock(&printed);
                    if !std::mem::take(&mut printed.dirty) {
                        continue;
                    }
                    ExecRecord {
                        stdout: printed.stdout.clone(),
                        stderr: printed.stderr.clone(),
                        truncated: printed.truncated,
                        duration: started.elapsed().as_millis() as u64,
                        ..row.clone()
                    }
                };
                if let Err(e) = store.exec_output(room.clone(), rec).await {
                    tracing::warn!(room = %room, "storing a command's output failed: {e}");
                }
            }
        });
    }

    /// The server stops: every command still running is announced and
    /// stored as ended, with what it printed and no exit code (the
    /// sandboxes are stopped after the rooms).
    pub(super) async fn stop_running(&mut self) {
        let running = std::mem::take(&mut self.running);
        for (exec_id, launched) in running {
            let (stdout, stderr, truncated) = {
                let printed = lock(&launched.printed);
                (
                    printed.stdout.clone(),
                    printed.stderr.clone(),
                    printed.truncated,
                )
            };
            let duration = launched.started.elapsed().as_millis() as u64;
            self.broadcast(&ServerFrame::Exec(ExecFrame::Complete {
                exec_id: exec_id.clone(),
                exit_code: None,
                duration,
                timed_out: false,
                truncated,
                interrupted: false,
                error: Some(SERVER_STOPPED.to_string()),
                cwd: None,
            }));
            let record = ExecRecord {
                exec_id,
                cmd: launched.cmd,
                by: launched.by,
                source: launched.source,
                stdout,
                stderr,
                exit_code: None,
                duration,
                ts: launched.ts,
                truncated,
                error: Some(SERVER_STOPPED.to_string()),
                timed_out: false,
                interrupted: false,
            };
            self.record_exec(launched.generation, record).await;
        }
    }

    /// Keeps a command's record in the store and the state, unless a
    /// cleanup came since it started.
    async fn record_exec(&mut self, generation: u64, record: ExecRecord) {
        if generation != self.generation {
            return;
        }
        if let Err(e) = self
            .shared
            .store
            .insert_exec(self.id.clone(), record.clone())
            .await
        {
            tracing::error!(room = %self.id, "storing a command failed: {e}");
        }
        self.execs.push_back(record);
        while self.execs.len() > STATE_EXECS {
            self.execs.pop_front();
        }
        self.state_cache = None;
    }
}
