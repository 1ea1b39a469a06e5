//! An upload's body, read on a blocking thread as it arrives from the
//! request's task; the upload's own failure is carried through the readers
//! that wrap it (the tar reader) and told apart from theirs.

use crate::sandbox::SandboxError;
use std::io::Read;

/// Reads an upload's body as it arrives from the request's task.
pub struct BodyReader {
    chunks: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, SandboxError>>,
    current: bytes::Bytes,
}

impl BodyReader {
    pub fn new(chunks: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, SandboxError>>) -> Self {
        BodyReader {
            chunks,
            current: bytes::Bytes::new(),
        }
    }
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(std::io::Error::other(BodyBroke(e))),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        bytes::Buf::advance(&mut self.current, n);
        Ok(n)
    }
}

/// A body that could not be read as a tar: the upload broke off, or it
/// is not an archive.
pub(super) fn broken(e: &std::io::Error) -> SandboxError {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<BodyBroke>()) {
        return inner.0.clone();
    }
    SandboxError::Member(format!(
        "(archive): is not a tar archive, or it is cut short: {e}"
    ))
}

/// The upload's own failure, carried through the tar reader.
#[derive(Debug)]
struct BodyBroke(SandboxError);

impl std::fmt::Display for BodyBroke {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BodyBroke {}
