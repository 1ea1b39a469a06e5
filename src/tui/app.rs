//! The client's state and its pure update: `App::update(Msg) -> Vec<Effect>`.
//! No I/O here; the event loop runs the effects and feeds results back as
//! messages, so every behaviour is testable without a terminal.

use crate::client::rpc::RoomOp;
use crate::client::socket::{ConnState, SocketEvent};
use crate::protocol::{MessagesPage, PresenceUser};
use crate::tui::cell::{Cell, RenderCtx};
use crate::tui::chat::ChatLog;
use crate::tui::composer::Composer;
use crate::tui::execs::ExecLog;
use crate::tui::scroll::{self, Scroll};
use crate::tui::stop::Stop;
use crate::tui::theme::Theme;
use crossterm::event::{KeyEvent, MouseEvent};

/// How long a toast stays.
pub const TOAST_MS: i64 = 6_000;
/// How long an error toast stays.
pub const ERROR_TOAST_MS: i64 = 12_000;
/// How long "X is typing" shows after their last keystroke.
pub const TYPING_MS: i64 = 3_000;
/// Least time between two typing frames this client sends.
pub const TYPING_EVERY_MS: i64 = 2_000;
/// Spinner frame interval while something runs.
pub const SPINNER_MS: i64 = 100;

/// Who this client is and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub server: String,
    pub room: String,
    pub name: String,
    /// This connection's `_pk`.
    pub connection_id: String,
    /// How hints name the backend (never with its token).
    pub backend: crate::client::join::Backend,
    /// The host folder the room works on (`duet --workspace`), as shown
    /// (`~/src/app`).
    pub folder: Option<String>,
}

impl Session {
    /// What the status bar offers others: the room's address, or the
    /// command that joins it where no token is needed.
    pub fn join_hint(&self) -> String {
        crate::client::join::join_hint(&self.backend, &self.server, &self.room)
    }

    /// The room's address: its link without a token.
    pub fn address(&self) -> String {
        crate::client::join::address(&self.server, &self.room)
    }

    /// How this person comes back to `room` on this backend, as this name.
    pub fn come_back(&self, room: &str) -> String {
        crate::client::join::come_back(&self.backend, &self.server, room, &self.name)
    }
}

/// The two scrollable panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Chat,
    Output,
}

/// Dialogs that see keys first; the last is on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modal {
    Help,
    ConfirmCleanup,
    /// Esc on someone else's command or turn: stop it? (src/tui/stop.rs)
    ConfirmStop(Stop),
    /// `/get` would replace a file here: `App::overwrite` says which.
    ConfirmOverwrite,
    /// The room's background processes and ports (src/tui/procs.rs).
    Processes,
    /// The room's checkpoints, live (src/tui/undo.rs).
    Checkpoints,
    /// `/restore` or `/undo`: restore it? (what is lost: src/tui/undo.rs)
    ConfirmRestore(crate::tui::undo::Restore),
    /// `/fork` made this room: switch to it?
    ConfirmSwitch(String),
    /// A folder of the workspace (`/ls`): `App::listing`.
    Listing,
    /// An agent's command waits for a person: approve it? (its
    /// `approvalId`; src/tui/approvals.rs)
    Approval(String),
    /// A link for someone else, until dismissed: `App::shared`
    /// (src/tui/share.rs).
    Link,
    /// What changed since a checkpoint (`/diff`): `App::diffs`
    /// (src/tui/diff).
    Diff,
}

/// A note that goes away by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    pub until_ms: i64,
    /// About the connection: goes when it is back (see `tui::link`).
    pub link: Option<crate::tui::link::LinkToast>,
    /// How many times it was said while on screen (drawn `×N` past one).
    pub count: u32,
}

impl Toast {
    /// Its words as drawn: with `×N` when it was said N times.
    pub fn shown(&self) -> String {
        match self.count {
            0 | 1 => self.text.clone(),
            n => format!("{} ×{n}", self.text),
        }
    }
}

/// Someone typing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typist {
    pub id: String,
    pub name: String,
    pub until_ms: i64,
}

/// Everything that can happen to the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    Resize(u16, u16),
    Mouse(MouseEvent),
    Socket(SocketEvent),
    OlderLoaded(Result<MessagesPage, String>),
    /// A `/put` or `/get` ended: what to tell the person.
    TransferDone(Result<String, String>),
    /// `/get` found a file where it would write: ask first.
    WouldOverwrite(crate::tui::files::Overwrite),
    /// The embedded backend moved (its owner quit; another took over):
    /// its new URL, or why this client cannot follow it.
    ServerMoved(Result<String, String>),
    /// `/ls` answered: the folder, or why not.
    Listed(Result<crate::tui::files::Listing, String>),
    /// A diff against checkpoint `from` came back (the text), or why not.
    Diffed {
        from: String,
        purpose: crate::tui::diff::DiffFor,
        result: Result<String, String>,
    },
    /// A timer fired (toasts, typing, spinner).
    Tick,
}

/// What the event loop does for the App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A room operation, sent on the socket; its answer comes back as
    /// `SocketEvent::Answer`.
    Call(RoomOp),
    /// `/put`: a local file into the workspace (`remote` empty: same name).
    Put {
        local: String,
        remote: String,
    },
    /// `/get`: a workspace file to a local path (`local` empty: here);
    /// a file already there is replaced only when `replace` says so.
    Get {
        remote: String,
        local: String,
        replace: bool,
    },
    LoadOlder {
        before: Option<String>,
    },
    /// `/ls`: a folder of the workspace (relative to /workspace).
    ListDir(String),
    /// `GET /diff?from=`: /workspace against checkpoint `from` (its id).
    Diff {
        from: String,
        purpose: crate::tui::diff::DiffFor,
    },
    /// `/export FILE`: the room's whole history into a local file (its
    /// format from the name: `.json`, `.cast`, else markdown).
    Export(String),
    /// Leave this room for that one (after `/fork`): the loop reconnects
    /// there with a fresh App.
    SwitchRoom(String),
    Typing,
    Rejoin(String),
    /// A `rename` worked: later HTTP calls (files) carry the new name.
    NameChanged(String),
    /// Mouse capture on (the wheel scrolls) or off (the terminal selects
    /// text).
    SetMouse(bool),
    /// Clear the terminal and draw everything again.
    Redraw,
    /// Put this text on the terminal's clipboard (OSC 52).
    Clipboard(String),
    /// Bytes for the room's shared terminal (keys, a paste).
    TermInput {
        term_id: String,
        data: Vec<u8>,
    },
    /// The terminal view's size changed.
    TermResize {
        term_id: String,
        size: crate::protocol::TermSize,
    },
    Quit,
}

/// The client's whole state.
#[derive(Debug, Clone)]
pub struct App {
    pub session: Session,
    pub conn: ConnState,
    pub chat: ChatLog,
    pub execs: ExecLog,
    pub composer: Composer,
    pub presence: Vec<PresenceUser>,
    /// Where the room's next command runs (`shell.cwd`), once the backend
    /// said it.
    pub shell_cwd: Option<String>,
    /// The connection is down: since when and why (`tui::link`).
    pub link_down: Option<crate::tui::link::LinkDown>,
    /// Messages waiting in the socket's outbox (oldest first): written
    /// while offline, or behind one still on its way.
    pub outbox: Vec<String>,
    /// The file `/get` would replace, while the person is asked.
    pub overwrite: Option<crate::tui::files::Overwrite>,
    pub typing: Vec<Typist>,
    /// The room's shared terminal, and its view (src/tui/term_view.rs).
    pub term: crate::tui::term_view::TermPane,
    /// The room's background processes and ports, and their view
    /// (src/tui/procs.rs).
    pub procs: crate::tui::procs::Procs,
    /// The room's checkpoints, and where `/undo` stands (src/tui/undo.rs).
    pub checkpoints: crate::tui::undo::Checkpoints,
    /// The folder `/ls` shows.
    pub listing: Option<crate::tui::files::Listing>,
    /// The `/diff` view and what the agent's turns changed
    /// (src/tui/diff).
    pub diffs: crate::tui::diff::Diffs,
    /// This connection as the room knows it, once it said (`duet_you`).
    pub you: Option<crate::tui::approvals::You>,
    /// The room's approval policy and the agent's commands waiting for a
    /// person (src/tui/approvals.rs).
    pub approvals: crate::tui::approvals::Approvals,
    /// The room's agent: its model and those it may use (src/tui/model.rs).
    pub agent: Option<crate::protocol::AgentState>,
    pub toasts: Vec<Toast>,
    /// The link the link dialog shows (src/tui/share.rs).
    pub shared: Option<crate::tui::share::SharedLink>,
    /// The last writer invite shown, which F6 shows again while it lasts.
    pub writer_invite: Option<crate::tui::share::MadeInvite>,
    /// Where a copy (OSC 52) goes: said after each copy.
    pub clipboard: crate::tui::share::ClipboardPath,
    /// Whether the mouse is captured (the wheel scrolls); off, the
    /// terminal selects text.
    pub mouse_capture: bool,
    pub modals: Vec<Modal>,
    /// Lines the help overlay (or a list view: checkpoints, a folder) is
    /// scrolled down.
    pub help_scroll: u16,
    pub focus: Pane,
    pub chat_scroll: Scroll,
    pub output_scroll: Scroll,
    /// The hidden pane (narrow layout) got something new: (chat, output).
    pub unseen: (bool, bool),
    /// Terminal size in cells.
    pub size: (u16, u16),
    /// Messages sent whose turn has not answered yet.
    pub pending_messages: usize,
    pub theme: Theme,
    pub tz: time::UtcOffset,
    /// The time as of the current message (set by the loop; tests set it).
    pub now_ms: i64,
    pub quit: bool,
    pub(crate) ctrl_c_armed: bool,
    pub(crate) last_typing_sent: Option<i64>,
    pub(crate) got_state: bool,
    /// Something visible changed since the last draw.
    pub dirty: bool,
}

impl App {
    /// A fresh App for `session`.
    pub fn new(session: Session, theme: Theme, tz: time::UtcOffset, now_ms: i64) -> App {
        App {
            session,
            conn: ConnState::Connecting,
            chat: ChatLog::default(),
            execs: ExecLog::default(),
            composer: Composer::default(),
            presence: Vec::new(),
            shell_cwd: None,
            link_down: None,
            outbox: Vec::new(),
            overwrite: None,
            typing: Vec::new(),
            term: Default::default(),
            procs: Default::default(),
            checkpoints: Default::default(),
            listing: None,
            diffs: Default::default(),
            you: None,
            approvals: Default::default(),
            agent: None,
            toasts: Vec::new(),
            shared: None,
            writer_invite: None,
            clipboard: Default::default(),
            mouse_capture: true,
            modals: Vec::new(),
            help_scroll: 0,
            focus: Pane::Chat,
            chat_scroll: Scroll::default(),
            output_scroll: Scroll::default(),
            unseen: (false, false),
            size: (80, 24),
            pending_messages: 0,
            theme,
            tz,
            now_ms,
            quit: false,
            ctrl_c_armed: false,
            last_typing_sent: None,
            got_state: false,
            dirty: true,
        }
    }

    /// What rendering needs.
    pub fn render_ctx(&self) -> RenderCtx {
        RenderCtx {
            theme: self.theme,
            tz: self.tz,
            now_ms: self.now_ms,
        }
    }

    /// Whether the agent is working (a turn streams or a message waits).
    pub fn agent_busy(&self) -> bool {
        self.chat.turn.as_ref().is_some_and(|t| !t.ended) || self.pending_messages > 0
    }

    /// Whether something moves on screen (the spinner needs frames).
    pub fn busy(&self) -> bool {
        self.agent_busy() || self.execs.running().is_some()
    }

    /// When the loop must wake the App next, if ever (idle: never).
    pub fn next_wake(&self) -> Option<i64> {
        let spinner = self.busy().then_some(self.now_ms + SPINNER_MS);
        self.toasts
            .iter()
            .map(|t| t.until_ms)
            .chain(self.typing.iter().map(|t| t.until_ms))
            .chain(self.term.typing.iter().map(|t| t.until_ms))
            .chain(spinner)
            .min()
    }

    /// Shows a note for a while (from `update` only).
    pub(crate) fn toast(&mut self, text: impl Into<String>, error: bool) {
        let until_ms = self.now_ms + if error { ERROR_TOAST_MS } else { TOAST_MS };
        let text = text.into();
        // The same words again (a key held down, keys into a dead or
        // view-only terminal): one toast that counts, not a stack.
        let same = |t: &Toast| t.text == text && t.error == error && t.link.is_none();
        if let Some(at) = self.toasts.iter().position(same) {
            let mut again = self.toasts.remove(at);
            again.count = again.count.saturating_add(1);
            again.until_ms = until_ms;
            self.toasts.push(again);
            return;
        }
        self.toasts.push(Toast {
            text,
            error,
            until_ms,
            link: None,
            count: 1,
        });
        if self.toasts.len() > 4 {
            self.toasts.remove(0);
        }
    }

    /// Handles one message; answers what the loop must do.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let mut effects = Vec::new();
        let visible = match msg {
            Msg::Key(key) => {
                self.on_key(key, &mut effects);
                true
            }
            Msg::Paste(text) => {
                if self.modals.is_empty() && self.terminal_focused() {
                    self.on_terminal_paste(&text, &mut effects);
                } else if self.modals.is_empty() {
                    self.composer.insert(&text);
                    self.typed(&mut effects);
                }
                true
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                true
            }
            Msg::Mouse(mouse) => self.on_mouse(mouse, &mut effects),
            Msg::Socket(SocketEvent::State(state)) => {
                let changed = self.conn != state;
                let reconnected = matches!(state, ConnState::Connected { .. })
                    && !matches!(self.conn, ConnState::Connected { .. });
                if !matches!(state, ConnState::Connected { .. }) {
                    self.terminal_link_down();
                    self.follow_link_down();
                }
                if reconnected {
                    // A reply streaming when the link dropped may never end
                    // (the backend restarted: the room then says so); its
                    // spinner stops, and frames that still come resume it.
                    if let Some(turn) = self.chat.turn.as_mut() {
                        turn.ended = true;
                    }
                    self.follow_again(&mut effects);
                }
                self.on_link(&state);
                self.conn = state;
                changed
            }
            Msg::Socket(SocketEvent::Outbox(ops)) => self.on_outbox(ops),
            Msg::Socket(SocketEvent::Frame(frame)) => self.on_frame(*frame, &mut effects),
            Msg::Socket(SocketEvent::Delta(delta)) => self.on_delta(*delta),
            Msg::Socket(SocketEvent::Answer(answer)) => {
                match answer.op {
                    RoomOp::Rename(_) => self.on_renamed(*answer, &mut effects),
                    RoomOp::TermOpen(_) | RoomOp::TermDetach(_) | RoomOp::TermClose(_) => {
                        self.on_term_answer(&answer, &mut effects)
                    }
                    RoomOp::ProcessStart { .. }
                    | RoomOp::ProcessKill(_)
                    | RoomOp::ProcessFollow(_)
                    | RoomOp::ProcessUnfollow(_) => self.on_process_answer(&answer),
                    RoomOp::CheckpointCreate(_)
                    | RoomOp::CheckpointRestore(_)
                    | RoomOp::CheckpointDelete(_)
                    | RoomOp::Fork { .. } => self.on_checkpoint_answer(&answer),
                    RoomOp::Approve { .. } | RoomOp::SetPolicy(_) | RoomOp::InviteCreate(_) => {
                        self.on_access_answer(&answer, &mut effects)
                    }
                    RoomOp::SetModel(_) => self.on_model_answer(&answer),
                    _ => self.on_answer(*answer),
                }
                true
            }
            Msg::OlderLoaded(result) => {
                match result {
                    Ok(page) => self.chat.prepend(&page.messages, page.has_more),
                    Err(err) => {
                        self.chat.loading_older = false;
                        self.toast(format!("older messages: {err}"), true);
                    }
                }
                true
            }
            Msg::TransferDone(result) => {
                match result {
                    Ok(said) => self.toast(said, false),
                    Err(err) => self.toast(err, true),
                }
                true
            }
            Msg::WouldOverwrite(file) => {
                self.ask_overwrite(file);
                true
            }
            Msg::ServerMoved(Ok(url)) => {
                self.toast(format!("the room's backend moved to {url}"), false);
                self.session.server = url;
                true
            }
            Msg::ServerMoved(Err(why)) => {
                self.toast(why, true);
                true
            }
            Msg::Listed(result) => {
                self.on_listed(result);
                true
            }
            Msg::Diffed {
                from,
                purpose,
                result,
            } => {
                self.on_diff(from, purpose, result);
                true
            }
            Msg::Tick => self.on_tick(),
        };
        self.follow_pane_size(&mut effects);
        self.watch_turn_changes(&mut effects);
        self.dirty |= visible;
        effects
    }

    fn on_tick(&mut self) -> bool {
        let now = self.now_ms;
        let count = |app: &App| app.toasts.len() + app.typing.len() + app.term.typing.len();
        let before = count(self);
        self.toasts.retain(|t| t.until_ms > now);
        self.typing.retain(|t| t.until_ms > now);
        self.term.typing.retain(|t| t.until_ms > now);
        before != count(self) || self.busy()
    }

    /// Notes new content in `pane` if the narrow layout hides it.
    pub(crate) fn mark_unseen(&mut self, pane: Pane) {
        if self.size.0 >= crate::tui::view::layout::WIDE || self.focus == pane {
            return;
        }
        match pane {
            Pane::Chat => self.unseen.0 = true,
            Pane::Output => self.unseen.1 = true,
        }
    }

    /// The cells of `pane`, newest first.
    pub fn cells(&self, pane: Pane) -> Box<dyn Iterator<Item = &dyn Cell> + '_> {
        match pane {
            Pane::Chat => Box::new(self.chat.cells_rev()),
            Pane::Output => Box::new(self.execs.cells_rev()),
        }
    }

    /// The scroll state of `pane`.
    pub fn scroll(&self, pane: Pane) -> &Scroll {
        match pane {
            Pane::Chat => &self.chat_scroll,
            Pane::Output => &self.output_scroll,
        }
    }

    pub(crate) fn scroll_mut(&mut self, pane: Pane) -> &mut Scroll {
        match pane {
            Pane::Chat => &mut self.chat_scroll,
            Pane::Output => &mut self.output_scroll,
        }
    }

    /// Lines of `pane`'s content at its width.
    fn total_height(&self, pane: Pane) -> usize {
        scroll::total_height(self.cells(pane), self.pane_size(pane).0, &self.render_ctx())
    }

    /// Runs a change of `pane`'s content keeping a scrolled-up view where
    /// it is (and noting "new below"); a following view simply follows.
    pub(crate) fn with_anchor<R>(&mut self, pane: Pane, change: impl FnOnce(&mut App) -> R) -> R {
        if self.scroll(pane).following() {
            return change(self);
        }
        let before = self.total_height(pane);
        let result = change(self);
        let after = self.total_height(pane);
        self.scroll_mut(pane).keep_anchor(before, after);
        result
    }

    /// The inner size (width, height) of a pane at the current size.
    pub fn pane_size(&self, pane: Pane) -> (u16, u16) {
        let inner = self.pane_inner(pane);
        (inner.width, inner.height)
    }

    /// Where the inside of `pane` is on the screen.
    pub fn pane_inner(&self, pane: Pane) -> ratatui::layout::Rect {
        let area = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        let areas = crate::tui::view::layout::areas(self, area);
        crate::tui::view::layout::pane_inner(
            pane,
            areas.pane(pane),
            self.size.0 >= crate::tui::view::layout::WIDE,
        )
    }

    /// Sends a typing frame, at most every 2 s.
    pub(crate) fn typed(&mut self, effects: &mut Vec<Effect>) {
        let due = self
            .last_typing_sent
            .is_none_or(|t| self.now_ms - t >= TYPING_EVERY_MS);
        if due && !self.composer.is_empty() {
            self.last_typing_sent = Some(self.now_ms);
            effects.push(Effect::Typing);
        }
    }
}
