//! The client side of the protocol: HTTP calls and the room socket.

pub mod access;
pub mod archive;
pub mod checkpoints;
pub mod commands;
pub mod cp;
pub mod deltas;
pub mod explain;
pub mod export;
pub mod follow;
pub mod http;
pub mod interrupt;
pub mod join;
pub mod local;
pub mod log_file;
pub mod ls;
pub mod processes;
pub mod ps;
pub mod rooms;
pub mod rpc;
pub mod socket;
pub mod term;
pub mod tls;
pub mod tunnel;
