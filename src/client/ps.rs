//! `duet ps`, `duet bg`, `duet logs` and `duet kill`: the room's
//! background processes from the command line, over HTTP (`logs -f`
//! follows over the socket: `client::follow`).

use crate::cli::{BgArgs, KillArgs, LogsArgs, PsArgs};
use crate::client::commands::{client_for, data_dir_from_env, shell_join};
use crate::client::explain;
use crate::client::http::{HttpClient, HttpError};
use crate::client::processes::{self, Listing};
use crate::config;
use crate::protocol::{PortState, Process, ProcessStatus};
use std::io::Write;
use std::process::ExitCode;

/// `duet ps [--json]`
pub async fn ps(args: PsArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let listing = match tokio::try_join!(client.processes(), client.ports()) {
        Ok((processes, ports)) => Listing { processes, ports },
        Err(err) => return failed(&err),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
    } else {
        let now = crate::protocol::now_ms();
        out.write_all(table(&listing, client.base(), now).as_bytes())?;
        if client.token().is_some() && !listing.ports.is_empty() {
            writeln!(
                out,
                "(a browser opens a port once with ?token=TOKEN after its URL; a cookie keeps it in)"
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

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
                crate::tui::timeline::one_line(&p.cmd),
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
                .filter_map(|r| r.as_ref().get(i).map(|c| crate::tui::text::width(c)))
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
                let pad = widths[i] - crate::tui::text::width(cell);
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

/// `duet bg [--name N] -- CMD…`: the id on stdout, a sentence on stderr.
pub async fn bg(args: BgArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let cmd = shell_join(&args.cmd);
    match client
        .start_process(&cmd, args.process_name.as_deref())
        .await
    {
        Ok(process) => {
            println!("{}", process.id);
            eprintln!(
                "started {} ({}): `duet logs {}` shows its output, `duet kill {}` stops it",
                process.id, process.name, process.id, process.id
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
    }
}

/// `duet logs ID [-f]`: stdout to stdout, stderr to stderr.
pub async fn logs(args: LogsArgs) -> anyhow::Result<ExitCode> {
    let settings = config::load(&args.client, data_dir_from_env())?;
    if args.follow {
        return crate::client::follow::follow(&settings, &args.process).await;
    }
    let client = client_for(&settings)?;
    let id = match resolve(&client, &args.process).await {
        Ok(process) => process.map_or(args.process.clone(), |p| p.id),
        Err(why) => return said(&why),
    };
    match client.process_logs(&id).await {
        Ok(logs) => {
            write_out(logs.stdout.as_bytes(), false)?;
            write_out(logs.stderr.as_bytes(), true)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
    }
}

/// `duet kill ID`: what became of it.
pub async fn kill(args: KillArgs) -> anyhow::Result<ExitCode> {
    let client = client(&args.client)?;
    let found = match resolve(&client, &args.process).await {
        Ok(found) => found,
        Err(why) => return said(&why),
    };
    let id = found
        .as_ref()
        .map_or(args.process.as_str(), |p| p.id.as_str());
    let shown = found
        .as_ref()
        .map_or_else(|| id.to_string(), |p| format!("{} ({})", p.id, p.name));
    match client.kill_process(id).await {
        Ok(true) => {
            println!("killed {shown}");
            Ok(ExitCode::SUCCESS)
        }
        Ok(false) => {
            // It ended meanwhile: say how, from the room's list.
            let how = match client.processes().await {
                Ok(list) => list
                    .iter()
                    .find(|p| p.id == id)
                    .map(|p| format!(" ({})", processes::status_word(p)))
                    .unwrap_or_default(),
                Err(_) => String::new(),
            };
            println!("{shown} had already ended{how}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => failed(&err),
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

fn client(args: &crate::cli::ClientArgs) -> anyhow::Result<HttpClient> {
    let settings = config::load(args, data_dir_from_env())?;
    client_for(&settings)
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

fn failed(err: &HttpError) -> anyhow::Result<ExitCode> {
    said(&explain::http(err))
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
