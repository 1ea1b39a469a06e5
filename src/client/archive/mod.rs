//! A folder between this machine and the room (docs/protocol.md
//! "Archives: a folder in and out, and what changed"): `duet push` walks
//! it (`walk`) and streams it as a tar (`pack`, `pipe`), `duet pull`
//! unpacks the room's tar beside it and then in place (`unpack`), asking
//! first about local files that changed since they were synced
//! (`manifest`), as a push asks about room files changed since the last
//! push (`room_changes`); `duet diff`'s colours (`diff`).

pub mod diff;
pub mod manifest;
mod pack;
mod pipe;
pub mod pull;
pub mod push;
pub mod room_changes;
pub mod unpack;
pub mod walk;
pub mod watch;

pub use pack::Progress;
