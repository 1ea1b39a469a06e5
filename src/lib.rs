//! Duet: pair programming in the terminal. One crate, one binary: the
//! terminal client and the backend that speaks docs/protocol.md.

pub mod ai;
pub mod blocks;
pub mod cli;
pub mod client;
pub mod config;
pub mod emulator;
#[cfg(test)]
mod layers_tests;
pub mod protocol;
pub mod sandbox;
#[cfg(feature = "server")]
pub mod server;
/// Without the `server` feature: a backend that says how to get one.
#[cfg(not(feature = "server"))]
#[path = "server/absent.rs"]
pub mod server;
pub mod support;
pub mod text;
pub mod tui;
mod utf8;
