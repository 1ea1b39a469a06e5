//! `GET /api/rooms/{room}/tunnel/{port}`: a WebSocket carrying one TCP
//! connection to a sandbox port, binary frames both ways. It connects
//! before it upgrades (a 502 when nothing listens), is under no frame
//! rate, and reads the client's bytes no faster than
//! `--tunnel-bytes-per-sec` (slower, never dropped).

use super::checked;
use crate::server::access::Action;
use crate::server::channel_guard::Guard;
use crate::server::errors::{ApiError, Path};
use crate::server::limits::Bucket;
use crate::server::router::App;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest read from the port sent as one frame.
const CHUNK: usize = 64 * 1024;

pub(crate) async fn tunnel(
    State(app): State<Arc<App>>,
    axum::Extension(access): axum::Extension<crate::server::auth::Access>,
    Path(params): Path<BTreeMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let room = params.get("room").map(String::as_str).unwrap_or_default();
    let port = checked(
        room,
        params.get("port").map(String::as_str).unwrap_or_default(),
    )?;
    let upgrade = upgrade.map_err(|e| ApiError::field("upgrade", e.body_text()))?;
    crate::server::access::check(access.role(), Action::UsePort)?;
    let guard = Guard::new(&app.registry.shared, room, &access, Action::UsePort);
    let stream = super::connect(&app, room, port).await?;
    let rate = app.registry.shared.limits.tunnel_bytes_per_sec;
    Ok(upgrade
        .max_message_size(4 * 1024 * 1024)
        .on_upgrade(move |socket| carry(socket, stream, Bucket::per_second(rate), guard))
        .into_response())
}

/// Moves bytes both ways until either side ends, or the credential it was
/// opened with stops allowing it.
async fn carry(socket: WebSocket, stream: TcpStream, mut bucket: Bucket, guard: Guard) {
    let (mut to_client, mut from_client) = socket.split();
    let (mut from_port, mut to_port) = stream.into_split();
    let code = {
        let upstream = async {
            while let Some(Ok(msg)) = from_client.next().await {
                match msg {
                    Message::Binary(bytes) => {
                        while let Err(wait) = bucket.take(bytes.len() as f64) {
                            tokio::time::sleep(wait).await;
                        }
                        if to_port.write_all(&bytes).await.is_err() {
                            return None;
                        }
                    }
                    Message::Text(_) => return Some(close_code::UNSUPPORTED),
                    Message::Close(_) => return None,
                    Message::Ping(_) | Message::Pong(_) => {}
                }
            }
            None
        };
        let downstream = async {
            let mut buf = vec![0u8; CHUNK];
            loop {
                match from_port.read(&mut buf).await {
                    Ok(0) | Err(_) => return close_code::NORMAL,
                    Ok(n) => {
                        let frame = Message::Binary(bytes::Bytes::copy_from_slice(&buf[..n]));
                        if to_client.send(frame).await.is_err() {
                            return close_code::AWAY;
                        }
                    }
                }
            }
        };
        tokio::select! {
            code = upstream => code.map(|code| (code, "a tunnel carries binary frames only")),
            code = downstream => Some((code, "the port closed the connection")),
            lost = guard.lost() => Some((lost.close_code(), lost.reason())),
        }
    };
    let _ = to_port.shutdown().await;
    if let Some((code, reason)) = code {
        let close = CloseFrame {
            code,
            reason: reason.into(),
        };
        // The halves were split: put them back together to close.
        if let Ok(mut socket) = to_client.reunite(from_client) {
            let _ = socket.send(Message::Close(Some(close))).await;
        }
    }
}
