//! Commands in the room's sandbox: queued by the actor in arrival order,
//! awaited in a spawned task, their output streamed straight to the room,
//! their end reported back to the actor, which records and answers them.

use super::super::errors::ApiError;
use super::{Answer, Command, Reply, RoomActor, records, send_frame};
use crate::protocol::{
    Event, ExecFrame, ExecRecord, ExecResponse, ExecResult, ExecSource, InterruptResponse, Run,
    STATE_EXECS, STORED_OUTPUT_CAP, ServerFrame, WORKSPACE, cap_text, iso_timestamp, now_ms,
    sandbox_name,
};
use crate::sandbox::{Chunk, ExecOutcome, ExecSpec, SandboxError};
use crate::server::auth::Caller;
use crate::server::ops::Exec;
use std::time::Instant;
use tokio::sync::oneshot;

/// Who waits for a command's end.
pub(super) enum Then {
    /// An HTTP or rpc `exec`: answered with `{result, sandboxName}`.
    Http(Answer),
    /// The agent's turn: answered with a `Run`.
    Agent(oneshot::Sender<Run>),
}

/// A command launched and not yet done.
pub(super) struct Launched {
    cmd: String,
    /// Its interrupt is recorded (once, however often people press Esc).
    interrupted: bool,
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
    /// Runs a person's command; `answer` gets `{result, sandboxName}`.
    pub(crate) async fn exec(&mut self, exec: Exec, caller: Caller, answer: Answer) {
        let policy = &self.shared.policy;
        let spec = policy.spec(exec.cmd.clone(), exec.timeout_ms, exec.cwd, exec.env);
        let by = caller.name_or_anonymous();
        let then = Then::Http(answer);
        self.launch(exec.cmd, spec, by, caller.connection(), then)
            .await;
    }

    /// Stops a running command (`exec_id`, else the one running now) for
    /// `by`; answers whether one was, after storing its `interrupt` record.
    pub(crate) fn interrupt(&mut self, exec_id: Option<String>, by: String, answer: Answer) {
        let target = match &exec_id {
            Some(id) => self.running.get_key_value(id),
            // Commands run one at a time in the order they came: the oldest.
            None => self.running.iter().next(),
        };
        let Some((exec_id, cmd)) = target.map(|(id, c)| (id.clone(), c.cmd.clone())) else {
            let _ = answer.send(Ok(Reply::ok(InterruptResponse { interrupted: false })));
            return;
        };
        let sandbox = self.sandbox.clone();
        let inbox = self.inbox.clone();
        // Awaited apart from the actor: the sandbox answers when it signalled.
        tokio::spawn(async move {
            let interrupted = sandbox.interrupt(Some(exec_id.clone()), false).await;
            if interrupted {
                let event = Event::Interrupt { by, exec_id, cmd };
                super::record_in(&inbox, event).await;
            }
            let _ = answer.send(Ok(Reply::ok(InterruptResponse { interrupted })));
        });
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
    pub(super) async fn launch(
        &mut self,
        cmd: String,
        spec: ExecSpec,
        by: String,
        by_connection: Option<String>,
        then: Then,
    ) -> String {
        let n = self.next_exec;
        self.next_exec = n + 1;
        if let Err(e) = self
            .shared
            .store
            .set_next_exec(self.id.clone(), n + 1)
            .await
        {
            tracing::warn!(room = %self.id, "storing the command counter failed: {e}");
        }
        let exec_id = format!("x{n:011}");
        let launched = Launched {
            cmd: cmd.clone(),
            interrupted: false,
        };
        self.running.insert(exec_id.clone(), launched);
        let source = match then {
            Then::Http(_) => ExecSource::User,
            Then::Agent(_) => ExecSource::Agent,
        };
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
            ts: now_ms(),
            started: Instant::now(),
            generation: self.generation,
            result: Err(SandboxError::Destroyed),
            then,
        };
        let shutdown = self.shared.shutdown.clone();
        tokio::spawn(async move {
            let result = tokio::select! {
                result = outcome => result,
                // The server stops: whoever waits is answered that the room stopped.
                () = shutdown.cancelled() => return,
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
        self.running.remove(&exec_id);
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
                // Recorded like any command: it was announced to everyone.
                let record = ExecRecord {
                    exec_id,
                    cmd: cmd.clone(),
                    by,
                    source,
                    stdout: String::new(),
                    stderr: String::new(),
                    exit_code: None,
                    duration,
                    ts,
                    truncated: false,
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
        if let Some(draft) = replaced
            && let Err(e) = self.store(draft).await
        {
            tracing::warn!(room = %self.id, "storing a record failed: {}", e.body.error);
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
