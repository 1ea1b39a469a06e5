//! `duet logs -f`: a process's log, then its output as it comes, over a
//! socket of its own (rpc `process_follow`), until it ends. The answer
//! carries the log so far and the output frames come after it, so
//! printing the answer and then the frames leaves no gap and nothing
//! twice. The exit code is the process's (`exit_code`).

use crate::client::commands::{server_url, token_for};
use crate::client::explain;
use crate::client::processes::{self, Following};
use crate::client::ps::{said, write_out as write};
use crate::client::rpc::outcome;
use crate::client::socket::{SocketParams, socket_url};
use crate::config::ClientSettings;
use crate::protocol::{Process, ProcessFrame, ProcessStatus, ServerFrame};
use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use std::process::ExitCode;
use std::time::Duration;
use tokio_tungstenite::tungstenite::{self, Message};

/// A connection attempt that takes longer is abandoned.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The rpc id of our one `process_follow`.
const FOLLOW_ID: &str = "follow";

/// The exit code `duet logs -f` ends with once the process ended: its
/// own (143 when a kill's SIGTERM ended it), 1 when nobody knows it.
pub fn exit_code(code: Option<i32>) -> u8 {
    code.map_or(1, |c| (c & 0xff) as u8)
}

/// How the process ended, as far as this client knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ended {
    status: ProcessStatus,
    exit_code: Option<i32>,
}

/// Follows `wanted` (an id, or a name only one listed process has).
pub async fn follow(settings: &ClientSettings, wanted: &str) -> anyhow::Result<ExitCode> {
    let server = server_url(settings)?;
    let room = settings
        .room
        .clone()
        .context("no room: pass --room ROOM (or set DUET_ROOM)")?;
    crate::support::install_tls();
    let params = SocketParams {
        base: server.clone(),
        room,
        name: settings.name.clone(),
        token: token_for(settings),
        connection_id: format!("c{}", crate::tui::start::random_room()),
        deltas: false,
    };
    let url = socket_url(&params).map_err(anyhow::Error::msg)?;
    let ws = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::connect_async(url.as_str()),
    )
    .await
    {
        Err(_) => return said(&explain::unreachable(&server, "timed out")),
        Ok(Ok((ws, _))) => ws,
        Ok(Err(tungstenite::Error::Http(response))) => {
            let body = response
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let status =
                crate::client::http::StatusError::from_body(response.status().as_u16(), &body);
            return said(&explain::status(&status));
        }
        Ok(Err(err)) => return said(&explain::unreachable(&server, &explain::cause(&err))),
    };
    let (mut sink, mut stream) = ws.split();
    let mut id: Option<String> = None;
    let mut answered = false;
    let mut ended: Option<Ended> = None;
    let mut listed: Vec<Process> = Vec::new();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let message = tokio::select! {
            message = stream.next() => message,
            _ = &mut interrupted => return Ok(ExitCode::from(130)),
        };
        let text = match message {
            None | Some(Ok(Message::Close(_))) => {
                return said(&format!(
                    "the server at {} closed the connection while following {wanted}",
                    explain::server_name(&server)
                ));
            }
            Some(Err(err)) => {
                return said(&format!(
                    "the connection to {} broke ({}) while following {wanted}",
                    explain::server_name(&server),
                    explain::cause(&err)
                ));
            }
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(_)) => continue,
        };
        let Ok(frame) = serde_json::from_str::<ServerFrame>(text.as_str()) else {
            continue;
        };
        match frame {
            // The first state names the process; later ones keep the list.
            ServerFrame::State { state } => {
                listed = state.processes;
                if id.is_none() {
                    let found = match processes::find(&listed, wanted) {
                        Ok(p) => p,
                        // No such name: the id goes as given (the server's 404 says so).
                        Err(_) if !listed.iter().any(|p| p.name == wanted) => {
                            let chosen = wanted.to_string();
                            send_follow(&mut sink, &chosen).await?;
                            id = Some(chosen);
                            continue;
                        }
                        Err(why) => return said(&why),
                    };
                    if found.status != ProcessStatus::Running {
                        ended = Some(Ended {
                            status: found.status,
                            exit_code: found.exit_code,
                        });
                    }
                    let chosen = found.id.clone();
                    send_follow(&mut sink, &chosen).await?;
                    id = Some(chosen);
                }
            }
            ServerFrame::Rpc(reply) if reply.id.as_str() == Some(FOLLOW_ID) => {
                let body = match outcome(reply) {
                    Ok(body) => body,
                    Err(err) => return said(&explain::rpc(&err)),
                };
                let log: Following = serde_json::from_value(body)
                    .context("unexpected answer from the backend to process_follow")?;
                write(log.stdout.as_bytes(), false)?;
                write(log.stderr.as_bytes(), true)?;
                answered = true;
                // Ended before it was followed, or no longer listed: its
                // log is all there is.
                let current = id
                    .as_deref()
                    .and_then(|id| listed.iter().find(|p| p.id == id));
                match current {
                    Some(p) if p.status != ProcessStatus::Running => {
                        ended.get_or_insert(Ended {
                            status: p.status,
                            exit_code: p.exit_code,
                        });
                    }
                    None => {
                        ended.get_or_insert(Ended {
                            status: ProcessStatus::Exited,
                            exit_code: None,
                        });
                    }
                    Some(_) => {}
                }
            }
            ServerFrame::Process(frame) => match frame {
                // Output before the answer is in the answer's log.
                ProcessFrame::Stdout { process_id, data }
                    if answered && Some(&process_id) == id.as_ref() =>
                {
                    write(data.as_bytes(), false)?;
                }
                ProcessFrame::Stderr { process_id, data }
                    if answered && Some(&process_id) == id.as_ref() =>
                {
                    write(data.as_bytes(), true)?;
                }
                ProcessFrame::Exit {
                    process_id,
                    status,
                    exit_code,
                } if Some(&process_id) == id.as_ref() => {
                    ended = Some(Ended { status, exit_code });
                }
                _ => {}
            },
            _ => {}
        }
        if let (true, Some(how)) = (answered, ended) {
            let _ = sink.send(Message::Close(None)).await;
            let code = exit_code(how.exit_code);
            let words = match (how.status, how.exit_code) {
                (ProcessStatus::Killed, Some(c)) => format!("was killed (exit code {c})"),
                (ProcessStatus::Killed, None) => "was killed".to_string(),
                (_, Some(c)) => format!("exited (code {c})"),
                (_, None) => "ended (exit code unknown)".to_string(),
            };
            eprintln!("[{} {words}]", id.as_deref().unwrap_or(wanted));
            return Ok(ExitCode::from(code));
        }
    }
}

async fn send_follow<S>(sink: &mut S, id: &str) -> anyhow::Result<()>
where
    S: futures_util::Sink<Message, Error = tungstenite::Error> + Unpin,
{
    let frame = serde_json::json!({
        "type": "rpc",
        "id": FOLLOW_ID,
        "method": "process_follow",
        "args": [{"processId": id}],
    });
    sink.send(Message::text(frame.to_string()))
        .await
        .context("cannot ask the server to follow the process")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_is_the_process_s() {
        assert_eq!(exit_code(Some(0)), 0);
        assert_eq!(exit_code(Some(3)), 3);
        assert_eq!(exit_code(Some(143)), 143);
        assert_eq!(exit_code(None), 1);
    }
}
