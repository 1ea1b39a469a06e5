//! `duet ps`, `duet bg`, `duet logs` and `duet kill`: the room's
//! background processes from the command line, over HTTP (`logs -f`
//! follows over the socket: `client::follow`).

use crate::client::explain;
use crate::client::http::HttpClient;
use crate::client::processes::{self, Listing};
use crate::protocol::{PortState, Process, ProcessStatus};
use std::io::Write;
use std::process::ExitCode;

/// What `duet ps` prints: the processes, then the ports with their URLs.
pub fn table(listing: &Listing, base: &str, now_ms: i64) -> String {
    let mut text = String::new();
    if listing.processes.is_empty() {
        text.push_str("no background processes (`duet bg CMD` starts one)\n");
    } else {
        text.push_str(&process_table(&listing.processes, now_ms));
    }
    text.push('\n');
    if listing.ports.is_empty() {
        text.push_str("no ports listening in the sandbox\n");
    } else {
        text.push_str(&port_table(&listing.ports, base));
    }
    text
}

/// The processes as columns under a header line (the TUI's view too).
pub fn process_table(list: &[Process], now_ms: i64) -> String {
    let rows: Vec<[String; 7]> = list
        .iter()
        .map(|p| {
            [
                p.id.clone(),
                p.name.clone(),
                status_name(p.status).to_string(),
                p.exit_code.map_or("-".into(), |c| c.to_string()),
                p.by.clone(),
                processes::ran_for(p, now_ms),
                crate::text::one_line(&p.cmd),
            ]
        })
        .collect();
    let head = ["ID", "NAME", "STATUS", "EXIT", "BY", "TIME", "CMD"].map(String::from);
    columns(std::iter::once(&head).chain(&rows))
}

/// The ports with the URL to open each, as columns under a header line.
pub fn port_table(ports: &[PortState], base: &str) -> String {
    let rows: Vec<[String; 2]> = ports
        .iter()
        .map(|p| [p.port.to_string(), processes::port_url(base, p)])
        .collect();
    let head = ["PORT", "URL"].map(String::from);
    columns(std::iter::once(&head).chain(&rows))
}

/// Rows as left-aligned columns two spaces apart (the last unpadded);
/// the first row says how many columns there are.
pub(crate) fn columns<R: AsRef<[String]>>(rows: impl Iterator<Item = R> + Clone) -> String {
    let n = rows.clone().next().map_or(0, |r| r.as_ref().len());
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.clone()
                .filter_map(|r| r.as_ref().get(i).map(|c| crate::text::width(c)))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        for (i, cell) in row.as_ref().iter().enumerate().take(n) {
            if i + 1 == n {
                text.push_str(cell);
            } else {
                let pad = widths[i] - crate::text::width(cell);
                text.push_str(&format!("{cell}{}  ", " ".repeat(pad)));
            }
        }
        text.push('\n');
    }
    text
}

/// The status as the wire spells it.
fn status_name(status: ProcessStatus) -> &'static str {
    match status {
        ProcessStatus::Running => "running",
        ProcessStatus::Exited => "exited",
        ProcessStatus::Killed => "killed",
    }
}

/// The listed process `wanted` names (an id, or a name only one has);
/// `None` when none is listed by that name, so that the server answers
/// for the id (its 404 says so); `Err` when the name is ambiguous or the
/// list cannot be read.
pub async fn resolve(client: &HttpClient, wanted: &str) -> Result<Option<Process>, String> {
    let list = client
        .processes()
        .await
        .map_err(|err| explain::http(&err))?;
    match processes::find(&list, wanted) {
        Ok(process) => Ok(Some(process.clone())),
        Err(_) if !list.iter().any(|p| p.name == wanted) => Ok(None),
        Err(why) => Err(why),
    }
}

/// Bytes of a process's stdout (or stderr) onto ours.
pub(crate) fn write_out(bytes: &[u8], stderr: bool) -> std::io::Result<()> {
    if stderr {
        let mut err = std::io::stderr().lock();
        err.write_all(bytes)?;
        err.flush()
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()
    }
}

/// Says why on stderr; the command failed.
pub(crate) fn said(why: &str) -> anyhow::Result<ExitCode> {
    eprintln!("duet: {why}");
    Ok(ExitCode::FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_processes_and_ports_with_their_urls() {
        let listing = Listing {
            processes: vec![
                Process {
                    id: "p1".into(),
                    name: "python3".into(),
                    cmd: "python3 -m http.server 8000".into(),
                    by: "ada".into(),
                    status: ProcessStatus::Running,
                    exit_code: None,
                    started_at: 1_000,
                    ended_at: None,
                },
                Process {
                    id: "p2".into(),
                    name: "sleep".into(),
                    cmd: "sleep 1\necho done".into(),
                    by: "bob".into(),
                    status: ProcessStatus::Killed,
                    exit_code: Some(143),
                    started_at: 1_000,
                    ended_at: Some(5_000),
                },
            ],
            ports: vec![PortState::new("r1", 8000)],
        };
        let text = table(&listing, "http://127.0.0.1:8787", 61_000);
        assert_eq!(
            text,
            "ID  NAME     STATUS   EXIT  BY   TIME   CMD\n\
             p1  python3  running  -     ada  1m00s  python3 -m http.server 8000\n\
             p2  sleep    killed   143   bob  4s     sleep 1 …\n\
             \n\
             PORT  URL\n\
             8000  http://127.0.0.1:8787/api/rooms/r1/ports/8000/\n"
        );
        let empty = Listing {
            processes: Vec::new(),
            ports: Vec::new(),
        };
        assert!(table(&empty, "http://x", 0).starts_with("no background processes"));
    }
}
