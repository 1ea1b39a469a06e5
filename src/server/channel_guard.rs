//! An open channel's credential, watched to the end: a tunnel, a port's
//! preview (its answer's body, its WebSocket) keeps going only while the
//! invite it was opened with is usable and its role may still do what the
//! channel does. Revoked or expired, the channel ends (4401, as sockets
//! do); demoted below what it needs, it ends too (4403).

use super::access::{self, Action};
use super::auth::Access;
use super::registry::Shared;
use super::room::AccessNews;
use crate::protocol::{CLOSE_UNAUTHORIZED, Invite, RoomRole, now_ms};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// The close code of a channel whose role may no longer do what it does.
pub(crate) const CLOSE_FORBIDDEN: u16 = 4403;

/// Why an open channel had to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lost {
    Revoked,
    Expired,
    /// The invite's role now, which may not do the channel's action.
    Role(RoomRole),
}

impl Lost {
    /// The WebSocket close code: 4401 like a socket's, 4403 for a role.
    pub(crate) fn close_code(self) -> u16 {
        match self {
            Lost::Revoked | Lost::Expired => CLOSE_UNAUTHORIZED,
            Lost::Role(_) => CLOSE_FORBIDDEN,
        }
    }

    /// The close reason.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Lost::Revoked => "the invite was revoked",
            Lost::Expired => "the invite expired",
            Lost::Role(RoomRole::Viewer) => "the invite's role is viewer now",
            Lost::Role(_) => "the invite's role changed",
        }
    }
}

/// What a room's access changes tell every open channel of the server:
/// the room, and the news its sockets get.
pub(crate) type RoomNews = Arc<(String, AccessNews)>;

/// How many changes of access a slow channel may fall behind by before it
/// looks its invite up again.
pub(crate) const NEWS_KEPT: usize = 64;

/// The watch on one channel's credential, taken when the channel is asked
/// for (so no change after the check is missed).
pub(crate) struct Guard {
    watched: Option<Watched>,
}

struct Watched {
    shared: Arc<Shared>,
    news: broadcast::Receiver<RoomNews>,
    room: String,
    invite: Invite,
    action: Action,
}

impl Guard {
    /// Watches `access` in `room` for `action`; the server's token is
    /// never watched (it cannot be revoked).
    pub(crate) fn new(shared: &Arc<Shared>, room: &str, access: &Access, action: Action) -> Guard {
        let watched = match access {
            Access::Server => None,
            Access::Invite(invite) => Some(Watched {
                shared: shared.clone(),
                news: shared.access_news.subscribe(),
                room: room.to_string(),
                invite: invite.clone(),
                action,
            }),
        };
        Guard { watched }
    }

    /// Waits until the credential no longer allows the channel (never, for
    /// the server's token).
    pub(crate) async fn lost(self) -> Lost {
        match self.watched {
            Some(watched) => watched.lost().await,
            None => std::future::pending().await,
        }
    }
}

impl Watched {
    async fn lost(mut self) -> Lost {
        // Anything that changed between the request's check and the watch.
        if let Some(lost) = self.look_up().await {
            return lost;
        }
        loop {
            let left = self.invite.expires_at.saturating_sub(now_ms() as u64);
            let news = tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(left)) => return Lost::Expired,
                news = self.news.recv() => news,
            };
            let lost = match news {
                Ok(news) => self.judge(&news),
                // Changes were missed: the store has the invite as it is.
                Err(broadcast::error::RecvError::Lagged(_)) => self.look_up().await,
                Err(broadcast::error::RecvError::Closed) => {
                    std::future::pending::<()>().await;
                    None
                }
            };
            if let Some(lost) = lost {
                return lost;
            }
        }
    }

    /// What `news` means for this channel.
    fn judge(&mut self, news: &RoomNews) -> Option<Lost> {
        let (room, news) = news.as_ref();
        if *room != self.room {
            return None;
        }
        match news {
            AccessNews::Revoked { invite_id } if *invite_id == self.invite.id => {
                Some(Lost::Revoked)
            }
            AccessNews::Role { invite_id, role } if *invite_id == self.invite.id => {
                self.invite.role = *role;
                (!access::may(*role, self.action)).then_some(Lost::Role(*role))
            }
            _ => None,
        }
    }

    /// The invite as the store has it now.
    async fn look_up(&mut self) -> Option<Lost> {
        let row = self
            .shared
            .store
            .invite(self.room.clone(), self.invite.id.clone())
            .await;
        let Ok(Some(row)) = row else {
            // The store failed to answer: keep the channel as it was.
            return None;
        };
        if row.revoked {
            return Some(Lost::Revoked);
        }
        if !row.usable() {
            return Some(Lost::Expired);
        }
        self.invite = row.invite;
        (!access::may(self.invite.role, self.action)).then_some(Lost::Role(self.invite.role))
    }
}

/// `body`, broken off (an error: the client sees a cut, not an end) when
/// `lost` comes first.
pub(crate) fn cut_when(
    body: axum::body::Body,
    lost: impl std::future::Future<Output = Lost> + Send + Unpin + 'static,
) -> axum::body::Body {
    use futures_util::StreamExt;
    let data = body.into_data_stream();
    let chunks = futures_util::stream::unfold(Some((data, lost)), |state| async move {
        let (mut data, mut lost) = state?;
        tokio::select! {
            biased;
            lost = &mut lost => Some((Err(std::io::Error::other(lost.reason())), None)),
            chunk = data.next() => {
                let chunk = chunk?.map_err(std::io::Error::other);
                Some((chunk, Some((data, lost))))
            }
        }
    });
    axum::body::Body::from_stream(chunks)
}
