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

#[tokio::test]
async fn a_listening_port_is_listed_and_its_preview_serves_the_files() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-files";
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let mut full = server.joined(room, "user=bob").await;
    let file = pattern(300 * 1024);
    put_file(&server, room, "site/data.bin", file.clone()).await;
    put_file(&server, room, "site/page.html", b"<p>hi</p>".to_vec()).await;
    put_file(&server, room, "site/two%20words.txt", b"spaced".to_vec()).await;
    let web = http_server(&server, room, 8000).await;
    let entry = json!({"port": 8000, "path": format!("/api/rooms/{room}/ports/8000/")});
    let listed = common::apps::ports(&server, room).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["port"], entry["port"]);
    assert_eq!(listed[0]["path"], entry["path"]);
    // The state says so: a patch for deltas sockets, a full state for others.
    let patch = deltas
        .until(|f| {
            f["type"] == "duet_state"
                && f["patch"]["ports"]
                    .as_array()
                    .is_some_and(|l| !l.is_empty())
        })
        .await;
    assert_eq!(patch["patch"]["ports"], json!(listed));
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["ports"]
                    .as_array()
                    .is_some_and(|l| !l.is_empty())
        })
        .await;
    assert_eq!(state["state"]["ports"], json!(listed));

    // The preview serves the files, byte for byte.
    let (status, bytes) = preview_get(&server, room, 8000, "/site/data.bin").await;
    assert_eq!(status, 200);
    assert!(
        bytes == file,
        "the file came back changed ({} bytes)",
        bytes.len()
    );
    let (status, bytes) = preview_get(&server, room, 8000, "/site/page.html?v=1").await;
    assert_eq!((status, bytes), (200, b"<p>hi</p>".to_vec()));
    let (status, _) = preview_get(&server, room, 8000, "/site/absent.txt").await;
    assert_eq!(status, 404, "the app's own answer");
    // The app's headers come back; the path goes as it was encoded.
    let res = with_token(
        &server,
        http().get(preview_url(&server, room, 8000, "/site/page.html")),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(res.headers()["content-type"], "text/html");
    let (status, bytes) = preview_get(&server, room, 8000, "/site/two%20words.txt").await;
    assert_eq!((status, bytes), (200, b"spaced".to_vec()));
    // Without its final slash: 308 to it, the query kept.
    let res = with_token(
        &server,
        http_no_redirect().get(preview_url(&server, room, 8000, "?a=1&b=two")),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 308);
    assert_eq!(
        location_path(&server, &res),
        format!("/api/rooms/{room}/ports/8000/?a=1&b=two")
    );

    // A second port: the list is sorted.
    http_server(&server, room, 7000).await;
    let ports: Vec<Value> = common::apps::ports(&server, room)
        .await
        .iter()
        .map(|p| p["port"].clone())
        .collect();
    assert_eq!(ports, vec![json!(7000), json!(8000)]);

    // When the process stops, its port goes, and the preview is a 502.
    let id = web["id"].as_str().unwrap();
    delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    wait_for("port 8000 to go", || async {
        let ports = common::apps::ports(&server, room).await;
        (!ports.iter().any(|p| p["port"] == 8000)).then_some(())
    })
    .await;
    deltas
        .until(|f| {
            f["type"] == "duet_state"
                && f["patch"]["ports"]
                    .as_array()
                    .is_some_and(|l| l.len() == 1 && l[0]["port"] == 7000)
        })
        .await;
    let (status, body) = server
        .get(&room_path(room, "/ports/8000/site/page.html"))
        .await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
}

#[tokio::test]
async fn nothing_listening_is_a_502_and_a_bad_port_a_400() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-bad";
    // Before the sandbox runs: these routes never start one.
    let (status, body) = server.get(&room_path(room, "/ports/8000/")).await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
    start(&server, room, json!({"cmd": "sleep 300"})).await;
    for port in [8001u16, 1, 65535] {
        let (status, body) = server
            .get(&room_path(room, &format!("/ports/{port}/x")))
            .await;
        assert_eq!((status, body), (502, nothing_listens(port)), "port {port}");
        let refused = tunnel_with(&server, room, &port.to_string(), &[]).await;
        assert_eq!(
            refused.err(),
            Some((502, nothing_listens(port))),
            "tunnel {port}"
        );
    }
    // A POST with a body, too.
    let req = with_token(
        &server,
        http()
            .post(preview_url(&server, room, 8001, "/form"))
            .body("x=1"),
    );
    assert_eq!(answer(req).await, (502, nothing_listens(8001)));
    for port in ["0", "65536", "abc", "-1", "80x", "99999999999"] {
        let (status, body) = server
            .get(&room_path(room, &format!("/ports/{port}/")))
            .await;
        assert_eq!(status, 400, "port {port}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        assert!(
            body["details"]["port"][0].is_string(),
            "port {port}: {body}"
        );
        let refused = tunnel_with(&server, room, port, &[]).await;
        let (status, body) = refused.expect_err("refused");
        assert_eq!(status, 400, "tunnel {port}: {body}");
        assert!(
            body["details"]["port"][0].is_string(),
            "tunnel {port}: {body}"
        );
    }
}

#[tokio::test]
async fn a_websocket_goes_through_the_preview() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-ws";
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8100).await;
    let url = format!(
        "ws://{}{}",
        server.addr,
        room_path(room, "/ports/8100/live/feed?x=1")
    );
    // A client's socket (a browser's goes to the preview's own origin).
    let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
        .await
        .expect("upgrades in time")
        .expect("the upgrade goes through the preview");
    let first = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first, Message::text("path:/live/feed?x=1"));
    let headers = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let headers: Value =
        serde_json::from_str(headers.to_text().unwrap().strip_prefix("headers:").unwrap()).unwrap();
    let seen = json!({ "headers": headers });
    assert_eq!(
        header_values(&seen, "host"),
        vec!["localhost:8100".to_string()]
    );
    assert_eq!(
        header_values(&seen, "x-forwarded-prefix"),
        vec![format!("/api/rooms/{room}/ports/8100")]
    );
    ws.send(Message::text("hello through the preview"))
        .await
        .unwrap();
    let back = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::text("hello through the preview"));
    let blob = pattern(200_000);
    ws.send(Message::binary(blob.clone())).await.unwrap();
    let back = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        back == Message::binary(blob),
        "the binary frame came back changed"
    );
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn the_tunnel_carries_a_raw_tcp_connection() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-tunnel";
    let file = pattern(2 * 1024 * 1024 + 17);
    put_file(&server, room, "big.bin", file.clone()).await;
    http_server(&server, room, 8000).await;
    let _ada = server.joined(room, "user=ada").await;

    // HTTP/1.0 by hand: the port closes the connection after the answer.
    let mut t = tunnel(&server, room, 8000).await;
    t.send(Message::binary(
        b"GET /big.bin HTTP/1.0\r\nHost: localhost\r\n\r\n".to_vec(),
    ))
    .await
    .unwrap();
    let (raw, code) = read_tunnel(&mut t).await;
    assert_eq!(
        code,
        Some(1000),
        "the port closed it: the socket closes 1000"
    );
    let (status, head, body) = split_response(&raw);
    assert_eq!(status, 200, "{head}");
    assert!(
        body == file,
        "the file came back changed ({} bytes)",
        body.len()
    );

    // Tunnels are not in presence.
    let mut late = server.ws(room, "user=bob").await;
    late.until_type("cf_agent_state").await;
    let presence = late.until_type("duet_presence").await;
    let mut names: Vec<&str> = presence["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["ada", "bob"], "{presence}");

    // Any protocol, in many small frames: no frame rate applies.
    let echo = python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let echo_id = echo["id"].as_str().unwrap().to_string();
    // When the client closes, the connection is closed.
    let mut t = tunnel(&server, room, 9000).await;
    t.send(Message::binary(b"one".to_vec())).await.unwrap();
    let back = tokio::time::timeout(WAIT, t.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::binary(b"one".to_vec()));
    t.close(None).await.unwrap();
    printed(&server, room, &echo_id, "closed").await;
    let mut t = tunnel(&server, room, 9000).await;
    let mut sent = Vec::new();
    for i in 0..600u32 {
        let chunk = format!("frame {i};").into_bytes();
        sent.extend_from_slice(&chunk);
        t.send(Message::binary(chunk)).await.unwrap();
    }
    let mut got = Vec::new();
    while got.len() < sent.len() {
        match tokio::time::timeout(WAIT, t.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(sent).unwrap()
    );
    // A text frame is refused: the socket closes with 1003.
    t.send(Message::text("not bytes")).await.unwrap();
    let code = tokio::time::timeout(WAIT, async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("the tunnel broke instead of closing: {e}"),
                None => return None,
            }
        }
    })
    .await
    .expect("closed in time");
    assert_eq!(code, Some(1003));
}

#[tokio::test]
async fn a_browser_opens_the_preview_at_its_own_origin_with_a_cookie_for_it_only() {
    if common::only_duet_serve("a preview's own origin on loopback (the worker's is exposePort's)")
    {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-cookie";
    put_file(&server, room, "index.html", b"<p>the page</p>".to_vec()).await;
    http_server(&server, room, 8000).await;
    http_server(&server, room, 8001).await;
    http_server(&server, "ports-cookie-other", 8000).await;
    let client = http_no_redirect();
    let base = preview_url(&server, room, 8000, "/");
    let port = server.addr.rsplit(':').next().unwrap().to_string();

    // The state's ports carry the origin's URL.
    let listed = common::apps::ports(&server, room).await;
    let url = format!("http://8000-{room}.localhost:{port}/");
    assert!(
        listed.iter().any(|p| p["url"] == url.as_str()),
        "{listed:?}"
    );

    // No credential, or a wrong token: 401.
    for url in [base.clone(), format!("{base}?token=wrong")] {
        let res = client.get(&url).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 401, "{url}");
        assert_eq!(
            res.json::<Value>().await.unwrap(),
            json!({"error":"unauthorized"})
        );
    }
    // The token in the query of Duet's route: 303 to the preview's own
    // origin, the token traded for a ticket there; no cookie of Duet's.
    let res = client
        .get(format!("{base}index.html?a=1&token={TOKEN}&b=2"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert!(res.headers().get("set-cookie").is_none());
    let to = res.headers()["location"].to_str().unwrap().to_string();
    let (at, ticket) = to.split_once("&duet_ticket=").expect("a ticket");
    assert_eq!(at, format!("{url}index.html?a=1&b=2"));
    assert!(!to.contains(TOKEN), "{to}");
    // The ticket opens this origin only: another port's or room's refuses it.
    for other in [
        format!("http://8001-{room}.localhost:{port}/?duet_ticket={ticket}"),
        format!("http://8000-ports-cookie-other.localhost:{port}/?duet_ticket={ticket}"),
    ] {
        let res = common::apps::client_for(&server, &other)
            .get(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{other}");
    }
    let origin = common::apps::client_for(&server, &to);
    let res = origin.get(&to).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/index.html?a=1&b=2");
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    let mut parts = cookie.split(';').map(str::trim);
    let pair = parts.next().unwrap().to_string();
    let attrs: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
    for attr in ["httponly", "samesite=lax", "path=/"] {
        assert!(attrs.contains(&attr.to_string()), "{cookie}");
    }
    assert!(
        !attrs.iter().any(|a| a.starts_with("domain")),
        "host-only: {cookie}"
    );
    let value = pair.strip_prefix("duet_preview=").unwrap();
    assert!(
        !value.is_empty() && !value.contains(TOKEN),
        "not the token: {cookie}"
    );

    // The cookie opens this origin: all its paths are the app's…
    let page = format!("{url}index.html");
    let res = origin
        .get(&page)
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "<p>the page</p>");
    // …even the API's paths, which are the app's here, never Duet's.
    let res = origin
        .get(format!("{url}api/rooms/{room}/messages"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404, "http.server's 404, not the API");
    assert!(!res.text().await.unwrap().contains("messages\""));
    // …and nothing else: not another port, not another room, not the API.
    for other in [
        format!("http://8001-{room}.localhost:{port}/"),
        format!("http://8000-ports-cookie-other.localhost:{port}/"),
        server.url(&room_path(room, "/messages")),
        server.url(&room_path(room, "/ports/8000/")),
    ] {
        let res = common::apps::client_for(&server, &other)
            .get(&other)
            .header("cookie", &pair)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{other}");
    }
    // A page of another origin cannot use it (nor the bearer token).
    let res = origin
        .get(&page)
        .header("cookie", &pair)
        .header("origin", format!("http://8001-{room}.localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
    // The token in the origin's own URL is traded the same way.
    let res = origin
        .get(format!("{url}?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/");
    assert!(
        res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with(&pair)
    );
    // The bearer token works at the origin too.
    let res = origin.get(&page).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_real_browser_opens_the_preview_with_the_token() {
    if common::only_duet_serve("a preview's own origin on loopback (the worker's is exposePort's)")
    {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-browser";
    put_file(
        &server,
        room,
        "index.html",
        b"<html><body><p id=page>preview-page</p><script src=\"app.js\"></script></body></html>"
            .to_vec(),
    )
    .await;
    // A script of the page, fetched with the cookie alone.
    put_file(
        &server,
        room,
        "app.js",
        b"document.getElementById('page').textContent = 'script-ran-' + (6 * 7);".to_vec(),
    )
    .await;
    http_server(&server, room, 8000).await;
    let profile = tempfile::tempdir().unwrap();
    let url = preview_url(&server, room, 8000, &format!("/?token={TOKEN}"));
    let run = tokio::process::Command::new("chromium-headless-shell")
        .args(["--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT * 3, run)
        .await
        .expect("the browser is done in time")
        .expect("chromium-headless-shell runs (scripts/test installs it)");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("script-ran-42"),
        "the page and its script loaded through the cookie; the DOM:\n{dom}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_host_s_loopback_is_out_of_reach() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-isolation";
    // A service on the host's loopback, counting who reaches it.
    let reached = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = reached.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            use tokio::io::AsyncWriteExt;
            let _ = conn
                .write_all(b"HTTP/1.0 200 OK\r\n\r\nhost-secret\n")
                .await;
        }
    });
    let v6 = tokio::net::TcpListener::bind("[::1]:0").await.ok();
    start(&server, room, json!({"cmd": "sleep 300"})).await;

    // Not through the preview, not through the tunnel.
    let (status, body) = server
        .get(&room_path(room, &format!("/ports/{port}/")))
        .await;
    assert_eq!((status, body), (502, nothing_listens(port)));
    let refused = tunnel_with(&server, room, &port.to_string(), &[]).await;
    assert_eq!(refused.err(), Some((502, nothing_listens(port))));
    if let Some(v6) = &v6 {
        let p6 = v6.local_addr().unwrap().port();
        let (status, body) = server.get(&room_path(room, &format!("/ports/{p6}/"))).await;
        assert_eq!((status, body), (502, nothing_listens(p6)), "[::1]:{p6}");
    }
    // Not from inside the sandbox either.
    let probe = format!(
        "curl -s -m 5 http://127.0.0.1:{port}/; echo \"curl:$?\"; \
         curl -s -m 5 http://localhost:{port}/; echo \"curl:$?\"; \
         python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' 2>/dev/null; echo \"python:$?\""
    );
    let out = exec(&server, room, &probe).await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("host-secret"), "{out}");
    assert!(
        !stdout.contains("curl:0") && !stdout.contains("python:0"),
        "{out}"
    );
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the host's service was reached"
    );
}

#[tokio::test]
async fn the_app_never_sees_a_credential() {
    let (server, _dir) = protected().await;
    let room = "ports-creds";
    python_app(&server, room, "echo_request.py", ECHO_REQUEST_PY, 8300).await;
    let client = http_no_redirect();
    let prefix = format!("/api/rooms/{room}/ports/8300");

    // With the bearer token and a cookie of the app's own.
    let res = client
        .get(preview_url(&server, room, 8300, "/some/path?keep=1"))
        .bearer_auth(TOKEN)
        .header("cookie", "theme=dark")
        .send()
        .await
        .unwrap();
    let seen = echoed(res).await;
    assert_eq!(seen["method"], "GET");
    assert_eq!(seen["path"], "/some/path?keep=1");
    assert_eq!(header_values(&seen, "authorization"), Vec::<String>::new());
    assert_eq!(
        header_values(&seen, "host"),
        vec!["localhost:8300".to_string()]
    );
    assert_eq!(
        header_values(&seen, "x-forwarded-prefix"),
        vec![prefix.clone()]
    );
    assert_eq!(
        header_values(&seen, "x-forwarded-host"),
        vec![server.addr.clone()]
    );
    assert_eq!(
        header_values(&seen, "cookie"),
        vec!["theme=dark".to_string()]
    );
    assert!(!seen.to_string().contains(TOKEN), "{seen}");

    // A body goes through both ways, with the bearer token left behind.
    let res = client
        .post(preview_url(&server, room, 8300, "/form"))
        .bearer_auth(TOKEN)
        .body("name=ada&x=1")
        .send()
        .await
        .unwrap();
    let seen = echoed(res).await;
    assert_eq!(
        (seen["method"].clone(), seen["body"].clone()),
        (json!("POST"), json!("name=ada&x=1"))
    );
    assert!(!seen.to_string().contains(TOKEN), "{seen}");
    // At the preview's own origin, through the cookie flow: neither the
    // token nor the cookie arrives, and there is no prefix.
    if common::only_duet_serve("a preview's own origin on loopback") {
        return;
    }
    let own = common::apps::own_origin(&server, room, 8300).await;
    let res = own
        .client
        .get(own.url("/start?x=1"))
        .header("cookie", format!("theme=dark; {}; lang=en", own.cookie))
        .send()
        .await
        .unwrap();
    let seen = echoed(res).await;
    assert_eq!(seen["path"], "/start?x=1");
    let cookies = header_values(&seen, "cookie").join("; ");
    assert!(
        cookies.contains("theme=dark") && cookies.contains("lang=en"),
        "{seen}"
    );
    assert!(!cookies.contains("duet_preview"), "{seen}");
    let value = own.cookie.strip_prefix("duet_preview=").unwrap();
    assert!(!seen.to_string().contains(value), "{seen}");
    assert!(!seen.to_string().contains(TOKEN), "{seen}");
    assert_eq!(
        header_values(&seen, "x-forwarded-prefix"),
        Vec::<String>::new()
    );
    assert_eq!(
        header_values(&seen, "x-forwarded-host"),
        vec![own.host.clone()]
    );
}

#[tokio::test]
async fn browsers_may_open_the_preview_but_not_the_api() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-origin";
    put_file(&server, room, "index.html", b"<p>app</p>".to_vec()).await;
    http_server(&server, room, 8000).await;
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let own = format!("http://{}", server.addr);
    for origin in ["http://evil.example", own.as_str()] {
        // Duet's preview route serves no page to a browser: the app's
        // pages live at the preview's own origin.
        let res = http()
            .get(preview_url(&server, room, 8000, "/index.html"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403, "{origin}");
        // Duet's API, from that page: refused like any browser.
        let (status, body) = answer(
            http()
                .post(server.url(&room_path(room, "/sandbox/exec")))
                .header("origin", origin)
                .header("content-type", "text/plain")
                .body(r#"{"cmd":"echo pwned > pwned"}"#),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert_eq!(body["error"], "forbidden");
        assert!(body["details"]["origin"][0].is_string(), "{body}");
        let (status, _) = answer(
            http()
                .get(server.url(&room_path(room, "/processes")))
                .header("origin", origin),
        )
        .await;
        assert_eq!(status, 403, "{origin}");
        // The tunnel is not a preview: a page cannot open it.
        let refused = tunnel_with(&server, room, "9000", &[("origin", origin)]).await;
        let (status, body) = refused.expect_err("the tunnel refuses a browser");
        assert_eq!(status, 403, "{origin}: {body}");
    }
    let listed = exec(&server, room, "ls").await;
    assert!(!listed["stdout"].as_str().unwrap().contains("pwned"));
    if common::only_duet_serve("a preview's own origin on loopback") {
        return;
    }
    // The preview's own origin answers its own pages, and no other's.
    let preview = common::apps::own_origin(&server, room, 8000).await;
    let res = preview
        .client
        .get(preview.url("/index.html"))
        .header("origin", &preview.base)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "<p>app</p>");
    for origin in ["http://evil.example", own.as_str(), "null"] {
        let res = preview
            .client
            .post(preview.url("/index.html"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403, "{origin}");
    }
}

#[tokio::test]
async fn tunnel_bytes_over_the_rate_are_never_dropped() {
    if common::only_duet_serve("--tunnel-bytes-per-sec, a duet serve flag") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--tunnel-bytes-per-sec", "65536"]).await;
    let room = "ports-rate";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut t = tunnel(&server, room, 9000).await;
    // Four times the rate, in one go: a burst of one second's worth, then
    // the rest as the bucket refills.
    let sent = pattern(256 * 1024);
    let started = std::time::Instant::now();
    let (mut tx, mut rx) = t.split();
    let payload = sent.clone();
    let writer = tokio::spawn(async move {
        for chunk in payload.chunks(16 * 1024) {
            tx.send(Message::binary(chunk.to_vec())).await.unwrap();
        }
        tx
    });
    let mut got = Vec::new();
    while got.len() < sent.len() {
        match tokio::time::timeout(WAIT, rx.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert!(got == sent, "every byte came back, in order");
    // How much slower it went is a figure, not a test (no timed assertions).
    eprintln!("256 KiB at 64 KiB/s took {:?}", started.elapsed());
    let tx = writer.await.unwrap();
    t = tx.reunite(rx).unwrap();
    t.close(None).await.unwrap();
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

#[tokio::test]
async fn a_browser_s_websocket_opens_with_the_cookie_and_carries_no_credential() {
    if common::only_duet_serve("a preview's own origin on loopback") {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-ws-cookie";
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8100).await;
    let own = common::apps::own_origin(&server, room, 8100).await;
    // Without a credential: 401.
    let refused = origin_ws(&server, &own, "/socket", &[]).await;
    assert_eq!(refused.err(), Some(401));
    // With the cookie, as a browser on the preview's page sends it.
    let cookie = ("cookie", format!("theme=dark; {}", own.cookie));
    let mut ws = origin_ws(
        &server,
        &own,
        "/socket",
        &[cookie.clone(), ("origin", own.base.clone())],
    )
    .await
    .expect("the cookie opens the preview's socket");
    let seen = ws_headers(&mut ws).await;
    assert_eq!(header_values(&seen, "authorization"), Vec::<String>::new());
    assert_eq!(
        header_values(&seen, "cookie"),
        vec!["theme=dark".to_string()],
        "{seen}"
    );
    let value = own.cookie.strip_prefix("duet_preview=").unwrap();
    assert!(
        !seen.to_string().contains(value) && !seen.to_string().contains(TOKEN),
        "{seen}"
    );
    // A page of another origin (Duet's, another preview's) cannot open it.
    for origin in [server.url(""), "http://8000-x.localhost".to_string()] {
        let origin = origin.trim_end_matches('/').to_string();
        let refused = origin_ws(
            &server,
            &own,
            "/socket",
            &[cookie.clone(), ("origin", origin.clone())],
        )
        .await;
        assert_eq!(refused.err(), Some(403), "{origin}");
    }
    // With the token in the query: a socket cannot follow a redirect, so
    // it goes on with the token taken off.
    let mut ws = origin_ws(&server, &own, &format!("/socket?x=1&token={TOKEN}"), &[])
        .await
        .expect("the token opens the preview's socket");
    let path = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(path, Message::text("path:/socket?x=1"));
    // With the bearer token: no Authorization reaches the app either.
    let bearer = ("authorization", format!("Bearer {TOKEN}"));
    let mut ws = origin_ws(&server, &own, "/socket", &[bearer])
        .await
        .expect("the token opens the preview's socket");
    let seen = ws_headers(&mut ws).await;
    assert_eq!(
        header_values(&seen, "authorization"),
        Vec::<String>::new(),
        "{seen}"
    );
    assert!(!seen.to_string().contains(TOKEN), "{seen}");
}

#[tokio::test]
async fn bodies_stream_through_the_preview_both_ways() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-stream";
    python_app(&server, room, "echo_request.py", ECHO_REQUEST_PY, 8300).await;
    // An answer that comes in parts arrives in parts.
    let mut res = http()
        .get(preview_url(&server, room, 8300, "/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let first = tokio::time::timeout(WAIT, res.chunk())
        .await
        .expect("the first part before the rest was written")
        .unwrap()
        .expect("a first part");
    assert_eq!(&first[..], b"first\n");
    let (status, _) = answer(http().get(preview_url(&server, room, 8300, "/release"))).await;
    assert_eq!(status, 200);
    let rest = tokio::time::timeout(WAIT, res.bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&rest[..], b"second\n");
    // A request body larger than the API's 1 MiB goes to the app whole.
    let upload = pattern(5 * 1024 * 1024 + 3);
    let res = http()
        .post(preview_url(&server, room, 8300, "/save"))
        .body(upload.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let saved = http()
        .get(server.url(&room_path(room, "/files/saved.bin")))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(saved[..] == upload[..], "the app got {} bytes", saved.len());
}

#[tokio::test]
async fn listening_means_tcp_on_any_address() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-addresses";
    put_file(&server, room, "index.html", b"<p>v6</p>".to_vec()).await;
    // A UDP socket is not a listening port.
    let udp = start(
        &server,
        room,
        json!({"cmd": "python3 -c 'import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((\"0.0.0.0\", 5353)); print(\"bound\", flush=True); time.sleep(300)'"}),
    )
    .await;
    printed(&server, room, udp["id"].as_str().unwrap(), "bound").await;
    // IPv6 loopback only, where the sandbox has it.
    let has_v6 = exec(
        &server,
        room,
        "python3 -c 'import socket; socket.socket(socket.AF_INET6).bind((\"::1\", 0))' && echo yes",
    )
    .await;
    if has_v6["stdout"] == "yes\n" {
        start(
            &server,
            room,
            json!({"cmd": "python3 -m http.server 8600 --bind ::1"}),
        )
        .await;
        common::apps::listening(&server, room, 8600).await;
        let (status, bytes) = preview_get(&server, room, 8600, "/index.html").await;
        assert_eq!((status, bytes), (200, b"<p>v6</p>".to_vec()), "through ::1");
        let mut t = tunnel(&server, room, 8600).await;
        t.send(Message::binary(
            b"GET /index.html HTTP/1.0\r\n\r\n".to_vec(),
        ))
        .await
        .unwrap();
        let (raw, _) = read_tunnel(&mut t).await;
        assert_eq!(split_response(&raw).2, b"<p>v6</p>".to_vec());
    } else {
        eprintln!("the sandbox has no IPv6 loopback: the ::1 part is left out");
    }
    // 0.0.0.0 too; and after it was listed, still no UDP port.
    start(
        &server,
        room,
        json!({"cmd": "python3 -m http.server 8601 --bind 0.0.0.0"}),
    )
    .await;
    common::apps::listening(&server, room, 8601).await;
    let ports = common::apps::ports(&server, room).await;
    assert!(!ports.iter().any(|p| p["port"] == 5353), "{ports:?}");
}

#[tokio::test]
async fn the_preview_refuses_a_rebound_host_name() {
    // The worker has no Host check (Cloudflare routes by host).
    if common::only_duet_serve("the loopback Host check (421), which Cloudflare does not have") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let room = "ports-rebind";
    http_server(&server, room, 8000).await;
    let (status, body) = answer(
        http()
            .get(preview_url(&server, room, 8000, "/"))
            .header("host", "rebind.evil.example"),
    )
    .await;
    assert_eq!(status, 421, "{body}");
    assert_eq!(body["error"], "misdirected request");
    let refused = tunnel_with(&server, room, "8000", &[("host", "rebind.evil.example")]).await;
    assert_eq!(refused.expect_err("refused").0, 421);
    let (status, _) = preview_get(&server, room, 8000, "/").await;
    assert_eq!(status, 200, "with a loopback Host it answers");
}

#[tokio::test]
async fn a_credential_cannot_be_slipped_past_the_stripping() {
    // Against feb0c17 this found a bug (fixed on main in df8cb74): the
    // query was cleaned of `token=` as written while the token check
    // decoded the names, so `?%74oken=T` alone was let in (200) and
    // reached the app with the token in its query.
    let (server, _dir) = protected().await;
    let room = "ports-sneaky";
    python_app(&server, room, "echo_request.py", ECHO_REQUEST_PY, 8300).await;
    let client = http_no_redirect();
    let prefix = format!("/api/rooms/{room}/ports/8300");
    let mut problems = Vec::new();
    // The token twice or with its name encoded, beside the bearer token.
    for path in [
        format!("/q?token={TOKEN}&keep=1&token={TOKEN}"),
        format!("/q?%74oken={TOKEN}&keep=1"),
        format!("/q?keep=1&tok%65n={TOKEN}"),
    ] {
        let res = client
            .get(preview_url(&server, room, 8300, &path))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let res = if res.status().as_u16() == 303 {
            let to = location_path(&server, &res);
            if to.contains(TOKEN) {
                problems.push(format!("{path} redirects to {to}"));
            }
            client
                .get(server.url(&to))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
        } else {
            res
        };
        let seen = echoed(res).await;
        if seen.to_string().contains(TOKEN) {
            problems.push(format!("{path}: the app saw the token: {seen}"));
        }
    }
    // An encoded name alone: either it is the token (then 303 without
    // it, to the preview's own origin, or 403 where there is none) or it
    // is no credential (401); never the app.
    for path in [format!("/q?%74oken={TOKEN}"), format!("/q?tok%65n={TOKEN}")] {
        let res = client
            .get(preview_url(&server, room, 8300, &path))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        if status == 303 {
            let to = location_path(&server, &res);
            if to.contains(TOKEN) {
                problems.push(format!("{path} (no bearer) redirects to {to}"));
            }
        } else if status != 401 && status != 403 {
            let text = res.text().await.unwrap();
            problems.push(format!("{path} (no bearer) answered {status}: {text}"));
        }
    }
    // Forwarding headers of the client's own.
    let res = client
        .get(preview_url(&server, room, 8300, "/forwarded"))
        .bearer_auth(TOKEN)
        .header("x-forwarded-prefix", "/not/the/prefix")
        .header("x-forwarded-host", "evil.example")
        .send()
        .await
        .unwrap();
    let seen = echoed(res).await;
    if header_values(&seen, "x-forwarded-prefix") != vec![prefix.clone()]
        || header_values(&seen, "x-forwarded-host") != vec![server.addr.clone()]
    {
        problems.push(format!(
            "the client's forwarding headers reached the app: {seen}"
        ));
    }
    // At the preview's own origin: the cookie in a second Cookie header.
    if !common::only_duet_serve("a preview's own origin on loopback") {
        let own = common::apps::own_origin(&server, room, 8300).await;
        let res = own
            .client
            .get(own.url("/two-cookies"))
            .header("cookie", "theme=dark")
            .header("cookie", &own.cookie)
            .header("x-forwarded-prefix", "/not/the/prefix")
            .header("x-forwarded-host", "evil.example")
            .send()
            .await
            .unwrap();
        let seen = echoed(res).await;
        let value = own.cookie.strip_prefix("duet_preview=").unwrap();
        if seen.to_string().contains(value) || seen.to_string().contains("duet_preview") {
            problems.push(format!("a second Cookie header reached the app: {seen}"));
        }
        if !header_values(&seen, "x-forwarded-prefix").is_empty()
            || header_values(&seen, "x-forwarded-host") != vec![own.host.clone()]
        {
            problems.push(format!(
                "the client's forwarding headers reached the app: {seen}"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[tokio::test]
async fn any_listener_of_the_sandbox_is_a_port_not_only_a_process_s() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-any-listener";
    put_file(
        &server,
        room,
        "index.html",
        b"<p>from the shell</p>".to_vec(),
    )
    .await;
    // Started in the command shell, in the background (`!cmd &`).
    exec(
        &server,
        room,
        "nohup python3 -m http.server 8700 >/dev/null 2>&1 &",
    )
    .await;
    common::apps::listening(&server, room, 8700).await;
    let (status, bytes) = preview_get(&server, room, 8700, "/index.html").await;
    assert_eq!((status, bytes), (200, b"<p>from the shell</p>".to_vec()));
}

#[tokio::test]
async fn a_cleanup_closes_the_tunnels_into_the_sandbox() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-cleanup";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut t = tunnel(&server, room, 9000).await;
    t.send(Message::binary(b"ping".to_vec())).await.unwrap();
    let back = tokio::time::timeout(WAIT, t.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::binary(b"ping".to_vec()));
    let (status, body) = server.post(&room_path(room, "/cleanup"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    // The port's end went with the sandbox: the socket ends.
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the tunnel stayed open after the cleanup");
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn the_port_routes_never_start_a_sandbox() {
    // What runs below duet serve is a local fact (its process tree).
    if common::only_duet_serve("duet serve's process tree") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let room = "ports-no-start";
    let (status, body) = server.get(&room_path(room, "/ports/8000/")).await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
    let refused = tunnel_with(&server, room, "8000", &[]).await;
    assert_eq!(refused.err(), Some((502, nothing_listens(8000))));
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
    assert_eq!(
        common::procs::descendants(server.pid()),
        Vec::<u32>::new(),
        "no sandbox runs"
    );
    // A command starts one (so the check above could see one).
    exec(&server, room, "true").await;
    assert!(!common::procs::descendants(server.pid()).is_empty());
}

/// An HTTP/1.1 app that keeps its connections open and, as many apps do,
/// reads no body of a GET: each request it parses is a line of its stdout
/// (`METHOD PATH`), answered with an empty 200.
const KEEP_ALIVE_PY: &str = r#"
import http.server, sys

class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        print(self.command, self.path, flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_POST = answer

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
"#;

/// A viewer may only read a preview (GET and HEAD): a GET whose body holds
/// a second request must not reach the app as a second request. The
/// proxy frames what it forwards: the viewer's body is dropped, and the
/// app's connection carries this one request only.
#[tokio::test]
async fn a_viewer_s_get_cannot_smuggle_a_second_request_into_the_app() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, _dir) = common::access::with_token(&[]).await;
    let room = "ports-smuggle";
    let app = python_app(&server, room, "app.py", KEEP_ALIVE_PY, 8000).await;
    let id = app["id"].as_str().unwrap().to_string();
    let (viewer, _) = common::access::guest(&server, room, "viewer", None).await;
    let smuggled = "POST /smuggled HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n";
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        room_path(room, "/ports/8000/first"),
        server.addr,
        viewer.token,
        smuggled.len()
    );
    let mut tcp = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    tcp.write_all(format!("{head}{smuggled}").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut raw))
        .await
        .expect("the answer comes in time")
        .unwrap();
    let (status, _, _) = split_response(&raw);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    // A later request, logged after the first: once it is there, a
    // smuggled one would have been logged too.
    let (status, _) = preview_get(&server, room, 8000, "/after").await;
    assert_eq!(status, 200);
    let log = printed(&server, room, &id, "GET /after").await;
    assert!(log.contains("GET /first"), "{log}");
    assert!(
        !log.contains("smuggled"),
        "the app ran a smuggled request:\n{log}"
    );

    // Conflicting lengths (a writer's): the chunked body wins (RFC 9112),
    // and what it holds is a body, never a second request to the app.
    let inner = "GET /smuggled-again HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let conflict = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{inner}\r\n0\r\n\r\n",
        room_path(room, "/ports/8000/conflict"),
        server.addr,
        server.token.as_deref().unwrap_or_default(),
        inner.len(),
    );
    let mut tcp = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    tcp.write_all(conflict.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut raw))
        .await
        .expect("the answer comes in time")
        .unwrap();
    let (status, _, _) = split_response(&raw);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    let (status, _) = preview_get(&server, room, 8000, "/last").await;
    assert_eq!(status, 200);
    let log = printed(&server, room, &id, "GET /last").await;
    assert!(log.contains("POST /conflict"), "{log}");
    assert!(!log.contains("smuggled-again"), "{log}");
}
