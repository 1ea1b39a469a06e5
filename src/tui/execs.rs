//! The output pane's content: every command run in the room, live from
//! `duet_exec` frames and rebuilt from state's `execs`, in bounded memory.

use crate::protocol::{ExecFrame, ExecRecord, ExecSource};
use crate::text::termtext::{OutputBuffer, Stream};
use crate::tui::cell::Cell;
use crate::tui::exec_cell::RenderCache;
use std::collections::VecDeque;

/// Commands kept in the pane.
pub const MAX_RUNS: usize = 100;
/// What a command whose end this client missed, and whose record the
/// state no longer has, is shown with.
const ENDED_UNSEEN: &str = "it ended while this screen was away";
/// Exec ids remembered as hidden by `/clear`.
const MAX_HIDDEN: usize = 1000;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub timed_out: bool,
    pub interrupted: bool,
    pub truncated: bool,
    pub error: Option<String>,
}

impl Completion {
    /// How a `duet_exec complete` frame says it ended (`None` for the
    /// other phases).
    pub fn from_frame(frame: &ExecFrame) -> Option<Completion> {
        let ExecFrame::Complete {
            exit_code,
            duration,
            timed_out,
            truncated,
            interrupted,
            error,
            ..
        } = frame
        else {
            return None;
        };
        Some(Completion {
            exit_code: *exit_code,
            duration_ms: *duration,
            timed_out: *timed_out,
            interrupted: *interrupted,
            truncated: *truncated,
            error: error.clone(),
        })
    }

    /// How a stored record says it ended: as its live frame did.
    pub fn from_record(record: &ExecRecord) -> Completion {
        Completion {
            exit_code: record.exit_code,
            duration_ms: record.duration,
            timed_out: record.timed_out,
            interrupted: record.interrupted,
            truncated: record.truncated,
            error: record.error.clone(),
        }
    }
}

/// One command and its output.
#[derive(Debug, Clone)]
pub struct ExecRun {
    pub exec_id: String,
    pub cmd: String,
    pub by: String,
    pub source: ExecSource,
    /// The `_pk` of the socket that caused it, when one did (live
    /// commands only: records do not say).
    pub by_connection: Option<String>,
    /// When it started running (when it was announced, while it waits).
    pub started_ms: i64,
    /// Announced behind another command that has not ended: commands run
    /// one at a time, in the order they were announced.
    pub waiting: bool,
    pub output: OutputBuffer,
    pub done: Option<Completion>,
    /// Counts changes of the output and the ending, for the render cache.
    pub(crate) revision: u64,
    /// Lines of the output rendered at (width, revision).
    pub(crate) cache: RenderCache,
}

impl ExecRun {
    /// A run that just started (or whose start this client saw).
    fn new(exec_id: String, cmd: String, by: String, source: ExecSource, started_ms: i64) -> Self {
        ExecRun {
            exec_id,
            cmd,
            by,
            source,
            by_connection: None,
            started_ms,
            waiting: false,
            output: OutputBuffer::new(),
            done: None,
            revision: 0,
            cache: RenderCache::default(),
        }
    }

    /// Its lines before wrapping: header, output, fold marker, and the
    /// error when the sandbox could not run it whole.
    pub fn line_count(&self) -> usize {
        1 + self.output.line_count()
            + usize::from(self.output.folded() > 0)
            + usize::from(self.cut())
            + usize::from(self.error().is_some())
    }

    /// Whether the backend cut its output (more than it keeps or sends).
    pub fn cut(&self) -> bool {
        self.done.as_ref().is_some_and(|d| d.truncated)
    }

    /// Why the sandbox could not run it, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.done.as_ref().and_then(|d| d.error.as_deref())
    }

    fn from_record(record: &ExecRecord) -> ExecRun {
        let mut run = ExecRun::new(
            record.exec_id.clone(),
            record.cmd.clone(),
            record.by.clone(),
            record.source,
            record.ts,
        );
        run.output = OutputBuffer::from_streams(&record.stdout, &record.stderr);
        run.done = Some(Completion::from_record(record));
        run
    }
}

/// The commands of the room, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ExecLog {
    runs: VecDeque<ExecRun>,
    hidden: VecDeque<String>,
}

impl ExecLog {
    /// The runs, oldest first.
    pub fn runs(&self) -> &VecDeque<ExecRun> {
        &self.runs
    }

    /// The most recent command still running.
    pub fn running(&self) -> Option<&ExecRun> {
        self.runs.iter().rev().find(|r| r.done.is_none())
    }

    /// Whether the command of `exec_id` is shown and still running.
    pub fn is_running(&self, exec_id: &str) -> bool {
        self.runs
            .iter()
            .any(|r| r.exec_id == exec_id && r.done.is_none())
    }

    /// Whether `/clear` hid the command of `exec_id` from this screen.
    pub fn is_hidden(&self, exec_id: &str) -> bool {
        self.hidden.iter().any(|id| id == exec_id)
    }

    fn find_mut(&mut self, exec_id: &str) -> Option<&mut ExecRun> {
        self.runs.iter_mut().rev().find(|r| r.exec_id == exec_id)
    }

    fn push(&mut self, run: ExecRun) {
        self.runs.push_back(run);
        while self.runs.len() > MAX_RUNS {
            self.runs.pop_front();
        }
    }

    /// Applies a live frame; answers whether the pane changed.
    pub fn apply_frame(&mut self, frame: &ExecFrame, now_ms: i64) -> bool {
        match frame {
            ExecFrame::Start {
                exec_id,
                cmd,
                by,
                source,
                by_connection,
            } => {
                if self.hidden.contains(exec_id) || self.find_mut(exec_id).is_some() {
                    return false;
                }
                let mut run =
                    ExecRun::new(exec_id.clone(), cmd.clone(), by.clone(), *source, now_ms);
                run.by_connection = by_connection.clone();
                run.waiting = self.runs.iter().any(|r| r.done.is_none());
                self.push(run);
                true
            }
            ExecFrame::Stdout { exec_id, data } | ExecFrame::Stderr { exec_id, data } => {
                let stream = if matches!(frame, ExecFrame::Stdout { .. }) {
                    Stream::Stdout
                } else {
                    Stream::Stderr
                };
                match self.find_mut(exec_id) {
                    Some(run) if run.done.is_none() => {
                        // Output: it runs, whatever this client thought.
                        if std::mem::take(&mut run.waiting) {
                            run.started_ms = now_ms;
                        }
                        run.output.push(stream, data);
                        run.revision += 1;
                        true
                    }
                    _ => false,
                }
            }
            ExecFrame::Complete { exec_id, .. } => match self.find_mut(exec_id) {
                Some(run) => {
                    run.output.finish();
                    run.revision += 1;
                    run.done = Completion::from_frame(frame);
                    self.next_runs(Some(now_ms));
                    true
                }
                None => false,
            },
        }
    }

    /// Takes state's `execs`: finished commands this client missed are
    /// added (in order, before those still running); known ones stay as
    /// streamed.
    pub fn apply_records(&mut self, records: &[ExecRecord]) -> bool {
        let mut changed = false;
        // Walk back from the newest: each missed record goes just before
        // the next one this client knows (else before the running ones).
        let mut anchor = self
            .runs
            .iter()
            .position(|r| r.done.is_none())
            .unwrap_or(self.runs.len());
        for record in records.iter().rev() {
            if self.hidden.contains(&record.exec_id) {
                continue;
            }
            if let Some(pos) = self.runs.iter().position(|r| r.exec_id == record.exec_id) {
                anchor = pos;
                // Records are of finished commands: one still shown as
                // running ended while this client was away.
                if self.runs[pos].done.is_none() {
                    let finished = ExecRun::from_record(record);
                    let run = &mut self.runs[pos];
                    run.done = finished.done;
                    run.output = finished.output;
                    run.revision += 1;
                    changed = true;
                }
                continue;
            }
            self.runs.insert(anchor, ExecRun::from_record(record));
            changed = true;
        }
        changed |= self.end_overtaken(records);
        // Ended from the records (not by a frame): when the next began is not known.
        self.next_runs(None);
        while self.runs.len() > MAX_RUNS {
            self.runs.pop_front();
        }
        changed
    }

    /// The oldest command not ended runs (commands run one at a time, in
    /// the order they were announced): it no longer waits, and its time
    /// counts from `now_ms` when that is when it began.
    fn next_runs(&mut self, now_ms: Option<i64>) {
        if let Some(next) = self.runs.iter_mut().find(|r| r.done.is_none())
            && std::mem::take(&mut next.waiting)
        {
            next.revision += 1;
            if let Some(now) = now_ms {
                next.started_ms = now;
            }
        }
    }

    /// Commands run one at a time in the order they started: one shown as
    /// running that started before a command the state has ended is over,
    /// even when its own record is not there (its end was missed).
    fn end_overtaken(&mut self, records: &[ExecRecord]) -> bool {
        let Some(newest) = records.iter().map(|r| r.exec_id.as_str()).max() else {
            return false;
        };
        let mut changed = false;
        for run in self.runs.iter_mut().filter(|r| r.done.is_none()) {
            // Ids are fixed-width (`x` and 11 digits): their order is the text's.
            if run.exec_id.len() == newest.len() && run.exec_id.as_str() < newest {
                run.output.finish();
                run.done = Some(Completion {
                    exit_code: None,
                    duration_ms: 0,
                    timed_out: false,
                    interrupted: false,
                    truncated: false,
                    error: Some(ENDED_UNSEEN.into()),
                });
                run.revision += 1;
                changed = true;
            }
        }
        changed
    }

    /// `/clear`: hides these runs on this screen.
    pub fn clear_local(&mut self) {
        for run in self.runs.drain(..) {
            self.hidden.push_back(run.exec_id);
        }
        while self.hidden.len() > MAX_HIDDEN {
            self.hidden.pop_front();
        }
    }

    /// The room was cleaned up.
    pub fn clear_all(&mut self) {
        self.runs.clear();
        self.hidden.clear();
    }

    /// The cells, newest first (runs are separated by nothing: their
    /// headers stand out).
    pub fn cells_rev(&self) -> impl Iterator<Item = &dyn Cell> {
        self.runs.iter().rev().map(|r| r as &dyn Cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(id: &str) -> ExecFrame {
        ExecFrame::Start {
            exec_id: id.into(),
            cmd: "echo hi".into(),
            by: "ada".into(),
            source: ExecSource::User,
            by_connection: None,
        }
    }

    #[test]
    fn frames_build_a_run_and_states_do_not_duplicate_it() {
        let mut log = ExecLog::default();
        assert!(log.apply_frame(&start("e1"), 0));
        assert!(!log.apply_frame(&start("e1"), 0));
        log.apply_frame(
            &ExecFrame::Stdout {
                exec_id: "e1".into(),
                data: "hi\n".into(),
            },
            0,
        );
        assert!(log.running().is_some());
        log.apply_frame(
            &ExecFrame::Complete {
                exec_id: "e1".into(),
                exit_code: Some(0),
                duration: 5,
                timed_out: false,
                truncated: false,
                interrupted: false,
                error: None,
                cwd: None,
            },
            0,
        );
        assert!(log.running().is_none());
        let record = echo_hi_record();
        let mut older = record.clone();
        older.exec_id = "e0".into();
        assert!(log.apply_records(&[older, record]));
        let ids: Vec<_> = log.runs().iter().map(|r| r.exec_id.as_str()).collect();
        assert_eq!(ids, ["e0", "e1"]);
        assert_eq!(log.runs()[1].output.plain_lines(), vec!["hi"]);
    }

    /// The stored record of `echo hi` run by ada as `e1`.
    fn echo_hi_record() -> ExecRecord {
        ExecRecord {
            exec_id: "e1".into(),
            cmd: "echo hi".into(),
            by: "ada".into(),
            source: ExecSource::User,
            stdout: "hi\n".into(),
            stderr: String::new(),
            exit_code: Some(0),
            duration: 5,
            ts: 0,
            truncated: false,
            error: None,
            timed_out: false,
            interrupted: false,
        }
    }

    /// Issue 23, item 8: a reload reads a stopped command as the live
    /// screen did (`■ interrupted`, `⏱ timed out`, the shell's note), not
    /// as a bare exit code.
    #[test]
    fn a_stopped_command_ends_the_same_live_and_stored() {
        for (timed_out, interrupted, code) in [(false, true, 130), (true, false, 124)] {
            let note = Some("the shell was replaced".to_string());
            let frame = ExecFrame::Complete {
                exec_id: "e1".into(),
                exit_code: Some(code),
                duration: 5,
                timed_out,
                truncated: false,
                interrupted,
                error: note.clone(),
                cwd: None,
            };
            let record = ExecRecord {
                exit_code: Some(code),
                error: note,
                timed_out,
                interrupted,
                ..echo_hi_record()
            };
            assert_eq!(
                Completion::from_frame(&frame),
                Some(Completion::from_record(&record))
            );
        }
    }

    #[test]
    fn a_run_older_than_an_ended_one_is_over_even_without_its_record() {
        let mut log = ExecLog::default();
        log.apply_frame(&start("x00000000001"), 0);
        log.apply_frame(&start("x00000000003"), 0);
        let mut later = echo_hi_record();
        later.exec_id = "x00000000002".into();
        assert!(log.apply_records(&[later]));
        let ended: Vec<_> = log
            .runs()
            .iter()
            .map(|r| (r.exec_id.as_str(), r.error()))
            .collect();
        assert!(
            ended.contains(&("x00000000001", Some(ENDED_UNSEEN))),
            "{ended:?}"
        );
        assert_eq!(
            log.running().map(|r| r.exec_id.as_str()),
            Some("x00000000003")
        );
        // Announced behind the first, it waited; with the first over, it runs.
        assert!(!log.running().is_some_and(|r| r.waiting));
    }

    #[test]
    fn a_run_behind_another_waits_until_that_one_ends() {
        let mut log = ExecLog::default();
        log.apply_frame(&start("x00000000001"), 0);
        log.apply_frame(&start("x00000000002"), 5);
        let waiting: Vec<bool> = log.runs().iter().map(|r| r.waiting).collect();
        assert_eq!(waiting, [false, true]);
        log.apply_frame(
            &ExecFrame::Complete {
                exec_id: "x00000000001".into(),
                exit_code: Some(0),
                duration: 40,
                timed_out: false,
                truncated: false,
                interrupted: false,
                error: None,
                cwd: None,
            },
            40,
        );
        let next = &log.runs()[1];
        assert_eq!((next.waiting, next.started_ms), (false, 40));
    }

    #[test]
    fn a_run_whose_end_was_missed_ends_with_its_record() {
        let mut log = ExecLog::default();
        log.apply_frame(&start("e1"), 0);
        let record = echo_hi_record();
        assert!(log.apply_records(&[record]));
        assert!(log.running().is_none());
        assert_eq!(log.runs()[0].output.plain_lines(), vec!["hi"]);
    }
}
