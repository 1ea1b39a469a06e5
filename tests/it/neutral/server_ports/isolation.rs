//! Isolation: the host's loopback is out of reach, the app never sees a
//! credential (even slipped in), and a viewer's body never reaches the app
//! as a second request.

use super::*;

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
