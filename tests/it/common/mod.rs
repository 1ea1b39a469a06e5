//! Helpers of the integration tests: a real backend on a loopback port
//! (`duet serve`, or with `DUET_TEST_BACKEND=worker` the local Cloudflare
//! stack of `worker/dev.sh`), an HTTP client and a WebSocket client.
#![allow(dead_code)]

pub mod access;
pub mod agent_support;
pub mod apps;
pub mod browser;
pub mod cli;
pub mod procs;
pub mod shell_state;
pub mod ticks;
pub mod tmux;
pub mod tui_fixtures;

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long a test waits for anything before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// How long the worker's local stack may take to answer /health.
const WORKER_START: Duration = Duration::from_secs(120);

/// The backend the tests start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `duet serve` (the default).
    Serve,
    /// `worker/dev.sh`: the Worker in workerd with the stand-in Sandbox.
    Worker,
}

/// `DUET_TEST_BACKEND`: `worker`, else `duet serve`.
pub fn backend() -> Backend {
    match std::env::var("DUET_TEST_BACKEND").as_deref() {
        Ok("worker") => Backend::Worker,
        Ok("" | "serve") | Err(_) => Backend::Serve,
        Ok(other) => panic!("DUET_TEST_BACKEND is `worker` or `serve`, not {other:?}"),
    }
}

/// The one place that marks a test as pinning something only `duet serve`
/// has (its sandbox limits, its data directory's files, its own flags):
/// against the worker it says so on stderr and the test returns early.
///
/// ```ignore
/// if common::only_duet_serve("cgroup memory limit") { return; }
/// ```
pub fn only_duet_serve(what: &str) -> bool {
    let skip = backend() == Backend::Worker;
    if skip {
        eprintln!("SKIPPED on the worker backend: pins {what}, which only duet serve has");
    }
    skip
}

/// A backend process; stopped when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    pub token: Option<String>,
}

impl Server {
    /// Starts the backend (see `backend()`) on a free loopback port with
    /// `data_dir` and the `duet serve` flags `extra`.
    pub async fn start(data_dir: &Path, extra: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", data_dir, extra).await
    }

    /// As `start`, listening on `listen` (a fixed port survives a restart).
    pub async fn start_at(listen: &str, data_dir: &Path, extra: &[&str]) -> Server {
        let stderr = if std::env::var_os("DUET_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        Server::spawn(listen, data_dir, extra, &[], stderr).await
    }

    /// As `start`, with `envs` set in the backend's environment only (the
    /// tests share one process: its own environment stays as it is).
    pub async fn start_with_env(data_dir: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Server {
        let stderr = if std::env::var_os("DUET_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        Server::spawn("127.0.0.1:0", data_dir, extra, envs, stderr).await
    }

    /// As `start_at`, its stderr appended to `log` (kept across a
    /// restart), so that a test can read what the server said (a panic).
    pub async fn start_logged(listen: &str, data_dir: &Path, extra: &[&str], log: &Path) -> Server {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("the server's log file opens");
        Server::spawn(listen, data_dir, extra, &[], Stdio::from(file)).await
    }

    /// As `start_logged`, with `envs` in the backend's environment (e.g.
    /// `DUET_LOG=debug`, to read everything it logs).
    pub async fn start_logged_with_env(
        data_dir: &Path,
        extra: &[&str],
        envs: &[(&str, &str)],
        log: &Path,
    ) -> Server {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("the server's log file opens");
        Server::spawn("127.0.0.1:0", data_dir, extra, envs, Stdio::from(file)).await
    }

    async fn spawn(
        listen: &str,
        data_dir: &Path,
        extra: &[&str],
        envs: &[(&str, &str)],
        stderr: Stdio,
    ) -> Server {
        let (mut cmd, wait) = match backend() {
            Backend::Serve => {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
                cmd.arg("serve");
                (cmd, WAIT)
            }
            Backend::Worker => {
                let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("worker/dev.sh");
                let mut cmd = Command::new("bash");
                cmd.arg(script).env("DUET_BIN", env!("CARGO_BIN_EXE_duet"));
                // wrangler and workerd take seconds to start on a busy machine.
                (cmd, WORKER_START)
            }
        };
        cmd.args(["--listen", listen, "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env_remove("DUET_TOKEN")
            .env_remove("DUET_AI_URL")
            .env_remove("DUET_AI_MODEL")
            .env_remove("DUET_AI_KEY")
            .env(
                "DUET_LOG",
                std::env::var("DUET_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; the server dies with the test.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("duet serve starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(wait, lines.next_line())
            .await
            .expect("the server says where it listens")
            .unwrap()
            .expect("a line on stdout");
        let addr = line
            .strip_prefix("duet: listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        let token = extra
            .iter()
            .position(|a| *a == "--token")
            .map(|i| extra[i + 1].to_string());
        Server { child, addr, token }
    }

    /// A server on a fresh temporary data directory.
    pub async fn fresh() -> (Server, tempfile::TempDir) {
        Server::fresh_with(&[]).await
    }

    /// A server on a fresh temporary data directory, with `extra` flags.
    pub async fn fresh_with(extra: &[&str]) -> (Server, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        (Server::start(dir.path(), extra).await, dir)
    }

    /// The backend's process id (worker/dev.sh's, for the worker).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the backend runs")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops the server with SIGTERM and waits until it exits.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server stops on SIGTERM")
            .unwrap();
    }

    /// Kills the server with SIGKILL (a crash) and waits until it is gone.
    pub async fn crash(mut self) {
        self.child.start_kill().unwrap();
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server dies on SIGKILL")
            .unwrap();
    }

    /// `POST path` with a JSON body: status and JSON answer.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.post_within(path, body, WAIT).await
    }

    /// `POST path` for a request that may take up to `within` (a command
    /// with a longer timeout than `WAIT`).
    pub async fn post_within(&self, path: &str, body: Value, within: Duration) -> (u16, Value) {
        let mut req = http().post(self.url(path)).json(&body).timeout(within);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        answer(req).await
    }

    /// `GET path`: status and JSON answer.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let mut req = http().get(self.url(path));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        answer(req).await
    }

    /// A WebSocket to `room` with `query` (e.g. `user=ada`), token added.
    pub async fn ws(&self, room: &str, query: &str) -> Ws {
        let mut query = query.to_string();
        if let Some(t) = &self.token {
            query = format!("{query}&token={t}");
        }
        Ws::connect(&format!("ws://{}/api/rooms/{room}/ws?{query}", self.addr)).await
    }

    /// A WebSocket that has read its four connect frames.
    pub async fn joined(&self, room: &str, query: &str) -> Ws {
        let mut ws = self.ws(room, query).await;
        for kind in [
            "cf_agent_identity",
            "cf_agent_state",
            "duet_presence",
            "duet_you",
        ] {
            assert_eq!(ws.next().await["type"], kind);
        }
        ws
    }
}

/// An HTTP client (reqwest built with rustls, no provider by default).
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(WAIT).build().unwrap()
}

/// Status and JSON body (`Value::String` of the text when not JSON).
pub async fn answer(req: reqwest::RequestBuilder) -> (u16, Value) {
    let res = req.send().await.expect("the server answers");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Makes the library's sandbox, which the sandbox tests drive in this
/// process, run the built `duet` as its helper (`duet sandbox-init`).
pub fn use_built_helper() {
    static SET: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once, before the first sandbox of these tests starts,
    // and to the one value every test wants.
    SET.call_once(|| unsafe { std::env::set_var("DUET_HELPER_EXE", env!("CARGO_BIN_EXE_duet")) });
}

/// Now, in ms since the epoch (as the protocol's `ts` and `expiresAt`).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Standard base64 of `bytes` (the terminal's frames carry bytes so).
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes of a base64 string of a frame.
pub fn unb64(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.as_str().unwrap())
        .unwrap()
}

/// Gives `folder` to someone else (uid 12345, gid 12346) when the tests
/// run as root; answers whose it is now (uid, gid): a room on it must
/// make its files theirs.
pub fn folder_of_someone_else(folder: &Path) -> (u32, u32) {
    if nix::unistd::geteuid().is_root() {
        let (uid, gid) = (12345, 12346);
        let owner = (
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
        );
        nix::unistd::chown(folder, owner.0, owner.1).unwrap();
        (uid, gid)
    } else {
        (
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    }
}

/// A temporary data directory kept by path (for restarts).
pub fn dir_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().to_path_buf()
}

/// A WebSocket client.
pub struct Ws {
    inner: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Ws {
    pub async fn connect(url: &str) -> Ws {
        let (inner, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("connects in time")
            .expect("the socket opens");
        Ws { inner }
    }

    /// As `connect`, with a receive buffer of 4 KiB: a client that stops
    /// reading is behind at once.
    pub async fn connect_small(url: &str, addr: &str) -> Ws {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
        let stream = MaybeTlsStream::Plain(stream);
        let (inner, _) = tokio::time::timeout(WAIT, tokio_tungstenite::client_async(url, stream))
            .await
            .expect("connects in time")
            .expect("the socket opens");
        Ws { inner }
    }

    /// The next text frame, as text.
    pub async fn next_text(&mut self) -> String {
        loop {
            let msg = tokio::time::timeout(WAIT, self.inner.next())
                .await
                .expect("a frame in time")
                .expect("the socket is open")
                .expect("a good frame");
            match msg {
                Message::Text(t) => return t.to_string(),
                Message::Close(_) => panic!("the server closed the socket"),
                _ => {}
            }
        }
    }

    /// The next text frame, parsed.
    pub async fn next(&mut self) -> Value {
        serde_json::from_str(&self.next_text().await).expect("frames are JSON")
    }

    /// Skips frames until one matches.
    pub async fn until(&mut self, what: impl Fn(&Value) -> bool) -> Value {
        loop {
            let frame = self.next().await;
            if what(&frame) {
                return frame;
            }
        }
    }

    /// Reads frames until one matching `a` and one matching `b` came, in
    /// either order; answers the first of each.
    pub async fn until_both(
        &mut self,
        a: impl Fn(&Value) -> bool,
        b: impl Fn(&Value) -> bool,
    ) -> (Value, Value) {
        let (mut first, mut second) = (None, None);
        while first.is_none() || second.is_none() {
            let frame = self.next().await;
            if first.is_none() && a(&frame) {
                first = Some(frame);
            } else if second.is_none() && b(&frame) {
                second = Some(frame);
            }
        }
        (first.unwrap(), second.unwrap())
    }

    /// Skips frames until one of type `kind`.
    pub async fn until_type(&mut self, kind: &str) -> Value {
        self.until(|f| f["type"] == kind).await
    }

    pub async fn send(&mut self, frame: Value) {
        self.send_text(&frame.to_string()).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.inner.send(Message::text(text)).await.unwrap();
    }

    /// Sends `text`, which the server may cut the connection in the middle
    /// of: whether it all went.
    pub async fn try_send_text(&mut self, text: &str) -> bool {
        self.inner.send(Message::text(text)).await.is_ok()
    }

    /// Sends an rpc and waits for its answer (other frames are skipped).
    pub async fn rpc(&mut self, id: u64, method: &str, args: Value) -> Value {
        self.send(serde_json::json!({"type":"rpc","id":id,"method":method,"args":args}))
            .await;
        self.until(|f| f["type"] == "rpc" && f["id"] == id).await
    }

    /// Sends an rpc and waits for its answer; also answers the frames
    /// read before it, in order.
    pub async fn rpc_keeping(&mut self, id: u64, method: &str, args: Value) -> (Value, Vec<Value>) {
        self.send(serde_json::json!({"type":"rpc","id":id,"method":method,"args":args}))
            .await;
        let mut before = Vec::new();
        loop {
            let frame = self.next().await;
            if frame["type"] == "rpc" && frame["id"] == id {
                return (frame, before);
            }
            before.push(frame);
        }
    }

    /// Waits (up to `wait`) for the server's ping, skipping other frames.
    pub async fn ping(&mut self, wait: Duration) -> bool {
        let read = async {
            while let Some(Ok(msg)) = self.inner.next().await {
                if let Message::Ping(_) = msg {
                    return true;
                }
            }
            false
        };
        tokio::time::timeout(wait, read).await.unwrap_or(false)
    }

    /// Reads until the server ends the connection; false if it stays open.
    pub async fn ends(&mut self) -> bool {
        let read_all = async {
            while let Some(Ok(msg)) = self.inner.next().await {
                if let Message::Close(_) = msg {
                    break;
                }
            }
        };
        tokio::time::timeout(WAIT, read_all).await.is_ok()
    }

    /// Reads until the server closes the socket: its close code and
    /// reason (`None` when the connection ended without a close frame).
    pub async fn closed(&mut self) -> Option<(u16, String)> {
        let read_all = async {
            while let Some(Ok(msg)) = self.inner.next().await {
                if let Message::Close(frame) = msg {
                    return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                }
            }
            None
        };
        tokio::time::timeout(WAIT, read_all)
            .await
            .expect("the server closes the socket in time")
    }

    /// Closes the socket and waits a little for the server to let go of it
    /// (`duet serve` ends the stream once its side is done with the
    /// connection), so what a test does next sees it gone. Bounded: the
    /// local worker stack may keep the stream open after a close.
    pub async fn close(mut self) {
        let _ = self.inner.close(None).await;
        let drained = async { while let Some(Ok(_)) = self.inner.next().await {} };
        let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
    }
}

impl Drop for Server {
    /// A test that ends without `stop` still lets the server stop
    /// gracefully (it unmounts its rooms' disk images), then kills it.
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The next event of a socket actor that `ok` accepts (others are skipped),
/// within `WAIT`; `what` names it when it never comes.
pub async fn next_matching(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<duet::client::socket::SocketEvent>,
    what: &str,
    ok: impl FnMut(&duet::client::socket::SocketEvent) -> bool,
) -> duet::client::socket::SocketEvent {
    next_matching_within(rx, WAIT, what, ok).await
}

/// `next_matching` with a wait of its own (e.g. across a reconnect).
pub async fn next_matching_within(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<duet::client::socket::SocketEvent>,
    wait: Duration,
    what: &str,
    mut ok: impl FnMut(&duet::client::socket::SocketEvent) -> bool,
) -> duet::client::socket::SocketEvent {
    tokio::time::timeout(wait, async {
        loop {
            match rx.recv().await {
                Some(event) if ok(&event) => return event,
                Some(_) => {}
                None => panic!("the actor stopped before {what}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what}"))
}

/// A loopback port free right now, for a server that must keep its
/// address across a restart (`Server::start_at`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
