//! Browsers cannot reach in (docs/protocol.md "Browsers and host names"):
//! a web page the user visits can neither call the token-less loopback
//! backend nor open a room's socket, and DNS rebinding gets 421.

mod common;

use common::{Server, WAIT, answer, http};
use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A page's `fetch` with a text/plain body, which needs no CORS preflight.
async fn page_post(server: &Server, origin: &str) -> (u16, serde_json::Value) {
    answer(
        http()
            .post(server.url("/api/rooms/r1/sandbox/exec"))
            .header("origin", origin)
            .header("content-type", "text/plain")
            .body(r#"{"cmd":"echo pwned > /workspace/pwned"}"#),
    )
    .await
}

/// The status of a socket upgrade with these extra headers.
async fn upgrade_status(server: &Server, headers: &[(&'static str, &str)]) -> u16 {
    let url = format!("ws://{}/api/rooms/r1/ws?user=eve", server.addr);
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut()
            .insert(*k, v.parse().expect("a header value"));
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("answers in time")
    {
        Ok((_, res)) => res.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status().as_u16(),
        Err(e) => panic!("unexpected socket error {e}"),
    }
}

#[tokio::test]
async fn a_web_page_cannot_run_commands_or_join() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = page_post(&server, "https://evil.example").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "forbidden");
    assert!(
        body["details"]["origin"][0]
            .as_str()
            .unwrap()
            .contains("--allow-origin")
    );
    // The server's own origin is not trusted either: Duet has no web page.
    let own = format!("http://{}", server.addr);
    assert_eq!(page_post(&server, &own).await.0, 403);
    assert_eq!(
        upgrade_status(&server, &[("origin", "https://evil.example")]).await,
        403
    );
    // Nothing ran.
    let (status, _) = answer(http().get(server.url("/api/rooms/r1/files/pwned"))).await;
    assert_eq!(status, 404);
    // Clients without Origin are unaffected.
    assert_eq!(upgrade_status(&server, &[]).await, 101);
    let (status, body) = server
        .post("/api/rooms/r1/sandbox/exec", json!({"cmd":"echo ok"}))
        .await;
    assert_eq!(
        (status, body["result"]["stdout"].as_str()),
        (200, Some("ok\n"))
    );
}

#[tokio::test]
async fn an_allowed_origin_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--allow-origin", "https://ide.example"]).await;
    let (status, body) = page_post(&server, "https://ide.example").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(page_post(&server, "https://other.example").await.0, 403);
}

#[tokio::test]
async fn dns_rebinding_is_refused_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--public-host", "duet.lan"]).await;
    let get = |host: &'static str| {
        answer(
            http()
                .get(server.url("/api/rooms/r1/messages"))
                .header("host", host),
        )
    };
    let (status, body) = get("rebind.evil.example:8787").await;
    assert_eq!(status, 421, "{body}");
    assert_eq!(body["error"], "misdirected request");
    assert!(
        body["details"]["host"][0]
            .as_str()
            .unwrap()
            .contains("--public-host")
    );
    assert_eq!(
        upgrade_status(&server, &[("host", "rebind.evil.example")]).await,
        421
    );
    for ok in ["localhost:1234", "127.0.0.1", "[::1]:9", "duet.lan"] {
        assert_eq!(get(ok).await.0, 200, "{ok}");
    }
}
