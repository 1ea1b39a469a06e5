//! The terminal client: a full-screen ratatui UI in a room (shared/TUI.md).

mod answers;
pub mod app;
pub mod backend;
pub mod cell;
pub mod chat;
pub mod chat_render;
pub mod composer;
pub mod exec_cell;
pub mod execs;
pub mod files;
mod frames;
mod input;
pub mod keymap;
pub mod link;
pub mod run;
pub mod scroll;
pub mod slash;
pub mod start;
pub mod terminal;
pub mod termtext;
pub mod text;
pub mod theme;
pub mod view;
