//! The sandbox's listening TCP ports, as PID 1 sees them in its own
//! network namespace (`/proc/net/tcp` and `tcp6`).

/// The socket state of a listening socket in `/proc/net/tcp`.
const LISTEN: &str = "0A";

/// The ports something listens on in this network namespace, sorted.
pub(super) fn listening() -> Vec<u16> {
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            ports.extend(parse(&text));
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
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
}
