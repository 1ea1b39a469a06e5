//! `duet cp`: files between this machine and a room's workspace.

use crate::cli::CpArgs;
use crate::client::commands::{client_for, data_dir_from_env};
use crate::client::http::HttpClient;
use crate::config;
use crate::protocol::FileResponse;
use anyhow::{Context, bail};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One end of a copy.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// A path in the workspace (after the `:`).
    Remote(String),
    /// A local path.
    Local(PathBuf),
    /// stdin or stdout.
    Std,
}

impl End {
    pub fn parse(arg: &str) -> End {
        match arg.strip_prefix(':') {
            Some(path) => End::Remote(path.to_string()),
            None if arg == "-" => End::Std,
            None => End::Local(PathBuf::from(arg)),
        }
    }
}

/// The last component of a path, for copies into a folder.
fn base_name(path: &str) -> Option<&str> {
    path.rsplit('/').find(|s| !s.is_empty())
}

/// The workspace path an upload of `local` to `remote` writes: into the
/// folder when `remote` is empty or ends with `/`.
pub fn upload_target(local: &End, remote: &str) -> anyhow::Result<String> {
    if !remote.is_empty() && !remote.ends_with('/') {
        return Ok(remote.to_string());
    }
    let End::Local(path) = local else {
        bail!("name the file to write, e.g. `duet cp - :notes.txt`");
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("the local file has no name to copy under")?;
    Ok(format!("{remote}{name}"))
}

/// Copies a local file into the workspace; `remote` empty or ending in
/// `/` names a folder, where the file keeps its name.
pub async fn upload(
    client: &HttpClient,
    local: &Path,
    remote: &str,
) -> anyhow::Result<FileResponse> {
    let bytes = read_local(local)?;
    let target = upload_target(&End::Local(local.to_path_buf()), remote)?;
    client
        .put_file(&target, bytes)
        .await
        .with_context(|| format!(":{target}"))
}

/// Copies a workspace file here; into `local` when it is a folder.
/// Answers where it went and its size.
pub async fn download(
    client: &HttpClient,
    remote: &str,
    local: &Path,
) -> anyhow::Result<(PathBuf, usize)> {
    let bytes = client
        .get_file(remote)
        .await
        .with_context(|| format!(":{remote}"))?;
    let target = if local.is_dir() {
        local.join(base_name(remote).context("the workspace path has no file name")?)
    } else {
        local.to_path_buf()
    };
    std::fs::write(&target, &bytes)
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok((target, bytes.len()))
}

/// `duet cp FROM TO`
pub async fn cp(args: CpArgs) -> anyhow::Result<ExitCode> {
    let (from, to) = (End::parse(&args.from), End::parse(&args.to));
    let settings = config::load(&args.client, data_dir_from_env())?;
    let client = client_for(&settings)?;
    let done = match (&from, &to) {
        (End::Remote(remote), End::Local(path)) => download(&client, remote, path)
            .await
            .map(|(target, size)| format!("{size} bytes from :{remote} to {}", target.display())),
        (End::Remote(remote), End::Std) => match client.get_file(remote).await {
            Ok(bytes) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)?;
                out.flush()?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(err) => Err(anyhow::Error::from(err).context(format!(":{remote}"))),
        },
        (End::Local(path), End::Remote(remote)) => upload(&client, path, remote)
            .await
            .map(|answer| format!("{} bytes to :{}", answer.size, answer.path)),
        (End::Std, End::Remote(remote)) => {
            let target = upload_target(&End::Std, remote)?;
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes)?;
            client
                .put_file(&target, bytes)
                .await
                .map(|answer| format!("{} bytes to :{}", answer.size, answer.path))
                .with_context(|| format!(":{target}"))
        }
        _ => bail!(
            "one end must be in the workspace (`:PATH`) and the other here: `duet cp LOCAL :PATH` or `duet cp :PATH LOCAL`"
        ),
    };
    match done {
        Ok(said) => {
            eprintln!("{said}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("duet: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn read_local(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_told_apart() {
        assert_eq!(End::parse(":a/b"), End::Remote("a/b".into()));
        assert_eq!(End::parse("-"), End::Std);
        assert_eq!(End::parse("x.txt"), End::Local("x.txt".into()));
    }

    #[test]
    fn uploads_into_a_folder_keep_the_name() {
        let local = End::Local("/tmp/notes.txt".into());
        assert_eq!(upload_target(&local, "").unwrap(), "notes.txt");
        assert_eq!(upload_target(&local, "docs/").unwrap(), "docs/notes.txt");
        assert_eq!(upload_target(&local, "x.md").unwrap(), "x.md");
        assert!(upload_target(&End::Std, "").is_err());
    }
}
