//! How an rpc's answer gets back to its socket's loop: the rpcs run in
//! tasks of their own, which send their answers through a channel the
//! socket makes on its first rpc (`first_use`).

use super::{TermHandle, Utf8Bytes};
use crate::server::first_use::OnFirstUse;
use crate::server::terminal::Attached;
use tokio::sync::mpsc;

/// An rpc's answer for the client (none for a re-attach after falling
/// behind), the socket's new name when it was a `rename` that succeeded,
/// the terminal it attached to when it was a `term_open`, and the process
/// it follows from when it was a `process_follow`.
#[derive(Default)]
pub(super) struct Answered {
    pub(super) text: Option<Utf8Bytes>,
    pub(super) renamed: Option<String>,
    pub(super) attached: Option<(TermHandle, Attached)>,
    /// A `process_follow`: the process and the output frame its log ends
    /// at (`None`: it failed).
    pub(super) followed: Option<(String, Option<u64>)>,
}

/// Where a socket's rpcs send their answers back to its loop. Boxed: the
/// channel allocates a block of slots at once, and an idle socket should
/// not hold 32 whole answers' worth of it.
#[derive(Clone)]
pub(super) struct Answers(mpsc::Sender<Box<Answered>>);

impl Answers {
    pub(super) async fn send(&self, answer: Answered) -> Result<(), ()> {
        self.0.send(Box::new(answer)).await.map_err(drop)
    }
}

/// The socket's way back for answers, made on its first rpc (measured:
/// 0.7 KiB a socket, and most sockets of a crowd never call one).
#[derive(Default)]
pub(super) struct Replies(OnFirstUse<Answers, mpsc::Receiver<Box<Answered>>>);

impl Replies {
    /// Where an rpc sends its answer.
    pub(super) fn sender(&mut self) -> Answers {
        self.0.sender(|| {
            let (tx, rx) = mpsc::channel(64);
            (Answers(tx), rx)
        })
    }

    /// The next answer (never, before the first rpc).
    pub(super) async fn recv(&mut self) -> Option<Box<Answered>> {
        self.0.recv().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_way_back_for_answers_is_made_on_the_first_rpc() {
        use futures_util::FutureExt;
        let mut replies = Replies::default();
        assert!(!replies.0.made(), "no channel before an rpc");
        assert!(replies.recv().now_or_never().is_none(), "nothing comes");
        let first = replies.sender();
        let again = replies.sender();
        let text = |t: &str| Answered {
            text: Some(Utf8Bytes::from(t.to_string())),
            ..Answered::default()
        };
        first.send(text("one")).await.unwrap();
        again.send(text("two")).await.unwrap();
        for want in ["one", "two"] {
            let got = replies.recv().await.and_then(|a| a.text);
            assert_eq!(got.as_deref(), Some(want));
        }
    }
}
