//! A channel made on first use: a tokio channel allocates its state and a
//! block of slots at once, which a loaded room or an idle socket should not
//! hold for a way back it may never use (a room's terminal news, a socket's
//! rpc answers). Until the first sender is made, receiving waits forever.

use std::future::Future;
use tokio::sync::mpsc;

/// The receiving end of a tokio channel.
pub(crate) trait Receiving {
    type Item;
    fn next(&mut self) -> impl Future<Output = Option<Self::Item>> + Send + '_;
}

impl<T: Send> Receiving for mpsc::Receiver<T> {
    type Item = T;
    fn next(&mut self) -> impl Future<Output = Option<T>> + Send + '_ {
        self.recv()
    }
}

impl<T: Send> Receiving for mpsc::UnboundedReceiver<T> {
    type Item = T;
    fn next(&mut self) -> impl Future<Output = Option<T>> + Send + '_ {
        self.recv()
    }
}

/// Both ends of a channel, once `sender` first made it.
pub(crate) struct OnFirstUse<Tx, Rx> {
    tx: Option<Tx>,
    rx: Option<Rx>,
}

impl<Tx, Rx> Default for OnFirstUse<Tx, Rx> {
    fn default() -> Self {
        OnFirstUse { tx: None, rx: None }
    }
}

impl<Tx: Clone, Rx: Receiving> OnFirstUse<Tx, Rx> {
    /// A sender, the channel made by `make` the first time.
    pub(crate) fn sender(&mut self, make: impl FnOnce() -> (Tx, Rx)) -> Tx {
        if let Some(tx) = &self.tx {
            return tx.clone();
        }
        let (tx, rx) = make();
        self.rx = Some(rx);
        self.tx.insert(tx).clone()
    }

    /// Whether the channel was made.
    #[cfg(test)]
    pub(crate) fn made(&self) -> bool {
        self.rx.is_some()
    }

    /// The next value sent (never, before the channel is made).
    pub(crate) async fn recv(&mut self) -> Option<Rx::Item> {
        match &mut self.rx {
            Some(rx) => rx.next().await,
            None => std::future::pending().await,
        }
    }
}
