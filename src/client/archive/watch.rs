//! `duet push --watch`: the folder's file events, debounced (a burst of
//! saves is one batch), as a signal to look again at what changed.

use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the folder must be quiet before a batch of events counts.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// Watches a folder, recursively, until dropped.
pub struct Watcher {
    _debouncer: Debouncer<notify_debouncer_full::notify::RecommendedWatcher, RecommendedCache>,
    batches: mpsc::UnboundedReceiver<()>,
}

impl Watcher {
    /// Starts watching `root`.
    pub fn start(root: &Path) -> anyhow::Result<Watcher> {
        let (tx, batches) = mpsc::unbounded_channel();
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
            match result {
                Ok(events) if events.is_empty() => {}
                Ok(_) => {
                    let _ = tx.send(());
                }
                Err(errors) => {
                    for err in errors {
                        tracing::warn!("watching: {err}");
                    }
                    // Something may have been missed: look anyway.
                    let _ = tx.send(());
                }
            }
        })?;
        debouncer.watch(root, RecursiveMode::Recursive)?;
        Ok(Watcher {
            _debouncer: debouncer,
            batches,
        })
    }

    /// Waits for the next batch of events (those already waiting count as
    /// one); `None` when the watcher stopped.
    pub async fn changed(&mut self) -> Option<()> {
        self.batches.recv().await?;
        while self.batches.try_recv().is_ok() {}
        Some(())
    }
}
