//! Background processes and the programs they run in a room's sandbox,
//! for the process and port tests and the ports bench (docs/protocol.md
//! "Background processes and ports"): starting one, waiting for it to end
//! or to listen, the preview's HTTP client, a tunnel, and two small apps
//! written with Python's standard library only.

use super::{Server, WAIT, answer, http};
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A room's path: `/api/rooms/{room}{rest}`.
pub fn room_path(room: &str, rest: &str) -> String {
    format!("/api/rooms/{room}{rest}")
}

/// Polls `check` until it answers `Some`, for up to `WAIT` (the machine
/// is shared: conditions, never durations).
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `DELETE path`: status and JSON answer.
pub async fn delete(server: &Server, path: &str) -> (u16, Value) {
    answer(with_token(server, http().delete(server.url(path)))).await
}

/// Adds the server's token, if it has one, as a bearer.
pub fn with_token(server: &Server, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match &server.token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// An HTTP client that does not follow redirects (the preview's 303/308
/// are what the tests read).
pub fn http_no_redirect() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(WAIT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Writes `bytes` to `/workspace/{path}` of the room.
pub async fn put_file(server: &Server, room: &str, path: &str, bytes: Vec<u8>) {
    let url = server.url(&room_path(room, &format!("/files/{path}")));
    let (status, body) = answer(with_token(server, http().put(url).body(bytes))).await;
    assert_eq!(status, 200, "PUT {path}: {body}");
}

/// Runs `cmd` in the room's command shell; answers the `ExecResult`.
pub async fn exec(server: &Server, room: &str, cmd: &str) -> Value {
    exec_with(server, room, json!({ "cmd": cmd })).await
}

/// `POST …/sandbox/exec` with `body` (`{cmd, userId?, timeoutMs?}`), which
/// must answer 200; answers the `ExecResult`.
pub async fn exec_with(server: &Server, room: &str, body: Value) -> Value {
    let (status, answer) = server.post(&room_path(room, "/sandbox/exec"), body).await;
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

/// Runs `cmd` in the room's command shell; answers what it printed.
pub async fn exec_stdout(server: &Server, room: &str, cmd: &str) -> String {
    exec(server, room, cmd).await["stdout"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The room's stored messages, oldest first (`GET …/messages`).
pub async fn messages(server: &Server, room: &str) -> Vec<Value> {
    let (status, page) = server.get(&room_path(room, "/messages")).await;
    assert_eq!(status, 200, "{page}");
    page["messages"].as_array().unwrap().clone()
}

/// Starts a background process with `body` (`{cmd, name?, userId?}`);
/// answers its `Process`.
pub async fn start(server: &Server, room: &str, body: Value) -> Value {
    let (status, answer) = server.post(&room_path(room, "/processes"), body).await;
    assert_eq!(status, 200, "{answer}");
    answer["process"].clone()
}

/// `GET …/processes/{id}`: the `Process`.
pub async fn process(server: &Server, room: &str, id: &str) -> Value {
    let (status, body) = server
        .get(&room_path(room, &format!("/processes/{id}")))
        .await;
    assert_eq!(status, 200, "{body}");
    body["process"].clone()
}

/// `GET …/processes/{id}/logs`: `{stdout, stderr}`.
pub async fn logs(server: &Server, room: &str, id: &str) -> Value {
    let (status, body) = server
        .get(&room_path(room, &format!("/processes/{id}/logs")))
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Waits until the process is no longer `running`; answers it.
pub async fn ended(server: &Server, room: &str, id: &str) -> Value {
    wait_for(&format!("process {id} to end"), || async {
        let p = process(server, room, id).await;
        (p["status"] != "running").then_some(p)
    })
    .await
}

/// Waits until the process's stdout holds `what`; answers the stdout.
pub async fn printed(server: &Server, room: &str, id: &str, what: &str) -> String {
    wait_for(&format!("{what:?} in the log of {id}"), || async {
        let out = logs(server, room, id).await["stdout"]
            .as_str()
            .unwrap()
            .to_string();
        out.contains(what).then_some(out)
    })
    .await
}

/// `GET …/ports`: the list.
pub async fn ports(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/ports")).await;
    assert_eq!(status, 200, "{body}");
    body["ports"].as_array().expect("ports is a list").clone()
}

/// Waits until the room lists `port` as listening.
pub async fn listening(server: &Server, room: &str, port: u16) {
    wait_for(&format!("port {port} to be listed"), || async {
        ports(server, room)
            .await
            .iter()
            .any(|p| p["port"] == port)
            .then_some(())
    })
    .await
}

/// Starts `python3 -m http.server PORT` (serving /workspace) and waits
/// until its port is listed; answers the process.
pub async fn http_server(server: &Server, room: &str, port: u16) -> Value {
    let process = start(
        server,
        room,
        json!({ "cmd": format!("python3 -m http.server {port}") }),
    )
    .await;
    listening(server, room, port).await;
    process
}

/// Uploads `source` as `/workspace/{file}` and runs `python3 {file} PORT`
/// as a process; waits until it listens.
pub async fn python_app(server: &Server, room: &str, file: &str, source: &str, port: u16) -> Value {
    put_file(server, room, file, source.as_bytes().to_vec()).await;
    let process = start(
        server,
        room,
        json!({ "cmd": format!("python3 {file} {port}") }),
    )
    .await;
    listening(server, room, port).await;
    process
}

/// The preview's URL of `path` (which starts after `/ports/{port}`).
pub fn preview_url(server: &Server, room: &str, port: u16, path: &str) -> String {
    server.url(&room_path(room, &format!("/ports/{port}{path}")))
}

/// Fetches `path` of the preview with the server's token: status and bytes.
pub async fn preview_get(server: &Server, room: &str, port: u16, path: &str) -> (u16, Vec<u8>) {
    let req = with_token(server, http().get(preview_url(server, room, port, path)));
    let res = req.send().await.expect("the server answers");
    let status = res.status().as_u16();
    (status, res.bytes().await.unwrap().to_vec())
}

pub type Tunnel = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens `GET …/tunnel/{port}` with the server's token and `headers`;
/// answers the socket, or the status and body of a refused upgrade.
pub async fn tunnel_with(
    server: &Server,
    room: &str,
    port: &str,
    headers: &[(&'static str, &str)],
) -> Result<Tunnel, (u16, Value)> {
    let token = server
        .token
        .as_ref()
        .map(|t| format!("?token={t}"))
        .unwrap_or_default();
    let url = format!(
        "ws://{}{}{token}",
        server.addr,
        room_path(room, &format!("/tunnel/{port}"))
    );
    let mut req = url.as_str().into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut().insert(*k, v.parse().unwrap());
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("the upgrade is answered in time")
    {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            let status = res.status().as_u16();
            let body = res.body().clone().unwrap_or_default();
            let mut text = String::from_utf8_lossy(&body).to_string();
            if text.is_empty() {
                // tungstenite keeps only the body bytes that came with the
                // head: the same refused upgrade, read by an HTTP client.
                text = refused_body(&url, headers).await;
            }
            Err((
                status,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            ))
        }
        Err(e) => panic!("unexpected tunnel error {e}"),
    }
}

/// The body of a refused WebSocket upgrade of `url` (`ws://`), in whole.
async fn refused_body(url: &str, headers: &[(&'static str, &str)]) -> String {
    let mut req = http()
        .get(url.replacen("ws://", "http://", 1))
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match req.send().await {
        Ok(res) => res.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// A tunnel to `port` (it must open).
pub async fn tunnel(server: &Server, room: &str, port: u16) -> Tunnel {
    match tunnel_with(server, room, &port.to_string(), &[]).await {
        Ok(ws) => ws,
        Err((status, body)) => panic!("the tunnel to {port} opens, not {status} {body}"),
    }
}

/// A TCP echo server (any protocol: what `duet port` is for); prints
/// `closed` when a client closes its connection.
pub const TCP_ECHO_PY: &str = r#"
import socket, sys, threading

def echo(c):
    with c:
        while True:
            d = c.recv(65536)
            if not d:
                print("closed", flush=True)
                return
            c.sendall(d)

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
while True:
    c, _ = s.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()
"#;

/// A WebSocket echo server: answers the upgrade by hand (RFC 6455), sends
/// `path:{request path}` and `headers:{JSON [[name, value]…], names in
/// lower case}` first, then echoes every text and binary frame.
pub const WS_ECHO_PY: &str = r#"
import base64, hashlib, json, socket, struct, sys, threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

def exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b

def send(c, op, data):
    n = len(data)
    if n < 126:
        head = struct.pack("!BB", 0x80 | op, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | op, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | op, 127, n)
    c.sendall(head + data)

def serve(c):
    req = b""
    while b"\r\n\r\n" not in req:
        d = c.recv(4096)
        if not d:
            return
        req += d
    lines = req.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    key = headers.get("sec-websocket-key")
    if not key or headers.get("upgrade", "").lower() != "websocket":
        body = b"not a websocket"
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        return
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n").encode())
    send(c, 1, ("path:" + path).encode())
    send(c, 1, ("headers:" + json.dumps([[k, v] for k, v in headers.items()])).encode())
    while True:
        b0, b1 = exact(c, 2)
        op, n = b0 & 0x0F, b1 & 0x7F
        if n == 126:
            n, = struct.unpack("!H", exact(c, 2))
        elif n == 127:
            n, = struct.unpack("!Q", exact(c, 8))
        mask = exact(c, 4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(exact(c, n)))
        if op == 8:
            send(c, 8, data[:2])
            return
        if op == 9:
            send(c, 10, data)
        elif op in (1, 2):
            send(c, op, data)

def guarded(c):
    try:
        serve(c)
    except (EOFError, OSError):
        pass
    finally:
        c.close()

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
while True:
    c, _ = s.accept()
    threading.Thread(target=guarded, args=(c,), daemon=True).start()
"#;

/// An HTTP app that answers every request with what it received, as JSON:
/// `{method, path, headers: [[name, value]…], body}` (chunked bodies too).
/// Two paths do more: `/save` also writes the body to `saved.bin`, and
/// `/stream` sends `first` at once and `second` only once `/release` was
/// asked (a proxy that buffers answers never shows `first`).
pub const ECHO_REQUEST_PY: &str = r#"
import http.server, json, sys, threading

released = threading.Event()

class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if n == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def answer(self):
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b"first\n")
            self.wfile.flush()
            released.wait(60)
            self.wfile.write(b"second\n")
            return
        if self.path == "/release":
            released.set()
        body = self.body()
        if self.path == "/save":
            with open("saved.bin", "wb") as f:
                f.write(body)
        out = json.dumps({
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": body.decode("utf-8", "replace"),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = answer

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"#;

/// Reads a tunnel until the port closes it: the bytes and the close code.
pub async fn read_tunnel(ws: &mut Tunnel) -> (Vec<u8>, Option<u16>) {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut bytes = Vec::new();
    let read = async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Binary(b)) => bytes.extend_from_slice(&b),
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(Message::Text(t)) => panic!("a tunnel carries binary frames, not {t:?}"),
                Ok(_) => {}
                Err(e) => panic!("the tunnel broke: {e}"),
            }
        }
        None
    };
    let code = tokio::time::timeout(WAIT * 3, read)
        .await
        .expect("the port closes the tunnel in time");
    (bytes, code)
}

/// Splits an HTTP/1.x response: status code, head, body.
pub fn split_response(raw: &[u8]) -> (u16, String, Vec<u8>) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (status, head, raw[end + 4..].to_vec())
}

/// Bytes that are not all alike (a file whose copy can be told apart).
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 2_463_534_242;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A preview at its own origin (`{port}-{room}.localhost` on a loopback
/// `duet serve`), as a browser reaches it: a client that does not follow
/// redirects and resolves that host to the server (a browser resolves
/// `*.localhost` itself), and the `duet_preview` cookie it got there.
pub struct OwnOrigin {
    /// `http://HOST:PORT`, without a final slash.
    pub base: String,
    /// `HOST:PORT`, as the `Host` header says it.
    pub host: String,
    pub client: reqwest::Client,
    /// `duet_preview=VALUE` (empty on a server without a token).
    pub cookie: String,
    /// The whole `Set-Cookie` that carried it.
    pub set_cookie: String,
}

impl OwnOrigin {
    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A GET of `path` with the cookie.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if !self.cookie.is_empty() {
            req = req.header("cookie", &self.cookie);
        }
        req.send().await.expect("the preview's origin answers")
    }
}

/// A client that sends requests for `url`'s host to the server.
pub fn client_for(server: &Server, url: &str) -> reqwest::Client {
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .expect("a URL with a host");
    let addr: std::net::SocketAddr = server.addr.parse().expect("the server's address");
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(WAIT)
        .redirect(reqwest::redirect::Policy::none())
        .resolve(&host, addr)
        .build()
        .unwrap()
}

/// Opens `room`'s `port` as a browser does: `?token=` (or nothing, on a
/// server without one) at Duet's preview route, whose 303 leads to the
/// preview's own origin with a ticket, which that origin trades for its
/// cookie (303 to the same URL without the ticket).
pub async fn own_origin(server: &Server, room: &str, port: u16) -> OwnOrigin {
    let query = server
        .token
        .as_ref()
        .map(|t| format!("?token={t}"))
        .unwrap_or_default();
    let res = http_no_redirect()
        .get(preview_url(server, room, port, &format!("/{query}")))
        .header("sec-fetch-mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status().as_u16(),
        303,
        "Duet's preview route sends a browser on"
    );
    let to = res.headers()["location"].to_str().unwrap().to_string();
    let parsed = reqwest::Url::parse(&to).expect("an absolute URL");
    let host = format!(
        "{}:{}",
        parsed.host_str().unwrap(),
        parsed.port_or_known_default().unwrap()
    );
    let base = format!("http://{host}");
    let client = client_for(server, &to);
    let (mut cookie, mut set_cookie) = (String::new(), String::new());
    if server.token.is_some() {
        assert!(to.contains("duet_ticket="), "{to}");
        let res = client.get(&to).send().await.unwrap();
        assert_eq!(
            res.status().as_u16(),
            303,
            "the ticket is traded for a cookie"
        );
        let again = res.headers()["location"].to_str().unwrap();
        assert_eq!(again, "/", "the same URL without the ticket");
        set_cookie = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .find(|c| c.starts_with("duet_preview="))
            .expect("the preview origin's cookie");
        cookie = set_cookie.split(';').next().unwrap().to_string();
    }
    OwnOrigin {
        base,
        host,
        client,
        cookie,
        set_cookie,
    }
}

/// Debian's headless Chromium on `url` with `args` (e.g. `--dump-dom`), in
/// a fresh profile: what it printed once done (scripts/test installs it).
pub async fn chromium(args: &[&str], url: &str) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let run = tokio::process::Command::new("chromium-headless-shell")
        .args(["--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT * 3, run)
        .await
        .expect("the browser is done in time")
        .expect("chromium-headless-shell runs (scripts/test installs it)")
}
