//! The room's checkpoints in the TUI (docs/protocol.md "Checkpoints,
//! restore and fork"): `/checkpoint NAME` takes one, `/checkpoints` lists
//! them live (the state's `checkpoints`, full states and patches),
//! `/restore NAME` and `/undo` restore one after a y/n that says what is
//! lost, and `/fork NAME` starts a new room from this one's files, then
//! offers to switch to it. `/undo` restores the automatic checkpoint
//! taken before the agent's last turn that ran commands; a further
//! `/undo` with no agent turn since goes one further back.

use crate::client::checkpoints;
use crate::client::explain;
use crate::client::processes::duration;
use crate::client::rpc::{Answer, RoomOp};
use crate::protocol::{Checkpoint, CheckpointResponse, ForkResponse};
use crate::tui::app::{App, Effect, Modal};
use crate::tui::files::human_size;

/// The room's checkpoints as this client knows them, and where `/undo`
/// stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpoints {
    /// The state's `checkpoints`, oldest first.
    pub list: Vec<Checkpoint>,
    /// The automatic checkpoint the last `/undo` restored, until an agent
    /// turn runs: the next `/undo` goes one further back.
    pub undone: Option<String>,
    /// An `/undo`'s restore on its way (its id), until answered.
    undoing: Option<String>,
}

/// A restore the person is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    pub id: String,
    pub name: String,
    /// When the checkpoint was taken (ms).
    pub ts: u64,
    /// Asked for by `/undo` (else `/restore`).
    pub undo: bool,
}

impl App {
    /// `/checkpoint [NAME]`.
    pub(crate) fn take_checkpoint(
        &mut self,
        name: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        if let Some(problem) = crate::protocol::checkpoint_name_problem(name)
            && !name.is_empty()
        {
            return Err(format!("/checkpoint {name}: a checkpoint name {problem}"));
        }
        let name = (!name.is_empty()).then(|| name.to_string());
        effects.push(Effect::Call(RoomOp::CheckpointCreate(name)));
        Ok(())
    }

    /// `/checkpoints`: the list, live.
    pub(crate) fn open_checkpoints(&mut self) {
        self.help_scroll = 0;
        self.modals.retain(|m| *m != Modal::Checkpoints);
        self.modals.push(Modal::Checkpoints);
    }

    /// `/restore NAME|ID`: asks first.
    pub(crate) fn ask_restore(&mut self, wanted: &str) -> Result<(), String> {
        let found = checkpoints::find(&self.checkpoints.list, wanted)
            .map_err(|why| why.replace("the checkpoints list", "/checkpoints"))?;
        let restore = restore_of(found, false);
        self.modals.push(Modal::ConfirmRestore(restore));
        Ok(())
    }

    /// `/undo`: the automatic checkpoint before the agent's last turn that
    /// ran commands (one further back after an undo); asks first.
    pub(crate) fn ask_undo(&mut self) -> Result<(), String> {
        let found =
            checkpoints::undo_target(&self.checkpoints.list, self.checkpoints.undone.as_deref())?;
        let restore = restore_of(found, true);
        self.modals.push(Modal::ConfirmRestore(restore));
        Ok(())
    }

    /// `y` to "Restore …?".
    pub(crate) fn confirm_restore(&mut self, restore: Restore, effects: &mut Vec<Effect>) {
        self.checkpoints.undoing = restore.undo.then(|| restore.id.clone());
        self.toast(format!("restoring checkpoint {}…", restore.name), false);
        effects.push(Effect::Call(RoomOp::CheckpointRestore(restore.id)));
    }

    /// What a restore to `restore` loses, as the question says it: the
    /// work since then, and what runs now (which stops).
    pub fn restore_losses(&self, restore: &Restore) -> Vec<String> {
        let ago = (self.now_ms - i64::try_from(restore.ts).unwrap_or(i64::MAX)).max(0) / 1000;
        let mut lost = vec![format!(
            "every change to /workspace since {} ({} ago), by anyone",
            checkpoints::when(restore.ts, self.tz),
            duration(ago)
        )];
        if self.agent_busy() {
            lost.push("the agent's turn: it is cancelled".into());
        }
        if let Some(run) = self.execs.running() {
            lost.push(format!(
                "the running command `{}`: it is interrupted",
                crate::tui::text::truncate(&crate::tui::timeline::one_line(&run.cmd), 40)
            ));
        }
        match self.procs.running() {
            0 => {}
            1 => lost.push("the background process that runs: it is stopped".into()),
            n => lost.push(format!(
                "the {n} background processes that run: they are stopped"
            )),
        }
        if self.term.running.is_some() {
            lost.push("the shared terminal: it ends".into());
        }
        lost.push(
            "the shell's directory and exported variables: the next command runs in /workspace"
                .into(),
        );
        lost
    }

    /// `/fork ROOM [CHECKPOINT]`.
    pub(crate) fn fork(
        &mut self,
        to: String,
        from: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        if !crate::protocol::valid_room_id(&to) {
            return Err(format!(
                "/fork {to}: a room id is 1–63 of A-Z a-z 0-9 _ -, first and last alphanumeric"
            ));
        }
        let checkpoint_id = match from {
            "" => None,
            wanted => Some(
                checkpoints::find(&self.checkpoints.list, wanted)
                    .map_err(|why| why.replace("the checkpoints list", "/checkpoints"))?
                    .id
                    .clone(),
            ),
        };
        self.toast(format!("forking this room into room {to}…"), false);
        effects.push(Effect::Call(RoomOp::Fork { to, checkpoint_id }));
        Ok(())
    }

    /// `y` or `n` to "Switch to room …?".
    pub(crate) fn answer_switch(&mut self, room: String, switch: bool, effects: &mut Vec<Effect>) {
        self.modals
            .retain(|m| !matches!(m, Modal::ConfirmSwitch(_)));
        if switch {
            effects.push(Effect::SwitchRoom(room));
        } else {
            self.toast(
                format!(
                    "you stay in room {}; room {room} is ready ({} joins it)",
                    self.session.room,
                    self.session.come_back(&room)
                ),
                false,
            );
        }
    }

    /// The state's `checkpoints`.
    pub(crate) fn set_checkpoints(&mut self, list: Vec<Checkpoint>) -> bool {
        if self.checkpoints.list == list {
            return false;
        }
        self.checkpoints.list = list;
        true
    }

    /// An agent turn began: `/undo` starts again from the newest.
    pub(crate) fn agent_turn_began(&mut self) {
        self.checkpoints.undone = None;
    }

    /// The answers of `checkpoint_create`, `checkpoint_restore`,
    /// `checkpoint_delete` and `fork`.
    pub(crate) fn on_checkpoint_answer(&mut self, answer: &Answer) {
        match (&answer.op, &answer.result) {
            (RoomOp::CheckpointCreate(_), Ok(_)) => match answer.decode::<CheckpointResponse>() {
                Ok(CheckpointResponse { checkpoint: c }) => self.toast(
                    format!(
                        "saved checkpoint {} ({}, {}): /restore {} brings this back",
                        c.name,
                        c.id,
                        human_size(c.size),
                        c.name
                    ),
                    false,
                ),
                Err(err) => self.toast(format!("the checkpoint: {err}"), true),
            },
            (RoomOp::CheckpointCreate(name), Err(err)) => {
                let name = name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
                self.toast(
                    format!("the checkpoint{name} was not saved: {}", explain::rpc(err)),
                    true,
                );
            }
            (RoomOp::CheckpointRestore(id), result) => {
                let undo = self.checkpoints.undoing.take().filter(|u| u == id);
                let name = self.checkpoint_name(id);
                match result {
                    Ok(_) => {
                        // The `restore` record says it in the timeline.
                        self.checkpoints.undone = undo;
                        self.toast(
                            format!("restored checkpoint {name}: /workspace is as it was then"),
                            false,
                        );
                    }
                    Err(err) => self.toast(
                        format!("checkpoint {name} was not restored: {}", explain::rpc(err)),
                        true,
                    ),
                }
            }
            (RoomOp::CheckpointDelete(id), Err(err)) => {
                let name = self.checkpoint_name(id);
                self.toast(
                    format!("checkpoint {name} was not deleted: {}", explain::rpc(err)),
                    true,
                );
            }
            (RoomOp::Fork { to, .. }, Ok(_)) => match answer.decode::<ForkResponse>() {
                Ok(ForkResponse { room_id }) => {
                    self.modals.push(Modal::ConfirmSwitch(room_id));
                }
                Err(err) => self.toast(format!("the fork into room {to}: {err}"), true),
            },
            (RoomOp::Fork { to, .. }, Err(err)) => self.toast(
                format!("room {to} was not forked: {}", explain::rpc(err)),
                true,
            ),
            _ => {}
        }
    }

    /// A checkpoint's name, else its id.
    fn checkpoint_name(&self, id: &str) -> String {
        self.checkpoints
            .list
            .iter()
            .find(|c| c.id == id)
            .map_or_else(|| id.to_string(), |c| c.name.clone())
    }
}

fn restore_of(c: &Checkpoint, undo: bool) -> Restore {
    Restore {
        id: c.id.clone(),
        name: c.name.clone(),
        ts: c.ts,
        undo,
    }
}
