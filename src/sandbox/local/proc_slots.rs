//! Where the background processes' events go while they run: one sender
//! per running process, filled by the worker when it starts one, fed and
//! emptied by the reader of the supervisor's frames, and counted by the
//! sandbox handle (a running process keeps the room busy).

use super::ProcEvent;
use std::collections::HashMap;
use tokio::sync::mpsc;

/// The running processes' event senders, by process id.
#[derive(Default)]
pub(crate) struct ProcSlots {
    senders: std::sync::Mutex<HashMap<String, mpsc::Sender<ProcEvent>>>,
}

impl ProcSlots {
    /// How many run.
    pub(crate) fn running(&self) -> usize {
        self.senders.lock().map(|s| s.len()).unwrap_or(0)
    }

    pub(super) fn insert(&self, id: String, sender: mpsc::Sender<ProcEvent>) {
        if let Ok(mut senders) = self.senders.lock() {
            senders.insert(id, sender);
        }
    }

    pub(super) fn sender(&self, id: &str) -> Option<mpsc::Sender<ProcEvent>> {
        self.senders.lock().ok()?.get(id).cloned()
    }

    /// Tells process `id`'s owner it ended, once.
    pub(super) async fn end(&self, id: &str, exit_code: Option<i32>, error: Option<String>) {
        let sender = self.senders.lock().ok().and_then(|mut s| s.remove(id));
        if let Some(sender) = sender {
            let _ = sender.send(ProcEvent::Exit(exit_code, error)).await;
        }
    }

    /// The sandbox went away: every process ended with it.
    pub(super) async fn end_all(&self, why: &str) {
        let senders: Vec<_> = match self.senders.lock() {
            Ok(mut s) => s.drain().map(|(_, sender)| sender).collect(),
            Err(_) => Vec::new(),
        };
        for sender in senders {
            let _ = sender.send(ProcEvent::Exit(None, Some(why.into()))).await;
        }
    }
}
