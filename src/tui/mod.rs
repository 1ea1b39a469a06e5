//! The terminal client: a full-screen ratatui UI in a room (shared/TUI.md).

mod answers;
pub mod app;
pub mod backend;
pub mod chat;
pub mod composer;
pub mod execs;
mod frames;
mod input;
pub mod keymap;
pub mod run;
pub mod start;
pub mod termtext;
pub mod text;
pub mod theme;
pub mod view;
