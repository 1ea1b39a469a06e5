//! The link key (F6) and the link dialog: how someone else gets into the
//! room without a token ever being drawn. On a backend that takes a token
//! an owner's F6 makes a writer invite (`invite_create`) and shows it
//! (again at the next F6, while it lasts: one link per pair, not one per
//! press); someone who may not invite is told to ask an owner; a backend
//! without a token gives the room's link as it is. `/invite ROLE` shows
//! its link in the same dialog. The link stays on one unbroken line until
//! Esc; `c` copies it, and the dialog says whether the copy can have
//! worked (OSC 52 under tmux needs `set-clipboard on`).

use crate::client::access::InviteRequest;
use crate::client::rpc::RoomOp;
use crate::protocol::RoomRole;
use crate::tui::app::{App, Effect, Modal};
use crate::tui::roles::Deed;

/// Where an OSC 52 copy goes, as far as this client can tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClipboardPath {
    /// Straight to the terminal, which may or may not take it.
    #[default]
    Terminal,
    /// Through tmux with `set-clipboard on`: passed on to the terminal.
    TmuxOn,
    /// Through tmux without `set-clipboard on`: tmux drops it.
    TmuxOff,
}

impl ClipboardPath {
    /// This process's path: `$TMUX` and, inside tmux, its
    /// `set-clipboard` option (run once, at start).
    pub fn detect() -> ClipboardPath {
        if std::env::var_os("TMUX").is_none_or(|v| v.is_empty()) {
            return ClipboardPath::Terminal;
        }
        let option = std::process::Command::new("tmux")
            .args(["show", "-gv", "set-clipboard"])
            .stderr(std::process::Stdio::null())
            .output();
        match option {
            Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == "on" => ClipboardPath::TmuxOn,
            _ => ClipboardPath::TmuxOff,
        }
    }

    /// What a copy just sent can have done, said honestly.
    pub fn said(self) -> &'static str {
        match self {
            ClipboardPath::Terminal => "copy sent by OSC 52; your terminal may ignore it",
            ClipboardPath::TmuxOn => {
                "copy sent by OSC 52 through tmux (set-clipboard on); your terminal may ignore it"
            }
            ClipboardPath::TmuxOff => {
                "not copied: tmux drops OSC 52 (`tmux set -g set-clipboard on` lets it through); \
                 select the line instead (F2 frees the mouse)"
            }
        }
    }
}

/// The link on show in the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLink {
    /// The command to run, on one line (`duet join LINK`); empty when
    /// there is none to give (the person may not invite).
    pub command: String,
    /// What it is: "a writer invite, expires …", "the room's link".
    pub about: String,
    /// What the last copy can have done, once copied.
    pub copied: Option<String>,
}

/// A writer invite this person made, kept so that F6 shows it again
/// instead of making one more each press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeInvite {
    pub link: SharedLink,
    /// When it stops working (ms since the epoch).
    pub expires_at: u64,
}

/// An invite this close to its end is not given out again.
const REUSE_MARGIN_MS: u64 = 10 * 60 * 1000;

impl App {
    /// F6: a working link for someone else, never the token in use.
    pub(crate) fn share_link(&mut self, effects: &mut Vec<Effect>) {
        if !self.session.backend.needs_token() {
            let command = format!("duet join {}", self.session.address());
            self.show_link(
                command,
                "the room's link (this backend takes no token)".into(),
            );
            self.copy_link(effects);
            return;
        }
        if self.may(Deed::ManageInvites).is_err() {
            self.shared = Some(SharedLink {
                command: String::new(),
                about: format!(
                    "This backend takes a token, and {} may not make invites: ask an owner \
                     for one (/invite writer). The room is {}.",
                    self.role().with_article(),
                    self.session.address()
                ),
                copied: None,
            });
            self.open_link_dialog();
            return;
        }
        let now = u64::try_from(self.now_ms).unwrap_or_default();
        if let Some(made) = self
            .writer_invite
            .clone()
            .filter(|m| m.expires_at > now.saturating_add(REUSE_MARGIN_MS))
        {
            self.show_link(made.link.command, made.link.about);
            self.copy_link(effects);
            return;
        }
        self.toast("making a writer invite…", false);
        effects.push(Effect::Call(RoomOp::InviteCreate(InviteRequest {
            role: RoomRole::Writer,
            expires_in: None,
            name: None,
            user_id: None,
            web: false,
        })));
    }

    /// Shows `command` in the link dialog.
    pub(crate) fn show_link(&mut self, command: String, about: String) {
        self.shared = Some(SharedLink {
            command,
            about,
            copied: None,
        });
        self.open_link_dialog();
    }

    fn open_link_dialog(&mut self) {
        if !self.modals.contains(&Modal::Link) {
            self.modals.push(Modal::Link);
        }
    }

    /// `c` in the link dialog (and on opening it): the link to the
    /// clipboard, and what that can have done.
    pub(crate) fn copy_link(&mut self, effects: &mut Vec<Effect>) {
        let path = self.clipboard;
        let Some(shared) = self.shared.as_mut().filter(|s| !s.command.is_empty()) else {
            return;
        };
        effects.push(Effect::Clipboard(shared.command.clone()));
        shared.copied = Some(path.said().to_string());
    }

    /// Esc in the link dialog.
    pub(crate) fn close_link(&mut self) {
        self.modals.retain(|m| *m != Modal::Link);
        self.shared = None;
    }
}
