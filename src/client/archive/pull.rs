//! `duet pull`: a workspace folder's tar, streamed into a local folder
//! through a staging folder (see `unpack`), or to stdout as it is.

use super::manifest::Manifest;
use super::pipe::read_channel;
use super::unpack::{Staged, stage};
use crate::client::http::HttpClient;
use anyhow::Context;
use futures_util::StreamExt;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Unpacks the room's `remote` folder beside `dir` (made if absent),
/// not yet in place; answers it with the manifest it was checked against.
/// With `delete`, what the room deleted since the last sync goes too.
pub async fn fetch(
    client: &HttpClient,
    remote: &str,
    dir: &Path,
    manifest: Manifest,
    delete: bool,
) -> anyhow::Result<(Staged, Manifest)> {
    let mut stream = client.get_archive(remote).await?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let dir: PathBuf = std::fs::canonicalize(dir)?;
    let (tx, reader) = read_channel();
    let shown = dir.display().to_string();
    let unpacking = tokio::task::spawn_blocking(move || {
        stage(reader, &dir, &manifest, delete).map(|staged| (staged, manifest))
    });
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(std::io::Error::other);
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            break;
        }
    }
    drop(tx);
    unpacking
        .await
        .context("the unpacking stopped")?
        .with_context(|| format!("cannot unpack the room's files into {shown}"))
}

/// Puts a staged pull in place; answers what it wrote.
pub async fn apply(
    mut staged: Staged,
    mut manifest: Manifest,
) -> anyhow::Result<(super::unpack::Applied, Vec<String>)> {
    tokio::task::spawn_blocking(move || {
        let applied = staged.apply(&mut manifest)?;
        if let Err(err) = manifest.save() {
            tracing::warn!("cannot keep the pull's manifest: {err}");
        }
        Ok((applied, std::mem::take(&mut staged.warnings)))
    })
    .await
    .context("the pull stopped")?
}

/// Writes the room's `remote` folder as a tar to stdout, as it streams.
pub async fn to_stdout(client: &HttpClient, remote: &str) -> anyhow::Result<u64> {
    let mut stream = client.get_archive(remote).await?;
    let mut out = tokio::io::stdout();
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        out.write_all(&chunk).await?;
        written += chunk.len() as u64;
    }
    out.flush().await?;
    Ok(written)
}
