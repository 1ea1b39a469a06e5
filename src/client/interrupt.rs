//! Ctrl+C for the commands that run until it (`duet port`, `logs -f`,
//! `push --watch`). The handler is in place from `Interrupt::new` on:
//! `tokio::signal::ctrl_c()` registers only when first awaited, and a
//! SIGINT before that kills the process unannounced, or is lost when the
//! parent ignores SIGINT (a background job of a script); one made anew in
//! a loop misses a Ctrl+C that came between two of them.

use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Interrupt(Signal);

impl Interrupt {
    pub fn new() -> std::io::Result<Interrupt> {
        Ok(Interrupt(signal(SignalKind::interrupt())?))
    }

    /// Resolves at the next Ctrl+C (or one that came since the last).
    /// Cancel safe, for `select!`.
    pub async fn recv(&mut self) {
        let _ = self.0.recv().await;
    }
}
