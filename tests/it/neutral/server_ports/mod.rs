//! A room's ports, as docs/protocol.md "Background processes and ports"
//! says: listening ports (TCP, any address, any listener) in the room
//! state and `GET …/ports`, the HTTP preview (files, redirects, 502 and
//! 400, streamed bodies, WebSockets), the tunnel (a raw TCP connection over
//! binary frames, closed either way), each preview's own origin and the
//! ticket and cookie that open it (by hand and with a real browser,
//! Debian's headless Chromium), and isolation: the host's loopback is out
//! of reach, the app never sees a credential (even slipped in), browsers
//! may open the preview at its origin but not the API, a viewer's body
//! never reaches the app as a second request, and the routes never start
//! a sandbox. Apps in the sandbox are
//! `python3 -m http.server` and small standard-library Python programs.
//! Backend-neutral: only the protocol, except what is marked
//! `only_duet_serve` (its flags and local facts).

use crate::common;
use crate::common::apps::{
    ECHO_REQUEST_PY, TCP_ECHO_PY, WS_ECHO_PY, delete, exec, http_no_redirect, http_server, pattern,
    preview_get, preview_url, printed, put_file, python_app, read_tunnel, room_path,
    split_response, start, tunnel, tunnel_with, wait_for, with_token,
};
use crate::common::{Server, WAIT, answer, http};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

mod browsers;
mod isolation;
mod preview;
mod tunnel;

const TOKEN: &str = "preview-s3cret-token";

fn nothing_listens(port: u16) -> Value {
    json!({"error": format!("nothing listens on port {port} in the sandbox")})
}

/// A token-protected server.
async fn protected() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Server::start(dir.path(), &["--token", TOKEN]).await, dir)
}

/// The path of a `Location` header, whether it is absolute or not.
fn location_path(server: &Server, res: &reqwest::Response) -> String {
    let location = res
        .headers()
        .get("location")
        .expect("a Location header")
        .to_str()
        .unwrap();
    location
        .strip_prefix(&format!("http://{}", server.addr))
        .unwrap_or(location)
        .to_string()
}

/// What the echo app received: `{method, path, headers, body}`.
async fn echoed(res: reqwest::Response) -> Value {
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("the echo app answers JSON")
}

/// The values of header `name` (any case) among the echoed headers.
fn header_values(seen: &Value, name: &str) -> Vec<String> {
    seen["headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h[0].as_str().unwrap().eq_ignore_ascii_case(name))
        .map(|h| h[1].as_str().unwrap().to_string())
        .collect()
}

/// The second frame of the WebSocket echo app: the upgrade's headers.
async fn ws_headers(ws: &mut common::apps::Tunnel) -> Value {
    let path = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(path.to_text().unwrap().starts_with("path:"), "{path}");
    let frame = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let text = frame
        .to_text()
        .unwrap()
        .strip_prefix("headers:")
        .unwrap()
        .to_string();
    json!({ "headers": serde_json::from_str::<Value>(&text).unwrap() })
}

/// A WebSocket to `path` at a preview's own origin with `headers`: the
/// socket, or the status of a refused upgrade.
async fn origin_ws(
    server: &Server,
    own: &common::apps::OwnOrigin,
    path: &str,
    headers: &[(&str, String)],
) -> Result<common::apps::Tunnel, u16> {
    let mut req = format!("ws://{}{path}", own.host)
        .into_client_request()
        .unwrap();
    for (name, value) in headers {
        req.headers_mut().insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let tcp = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let tcp = tokio_tungstenite::MaybeTlsStream::Plain(tcp);
    match tokio::time::timeout(WAIT, tokio_tungstenite::client_async(req, tcp))
        .await
        .expect("the upgrade is answered in time")
    {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => Err(res.status().as_u16()),
        Err(e) => panic!("{path}: {e}"),
    }
}
