//! Connections to the sandbox's own ports, for the ports preview and the
//! tunnel. The server cannot create a socket in the sandbox's network
//! namespace itself (it is multi-threaded, and without root it would have
//! to join the sandbox's user namespace first), so a small helper does:
//! `duet sandbox-init` started with `DUET_SANDBOX_CONNECT=PID` joins the
//! namespaces of the sandbox's PID 1, then connects to `127.0.0.1:PORT`
//! (or `[::1]:PORT`) on request and hands each connected socket back over
//! a Unix socket (`SCM_RIGHTS`). Only loopback addresses are dialled, so
//! nothing but the sandbox's own ports is reachable this way.

use super::SandboxError;
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The environment variable that makes `duet sandbox-init` the connector.
pub(super) const CONNECT_ENV: &str = "DUET_SANDBOX_CONNECT";
/// How long a connection to a sandbox port may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Answers of the connector: one status byte, with the socket when 0.
const CONNECTED: u8 = 0;
const REFUSED: u8 = 1;

/// The connector's side: joins the namespaces of `pid` and serves
/// requests (a port, two bytes big-endian) on fd 0 until it closes.
pub(super) fn serve(pid: &str) -> io::Result<()> {
    let pid: u32 = pid
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a pid"))?;
    join_namespaces(pid)?;
    // SAFETY: fd 0 is the Unix socket the server gave us as stdin.
    let socket = unsafe { std::os::unix::net::UnixStream::from_raw_fd(0) };
    let mut reader = &socket;
    let mut request = [0u8; 2];
    loop {
        match reader.read_exact(&mut request) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let port = u16::from_be_bytes(request);
        match dial(port) {
            Some(stream) => reply(socket.as_raw_fd(), CONNECTED, Some(stream.as_raw_fd()))?,
            None => reply(socket.as_raw_fd(), REFUSED, None)?,
        }
    }
}

/// Enters the sandbox's network namespace: a server without root first
/// joins its user namespace, which owns the network one.
fn join_namespaces(pid: u32) -> io::Result<()> {
    use nix::sched::{CloneFlags, setns};
    let open = |kind: &str| std::fs::File::open(format!("/proc/{pid}/ns/{kind}"));
    let user = open("user")?;
    let net = open("net")?;
    let ours = std::fs::metadata("/proc/self/ns/user")?;
    let theirs = user.metadata()?;
    use std::os::unix::fs::MetadataExt;
    if !nix::unistd::geteuid().is_root() && ours.ino() != theirs.ino() {
        setns(&user, CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)?;
    }
    setns(&net, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

/// Connects to the port on the sandbox's loopback, IPv4 first.
fn dial(port: u16) -> Option<TcpStream> {
    [
        SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
    ]
    .iter()
    .find_map(|addr| TcpStream::connect_timeout(addr, CONNECT_TIMEOUT).ok())
}

fn reply(socket: RawFd, status: u8, fd: Option<RawFd>) -> io::Result<()> {
    let fds: Vec<RawFd> = fd.into_iter().collect();
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let cmsgs: &[ControlMessage] = if fds.is_empty() { &[] } else { &cmsg };
    let data = [status];
    sendmsg::<()>(
        socket,
        &[IoSlice::new(&data)],
        cmsgs,
        MsgFlags::empty(),
        None,
    )
    .map(|_| ())
    .map_err(io::Error::from)
}

/// The server's side of one sandbox's connector.
pub(super) struct Connector {
    /// The sandbox's PID 1 (host pid) whose namespaces it joined.
    pub(super) sandbox: u32,
    _child: tokio::process::Child,
    socket: tokio::net::UnixStream,
}

impl Connector {
    /// Starts the connector for the sandbox whose PID 1 is `sandbox`.
    pub(super) fn start(sandbox: u32) -> io::Result<Connector> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let child = tokio::process::Command::new(super::helper_exe()?)
            .arg("sandbox-init")
            .env_clear()
            .env(CONNECT_ENV, sandbox.to_string())
            .current_dir("/")
            .stdin(std::process::Stdio::from(OwnedFd::from(theirs)))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Connector {
            sandbox,
            _child: child,
            socket: tokio::net::UnixStream::from_std(ours)?,
        })
    }

    /// A connection to `port` on the sandbox's loopback.
    pub(super) async fn connect(&mut self, port: u16) -> Result<TcpStream, SandboxError> {
        let failed = |e: io::Error| SandboxError::PortUnreachable {
            port,
            why: e.to_string(),
        };
        let request = port.to_be_bytes();
        let mut written = 0;
        while written < request.len() {
            self.socket.writable().await.map_err(failed)?;
            match self.socket.try_write(&request[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(failed(e)),
            }
        }
        let (status, fd) = loop {
            self.socket.readable().await.map_err(failed)?;
            match self.socket.try_io(tokio::io::Interest::READABLE, || {
                receive(self.socket.as_raw_fd())
            }) {
                Ok(answer) => break answer,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(failed(e)),
            }
        };
        match (status, fd) {
            (CONNECTED, Some(fd)) => Ok(TcpStream::from(fd)),
            _ => Err(SandboxError::NotListening(port)),
        }
    }
}

/// Reads one answer: its status byte and the socket passed with it.
fn receive(socket: RawFd) -> io::Result<(u8, Option<OwnedFd>)> {
    let mut data = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut data)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        socket,
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(io::Error::from)?;
    let bytes = msg.bytes;
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            fds.extend(raw);
        }
    }
    // SAFETY: the kernel just gave us these descriptors.
    let mut owned = fds
        .into_iter()
        .map(|raw| unsafe { OwnedFd::from_raw_fd(raw) });
    let fd = owned.next();
    if bytes == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connector ended",
        ));
    }
    Ok((data[0], fd))
}

/// The host pid of the sandbox's PID 1: the first process below the
/// helper `helper` that is in another network namespace than ours.
pub(super) fn sandbox_pid(helper: u32) -> Option<u32> {
    let ours = std::fs::read_link("/proc/self/ns/net").ok()?;
    let mut queue = vec![helper];
    while let Some(pid) = queue.pop() {
        if pid != helper && std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()? != ours {
            return Some(pid);
        }
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        queue.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    None
}

/// One room's way into its sandbox's ports: which sandbox runs (set by the
/// worker) and its connector, started on first use.
#[derive(Default)]
pub(crate) struct PortLink {
    sandbox: std::sync::Mutex<Option<u32>>,
    connector: tokio::sync::Mutex<Option<Connector>>,
}

impl PortLink {
    /// The sandbox that runs now (`None`: none does).
    pub(super) fn set_sandbox(&self, pid: Option<u32>) {
        if let Ok(mut sandbox) = self.sandbox.lock() {
            *sandbox = pid;
        }
    }

    /// A connection to `port` on the running sandbox's loopback.
    pub(crate) async fn connect(&self, port: u16) -> Result<tokio::net::TcpStream, SandboxError> {
        let running = self.sandbox.lock().ok().and_then(|s| *s);
        let Some(sandbox) = running else {
            return Err(SandboxError::NotListening(port));
        };
        let mut connector = self.connector.lock().await;
        if connector.as_ref().is_none_or(|c| c.sandbox != sandbox) {
            *connector =
                Some(
                    Connector::start(sandbox).map_err(|e| SandboxError::PortUnreachable {
                        port,
                        why: format!("the connector could not start: {e}"),
                    })?,
                );
        }
        let Some(link) = connector.as_mut() else {
            return Err(SandboxError::NotListening(port));
        };
        let stream = match link.connect(port).await {
            Ok(stream) => stream,
            Err(e @ SandboxError::NotListening(_)) => return Err(e),
            Err(e) => {
                // A connector that broke is started afresh next time.
                *connector = None;
                return Err(e);
            }
        };
        drop(connector);
        stream
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpStream::from_std(stream))
            .map_err(|e| SandboxError::PortUnreachable {
                port,
                why: e.to_string(),
            })
    }
}
