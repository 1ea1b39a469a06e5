//! A background process's events on their way to the room: its output
//! decoded as UTF-8 and gathered for 25 ms (or until 64 KiB wait), then
//! its end.

use super::{Command, ProcCommand};
use crate::sandbox::{ProcEvent, ProcEvents};
use crate::support::Utf8Stream;
use std::time::Duration;

/// Output is gathered this long before it is sent.
const COALESCE: Duration = Duration::from_millis(25);
/// Most text in one output frame.
const FRAME_DATA: usize = 64 * 1024;

/// Reads one process's events, coalesces its output and tells the room.
pub(super) async fn pump(id: String, mut events: ProcEvents, inbox: super::Inbox) {
    let mut decoders = [Utf8Stream::default(), Utf8Stream::default()];
    let mut pending = [String::new(), String::new()];
    let mut flush_at = None;
    loop {
        let event = tokio::select! {
            biased;
            event = events.recv() => event,
            () = super::sleep_until(flush_at), if flush_at.is_some() => {
                flush_at = None;
                flush(&id, &mut pending, &inbox).await;
                continue;
            }
        };
        match event {
            Some(ProcEvent::Output { stderr, bytes }) => {
                let stream = usize::from(stderr);
                pending[stream].push_str(&decoders[stream].push(&bytes));
                if pending[stream].len() >= FRAME_DATA {
                    flush(&id, &mut pending, &inbox).await;
                    flush_at = None;
                } else if flush_at.is_none() {
                    flush_at = Some(tokio::time::Instant::now() + COALESCE);
                }
            }
            Some(ProcEvent::Exit(..)) | None => {
                let exit_code = match event {
                    Some(ProcEvent::Exit(code, _)) => code,
                    _ => None,
                };
                for (stream, decoder) in decoders.iter_mut().enumerate() {
                    pending[stream].push_str(&decoder.finish());
                }
                flush(&id, &mut pending, &inbox).await;
                let exited = ProcCommand::Exited { id, exit_code };
                let _ = inbox.send(Command::Process(exited)).await;
                return;
            }
        }
    }
}

/// Sends what each stream gathered, in frames of at most `FRAME_DATA`.
async fn flush(id: &str, pending: &mut [String; 2], inbox: &super::Inbox) {
    for (stream, text) in pending.iter_mut().enumerate() {
        let whole = std::mem::take(text);
        let mut rest = whole.as_str();
        while !rest.is_empty() {
            let mut end = rest.len().min(FRAME_DATA);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let output = ProcCommand::Output {
                id: id.to_string(),
                stderr: stream == 1,
                text: rest[..end].to_string(),
            };
            rest = &rest[end..];
            if inbox.send(Command::Process(output)).await.is_err() {
                return;
            }
        }
    }
}
