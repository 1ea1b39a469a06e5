//! Figures of a room's ports, against the real `duet serve` binary and
//! sandbox, each beside a baseline measured in the same run:
//! 1. HTTP throughput through the preview route (a 64 MiB file from
//!    `python3 -m http.server` in the sandbox), beside a direct request to
//!    the same server on the host, outside any sandbox;
//! 2. a 100 MiB transfer through a tunnel: `duet port PORT --local L`
//!    (when this build has it) and a raw WebSocket client of
//!    `/tunnel/{port}`, each an HTTP/1.0 request by hand, beside the same
//!    request over a direct loopback connection to the host's server.
//!
//! `cargo bench --bench ports` (DUET_BENCH_QUICK=1 for a short run).
//! Needs root for the sandbox, and python3.

#[path = "../tests/it/common/mod.rs"]
mod common;
// Both helper modules include tests/it/common/procs.rs for themselves.
#[allow(clippy::duplicate_mod)]
mod support;

use common::Server;
use common::apps::{exec, http_server, preview_url, tunnel};
use futures_util::{SinkExt, StreamExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::report_rate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

const MIB: usize = 1024 * 1024;
const PREVIEW_FILE: usize = 64 * MIB;
const TUNNEL_FILE: usize = 100 * MIB;
const PORT: u16 = 8000;
const ROOM: &str = "bench-ports";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let runs = if std::env::var_os("DUET_BENCH_QUICK").is_some() {
        2
    } else {
        5
    };
    runtime.block_on(async {
        let (server, _dir) = Server::fresh().await;
        let host = HostServer::start();
        prepare_sandbox(&server).await;
        println!("HTTP, a {} MiB file, {runs} runs each:", PREVIEW_FILE / MIB);
        let direct = report_rate(
            "  direct to python3 http.server on the host",
            PREVIEW_FILE,
            http_runs(runs, || reqwest_get(host.url("/big64.bin"), None)).await,
        );
        let preview = report_rate(
            "  through the preview route",
            PREVIEW_FILE,
            http_runs(runs, || {
                reqwest_get(
                    preview_url(&server, ROOM, PORT, "/big64.bin"),
                    server.token.clone(),
                )
            })
            .await,
        );
        println!("  preview / direct: {:.2}", preview / direct);

        println!(
            "A {} MiB transfer (HTTP/1.0 by hand), {runs} runs each:",
            TUNNEL_FILE / MIB
        );
        let request = b"GET /big100.bin HTTP/1.0\r\nHost: localhost\r\n\r\n";
        let mut samples = Vec::new();
        for _ in 0..runs {
            samples.push(tcp_get(&host.addr, request).await);
        }
        let loopback = report_rate("  direct loopback connection", TUNNEL_FILE, samples);
        let mut samples = Vec::new();
        for _ in 0..runs {
            samples.push(tunnel_get(&server, request).await);
        }
        let raw = report_rate("  raw WebSocket client of /tunnel", TUNNEL_FILE, samples);
        println!("  tunnel / loopback: {:.2}", raw / loopback);
        match DuetPort::start(&server) {
            Some(port) => {
                let mut samples = Vec::new();
                for _ in 0..runs {
                    samples.push(tcp_get(&port.addr, request).await);
                }
                let through = report_rate("  duet port --local", TUNNEL_FILE, samples);
                println!("  duet port / loopback: {:.2}", through / loopback);
            }
            None => println!("  duet port: not in this build (its figure is left out)"),
        }
        server.stop().await;
    });
}

/// The files in the room's /workspace, and `python3 -m http.server`.
async fn prepare_sandbox(server: &Server) {
    let made = exec(
        server,
        ROOM,
        &format!(
            "head -c {PREVIEW_FILE} /dev/urandom > big64.bin && head -c {TUNNEL_FILE} /dev/urandom > big100.bin && echo ok"
        ),
    )
    .await;
    assert_eq!(made["stdout"], "ok\n", "{made}");
    http_server(server, ROOM, PORT).await;
}

async fn http_runs<F, Fut>(runs: usize, mut get: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (usize, Duration)>,
{
    let mut samples = Vec::new();
    for _ in 0..runs {
        let (bytes, took) = get().await;
        assert_eq!(bytes, PREVIEW_FILE, "the whole file came");
        samples.push(took);
    }
    samples
}

/// GET `url` with reqwest, streaming the body: its size and the time.
async fn reqwest_get(url: String, token: Option<String>) -> (usize, Duration) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("a client");
    let mut req = client.get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let started = Instant::now();
    let res = req.send().await.expect("an answer");
    assert_eq!(res.status(), 200);
    let mut body = res.bytes_stream();
    let mut bytes = 0;
    while let Some(chunk) = body.next().await {
        bytes += chunk.expect("the body").len();
    }
    (bytes, started.elapsed())
}

/// The answer's body length of a raw HTTP/1.0 exchange, given all its
/// bytes (head included).
fn body_len(total: usize, head: &[u8]) -> usize {
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    total - end - 4
}

/// `request` over a plain TCP connection to `addr`, read to its end.
async fn tcp_get(addr: &str, request: &[u8]) -> Duration {
    let started = Instant::now();
    let mut conn = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    conn.write_all(request).await.expect("sends");
    let mut head = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        let n = conn.read(&mut buf).await.expect("reads");
        if n == 0 {
            break;
        }
        if head.len() < 4096 {
            head.extend_from_slice(&buf[..n.min(4096)]);
        }
        total += n;
    }
    let took = started.elapsed();
    assert_eq!(body_len(total, &head), TUNNEL_FILE, "the whole file came");
    took
}

/// `request` through a tunnel of the room's sandbox, read until it closes.
async fn tunnel_get(server: &Server, request: &[u8]) -> Duration {
    let started = Instant::now();
    let mut t = tunnel(server, ROOM, PORT).await;
    t.send(Message::binary(request.to_vec()))
        .await
        .expect("sends");
    let mut head = Vec::new();
    let mut total = 0;
    while let Some(msg) = t.next().await {
        match msg.expect("the tunnel") {
            Message::Binary(b) => {
                if head.len() < 4096 {
                    head.extend_from_slice(&b[..b.len().min(4096)]);
                }
                total += b.len();
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    let took = started.elapsed();
    assert_eq!(body_len(total, &head), TUNNEL_FILE, "the whole file came");
    took
}

/// `python3 -m http.server` on the host's loopback, serving files of the
/// same sizes as the sandbox's: the baseline.
struct HostServer {
    child: Child,
    _dir: tempfile::TempDir,
    addr: String,
}

impl HostServer {
    fn start() -> HostServer {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let chunk = common::apps::pattern(MIB);
        for (name, size) in [("big64.bin", PREVIEW_FILE), ("big100.bin", TUNNEL_FILE)] {
            let mut file = std::fs::File::create(dir.path().join(name)).expect("a file");
            for _ in 0..size / MIB {
                std::io::Write::write_all(&mut file, &chunk).expect("written");
            }
        }
        let port = common::free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let addr = format!("127.0.0.1:{port}");
        wait_connectable(&addr, "the host's http.server");
        HostServer {
            child,
            _dir: dir,
            addr,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for HostServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `duet port PORT --local L` against the bench's room, when this build
/// has the command.
struct DuetPort {
    child: Child,
    addr: String,
}

impl DuetPort {
    fn start(server: &Server) -> Option<DuetPort> {
        let bin = env!("CARGO_BIN_EXE_duet");
        let has_it = Command::new(bin)
            .args(["port", "--help"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !has_it {
            return None;
        }
        let local = common::free_port();
        let mut cmd = Command::new(bin);
        cmd.args(["port", &PORT.to_string(), "--local", &local.to_string()])
            .args(["--server", &server.url(""), "--room", ROOM])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(t) = &server.token {
            cmd.args(["--token", t]);
        }
        let child = cmd.spawn().expect("duet port runs");
        let addr = format!("127.0.0.1:{local}");
        wait_connectable(&addr, "duet port's listener");
        Some(DuetPort { child, addr })
    }
}

impl Drop for DuetPort {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until something accepts connections on `addr`.
fn wait_connectable(addr: &str, what: &str) {
    let deadline = Instant::now() + common::WAIT;
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{what} never listened on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
