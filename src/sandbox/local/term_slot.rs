//! Where the shared terminal's events go while one runs: the one slot
//! the worker fills when it opens a terminal, the reader of the
//! supervisor's frames sends into and empties at its end, and the sandbox
//! handle reads (a running terminal keeps the room busy).

use super::TermEvent;
use tokio::sync::mpsc;

/// The slot of the running terminal's events.
#[derive(Default)]
pub(crate) struct TermSlot {
    sender: std::sync::Mutex<Option<mpsc::Sender<TermEvent>>>,
}

impl TermSlot {
    /// Whether a terminal runs.
    pub(crate) fn running(&self) -> bool {
        self.sender.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    pub(super) fn sender(&self) -> Option<mpsc::Sender<TermEvent>> {
        self.sender.lock().ok()?.clone()
    }

    pub(super) fn set(&self, sender: Option<mpsc::Sender<TermEvent>>) {
        if let Ok(mut slot) = self.sender.lock() {
            *slot = sender;
        }
    }

    /// Tells the terminal's owner it ended, once.
    pub(super) async fn end(&self, exit_code: Option<i32>, error: Option<String>) {
        let sender = self.sender.lock().ok().and_then(|mut s| s.take());
        if let Some(sender) = sender {
            let _ = sender.send(TermEvent::Exit(exit_code, error)).await;
        }
    }
}
