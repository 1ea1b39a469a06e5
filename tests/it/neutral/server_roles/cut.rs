//! A revoked, demoted or expired invite's open tunnels and previews are cut.

use super::*;

/// An app that answers every GET with a body that never ends: a line
/// every 100 ms (an event stream, a log tail).
const DRIP_PY: &str = r#"
import http.server, sys, time

class Drip(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        n = 0
        while True:
            n += 1
            self.wfile.write(b"drip %d\n" % n)
            self.wfile.flush()
            time.sleep(0.1)

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Drip).serve_forever()
"#;

/// Sends `bytes` through a tunnel to the echo app and reads them back.
async fn echoed(t: &mut Tunnel, bytes: &[u8]) {
    t.send(Message::binary(bytes.to_vec())).await.unwrap();
    let mut got = Vec::new();
    while got.len() < bytes.len() {
        match tokio::time::timeout(WAIT, t.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert_eq!(got, bytes);
}

/// Reads a tunnel (or a preview's socket) until the server ends it: its
/// close code and reason, or `None` when the connection was just cut.
async fn cut(t: &mut Tunnel) -> Option<(u16, String)> {
    let read = async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(frame))) => {
                    return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("the server ends the channel in time")
}

#[tokio::test]
async fn a_revoked_demoted_or_expired_invite_s_open_tunnel_is_cut() {
    let (server, _dir) = with_token(&[]).await;
    let room = "cut-tunnel";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut owners = tunnel(&server, room, 9000).await;
    echoed(&mut owners, b"owner first").await;

    // Revoked: the open tunnel closes as the invite's sockets do.
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let mut t = wes.tunnel(9000).await;
    echoed(&mut t, b"echo before the revoke").await;
    let id = inv["id"].as_str().unwrap();
    let (status, _) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200);
    assert_eq!(
        cut(&mut t).await,
        Some((4401, "the invite was revoked".to_string()))
    );

    // Demoted to viewer, who may not use a tunnel: it closes with 4403.
    let (wen, inv) = guest(&server, room, "writer", None).await;
    let mut t = wen.tunnel(9000).await;
    echoed(&mut t, b"echo before the demotion").await;
    let id = inv["id"].as_str().unwrap();
    set_role(&server, room, id, "viewer").await;
    assert_eq!(
        cut(&mut t).await,
        Some((4403, "the invite's role is viewer now".to_string()))
    );
    // Made owner, the same invite keeps its tunnel.
    let (wyn, inv) = guest(&server, room, "writer", None).await;
    let mut kept = wyn.tunnel(9000).await;
    let id = inv["id"].as_str().unwrap();
    set_role(&server, room, id, "owner").await;

    // Expired: closed at the moment it expires, without a request.
    let created = invite(&server, room, json!({"role":"writer","expiresIn":3})).await;
    let wex = Guest::holding(&server, room, &created);
    let mut t = wex.tunnel(9000).await;
    echoed(&mut t, b"echo before it expires").await;
    assert_eq!(
        cut(&mut t).await,
        Some((4401, "the invite expired".to_string()))
    );
    assert!(now_ms() + 1000 >= created["invite"]["expiresAt"].as_u64().unwrap());

    // The server's token and the promoted invite were never cut.
    echoed(&mut owners, b"owner still here").await;
    echoed(&mut kept, b"owner by invite still here").await;
}

#[tokio::test]
async fn a_revoked_or_demoted_invite_s_open_preview_is_cut() {
    let (server, _dir) = with_token(&[]).await;
    let room = "cut-preview";
    python_app(&server, room, "drip.py", DRIP_PY, 8300).await;
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8301).await;

    // A viewer's GET whose body never ends stops when the invite is revoked.
    let (vera, inv) = guest(&server, room, "viewer", None).await;
    // A client without a time limit: only the server may end the body.
    let _ = http();
    let mut res = reqwest::Client::new()
        .get(preview_url(&server, room, 8300, "/feed"))
        .bearer_auth(&vera.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let first = tokio::time::timeout(WAIT, res.chunk()).await.unwrap();
    assert!(first.unwrap().unwrap().starts_with(b"drip "));
    let id = inv["id"].as_str().unwrap();
    let (status, _) = delete(&server, &room_path(room, &format!("/invites/{id}"))).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match res.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the preview's body ends once the invite is revoked"
    );

    // A writer's WebSocket through the preview ends when the writer
    // becomes a viewer (who may not open one).
    // A client that sends its token (not a browser, which is sent to the
    // preview's own origin).
    let (wes, inv) = guest(&server, room, "writer", None).await;
    let url = format!(
        "ws://{}{}",
        server.addr,
        room_path(room, "/ports/8301/live")
    );
    let with_bearer = || {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = url.as_str().into_client_request().unwrap();
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", wes.token).parse().unwrap(),
        );
        req
    };
    let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(with_bearer()))
        .await
        .expect("upgrades in time")
        .expect("a writer's socket goes through the preview");
    let first = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), Message::text("path:/live"));
    let id = inv["id"].as_str().unwrap();
    set_role(&server, room, id, "viewer").await;
    let _ = cut(&mut ws).await;
    let again = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(with_bearer()))
        .await
        .expect("the server answers the upgrade in time");
    match again {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            assert_eq!(res.status().as_u16(), 403, "a viewer opens no socket")
        }
        Ok(_) => panic!("a viewer's socket went through the preview"),
        Err(e) => panic!("{url}: {e}"),
    }
}
