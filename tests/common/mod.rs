//! Helpers of the integration tests: the real `duet serve` on a loopback
//! port, an HTTP client and a WebSocket client.
#![allow(dead_code)]

pub mod tmux;

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

/// A `duet serve` process; killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    pub token: Option<String>,
}

impl Server {
    /// Starts `duet serve` on a free loopback port with `data_dir`.
    pub async fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env_remove("DUET_TOKEN")
            .env(
                "DUET_LOG",
                std::env::var("DUET_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("DUET_TEST_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
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
        let line = tokio::time::timeout(WAIT, lines.next_line())
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
        let dir = tempfile::tempdir().unwrap();
        (Server::start(dir.path(), &[]).await, dir)
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

    /// `POST path` with a JSON body: status and JSON answer.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let mut req = http().post(self.url(path)).json(&body);
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

    /// A WebSocket that has read its three connect frames.
    pub async fn joined(&self, room: &str, query: &str) -> Ws {
        let mut ws = self.ws(room, query).await;
        for kind in ["cf_agent_identity", "cf_agent_state", "duet_presence"] {
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

    /// Sends an rpc and waits for its answer (other frames are skipped).
    pub async fn rpc(&mut self, id: u64, method: &str, args: Value) -> Value {
        self.send(serde_json::json!({"type":"rpc","id":id,"method":method,"args":args}))
            .await;
        self.until(|f| f["type"] == "rpc" && f["id"] == id).await
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

    pub async fn close(mut self) {
        let _ = self.inner.close(None).await;
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
