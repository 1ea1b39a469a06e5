//! `interrupt` (`POST /api/rooms/{room}/sandbox/interrupt` `{execId?,
//! clientId?}`): SIGINT to the running command (the one named by its id,
//! or by the `clientId` its `exec` gave), SIGKILL 2 s later (one still
//! waiting behind another never runs); answers
//! `InterruptResponse`, after an `interrupt` record when it stopped one.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{Event, InterruptResponse};
use crate::server::room::{RoomActor, record_in};

/// Stop a running command (the given one, else the current).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interrupt {
    pub(crate) exec_id: Option<String>,
    pub(crate) client_id: Option<String>,
}

impl Operation for Interrupt {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(Interrupt {
            exec_id: f.string("execId"),
            client_id: f.client_id("clientId"),
        })
    }

    /// Stops the command (the given one, else the oldest running: they
    /// run one at a time in the order they came); answers whether one
    /// was, after storing its `interrupt` record. A `clientId` no command
    /// carries (it ended, or never came) stops none.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let target = match (&self.exec_id, &self.client_id) {
            (Some(id), _) => room.running.get_key_value(id),
            (None, Some(client)) => room
                .running
                .iter()
                .find(|(_, c)| c.client_id.as_deref() == Some(client.as_str())),
            (None, None) => room.running.iter().next(),
        };
        let Some((exec_id, cmd)) = target.map(|(id, c)| (id.clone(), c.cmd.clone())) else {
            let _ = answer.send(Ok(Reply::ok(InterruptResponse::stopped(false))));
            return;
        };
        let (sandbox, inbox) = (room.sandbox.clone(), room.inbox.clone());
        let by = caller.name_or_anonymous();
        // One that waits behind another is withdrawn: it never runs (its
        // result says interrupted when its turn comes).
        if room
            .running
            .get(&exec_id)
            .is_some_and(|c| c.start.withdraw())
        {
            tokio::spawn(async move {
                record_in(&inbox, Event::Interrupt { by, exec_id, cmd }).await;
                let withdrawn = InterruptResponse {
                    interrupted: true,
                    withdrawn: true,
                };
                let _ = answer.send(Ok(Reply::ok(withdrawn)));
            });
            return;
        }
        // Awaited apart from the actor: the sandbox answers when it signalled.
        tokio::spawn(async move {
            let interrupted = sandbox.interrupt(Some(exec_id.clone()), false).await;
            if interrupted {
                record_in(&inbox, Event::Interrupt { by, exec_id, cmd }).await;
            }
            let _ = answer.send(Ok(Reply::ok(InterruptResponse::stopped(interrupted))));
        });
    }
}
