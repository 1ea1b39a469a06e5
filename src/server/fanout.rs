//! A room's broadcast: every receiver gets every value sent after it
//! subscribed, in order; one that falls `capacity` values behind is told
//! how many it missed (`Lagged`) and goes on from the oldest kept, as with
//! `tokio::sync::broadcast`. Unlike it, the buffer is allocated as values
//! arrive and given back once every receiver has read them: an idle room
//! holds no slots, a burst allocates up to `capacity` of them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Why `recv` returned no value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RecvError {
    /// Every sender is gone and everything sent was read.
    Closed,
    /// This many values were dropped before this receiver read them.
    Lagged(u64),
}

/// Why `try_recv` returned no value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryRecvError {
    /// Nothing new yet.
    Empty,
    /// Every sender is gone and everything sent was read.
    Closed,
    /// This many values were dropped before this receiver read them.
    Lagged(u64),
}

/// Buffers above this many slots are given back once drained.
const KEPT_SLOTS: usize = 16;

struct State<T> {
    /// Values not yet read by every receiver, each with how many receivers
    /// still have to read it.
    values: VecDeque<(T, usize)>,
    /// The position of `values[0]`.
    head: u64,
    receivers: usize,
    senders: usize,
}

impl<T> State<T> {
    /// The position the next value takes.
    fn tail(&self) -> u64 {
        self.head + self.values.len() as u64
    }

    /// Drops the values every receiver has read.
    fn release(&mut self) {
        while self.values.front().is_some_and(|(_, left)| *left == 0) {
            self.values.pop_front();
            self.head += 1;
        }
        if self.values.is_empty() && self.values.capacity() > KEPT_SLOTS {
            self.values = VecDeque::new();
        }
    }
}

struct Shared<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    /// Woken on every value sent and when the last sender goes.
    sent: Notify,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while holding it; a poisoned state is still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side. Cheap to clone.
pub(crate) struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// A receiving side: what was sent since it subscribed.
pub(crate) struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The position of the next value it reads.
    next: u64,
}

/// A channel whose receivers may fall `capacity` values behind.
pub(crate) fn channel<T: Clone>(capacity: usize) -> Sender<T> {
    Sender {
        shared: Arc::new(Shared {
            state: Mutex::new(State {
                values: VecDeque::new(),
                head: 0,
                receivers: 0,
                senders: 1,
            }),
            capacity: capacity.max(1),
            sent: Notify::new(),
        }),
    }
}

impl<T: Clone> Sender<T> {
    /// Sends `value` to every receiver; gives it back when there is none
    /// (it is then not kept). Answers how many receivers there are.
    pub(crate) fn send(&self, value: T) -> Result<usize, T> {
        let receivers = {
            let mut state = self.shared.lock();
            if state.receivers == 0 {
                return Err(value);
            }
            if state.values.len() >= self.shared.capacity {
                // The oldest goes: receivers that had not read it lag.
                state.values.pop_front();
                state.head += 1;
            }
            let receivers = state.receivers;
            state.values.push_back((value, receivers));
            receivers
        };
        self.shared.sent.notify_waiters();
        Ok(receivers)
    }

    /// A receiver of what is sent from now on.
    pub(crate) fn subscribe(&self) -> Receiver<T> {
        let mut state = self.shared.lock();
        state.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            next: state.tail(),
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let last = {
            let mut state = self.shared.lock();
            state.senders -= 1;
            state.senders == 0
        };
        if last {
            self.shared.sent.notify_waiters();
        }
    }
}

impl<T: Clone> Receiver<T> {
    /// The next value, if one is there.
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        take(&self.shared, &mut self.next)
    }

    /// Waits for the next value. Cancel safe: a value is taken only when
    /// it is returned.
    pub(crate) async fn recv(&mut self) -> Result<T, RecvError> {
        let shared = &*self.shared;
        loop {
            let sent = shared.sent.notified();
            tokio::pin!(sent);
            // Registered before looking, so a value sent meanwhile wakes it.
            sent.as_mut().enable();
            match take(shared, &mut self.next) {
                Ok(value) => return Ok(value),
                Err(TryRecvError::Lagged(n)) => return Err(RecvError::Lagged(n)),
                Err(TryRecvError::Closed) => return Err(RecvError::Closed),
                Err(TryRecvError::Empty) => sent.await,
            }
        }
    }
}

/// Takes the value at `next` for a receiver, moving it on.
fn take<T: Clone>(shared: &Shared<T>, next: &mut u64) -> Result<T, TryRecvError> {
    let mut state = shared.lock();
    if *next < state.head {
        let missed = state.head - *next;
        *next = state.head;
        return Err(TryRecvError::Lagged(missed));
    }
    let at = (*next - state.head) as usize;
    let Some((value, left)) = state.values.get_mut(at) else {
        return Err(if state.senders == 0 {
            TryRecvError::Closed
        } else {
            TryRecvError::Empty
        });
    };
    let value = value.clone();
    *left -= 1;
    *next += 1;
    if at == 0 {
        state.release();
    }
    Ok(value)
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receivers -= 1;
        let from = self.next.saturating_sub(state.head) as usize;
        for (_, left) in state.values.iter_mut().skip(from) {
            *left -= 1;
        }
        state.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots<T>(tx: &Sender<T>) -> (usize, usize) {
        let state = tx.shared.lock();
        (state.values.len(), state.values.capacity())
    }

    #[test]
    fn every_receiver_gets_every_value_then_the_slots_go() {
        let tx = channel::<u32>(1024);
        assert_eq!(tx.send(0), Err(0), "nobody listens: not kept");
        let (mut a, mut b) = (tx.subscribe(), tx.subscribe());
        for n in 0..100 {
            assert_eq!(tx.send(n), Ok(2));
        }
        let mut c = tx.subscribe();
        for n in 0..100 {
            assert_eq!(a.try_recv(), Ok(n));
        }
        assert_eq!(a.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(slots(&tx).0, 100, "b has not read them");
        for n in 0..100 {
            assert_eq!(b.try_recv(), Ok(n));
        }
        assert_eq!(slots(&tx), (0, 0), "read by all: given back");
        assert_eq!(c.try_recv(), Err(TryRecvError::Empty));
    }

    #[test]
    fn a_receiver_behind_by_the_capacity_lags_and_goes_on() {
        let tx = channel::<u32>(4);
        let mut slow = tx.subscribe();
        let mut quick = tx.subscribe();
        for n in 0..10 {
            tx.send(n).ok();
            assert_eq!(quick.try_recv(), Ok(n));
        }
        assert_eq!(slow.try_recv(), Err(TryRecvError::Lagged(6)));
        for n in 6..10 {
            assert_eq!(slow.try_recv(), Ok(n));
        }
        assert_eq!(slots(&tx).0, 0);
    }

    #[test]
    fn a_dropped_receiver_releases_what_it_had_not_read() {
        let tx = channel::<u32>(64);
        let mut a = tx.subscribe();
        let b = tx.subscribe();
        for n in 0..40 {
            tx.send(n).ok();
        }
        for _ in 0..40 {
            a.try_recv().ok();
        }
        assert_eq!(slots(&tx).0, 40);
        drop(b);
        assert_eq!(slots(&tx), (0, 0));
    }

    #[tokio::test]
    async fn recv_waits_for_a_value_and_ends_when_the_senders_go() {
        let tx = channel::<u32>(8);
        let mut rx = tx.subscribe();
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                match rx.recv().await {
                    Ok(n) => got.push(n),
                    Err(e) => return (got, e),
                }
            }
        });
        tokio::task::yield_now().await;
        for n in 0..3 {
            tx.send(n).ok();
            tokio::task::yield_now().await;
        }
        drop(tx);
        let (got, end) = reader.await.expect("the reader ran");
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(end, RecvError::Closed);
    }
}
