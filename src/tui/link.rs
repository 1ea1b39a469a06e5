//! What the App makes of its connection: while it is down, one toast says
//! why (and counts down to the next try, while it shows), the people
//! shown are marked as of when it dropped, and messages written meanwhile
//! show as queued. When it is back, the toasts about it go and the outbox
//! empties as it sends.

use crate::client::rpc::RoomOp;
use crate::client::socket::ConnState;
use crate::tui::app::{App, ERROR_TOAST_MS, Toast};

/// Which toasts are about the connection: they go when it is back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkToast {
    /// Why it is down, and when it tries again (one at a time).
    Why,
    /// Something it kept from happening (a command not run).
    Note,
}

/// The connection is down: since when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkDown {
    /// When it dropped: the people shown are as of then.
    pub since_ms: i64,
    /// The last reason the socket gave.
    pub reason: Option<String>,
}

impl App {
    /// The connection's state changed to `state` (`self.conn` is still the
    /// old one).
    pub(crate) fn on_link(&mut self, state: &ConnState) {
        let was_up = matches!(self.conn, ConnState::Connected { .. });
        let (reason, why) = match state {
            ConnState::Connected { .. } => {
                self.link_down = None;
                self.toasts.retain(|t| t.link.is_none());
                return;
            }
            ConnState::Connecting => {
                let reason = self.link_down.as_ref().and_then(|d| d.reason.clone());
                let why = reason.as_ref().map(|r| format!("{r}; retrying…"));
                (reason, why)
            }
            ConnState::Reconnecting { in_secs, reason } => (
                Some(reason.clone()),
                Some(format!("{reason}; trying again in {in_secs} s")),
            ),
            ConnState::Offline(reason) => (Some(reason.clone()), Some(reason.clone())),
        };
        let (since_ms, said) = match &self.link_down {
            Some(down) => (down.since_ms, down.reason.clone()),
            None if was_up || reason.is_some() => (self.now_ms, None),
            None => return,
        };
        // A new reason is said; the same one only updates its toast while
        // it shows (it goes after a while: the status bar still counts).
        let news = reason.is_some() && reason != said;
        self.link_down = Some(LinkDown { since_ms, reason });
        let Some(why) = why else { return };
        match self
            .toasts
            .iter_mut()
            .find(|t| t.link == Some(LinkToast::Why))
        {
            Some(toast) => {
                toast.text = why;
                if news {
                    toast.until_ms = self.now_ms + ERROR_TOAST_MS;
                }
            }
            None if news => self.link_toast(LinkToast::Why, why),
            None => {}
        }
    }

    /// Shows a toast about the connection, which goes when it is back.
    pub(crate) fn link_toast(&mut self, kind: LinkToast, text: String) {
        let until_ms = self.now_ms + ERROR_TOAST_MS;
        self.toasts.push(Toast {
            text,
            error: true,
            until_ms,
            link: Some(kind),
            count: 1,
        });
        if self.toasts.len() > 4 {
            self.toasts.remove(0);
        }
    }

    /// The socket's outbox changed: the messages it holds until it is
    /// connected again.
    pub(crate) fn on_outbox(&mut self, ops: Vec<RoomOp>) -> bool {
        let texts: Vec<String> = ops
            .into_iter()
            .filter_map(|op| match op {
                RoomOp::Message { text, .. } => Some(text),
                _ => None,
            })
            .collect();
        let changed = texts != self.outbox;
        self.outbox = texts;
        changed
    }

    /// Since when the people shown are not known to be here (the
    /// connection dropped then); `None` while they are current.
    pub fn presence_as_of(&self) -> Option<i64> {
        self.link_down
            .as_ref()
            .filter(|_| !self.presence.is_empty())
            .map(|down| down.since_ms)
    }
}
