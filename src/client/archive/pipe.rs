//! Between the tar crate (blocking `Read` and `Write`, on a thread of its
//! own) and an HTTP body (async chunks): a bounded channel of chunks, so
//! that memory stays flat whatever the size.

use bytes::Bytes;
use tokio::sync::mpsc;

/// Chunks in flight at most, each of [`CHUNK`] bytes.
const DEPTH: usize = 8;
/// The size of a chunk sent.
const CHUNK: usize = 64 * 1024;

/// A `Write` that sends what it is given as chunks down a channel.
pub struct ChannelWriter {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    buf: Vec<u8>,
}

/// A writer and the stream of what it writes, for a request body.
pub fn body_channel() -> (ChannelWriter, reqwest::Body) {
    let (tx, rx) = mpsc::channel(DEPTH);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    (
        ChannelWriter {
            tx,
            buf: Vec::with_capacity(CHUNK),
        },
        reqwest::Body::wrap_stream(stream),
    )
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the upload ended"))
    }

    /// Ends the body with an error: the request fails rather than send a
    /// truncated archive.
    pub fn fail(&self, err: std::io::Error) {
        let _ = self.tx.blocking_send(Err(err));
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK - self.buf.len();
        let taken = data.len().min(room);
        self.buf.extend_from_slice(&data[..taken]);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// A `Read` of chunks that arrive down a channel (a response body).
pub struct ChannelReader {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    current: Bytes,
}

/// A reader and the sender that feeds it.
pub fn read_channel() -> (mpsc::Sender<std::io::Result<Bytes>>, ChannelReader) {
    let (tx, rx) = mpsc::channel(DEPTH);
    (
        tx,
        ChannelReader {
            rx,
            current: Bytes::new(),
        },
    )
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(err)) => return Err(err),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.current.len());
        let chunk = self.current.split_to(n);
        out[..n].copy_from_slice(&chunk);
        Ok(n)
    }
}
