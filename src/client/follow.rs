//! `duet logs -f`: a process's log, then its output as it comes, over a
//! socket of its own (rpc `process_follow`), until it ends. The answer
//! carries the log so far and the output frames come after it, so
//! printing the answer and then the frames leaves no gap and nothing
//! twice. After a drop it connects and follows again, and prints only
//! what the new answer's log has beyond what was printed (`unseen`). The
//! exit code is the process's (`exit_code`).

use crate::client::commands::{server_url, token_for};
use crate::client::explain;
use crate::client::processes;
use crate::client::ps::{said, write_out};
use crate::client::rpc::outcome;
use crate::client::socket::{SocketParams, backoff, socket_url};
use crate::config::ClientSettings;
use crate::protocol::FollowResponse;
use crate::protocol::{PROCESS_LOG_BYTES, Process, ProcessFrame, ProcessStatus, ServerFrame};
use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use std::process::ExitCode;
use std::time::Duration;
use tokio_tungstenite::tungstenite::{self, Message};

/// A connection attempt that takes longer is abandoned.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The rpc id of our `process_follow`.
const FOLLOW_ID: &str = "follow";
/// Drops in a row after which it gives up.
const MAX_RECONNECTS: u32 = 8;
/// Exit code when Ctrl+C stopped following (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

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

/// The end of what was printed of each stream (enough to find where a
/// log answered after a reconnect goes on).
#[derive(Debug, Default)]
struct Printed {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Printed {
    fn print(&mut self, bytes: &[u8], stderr: bool) -> std::io::Result<()> {
        let tail = if stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        };
        tail.extend_from_slice(bytes);
        let keep = 2 * PROCESS_LOG_BYTES;
        if tail.len() > keep {
            tail.drain(..tail.len() - keep);
        }
        write_out(bytes, stderr)
    }
}

/// The part of `log` (a stream's last bytes, as an answer gives them)
/// that comes after what was `printed` of it: `log` from the end of the
/// longest start of it that `printed` ends with.
pub fn unseen<'a>(printed: &[u8], log: &'a [u8]) -> &'a [u8] {
    // Knuth–Morris–Pratt: match `printed` against `log`; where the match
    // stands at the end of `printed` is the overlap.
    let mut fail = vec![0usize; log.len()];
    let mut k = 0;
    for i in 1..log.len() {
        while k > 0 && log[i] != log[k] {
            k = fail[k - 1];
        }
        if log[i] == log[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let mut matched = 0;
    for &byte in printed {
        while matched > 0 && (matched == log.len() || log[matched] != byte) {
            matched = fail[matched - 1];
        }
        if matched < log.len() && log[matched] == byte {
            matched += 1;
        }
    }
    &log[matched..]
}

/// How one connection's following ended.
enum Outcome {
    /// The process ended: exit with this code.
    Done(u8),
    /// Refused for good (no such process, a bad token): why.
    Refused(String),
    /// The connection dropped or could not be made: why (tried again).
    Dropped(String),
}

/// What one connection needs and what carries over to the next.
struct Follow<'a> {
    params: SocketParams,
    wanted: &'a str,
    /// The process's id, once the room named it.
    id: Option<String>,
    printed: Printed,
    /// A `process_follow` answered before: a new answer's log is
    /// printed from where the last print stopped.
    followed_before: bool,
}

/// Follows `wanted` (an id, or a name only one listed process has).
pub async fn follow(settings: &ClientSettings, wanted: &str) -> anyhow::Result<ExitCode> {
    let server = server_url(settings)?;
    let room = settings
        .room
        .clone()
        .context("no room: pass --room ROOM (or set DUET_ROOM)")?;
    crate::support::install_tls();
    let mut follow = Follow {
        params: SocketParams {
            base: server,
            room,
            name: settings.name.clone(),
            token: token_for(settings),
            connection_id: format!("c{}", crate::client::join::random_room()),
            deltas: false,
        },
        wanted,
        id: None,
        printed: Printed::default(),
        followed_before: false,
    };
    let mut interrupt = super::interrupt::Interrupt::new()?;
    let mut drops = 0;
    loop {
        let outcome = tokio::select! {
            outcome = follow.once() => outcome?,
            () = interrupt.recv() => return Ok(ExitCode::from(EXIT_INTERRUPTED)),
        };
        match outcome {
            Outcome::Done(code) => return Ok(ExitCode::from(code)),
            Outcome::Refused(why) => return said(&why),
            // Before the first answer nothing was followed: say why.
            Outcome::Dropped(why) if !follow.followed_before || drops >= MAX_RECONNECTS => {
                return said(&why);
            }
            Outcome::Dropped(why) => {
                drops += 1;
                let wait = backoff(drops, rand::random::<f64>());
                eprintln!(
                    "duet: {why}; following again in {} s",
                    wait.as_secs().max(1)
                );
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    () = interrupt.recv() => return Ok(ExitCode::from(EXIT_INTERRUPTED)),
                }
            }
        }
    }
}

impl Follow<'_> {
    /// One connection: names the process, follows it, prints.
    async fn once(&mut self) -> anyhow::Result<Outcome> {
        let server = self.params.base.clone();
        let url = socket_url(&self.params).map_err(anyhow::Error::msg)?;
        let attempt = crate::client::tls::connect_ws(url.as_str());
        let ws = match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
            Err(_) => return Ok(Outcome::Dropped(explain::unreachable(&server, "timed out"))),
            Ok(Ok((ws, _))) => ws,
            Ok(Err(tungstenite::Error::Http(response))) => {
                let code = response.status().as_u16();
                let body = response
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default();
                let status = crate::client::http::StatusError::from_body(code, &body);
                let why = explain::status(&status);
                return Ok(match code {
                    429 | 500.. => Outcome::Dropped(why),
                    _ => Outcome::Refused(why),
                });
            }
            Ok(Err(err)) => {
                let why = explain::unreachable(&server, &explain::cause(&err));
                return Ok(Outcome::Dropped(why));
            }
        };
        let (mut sink, mut stream) = ws.split();
        let mut asked = false;
        let mut answered = false;
        let mut ended: Option<Ended> = None;
        let mut listed: Vec<Process> = Vec::new();
        loop {
            let text = match stream.next().await {
                None | Some(Ok(Message::Close(_))) => {
                    return Ok(Outcome::Dropped(format!(
                        "the server at {} closed the connection while following {}",
                        explain::server_name(&server),
                        self.wanted
                    )));
                }
                Some(Err(err)) => {
                    return Ok(Outcome::Dropped(format!(
                        "the connection to {} broke ({}) while following {}",
                        explain::server_name(&server),
                        explain::cause(&err),
                        self.wanted
                    )));
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
                    if asked {
                        continue;
                    }
                    let id = match self.id.clone() {
                        Some(id) => id,
                        None => match processes::find(&listed, self.wanted) {
                            Ok(p) => p.id.clone(),
                            // No such name: the id goes as given (the server's 404 says so).
                            Err(_) if !listed.iter().any(|p| p.name == self.wanted) => {
                                self.wanted.to_string()
                            }
                            Err(why) => return Ok(Outcome::Refused(why)),
                        },
                    };
                    if let Some(p) = listed.iter().find(|p| p.id == id)
                        && p.status != ProcessStatus::Running
                    {
                        ended = Some(Ended {
                            status: p.status,
                            exit_code: p.exit_code,
                        });
                    }
                    send_follow(&mut sink, &id).await?;
                    self.id = Some(id);
                    asked = true;
                }
                ServerFrame::Rpc(reply) if reply.id.as_str() == Some(FOLLOW_ID) => {
                    let body = match outcome(reply) {
                        Ok(body) => body,
                        Err(err) => return Ok(Outcome::Refused(explain::rpc(&err))),
                    };
                    let log: FollowResponse = serde_json::from_value(body)
                        .context("unexpected answer from the backend to process_follow")?;
                    let (out, err) = if self.followed_before {
                        (
                            unseen(&self.printed.stdout, log.stdout.as_bytes()),
                            unseen(&self.printed.stderr, log.stderr.as_bytes()),
                        )
                    } else {
                        (log.stdout.as_bytes(), log.stderr.as_bytes())
                    };
                    self.printed.print(out, false)?;
                    self.printed.print(err, true)?;
                    self.followed_before = true;
                    answered = true;
                    // Ended before it was followed, or no longer listed:
                    // its log is all there is.
                    let current = self
                        .id
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
                        if answered && self.id.as_ref() == Some(&process_id) =>
                    {
                        self.printed.print(data.as_bytes(), false)?;
                    }
                    ProcessFrame::Stderr { process_id, data }
                        if answered && self.id.as_ref() == Some(&process_id) =>
                    {
                        self.printed.print(data.as_bytes(), true)?;
                    }
                    ProcessFrame::Exit {
                        process_id,
                        status,
                        exit_code,
                    } if self.id.as_ref() == Some(&process_id) => {
                        ended = Some(Ended { status, exit_code });
                    }
                    _ => {}
                },
                _ => {}
            }
            if let (true, Some(how)) = (answered, ended) {
                let _ = sink.send(Message::Close(None)).await;
                let words = match (how.status, how.exit_code) {
                    (ProcessStatus::Killed, Some(c)) => format!("was killed (exit code {c})"),
                    (ProcessStatus::Killed, None) => "was killed".to_string(),
                    (_, Some(c)) => format!("exited (code {c})"),
                    (_, None) => "ended (exit code unknown)".to_string(),
                };
                eprintln!("[{} {words}]", self.id.as_deref().unwrap_or(self.wanted));
                return Ok(Outcome::Done(exit_code(how.exit_code)));
            }
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

    #[test]
    fn a_log_answered_again_goes_on_where_the_print_stopped() {
        // The whole log again, with more: only the more.
        assert_eq!(unseen(b"one\ntwo\n", b"one\ntwo\nthree\n"), b"three\n");
        // A log cut at its start (64 KiB kept): from the overlap on.
        assert_eq!(unseen(b"one\ntwo\n", b"wo\nthree\n"), b"three\n");
        // Repeated lines: the longest overlap.
        assert_eq!(unseen(b"tick\ntick\n", b"tick\ntick\ntick\n"), b"tick\n");
        // Nothing new; nothing printed yet; no overlap at all (a gap).
        assert_eq!(unseen(b"a\nb\n", b"a\nb\n"), b"");
        assert_eq!(unseen(b"", b"a\n"), b"a\n");
        assert_eq!(unseen(b"old\n", b"new\n"), b"new\n");
        assert_eq!(unseen(b"x", b""), b"");
    }
}
