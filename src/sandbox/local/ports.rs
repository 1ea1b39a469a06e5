//! The sandbox's listening TCP ports, as PID 1 sees them in its own
//! network namespace (`/proc/net/tcp` and `tcp6`).

/// The socket state of a listening socket in `/proc/net/tcp`.
const LISTEN: &str = "0A";

/// The ports something listens on in this network namespace, sorted:
/// asked of the kernel's socket diagnostics, which walk only listening
/// sockets. `/proc/net/tcp` walks every TCP socket of the host (all
/// namespaces), which took a busy host's sandbox tens of milliseconds a
/// second, commands waiting meanwhile; it is read only where the
/// diagnostics are unavailable.
pub(super) fn listening() -> Vec<u16> {
    let mut ports = match diag::listening() {
        Ok(ports) => ports,
        Err(_) => {
            let mut ports = Vec::new();
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                if let Ok(text) = std::fs::read_to_string(table) {
                    ports.extend(parse(&text));
                }
            }
            ports
        }
    };
    ports.retain(|p| *p != 0);
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `NETLINK_SOCK_DIAG`: a dump of the listening TCP sockets (v4 and v6).
mod diag {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const TCP_LISTEN: u32 = 10;
    /// `nlmsghdr` and `inet_diag_req_v2` (its socket id left zero).
    const HEADER: usize = 16;
    const REQUEST: usize = HEADER + 56;
    /// Where `inet_diag_msg`'s source port (big-endian) sits in a message.
    const SPORT: usize = HEADER + 4;

    pub(super) fn listening() -> io::Result<Vec<u16>> {
        // SAFETY: a plain socket(2); the descriptor is owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut ports = Vec::new();
        for (seq, family) in [libc::AF_INET, libc::AF_INET6].into_iter().enumerate() {
            ask(&fd, family as u8, seq as u32 + 1)?;
            read_dump(&fd, &mut ports)?;
        }
        Ok(ports)
    }

    fn ask(fd: &OwnedFd, family: u8, seq: u32) -> io::Result<()> {
        let mut req = [0u8; REQUEST];
        req[0..4].copy_from_slice(&(REQUEST as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        req[6..8].copy_from_slice(&flags.to_ne_bytes());
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        req[HEADER] = family;
        req[HEADER + 1] = libc::IPPROTO_TCP as u8;
        req[HEADER + 4..HEADER + 8].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
        // SAFETY: an all-zero sockaddr_nl is valid; the family is set below.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `req` and `kernel` outlive the call, lengths are theirs.
        let sent = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                0,
                (&raw const kernel).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent != REQUEST as isize {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads the answers to one dump, adding each socket's port.
    fn read_dump(fd: &OwnedFd, ports: &mut Vec<u16>) -> io::Result<()> {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            // SAFETY: `buf` is writable for its whole length.
            let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let mut rest = &buf[..n as usize];
            while rest.len() >= HEADER {
                let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let kind = u16::from_ne_bytes([rest[4], rest[5]]);
                if len < HEADER || len > rest.len() {
                    return Err(io::Error::other("a malformed sock_diag answer"));
                }
                match kind {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => return Err(io::Error::other("sock_diag refused the dump")),
                    SOCK_DIAG_BY_FAMILY if len >= SPORT + 2 => {
                        ports.push(u16::from_be_bytes([rest[SPORT], rest[SPORT + 1]]));
                    }
                    _ => {}
                }
                // Messages are aligned to 4 bytes.
                let next = (len + 3) & !3;
                rest = rest.get(next..).unwrap_or_default();
            }
        }
    }
}

/// The listening ports of one `/proc/net/tcp` table.
fn parse(table: &str) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            let state = fields.nth(1)?;
            if state != LISTEN {
                return None;
            }
            let port = local.rsplit(':').next()?;
            u16::from_str_radix(port, 16).ok().filter(|p| *p != 0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_are_found() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:0050 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 0 0 0 0 0 3 1
";
        assert_eq!(parse(table), [8000, 3000]);
        assert!(parse("garbage\nmore garbage").is_empty());
    }

    #[test]
    fn the_kernel_lists_a_listening_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(listening().contains(&port));
        // Read from the kernel's diagnostics where they are available.
        if let Ok(ports) = diag::listening() {
            assert!(ports.contains(&port));
        }
    }
}
