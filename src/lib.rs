//! Duet: pair programming in the terminal. One crate, one binary: the
//! terminal client and the backend that speaks docs/protocol.md.
//!
//! The top-level modules are layers and only use the ones beneath them:
//! `cli` (and `main`) on top; `tui` over `client`; `server` over
//! `sandbox` and `ai`; `config`, `text`, `emulator`, `blocks`, `support`
//! and `protocol` at the bottom. `layers_tests` declares the order and
//! fails on an import that points up or on a cycle.

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
