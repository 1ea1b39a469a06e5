//! Files between this machine and a room's workspace: `duet cp`, and the
//! TUI's `/put` and `/get`. One set of path rules for all three: a path is
//! relative to /workspace, an absolute one must lie inside it, anything
//! else is refused here with the reason, before a request is sent.

use crate::client::http::{HttpClient, HttpError};
use crate::protocol::FileResponse;
use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the room's files are, inside its sandbox.
pub const WORKSPACE: &str = "/workspace";

/// The workspace path (relative to /workspace; empty or ending in `/` for
/// a folder) that a person's `path` names: a relative path as it is, an
/// absolute one inside /workspace as that path; any other is refused with
/// the reason (a URL would also resolve `..` away before sending it).
pub fn workspace_path(path: &str) -> Result<String, String> {
    let relative = match path.strip_prefix(WORKSPACE) {
        Some("") => {
            return Err(format!(
                "{WORKSPACE} is the room's workspace folder, not a file: name a file in it \
                 (e.g. {WORKSPACE}/notes.txt), or end with / to copy into it"
            ));
        }
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
        _ if path.starts_with('/') => {
            return Err(format!(
                "{path} is outside {WORKSPACE}: only files in the room's {WORKSPACE} can be copied"
            ));
        }
        _ => path,
    };
    if relative.split('/').any(|segment| segment == "..") {
        return Err(format!(
            "{path} goes outside {WORKSPACE} with ..: a path must stay inside {WORKSPACE}"
        ));
    }
    Ok(relative.to_string())
}

/// A workspace path as a person reads it: `/workspace/notes.txt`.
pub fn shown(relative: &str) -> String {
    format!("{WORKSPACE}/{relative}")
}

/// One end of a copy.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// A path in the workspace (after the `:`), relative to /workspace.
    Remote(String),
    /// A local path.
    Local(PathBuf),
    /// stdin or stdout.
    Std,
}

impl End {
    /// `:PATH` (checked by [`workspace_path`]), `-`, or a local path.
    pub fn parse(arg: &str) -> Result<End, String> {
        Ok(match arg.strip_prefix(':') {
            Some(path) => End::Remote(workspace_path(path)?),
            None if arg == "-" => End::Std,
            None => End::Local(PathBuf::from(arg)),
        })
    }
}

/// The file name a workspace path ends with (`None` for a folder).
pub fn file_name(remote: &str) -> Option<&str> {
    (!remote.ends_with('/'))
        .then(|| remote.rsplit('/').next())
        .flatten()
        .filter(|name| !name.is_empty() && *name != ".")
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

/// A failed file request as a sentence about `relative`: a 400 names what
/// the server found wrong with the path, a 404 says the file is absent.
/// (The error itself goes to the log.)
pub fn file_error(relative: &str, err: &HttpError) -> String {
    tracing::info!(%err, path = relative, "a file request failed");
    let path = shown(relative);
    let HttpError::Status(status) = err else {
        return format!("{path}: {}", crate::client::explain::http(err));
    };
    let path_details = status
        .details
        .as_ref()
        .and_then(|d| d.get("path"))
        .filter(|m| !m.is_empty());
    match (status.status, path_details) {
        (400, Some(why)) => format!(
            "{path} cannot be copied: {} (the server refused the path)",
            why.join(", ")
        ),
        (404, _) => format!("{path}: no such file in the room's workspace (404)"),
        (413, _) => format!("{path}: too large for the server (413: {})", status.error),
        _ => format!("{path}: {}", crate::client::explain::http(err)),
    }
}

/// Copies a local file into the workspace; `remote` (relative, see
/// [`workspace_path`]) empty or ending in `/` names a folder, where the
/// file keeps its name.
pub async fn upload(
    client: &HttpClient,
    local: &Path,
    remote: &str,
) -> anyhow::Result<FileResponse> {
    let bytes = read_local(local)?;
    let target = upload_target(&End::Local(local.to_path_buf()), remote)?;
    put(client, &target, bytes).await
}

pub async fn put(
    client: &HttpClient,
    target: &str,
    bytes: Vec<u8>,
) -> anyhow::Result<FileResponse> {
    client
        .put_file(target, bytes)
        .await
        .map_err(|err| anyhow::anyhow!(file_error(target, &err)))
}

pub async fn get(client: &HttpClient, remote: &str) -> anyhow::Result<bytes::Bytes> {
    client
        .get_file(remote)
        .await
        .map_err(|err| anyhow::anyhow!(file_error(remote, &err)))
}

/// What a download did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// The file was written at `to`.
    Written { to: PathBuf, size: usize },
    /// A file is at `to` already (`size` bytes) and was left alone.
    Exists { to: PathBuf, size: u64 },
}

/// Where a download of `remote` to `local` goes: into `local` when it is
/// a folder, under the workspace file's name.
pub fn download_target(remote: &str, local: &Path) -> anyhow::Result<PathBuf> {
    let name = file_name(remote)
        .with_context(|| format!("{} is a folder: name a file in it", shown(remote)))?;
    Ok(if local.is_dir() {
        local.join(name)
    } else {
        local.to_path_buf()
    })
}

/// Copies a workspace file here (into `local` when it is a folder). A file
/// already there is replaced only when `replace` says so (whole: written
/// beside it and renamed); otherwise it is left alone and said so.
pub async fn download(
    client: &HttpClient,
    remote: &str,
    local: &Path,
    replace: bool,
) -> anyhow::Result<Saved> {
    let target = download_target(remote, local)?;
    if let Some(size) = existing(&target)?
        && !replace
    {
        return Ok(Saved::Exists { to: target, size });
    }
    let bytes = get(client, remote).await?;
    let written = if replace {
        replace_file(&target, &bytes)
    } else {
        create_file(&target, &bytes)
    };
    match written {
        Ok(()) => Ok(Saved::Written {
            to: target,
            size: bytes.len(),
        }),
        // Made meanwhile by someone else: still left alone.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            let size = existing(&target)?.unwrap_or(0);
            Ok(Saved::Exists { to: target, size })
        }
        Err(err) => Err(err).with_context(|| format!("cannot write {}", target.display())),
    }
}

/// The size of the file at `path`, if there is one; a folder there is an
/// error (nothing is written over a folder).
fn existing(path: &Path) -> anyhow::Result<Option<u64>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => bail!("{} is a folder here", path.display()),
        Ok(meta) => Ok(Some(meta.len())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot look at {}", path.display())),
    }
}

/// Writes a new file; fails with `AlreadyExists` rather than replace one.
fn create_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Replaces `path` whole: written beside it (with the old file's mode),
/// then renamed over it, so a failure leaves the old file as it was.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.duet-{:08x}", rand::random::<u32>()));
    let mode = std::fs::metadata(path).map(|m| m.permissions()).ok();
    let written = create_file(&tmp, bytes)
        .and_then(|()| mode.map_or(Ok(()), |mode| std::fs::set_permissions(&tmp, mode)))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn read_local(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_told_apart() {
        assert_eq!(End::parse(":a/b"), Ok(End::Remote("a/b".into())));
        assert_eq!(End::parse("-"), Ok(End::Std));
        assert_eq!(End::parse("x.txt"), Ok(End::Local("x.txt".into())));
    }

    #[test]
    fn absolute_paths_must_lie_inside_the_workspace() {
        assert_eq!(workspace_path("/workspace/ok.txt").unwrap(), "ok.txt");
        assert_eq!(workspace_path("/workspace/docs/").unwrap(), "docs/");
        assert_eq!(workspace_path("/workspace/").unwrap(), "");
        assert_eq!(workspace_path("rel/x").unwrap(), "rel/x");
        assert_eq!(
            workspace_path("/tmp/x").unwrap_err(),
            "/tmp/x is outside /workspace: only files in the room's /workspace can be copied"
        );
        assert!(
            workspace_path("/workspace")
                .unwrap_err()
                .contains("folder, not a file")
        );
        assert!(
            workspace_path("/workspaces/x")
                .unwrap_err()
                .contains("outside /workspace")
        );
        assert!(
            workspace_path("a/../../x")
                .unwrap_err()
                .contains("outside /workspace")
        );
        assert!(workspace_path("/workspace/../etc").is_err());
    }

    #[test]
    fn uploads_into_a_folder_keep_the_name() {
        let local = End::Local("/tmp/notes.txt".into());
        assert_eq!(upload_target(&local, "").unwrap(), "notes.txt");
        assert_eq!(upload_target(&local, "docs/").unwrap(), "docs/notes.txt");
        assert_eq!(upload_target(&local, "x.md").unwrap(), "x.md");
        assert!(upload_target(&End::Std, "").is_err());
    }

    #[test]
    fn downloads_need_a_file_name() {
        let here = tempfile::tempdir().unwrap();
        assert_eq!(
            download_target("docs/a.txt", here.path()).unwrap(),
            here.path().join("a.txt")
        );
        assert!(download_target("docs/", here.path()).is_err());
        assert!(download_target("", here.path()).is_err());
    }

    #[test]
    fn a_replaced_file_is_written_whole_and_a_new_one_never_replaces() {
        let here = tempfile::tempdir().unwrap();
        let path = here.path().join("report.txt");
        create_file(&path, b"mine").unwrap();
        let again = create_file(&path, b"theirs").unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"mine");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
        replace_file(&path, b"theirs").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o750, "the mode is kept");
        let left: Vec<_> = std::fs::read_dir(here.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
    }
}
