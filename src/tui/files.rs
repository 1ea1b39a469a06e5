//! The App's side of `/put`, `/get` and `/ls`: the workspace paths they
//! name follow `duet cp`'s and `duet ls`'s rules (`client::cp`,
//! `client::ls`), `/get` asks before it replaces a file here, and `/ls`
//! shows a folder in a view of its own.

use crate::client::cp;
use crate::protocol::DirEntry;
use crate::tui::app::{App, Effect, Modal};
use std::path::PathBuf;

pub use crate::text::human_size;

/// A file here that `/get` would replace, while the person is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overwrite {
    /// The workspace file (relative to /workspace).
    pub remote: String,
    /// The file here.
    pub to: PathBuf,
    /// Its size now, in bytes.
    pub size: u64,
}

impl Overwrite {
    /// The file here as the person named it (`./` left out).
    pub fn name(&self) -> String {
        let shown = self.to.display().to_string();
        shown
            .strip_prefix("./")
            .map(str::to_string)
            .unwrap_or(shown)
    }
}

/// A folder of the workspace, as `/ls` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Relative to /workspace (empty: /workspace itself).
    pub dir: String,
    pub entries: Vec<DirEntry>,
}

impl App {
    /// `/ls [DIR]`: the listing comes back as `Msg::Listed`.
    pub(crate) fn list_dir(&mut self, dir: &str, effects: &mut Vec<Effect>) -> Result<(), String> {
        let dir = crate::client::ls::relative(dir)?;
        effects.push(Effect::ListDir(dir));
        Ok(())
    }

    /// `/ls` answered: its view, or why not.
    pub(crate) fn on_listed(&mut self, result: Result<Listing, String>) {
        match result {
            Ok(listing) => {
                self.listing = Some(listing);
                self.help_scroll = 0;
                self.modals.retain(|m| *m != Modal::Listing);
                self.modals.push(Modal::Listing);
            }
            Err(why) => self.toast(why, true),
        }
    }

    /// `/put FILE [PATH]`.
    pub(crate) fn put_file(
        &mut self,
        local: String,
        remote: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let remote = cp::workspace_path(remote)?;
        effects.push(Effect::Put { local, remote });
        Ok(())
    }

    /// `/get PATH [FILE]`: never over a file here without asking.
    pub(crate) fn get_file(
        &mut self,
        remote: &str,
        local: String,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        let remote = cp::workspace_path(remote)?;
        if cp::file_name(&remote).is_none() {
            return Err(format!(
                "/get {}: that is a folder; name a file in it",
                cp::shown(&remote)
            ));
        }
        effects.push(Effect::Get {
            remote,
            local,
            replace: false,
        });
        Ok(())
    }

    /// `/get` found a file where it would write: ask.
    pub(crate) fn ask_overwrite(&mut self, file: Overwrite) {
        self.overwrite = Some(file);
        if self.modals.last() != Some(&Modal::ConfirmOverwrite) {
            self.modals.push(Modal::ConfirmOverwrite);
        }
    }

    /// The answer to "Overwrite?": replace the file, or keep it and say so.
    pub(crate) fn answer_overwrite(&mut self, replace: bool, effects: &mut Vec<Effect>) {
        self.modals.retain(|m| *m != Modal::ConfirmOverwrite);
        let Some(file) = self.overwrite.take() else {
            return;
        };
        if replace {
            effects.push(Effect::Get {
                remote: file.remote,
                local: file.to.display().to_string(),
                replace: true,
            });
        } else {
            self.toast(
                format!(
                    "kept {}: {} was not downloaded",
                    file.name(),
                    cp::shown(&file.remote)
                ),
                false,
            );
        }
    }
}
