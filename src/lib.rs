//! Duet: pair programming in the terminal. One crate, one binary: the
//! terminal client and the backend that speaks docs/protocol.md.

pub mod ai;
pub mod blocks;
pub mod cli;
pub mod client;
pub mod config;
pub mod protocol;
pub mod sandbox;
pub mod server;
pub mod tui;
