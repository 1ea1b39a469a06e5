//! Esc is yours: it stops this client's own running command or agent
//! turn at once, and someone else's only after asking (the backend
//! records who stopped it). Whose it is comes from `byConnection`: the
//! `_pk` of the socket that started it.

use crate::client::rpc::RoomOp;
use crate::protocol::ExecSource;
use crate::tui::app::{App, Effect, Modal};
use crate::tui::text::truncate;
use crate::tui::timeline::one_line;

/// How much of a command a question or a note quotes.
const QUOTED_CMD: usize = 40;

/// Something running that Esc would stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The operation that stops it (with its exec or turn id).
    pub op: RoomOp,
    /// What it is, as a person says it: "bob's `sleep 100`", "the agent's
    /// turn for bob".
    pub what: String,
    /// This client started it: stopped at once, without asking.
    pub mine: bool,
    /// What keeps running after it stops, said with it.
    pub goes_on: Option<&'static str>,
}

impl Stop {
    /// The dialog's question: "Stop bob's `sleep 100`?".
    pub fn question(&self) -> String {
        match self.op {
            RoomOp::Cancel(_) => format!("Cancel {}?", self.what),
            _ => format!("Stop {}?", self.what),
        }
    }

    /// What the toast says once it is asked for.
    fn doing(&self) -> String {
        let verb = match self.op {
            RoomOp::Cancel(_) => "cancelling",
            RoomOp::ProcessKill(_) => "stopping",
            _ => "interrupting",
        };
        match self.goes_on {
            Some(goes_on) => format!("{verb} {} ({goes_on})", self.what),
            None => format!("{verb} {}", self.what),
        }
    }
}

impl App {
    /// What Esc stops now: the running command first, else the agent's
    /// turn (also one that waits for this client's message).
    pub fn stop_target(&self) -> Option<Stop> {
        let me = self.session.connection_id.as_str();
        let turn = self.chat.turn.as_ref().filter(|t| !t.ended);
        if let Some(run) = self.execs.running() {
            let mine = run.by_connection.as_deref() == Some(me);
            let cmd = quoted(&run.cmd);
            let what = match (run.source, mine) {
                (ExecSource::Agent, _) => format!("the agent's {cmd}"),
                (ExecSource::User, true) => format!("your {cmd}"),
                (ExecSource::User, false) => format!("{}'s {cmd}", run.by),
            };
            return Some(Stop {
                op: RoomOp::Interrupt(Some(run.exec_id.clone())),
                what,
                mine,
                goes_on: self
                    .agent_busy()
                    .then_some("the agent's turn goes on: Esc again cancels it"),
            });
        }
        if let Some(turn) = turn {
            let mine = turn.by_connection.as_deref() == Some(me);
            let whose = turn
                .by_connection
                .as_deref()
                .filter(|_| !mine)
                .and_then(|id| self.presence.iter().find(|u| u.id == id))
                .map(|u| format!(" for {}", u.name))
                .unwrap_or_default();
            return Some(Stop {
                op: RoomOp::Cancel(Some(turn.turn_id.clone())),
                what: format!("the agent's turn{whose}"),
                mine,
                goes_on: None,
            });
        }
        // This client's own message waits for its turn to begin.
        (self.pending_messages > 0).then(|| Stop {
            op: RoomOp::Cancel(None),
            what: "the agent's turn".into(),
            mine: true,
            goes_on: None,
        })
    }

    /// Esc: stops what is this client's own, asks about anyone else's.
    pub(crate) fn escape(&mut self, effects: &mut Vec<Effect>) {
        let Some(stop) = self.stop_target() else {
            return;
        };
        if stop.mine {
            self.stop_now(stop, effects);
        } else {
            self.modals.push(Modal::ConfirmStop(stop));
        }
    }

    /// `y` in the dialog: stops it, unless it ended meanwhile.
    pub(crate) fn confirm_stop(&mut self, stop: Stop, effects: &mut Vec<Effect>) {
        let running = match &stop.op {
            RoomOp::Interrupt(Some(exec_id)) => self.execs.is_running(exec_id),
            RoomOp::ProcessKill(id) => self.process_running(id),
            RoomOp::Cancel(Some(turn_id)) => self
                .chat
                .turn
                .as_ref()
                .is_some_and(|t| t.turn_id == *turn_id && !t.ended),
            _ => true,
        };
        if running {
            self.stop_now(stop, effects);
        } else {
            self.toast(format!("{} already ended", stop.what), false);
        }
    }

    fn stop_now(&mut self, stop: Stop, effects: &mut Vec<Effect>) {
        self.toast(stop.doing(), false);
        effects.push(Effect::Call(stop.op));
    }
}

/// `` `sleep 100` ``: a command's first line, cut to fit a sentence.
fn quoted(cmd: &str) -> String {
    format!("`{}`", truncate(&one_line(cmd), QUOTED_CMD))
}
