//! What one socket and one room may ask for (docs/protocol.md "Limits"):
//! token buckets for rates, counters for sockets. A flooding client is
//! answered 429 (or `duet_error`), never allowed to slow its neighbours,
//! and never closed for it.

use super::LimitOptions;
use super::errors::ApiError;
use super::ops::Method;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

impl LimitOptions {
    /// One line for the start-up log.
    pub(crate) fn describe(&self) -> String {
        format!(
            "per socket {} frames/s, {} bytes/s, {} messages/min, {} commands/min; \
             per room {} messages/min, {} commands/min, {} sockets; {} sockets in all (0: none)",
            self.socket_frames_per_sec,
            self.socket_bytes_per_sec,
            self.socket_messages_per_min,
            self.socket_commands_per_min,
            self.room_messages_per_min,
            self.room_commands_per_min,
            self.max_room_sockets,
            self.max_sockets
        )
    }
}

/// A token bucket: bursts up to its rate, refilled continuously.
#[derive(Debug)]
pub(crate) struct Bucket {
    /// Tokens added per second; 0 means no limit.
    per_sec: f64,
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(capacity: u64, per_sec: f64) -> Bucket {
        Bucket {
            per_sec,
            capacity: capacity as f64,
            tokens: capacity as f64,
            last: Instant::now(),
        }
    }

    pub(crate) fn per_second(rate: u64) -> Bucket {
        Bucket::new(rate, rate as f64)
    }

    pub(crate) fn per_minute(rate: u64) -> Bucket {
        Bucket::new(rate, rate as f64 / 60.0)
    }

    /// Takes `n` tokens, or says how long until they are there. A request
    /// larger than the whole bucket waits for a full one.
    pub(crate) fn take(&mut self, n: f64) -> Result<(), Duration> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_sec).min(self.capacity);
        self.last = now;
        let n = n.min(self.capacity);
        if self.tokens >= n {
            self.tokens -= n;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((n - self.tokens) / self.per_sec))
        }
    }
}

/// Messages and commands of one owner (a socket, a room) per minute.
#[derive(Debug)]
pub(crate) struct OpRates {
    owner: &'static str,
    messages: (u64, Bucket),
    commands: (u64, Bucket),
}

impl OpRates {
    pub(crate) fn new(owner: &'static str, messages_per_min: u64, commands_per_min: u64) -> Self {
        OpRates {
            owner,
            messages: (messages_per_min, Bucket::per_minute(messages_per_min)),
            commands: (commands_per_min, Bucket::per_minute(commands_per_min)),
        }
    }

    /// Admits one operation, or answers 429.
    /// Only messages (a rename stores one too) and commands count.
    pub(crate) fn admit(&mut self, method: Method) -> Result<(), ApiError> {
        let (what, (rate, bucket)) = match method {
            Method::Message | Method::Rename => ("messages", &mut self.messages),
            Method::Exec | Method::ProcessStart => ("commands", &mut self.commands),
            _ => return Ok(()),
        };
        bucket.take(1.0).map_err(|wait| {
            ApiError::rate_limited(
                wait,
                format!("at most {rate} {what} per minute {}", self.owner),
            )
        })
    }
}

/// The frame and byte rates of one socket.
#[derive(Debug)]
pub(crate) struct FrameRates {
    frames: (u64, Bucket),
    bytes: (u64, Bucket),
}

impl FrameRates {
    pub(crate) fn new(config: &LimitOptions) -> Self {
        FrameRates {
            frames: (
                config.socket_frames_per_sec,
                Bucket::per_second(config.socket_frames_per_sec),
            ),
            bytes: (
                config.socket_bytes_per_sec,
                Bucket::per_second(config.socket_bytes_per_sec),
            ),
        }
    }

    /// Admits one frame of `len` bytes, or answers 429.
    pub(crate) fn admit(&mut self, len: usize) -> Result<(), ApiError> {
        let (rate, frames) = &mut self.frames;
        frames.take(1.0).map_err(|wait| {
            ApiError::rate_limited(wait, format!("at most {rate} frames per second per socket"))
        })?;
        self.admit_bytes(len)
    }

    /// Admits `len` bytes that count as no frame (terminal input: a
    /// keystroke is a frame), or answers 429.
    pub(crate) fn admit_bytes(&mut self, len: usize) -> Result<(), ApiError> {
        let (rate, bytes) = &mut self.bytes;
        bytes.take(len as f64).map_err(|wait| {
            ApiError::rate_limited(wait, format!("at most {rate} bytes per second per socket"))
        })
    }
}

/// How many sockets are open, in all and per room.
#[derive(Debug, Default)]
pub(crate) struct SocketCount {
    total: AtomicUsize,
    rooms: Mutex<HashMap<String, usize>>,
}

/// A socket's place in the count, given back when dropped.
#[derive(Debug)]
pub(crate) struct SocketSlot {
    count: Arc<SocketCount>,
    room: String,
}

/// How long a client refused for the socket caps waits before trying again.
const SOCKETS_RETRY: Duration = Duration::from_secs(5);

impl SocketCount {
    /// Counts a new socket of `room`, or answers 503 when a cap is reached.
    pub(crate) fn admit(
        count: &Arc<SocketCount>,
        room: &str,
        config: &LimitOptions,
    ) -> Result<SocketSlot, ApiError> {
        let mut rooms = count
            .rooms
            .lock()
            .map_err(|_| ApiError::internal("the socket count is unusable"))?;
        let in_room = rooms.get(room).copied().unwrap_or(0);
        if config.max_room_sockets > 0 && in_room >= config.max_room_sockets {
            return Err(ApiError::too_many_sockets(
                SOCKETS_RETRY,
                format!("this room has {in_room} sockets, its most"),
            ));
        }
        let total = count.total.load(Ordering::Relaxed);
        if config.max_sockets > 0 && total >= config.max_sockets {
            return Err(ApiError::too_many_sockets(
                SOCKETS_RETRY,
                format!("the server has {total} sockets, its most"),
            ));
        }
        rooms.insert(room.to_string(), in_room + 1);
        count.total.fetch_add(1, Ordering::Relaxed);
        Ok(SocketSlot {
            count: count.clone(),
            room: room.to_string(),
        })
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.count.total.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut rooms) = self.count.rooms.lock()
            && let Some(n) = rooms.get_mut(&self.room)
        {
            *n -= 1;
            if *n == 0 {
                rooms.remove(&self.room);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_says_when() {
        let mut b = Bucket::per_second(10);
        for _ in 0..10 {
            assert!(b.take(1.0).is_ok());
        }
        let wait = b.take(1.0).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        let mut none = Bucket::per_second(0);
        assert!((0..1000).all(|_| none.take(1.0).is_ok()));
    }

    #[test]
    fn only_messages_and_commands_count() {
        let mut r = OpRates::new("per room", 1, 1);
        assert!(r.admit(Method::Message).is_ok());
        let e = r.admit(Method::Message).unwrap_err();
        assert_eq!(e.status.as_u16(), 429);
        assert!(r.admit(Method::Exec).is_ok());
        assert!(r.admit(Method::Cancel).is_ok() && r.admit(Method::Cancel).is_ok());
    }

    #[test]
    fn sockets_are_capped_and_given_back() {
        let config = LimitOptions {
            socket_frames_per_sec: 0,
            socket_bytes_per_sec: 0,
            socket_messages_per_min: 0,
            socket_commands_per_min: 0,
            room_messages_per_min: 0,
            room_commands_per_min: 0,
            max_room_sockets: 2,
            max_sockets: 3,
            max_processes: 8,
            tunnel_bytes_per_sec: 0,
        };
        let count = Arc::new(SocketCount::default());
        let a = SocketCount::admit(&count, "a", &config).unwrap();
        let _a2 = SocketCount::admit(&count, "a", &config).unwrap();
        assert_eq!(
            SocketCount::admit(&count, "a", &config)
                .unwrap_err()
                .status
                .as_u16(),
            503
        );
        let _b = SocketCount::admit(&count, "b", &config).unwrap();
        assert!(SocketCount::admit(&count, "c", &config).is_err());
        drop(a);
        assert!(SocketCount::admit(&count, "c", &config).is_ok());
    }
}
