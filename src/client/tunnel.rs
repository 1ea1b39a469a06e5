//! `duet port PORT [--local L]`: a port of the room's sandbox reached from
//! this machine. It listens on `127.0.0.1:L` and carries each accepted
//! connection over a WebSocket of its own (`GET …/tunnel/{PORT}`, binary
//! frames both ways) until either side closes; a connection the backend
//! refuses (502: nothing listens there) is said and closed, the listener
//! stays. Bytes move in large reads (`CHUNK`), never one by one.

use crate::client::explain;
use crate::client::http::StatusError;
use bytes::{BufMut, BytesMut};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};

/// The most bytes one read takes from the local connection, and so the
/// largest frame sent.
pub const CHUNK: usize = 64 * 1024;
/// A connection attempt to the backend that takes longer is abandoned.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// After the local side closed, how long the backend may take to close
/// its side (and send what it still had).
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// After a failed `accept` (out of file descriptors), the pause before
/// the next.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The tunnel's socket URL of docs/protocol.md: `ws(s)://…/api/rooms/{room}/tunnel/{port}`,
/// the token in the query as for the room's socket.
pub fn tunnel_url(
    base: &str,
    room: &str,
    port: u16,
    token: Option<&str>,
) -> Result<url::Url, String> {
    let mut url = url::Url::parse(base).map_err(|e| format!("{base}: {e}"))?;
    let scheme = match url.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        other => return Err(format!("{base}: unsupported scheme {other}")),
    };
    url.set_scheme(scheme)
        .map_err(|_| format!("cannot use {base} as a socket URL"))?;
    url.set_path(&format!("/api/rooms/{room}/tunnel/{port}"));
    url.set_query(None);
    if let Some(token) = token {
        url.query_pairs_mut().append_pair("token", token);
    }
    Ok(url)
}

/// Carries one local connection over its own tunnel until either side
/// closes; `Err` says why it could not (or broke).
pub async fn carry(tcp: TcpStream, url: &url::Url, base: &str, port: u16) -> Result<(), String> {
    let _ = tcp.set_nodelay(true);
    let ws = connect(url, base).await?;
    let (mut sink, mut stream) = ws.split();
    let (mut from_here, mut to_here) = tcp.into_split();
    let up = async move {
        let mut buf = BytesMut::with_capacity(CHUNK);
        loop {
            buf.reserve(CHUNK);
            let read = from_here
                .read_buf(&mut (&mut buf).limit(CHUNK))
                .await
                .map_err(|err| format!("reading the local connection: {err}"))?;
            if read == 0 {
                // The local side closed: so does the tunnel.
                let _ = sink.send(Message::Close(None)).await;
                return Ok::<(), String>(());
            }
            sink.send(Message::Binary(buf.split().freeze()))
                .await
                .map_err(|err| broke(base, &err))?;
        }
    };
    let down = async move {
        while let Some(message) = stream.next().await {
            match message {
                Ok(Message::Binary(bytes)) => to_here
                    .write_all(&bytes)
                    .await
                    .map_err(|err| format!("writing the local connection: {err}"))?,
                Ok(Message::Close(_)) => break,
                Ok(_) => {}
                Err(tungstenite::Error::ConnectionClosed) => break,
                Err(err) => return Err(broke(base, &err)),
            }
        }
        let _ = to_here.shutdown().await;
        Ok::<(), String>(())
    };
    tokio::pin!(up, down);
    tokio::select! {
        // The port closed: the local connection is closed with it.
        done = &mut down => done,
        done = &mut up => {
            done?;
            tokio::time::timeout(CLOSE_WAIT, down)
                .await
                .unwrap_or(Ok(()))
        }
    }
    .map(|()| tracing::debug!(port, "a tunnel ended"))
}

/// The tunnel's socket, or why not as a sentence.
async fn connect(url: &url::Url, base: &str) -> Result<crate::client::tls::Ws, String> {
    let attempt = crate::client::tls::connect_ws(url.as_str());
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Err(_) => Err(explain::unreachable(base, "timed out")),
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(tungstenite::Error::Http(response))) => {
            let mut body = response
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let code = response.status().as_u16();
            // Some hosts (wrangler dev) drop a refused upgrade's body: a 502
            // on a tunnel says the same either way.
            if code == 502 && body.trim().is_empty() {
                let port = url
                    .path_segments()
                    .and_then(|mut s| s.next_back())
                    .unwrap_or("?");
                let error = format!("nothing listens on port {port} in the sandbox");
                body = serde_json::json!({ "error": error }).to_string();
            }
            let status = StatusError::from_body(code, &body);
            Err(format!("{}; it was closed", explain::status(&status)))
        }
        Ok(Err(err)) => Err(explain::unreachable(base, &explain::cause(&err))),
    }
}

fn broke(base: &str, err: &tungstenite::Error) -> String {
    format!(
        "the tunnel to {} broke ({})",
        explain::server_name(base),
        explain::cause(err)
    )
}

/// The local address a `--local` asks for.
pub fn local_addr(port: u16, local: Option<u16>) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], local.unwrap_or(port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tunnel_url_follows_the_protocol() {
        assert_eq!(
            tunnel_url("http://127.0.0.1:8787/", "r-1", 8000, None)
                .unwrap()
                .as_str(),
            "ws://127.0.0.1:8787/api/rooms/r-1/tunnel/8000"
        );
        assert_eq!(
            tunnel_url("https://duet.example", "r1", 5432, Some("t&1"))
                .unwrap()
                .as_str(),
            "wss://duet.example/api/rooms/r1/tunnel/5432?token=t%261"
        );
        assert!(tunnel_url("ftp://x", "r1", 1, None).is_err());
        assert_eq!(local_addr(8000, None).to_string(), "127.0.0.1:8000");
        assert_eq!(local_addr(8000, Some(0)).port(), 0);
    }
}
