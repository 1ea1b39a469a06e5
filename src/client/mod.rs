//! The client side of the protocol: HTTP calls and the room socket.

pub mod commands;
pub mod cp;
pub mod deltas;
pub mod http;
pub mod local;
pub mod rpc;
pub mod socket;
