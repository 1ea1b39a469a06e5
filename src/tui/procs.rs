//! The room's background processes and ports in the TUI: `/bg CMD`
//! starts one (rpc `process_start`); the processes view (F4, `/ps`) lists
//! them with the listening ports and their URLs, follows the selected
//! one's log live (`process_follow`: the answer's log, then its output
//! frames; a reconnect follows again and the answer replaces the log) and
//! stops one (`process_kill`, after a y/n when someone else started it,
//! as Esc's rule in stop.rs). Starts, ends and new ports are toasts, so
//! the chat stays the conversation; the status bar counts those running.

use crate::client::explain;
use crate::client::processes;
use crate::client::rpc::{Answer, RoomOp, RpcError};
use crate::protocol::{FollowResponse, KillResponse};
use crate::protocol::{PortState, Process, ProcessFrame, ProcessStatus};
use crate::tui::app::{App, Effect, Modal};
use crate::tui::keymap::{self, Action};
use crate::tui::stop::Stop;
use std::collections::VecDeque;

/// Bytes of a followed log the view keeps (the oldest go first).
pub const LOG_KEPT: usize = 256 * 1024;
/// How much of a command a toast quotes.
const QUOTED_CMD: usize = 40;

/// Which of a process's streams a piece of its log came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The log of the process the view follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    pub id: String,
    /// Its output in the order it came (the answer's stdout, then its
    /// stderr, then the frames).
    pub log: VecDeque<(Stream, String)>,
    bytes: usize,
    /// `process_follow` answered on this connection: output frames are
    /// new (earlier ones are in the answer's log).
    pub answered: bool,
}

impl Followed {
    fn new(id: &str) -> Followed {
        Followed {
            id: id.to_string(),
            log: VecDeque::new(),
            bytes: 0,
            answered: false,
        }
    }

    fn push(&mut self, stream: Stream, data: &str) {
        if data.is_empty() {
            return;
        }
        self.bytes += data.len();
        self.log.push_back((stream, data.to_string()));
        while self.bytes > LOG_KEPT && self.log.len() > 1 {
            if let Some((_, old)) = self.log.pop_front() {
                self.bytes -= old.len();
            }
        }
    }

    /// The log as lines, each with its stream (a line split across
    /// frames is joined again).
    pub fn lines(&self) -> Vec<(Stream, String)> {
        let mut lines: Vec<(Stream, String)> = Vec::new();
        let mut open = false;
        for (stream, data) in &self.log {
            for (i, piece) in data.split('\n').enumerate() {
                match lines.last_mut() {
                    Some((s, line)) if i == 0 && open && s == stream => line.push_str(piece),
                    _ => lines.push((*stream, piece.to_string())),
                }
            }
            open = !data.ends_with('\n');
            if !open {
                lines.pop();
            }
        }
        lines
    }
}

/// The room's processes and ports as this client knows them, and the view.
#[derive(Debug, Clone, Default)]
pub struct Procs {
    /// The state's `processes`, kept by `start` and `exit` frames between
    /// patches.
    pub list: Vec<Process>,
    /// The state's `ports`.
    pub ports: Vec<PortState>,
    /// The selected row of the view.
    pub selected: usize,
    /// The process whose log the view shows.
    pub followed: Option<Followed>,
    /// The room's lists arrived once: later ports are announced.
    known: bool,
}

impl Procs {
    /// How many run.
    pub fn running(&self) -> usize {
        processes::running(&self.list)
    }

    /// The selected process, if any.
    pub fn selected(&self) -> Option<&Process> {
        self.list.get(self.selected)
    }

    fn get(&self, id: &str) -> Option<&Process> {
        self.list.iter().find(|p| p.id == id)
    }
}

/// The key that opens the processes view, as the help writes it.
pub fn view_key() -> String {
    keymap::BINDINGS
        .iter()
        .find(|b| b.action == Action::Processes)
        .and_then(|b| keymap::keys_of(b).first().map(keymap::label))
        .unwrap_or_else(|| "F4".into())
}

/// `p1 (python3)`.
pub fn named(process: &Process) -> String {
    format!("{} ({})", process.id, process.name)
}

/// How it ended, as a sentence's end: `exited (code 0)`, `was killed (code 143)`.
pub fn ended_words(status: ProcessStatus, exit_code: Option<i32>) -> String {
    let verb = match status {
        ProcessStatus::Running => return "runs".into(),
        ProcessStatus::Exited => "exited",
        ProcessStatus::Killed => "was killed",
    };
    match exit_code {
        Some(code) => format!("{verb} (code {code})"),
        None => verb.to_string(),
    }
}

impl App {
    /// `/bg CMD`: starts it; the `start` frame says so.
    pub(crate) fn start_process(
        &mut self,
        cmd: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        if cmd.is_empty() {
            return Err("usage: /bg CMD (runs CMD in the background in the sandbox)".into());
        }
        effects.push(Effect::Call(RoomOp::ProcessStart {
            cmd: cmd.to_string(),
            name: None,
        }));
        Ok(())
    }

    /// F4, `/ps`: the processes view (the newest selected when opened).
    pub(crate) fn open_processes(&mut self) {
        if self.modals.last() == Some(&Modal::Processes) {
            return;
        }
        self.modals.retain(|m| *m != Modal::Processes);
        self.modals.push(Modal::Processes);
        if self.procs.followed.is_none() {
            self.procs.selected = self.procs.list.len().saturating_sub(1);
        }
    }

    /// `/logs ID`: the view, following ID.
    pub(crate) fn show_log(
        &mut self,
        wanted: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let index = self.find_process(wanted)?;
        self.open_processes();
        self.procs.selected = index;
        if self.procs.followed.as_ref().map(|f| f.id.as_str())
            != Some(self.procs.list[index].id.as_str())
        {
            self.toggle_follow(effects);
        }
        Ok(())
    }

    /// `/kill ID`: as `k` in the view.
    pub(crate) fn kill_named(
        &mut self,
        wanted: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let index = self.find_process(wanted)?;
        let process = self.procs.list[index].clone();
        self.kill_process(&process, effects);
        Ok(())
    }

    fn find_process(&self, wanted: &str) -> Result<usize, String> {
        if wanted.is_empty() {
            return Err("name a process: its id (p1) or its name (see /ps)".into());
        }
        let found = processes::find(&self.procs.list, wanted)?;
        Ok(self
            .procs
            .list
            .iter()
            .position(|p| p.id == found.id)
            .unwrap_or_default())
    }

    /// Esc in the view: closes it, and its log is not followed any more.
    pub(crate) fn close_processes(&mut self, effects: &mut Vec<Effect>) {
        self.modals.retain(|m| *m != Modal::Processes);
        if let Some(followed) = self.procs.followed.take() {
            effects.push(Effect::Call(RoomOp::ProcessUnfollow(followed.id)));
        }
    }

    /// Up and Down in the view.
    pub(crate) fn select_process(&mut self, delta: isize) {
        let last = self.procs.list.len().saturating_sub(1);
        self.procs.selected = self.procs.selected.saturating_add_signed(delta).min(last);
    }

    /// Enter in the view: follow the selected process's log, or stop
    /// following it.
    pub(crate) fn toggle_follow(&mut self, effects: &mut Vec<Effect>) {
        let Some(id) = self.procs.selected().map(|p| p.id.clone()) else {
            return;
        };
        let was = self.procs.followed.take();
        if let Some(was) = &was {
            effects.push(Effect::Call(RoomOp::ProcessUnfollow(was.id.clone())));
        }
        if was.is_some_and(|was| was.id == id) {
            return;
        }
        self.procs.followed = Some(Followed::new(&id));
        effects.push(Effect::Call(RoomOp::ProcessFollow(id)));
    }

    /// `k` in the view: stop the selected process.
    pub(crate) fn kill_selected(&mut self, effects: &mut Vec<Effect>) {
        if let Some(process) = self.procs.selected().cloned() {
            self.kill_process(&process, effects);
        }
    }

    /// Stops `process` at once when this person started it, else after
    /// asking (the backend records who stopped it).
    fn kill_process(&mut self, process: &Process, effects: &mut Vec<Effect>) {
        if process.status != ProcessStatus::Running {
            self.toast(format!("{} already ended", named(process)), false);
            return;
        }
        let mine = process.by == self.session.name;
        let cmd =
            crate::tui::text::truncate(&crate::tui::timeline::one_line(&process.cmd), QUOTED_CMD);
        let whose = if mine {
            "your".to_string()
        } else {
            format!("{}'s", process.by)
        };
        let stop = Stop {
            op: RoomOp::ProcessKill(process.id.clone()),
            what: format!("{whose} process {} `{cmd}`", process.id),
            mine,
            goes_on: None,
        };
        if mine {
            self.toast(format!("stopping {}", named(process)), false);
            effects.push(Effect::Call(stop.op));
        } else {
            self.modals.push(Modal::ConfirmStop(stop));
        }
    }

    /// Whether the process `id` still runs (a y/n answered late).
    pub(crate) fn process_running(&self, id: &str) -> bool {
        self.procs
            .get(id)
            .is_some_and(|p| p.status == ProcessStatus::Running)
    }

    /// A `duet_process` frame.
    pub(crate) fn on_process_frame(&mut self, frame: ProcessFrame) -> bool {
        match frame {
            ProcessFrame::Start { process } => {
                self.toast(
                    format!(
                        "{} started {}: `{}` ({} shows the processes)",
                        process.by,
                        named(&process),
                        crate::tui::text::truncate(
                            &crate::tui::timeline::one_line(&process.cmd),
                            QUOTED_CMD
                        ),
                        view_key()
                    ),
                    false,
                );
                match self.procs.list.iter_mut().find(|p| p.id == process.id) {
                    Some(known) => *known = process,
                    None => self.procs.list.push(process),
                }
                true
            }
            ProcessFrame::Stdout { process_id, data } => {
                self.on_output(&process_id, Stream::Stdout, &data)
            }
            ProcessFrame::Stderr { process_id, data } => {
                self.on_output(&process_id, Stream::Stderr, &data)
            }
            ProcessFrame::Exit {
                process_id,
                status,
                exit_code,
            } => {
                let now = u64::try_from(self.now_ms).unwrap_or_default();
                let name = match self.procs.list.iter_mut().find(|p| p.id == process_id) {
                    Some(process) => {
                        process.status = status;
                        process.exit_code = exit_code;
                        process.ended_at.get_or_insert(now);
                        named(process)
                    }
                    None => process_id,
                };
                self.toast(format!("{name} {}", ended_words(status, exit_code)), false);
                true
            }
        }
    }

    fn on_output(&mut self, id: &str, stream: Stream, data: &str) -> bool {
        match self.procs.followed.as_mut() {
            Some(followed) if followed.id == id && followed.answered => {
                followed.push(stream, data);
                true
            }
            _ => false,
        }
    }

    /// The state's `processes`.
    pub(crate) fn set_processes(&mut self, list: Vec<Process>) -> bool {
        if self.procs.list == list {
            return false;
        }
        let selected = self.procs.selected().map(|p| p.id.clone());
        self.procs.list = list;
        self.procs.selected = selected
            .and_then(|id| self.procs.list.iter().position(|p| p.id == id))
            .unwrap_or(self.procs.list.len().saturating_sub(1));
        true
    }

    /// The state's `ports`: a port that starts listening is announced
    /// with its URL (not those listening when this client joined).
    pub(crate) fn set_ports(&mut self, ports: Vec<PortState>) -> bool {
        let known = std::mem::replace(&mut self.procs.known, true);
        if self.procs.ports == ports {
            return false;
        }
        if known {
            let new: Vec<String> = ports
                .iter()
                .filter(|p| !self.procs.ports.iter().any(|old| old.port == p.port))
                .map(|p| {
                    format!(
                        "port {} listens in the sandbox: {}",
                        p.port,
                        processes::port_url(&self.session.server, p)
                    )
                })
                .collect();
            for said in new {
                self.toast(said, false);
            }
        }
        self.procs.ports = ports;
        true
    }

    /// The link is back: the followed log is asked for again (the answer
    /// replaces it: nothing missing, nothing twice).
    pub(crate) fn follow_again(&mut self, effects: &mut Vec<Effect>) {
        if let Some(followed) = self.procs.followed.as_mut() {
            followed.answered = false;
            effects.push(Effect::Call(RoomOp::ProcessFollow(followed.id.clone())));
        }
    }

    /// The link is down: output frames stop until it is followed again.
    pub(crate) fn follow_link_down(&mut self) {
        if let Some(followed) = self.procs.followed.as_mut() {
            followed.answered = false;
        }
    }

    /// The answer of `process_start`, `process_kill`, `process_follow`.
    pub(crate) fn on_process_answer(&mut self, answer: &Answer) {
        match (&answer.op, &answer.result) {
            (RoomOp::ProcessStart { cmd, .. }, Err(err)) => {
                let cmd =
                    crate::tui::text::truncate(&crate::tui::timeline::one_line(cmd), QUOTED_CMD);
                self.toast(
                    format!("`{cmd}` was not started: {}", explain::rpc(err)),
                    true,
                );
            }
            (RoomOp::ProcessKill(id), Err(err)) => {
                self.toast(format!("stopping {id} failed: {}", explain::rpc(err)), true);
            }
            (RoomOp::ProcessKill(id), Ok(_)) => match answer.decode::<KillResponse>() {
                Ok(KillResponse { killed: true }) => {}
                Ok(KillResponse { killed: false }) => {
                    self.toast(format!("{id} had already ended"), false)
                }
                Err(err) => self.toast(format!("stopping {id}: {err}"), true),
            },
            (RoomOp::ProcessFollow(id), result) => {
                let Some(followed) = self.procs.followed.as_mut().filter(|f| f.id == *id) else {
                    return;
                };
                match result {
                    Ok(_) => match answer.decode::<FollowResponse>() {
                        Ok(log) => {
                            let mut fresh = Followed::new(id);
                            fresh.push(Stream::Stdout, &log.stdout);
                            fresh.push(Stream::Stderr, &log.stderr);
                            fresh.answered = true;
                            *followed = fresh;
                        }
                        Err(err) => {
                            self.procs.followed = None;
                            self.toast(format!("the log of {id}: {err}"), true);
                        }
                    },
                    // Followed again once the link is back.
                    Err(RpcError::NotSent(_) | RpcError::Lost(_)) => {}
                    Err(err) => {
                        self.procs.followed = None;
                        self.toast(format!("the log of {id}: {}", explain::rpc(err)), true);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_reads_as_lines_joined_across_frames() {
        let mut log = Followed::new("p1");
        log.push(Stream::Stdout, "one\ntw");
        log.push(Stream::Stdout, "o\n");
        log.push(Stream::Stderr, "oops\n");
        log.push(Stream::Stdout, "three");
        assert_eq!(
            log.lines(),
            vec![
                (Stream::Stdout, "one".to_string()),
                (Stream::Stdout, "two".to_string()),
                (Stream::Stderr, "oops".to_string()),
                (Stream::Stdout, "three".to_string()),
            ]
        );
    }

    #[test]
    fn a_long_log_keeps_its_end() {
        let mut log = Followed::new("p1");
        let line = format!("{}\n", "x".repeat(1023));
        for _ in 0..300 {
            log.push(Stream::Stdout, &line);
        }
        log.push(Stream::Stdout, "last\n");
        assert!(log.bytes <= LOG_KEPT);
        assert_eq!(log.lines().last().unwrap().1, "last");
    }
}
