//! Each preview's own origin: room R's port P is served at
//! `{scheme}://{P}-{R}.{suffix}[:{port}]/` (docs/protocol.md "Ports"), so
//! that a page of one preview shares no origin, and so no cookies or
//! same-origin reads, with Duet's API or another preview. On loopback the
//! suffix is `localhost`: browsers resolve `*.localhost` to loopback
//! themselves, without DNS.
//!
//! A room id that is not a plain lowercase DNS label (upper case, `_`, or
//! too long beside its port) is spelled in hex: `{P}--{hex}[.{hex}…]`
//! (`--` never follows the port of a plain name: a room id starts with a
//! letter or digit).

use crate::protocol::valid_room_id;

/// The longest DNS label.
const LABEL: usize = 63;

/// Where previews live: the host name suffix, and the scheme and port of
/// their URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PreviewHosts {
    /// `http` or `https`.
    scheme: String,
    /// The host name every preview host ends with (lowercase, no dot first).
    suffix: String,
    /// The port of the URLs (none: the scheme's).
    port: Option<u16>,
}

impl PreviewHosts {
    /// From `--preview-host` (`[http[s]://]HOST[:PORT]`); without it, on a
    /// loopback listen address, `localhost` at the server's own port.
    /// `Ok(None)`: previews have no origin of their own (browsers cannot
    /// open them).
    pub(crate) fn new(
        given: Option<&str>,
        listen: std::net::SocketAddr,
    ) -> Result<Option<Self>, String> {
        let given = given.map(str::trim).filter(|g| !g.is_empty());
        let Some(given) = given else {
            return Ok(listen.ip().is_loopback().then(|| PreviewHosts {
                scheme: "http".into(),
                suffix: "localhost".into(),
                port: Some(listen.port()),
            }));
        };
        let (scheme, rest) = match given.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => ("http".to_string(), given),
        };
        let rest = rest.trim_end_matches('/');
        let (name, port) = match rest.rsplit_once(':') {
            Some((name, port)) => match port.parse::<u16>() {
                Ok(p) if p > 0 => (name, Some(p)),
                _ => return Err(format!("--preview-host {given:?}: {port:?} is not a port")),
            },
            None => (rest, None),
        };
        let suffix = name.trim_start_matches('.').to_ascii_lowercase();
        let name_ok = !suffix.is_empty()
            && suffix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= LABEL
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !(scheme == "http" || scheme == "https") || !name_ok {
            return Err(format!(
                "--preview-host {given:?} is not [http[s]://]HOST[:PORT] with a DNS name"
            ));
        }
        Ok(Some(PreviewHosts {
            scheme,
            suffix,
            port,
        }))
    }

    /// The URL of `room`'s `port` preview (with its final slash).
    pub(crate) fn url(&self, room: &str, port: u16) -> String {
        let at = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("{}://{}{at}/", self.scheme, self.host(room, port))
    }

    /// Whether cookies of the previews must be `Secure`.
    pub(crate) fn secure(&self) -> bool {
        self.scheme == "https"
    }

    /// The host name of `room`'s `port` preview.
    pub(crate) fn host(&self, room: &str, port: u16) -> String {
        format!("{}.{}", labels(room, port), self.suffix)
    }

    /// What a request's `Host` header is: `None` when it is not under the
    /// previews' suffix (an API request), `Some(None)` when it is but names
    /// no room and port, else the room and port.
    pub(crate) fn target(&self, host: &str) -> Option<Option<(String, u16)>> {
        let name = super::super::origin::host_name(host);
        let labels = name.strip_suffix(&self.suffix)?.strip_suffix('.')?;
        Some(parse(labels))
    }
}

/// The labels naming `room`'s `port` (before the suffix).
fn labels(room: &str, port: u16) -> String {
    let plain = format!("{port}-{room}");
    let lowercase = room
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if lowercase && plain.len() <= LABEL {
        return plain;
    }
    let hex: String = room.bytes().map(|b| format!("{b:02x}")).collect();
    let first = format!("{port}--");
    let (head, mut rest) = hex.split_at((LABEL - first.len()).min(hex.len()));
    let mut out = format!("{first}{head}");
    while !rest.is_empty() {
        let (label, more) = rest.split_at(LABEL.min(rest.len()));
        out.push('.');
        out.push_str(label);
        rest = more;
    }
    out
}

/// The room and port `labels` name, when they are exactly how `labels`
/// spells some valid room and port.
fn parse(labels: &str) -> Option<(String, u16)> {
    let (port, rest) = labels.split_once('-')?;
    let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
    let room = match rest.strip_prefix('-') {
        Some(hex) => {
            let hex: String = hex.split('.').collect();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect::<Option<Vec<u8>>>()?;
            String::from_utf8(bytes).ok()?
        }
        None => rest.to_string(),
    };
    (valid_room_id(&room) && self::labels(&room, port) == labels).then_some((room, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> PreviewHosts {
        PreviewHosts::new(None, "127.0.0.1:8787".parse().unwrap())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn loopback_previews_are_localhost_names_at_the_server_s_port() {
        let hosts = loopback();
        assert_eq!(hosts.url("r1", 8000), "http://8000-r1.localhost:8787/");
        assert_eq!(
            hosts.target("8000-r1.localhost:8787"),
            Some(Some(("r1".to_string(), 8000)))
        );
        assert_eq!(
            hosts.target("8000-R1.LOCALHOST"),
            Some(Some(("r1".into(), 8000)))
        );
        for not_preview in ["localhost:8787", "127.0.0.1", "evil.example", "xlocalhost"] {
            assert_eq!(hosts.target(not_preview), None, "{not_preview}");
        }
        for nameless in [
            "x.localhost",
            "0-r1.localhost",
            "08000-r1.localhost",
            "8000-.localhost",
            "8000-r_1.localhost",
            "8000--zz.localhost",
        ] {
            assert_eq!(hosts.target(nameless), Some(None), "{nameless}");
        }
        let public = PreviewHosts::new(None, "0.0.0.0:8787".parse().unwrap()).unwrap();
        assert_eq!(public, None);
    }

    #[test]
    fn rooms_that_are_no_dns_label_are_spelled_in_hex_and_read_back() {
        let hosts = loopback();
        let long = "a".repeat(63);
        for room in ["Room", "my_room", long.as_str(), "a--b", "x-1"] {
            let host = hosts.host(room, 65535);
            assert!(host.split('.').all(|l| l.len() <= LABEL), "{host}");
            assert_eq!(
                hosts.target(&host),
                Some(Some((room.to_string(), 65535))),
                "{host}"
            );
        }
        assert_ne!(hosts.host("Room", 80), hosts.host("room", 80));
        assert_eq!(hosts.host("Room", 80), "80--526f6f6d.localhost");
    }

    #[test]
    fn a_given_preview_host_sets_scheme_suffix_and_port() {
        let at = "0.0.0.0:8787".parse().unwrap();
        let https = PreviewHosts::new(Some("https://preview.example.com/"), at)
            .unwrap()
            .unwrap();
        assert_eq!(
            https.url("r1", 3000),
            "https://3000-r1.preview.example.com/"
        );
        assert!(https.secure());
        let plain = PreviewHosts::new(Some("dev.test:9000"), at)
            .unwrap()
            .unwrap();
        assert_eq!(plain.url("r1", 3000), "http://3000-r1.dev.test:9000/");
        for bad in ["ftp://x", "a b", "x:0", "x:port", "https://"] {
            assert!(PreviewHosts::new(Some(bad), at).is_err(), "{bad}");
        }
    }
}
