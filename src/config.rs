//! Client settings: flags beat the environment (both through clap), which
//! beat the config file (`duet.toml` in the XDG config directory), which
//! beats the defaults. One struct, resolved once at start.

use crate::cli::ClientArgs;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What `duet.toml` may set. Every key is optional; unknown keys are refused
/// so that a typo is reported instead of silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Backend URL, e.g. `http://127.0.0.1:8787`.
    pub server: Option<String>,
    /// Room to join when none is given.
    pub room: Option<String>,
    /// Bearer token of the backend.
    pub token: Option<String>,
    /// Your name in rooms.
    pub name: Option<String>,
    /// Data directory of the embedded backend.
    pub data_dir: Option<PathBuf>,
}

/// Why the config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
}

/// The client's settings after every source was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// `None`: use (or start) the embedded backend of `data_dir`.
    pub server: Option<String>,
    /// `None`: no room was named anywhere.
    pub room: Option<String>,
    pub token: Option<String>,
    /// Never empty: `$USER` or `guest` when nothing else names one.
    pub name: String,
    /// The data directory of the embedded backend.
    pub data_dir: PathBuf,
    /// Whether `data_dir` is the default one (the join hint can omit it).
    pub default_data_dir: bool,
}

impl FileConfig {
    /// Parses the text of a config file.
    pub fn parse(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
        toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: path.to_path_buf(),
            message: err.message().to_string(),
        })
    }

    /// Reads `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => FileConfig::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
}

/// `$XDG_CONFIG_HOME/duet/duet.toml`, else `~/.config/duet/duet.toml`.
pub fn config_path() -> Option<PathBuf> {
    xdg_dir("XDG_CONFIG_HOME", ".config").map(|d| d.join("duet").join("duet.toml"))
}

/// `$XDG_DATA_HOME/duet`, else `~/.local/share/duet`, else `./.duet`.
pub fn default_data_dir() -> PathBuf {
    xdg_dir("XDG_DATA_HOME", ".local/share")
        .map(|d| d.join("duet"))
        .unwrap_or_else(|| PathBuf::from(".duet"))
}

fn xdg_dir(var: &str, home_rel: &str) -> Option<PathBuf> {
    let set = |v: Option<std::ffi::OsString>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    set(std::env::var_os(var)).or_else(|| set(std::env::var_os("HOME")).map(|h| h.join(home_rel)))
}

/// The default name: `$USER`, else `guest`.
pub fn default_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| crate::protocol::name_problem(u).is_none())
        .unwrap_or_else(|| "guest".to_string())
}

/// Applies the layers: `args` (flags, then environment, via clap), then
/// `file`, then defaults. `data_dir` is the flag/env value of the data
/// directory, if any.
pub fn resolve(args: &ClientArgs, data_dir: Option<PathBuf>, file: &FileConfig) -> ClientSettings {
    let pick = |a: &Option<String>, f: &Option<String>| {
        a.clone()
            .or_else(|| f.clone())
            .filter(|s| !s.trim().is_empty())
    };
    let chosen_dir = data_dir.or_else(|| file.data_dir.clone());
    ClientSettings {
        server: pick(&args.server, &file.server).map(|s| s.trim_end_matches('/').to_string()),
        room: pick(&args.room, &file.room),
        token: pick(&args.token, &file.token),
        name: pick(&args.name, &file.name).unwrap_or_else(default_name),
        default_data_dir: chosen_dir.is_none(),
        data_dir: chosen_dir.unwrap_or_else(default_data_dir),
    }
}

/// Reads the config file (if any) and resolves the settings.
pub fn load(args: &ClientArgs, data_dir: Option<PathBuf>) -> Result<ClientSettings, ConfigError> {
    let file = match config_path() {
        Some(path) => FileConfig::load(&path)?,
        None => FileConfig::default(),
    };
    Ok(resolve(args, data_dir, &file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(server: Option<&str>, name: Option<&str>) -> ClientArgs {
        ClientArgs {
            server: server.map(str::to_string),
            room: None,
            token: None,
            name: name.map(str::to_string),
        }
    }

    #[test]
    fn flags_beat_the_file_which_beats_defaults() {
        let file = FileConfig::parse(
            "server = \"http://file:1\"\nroom = \"r1\"\nname = \"filer\"\n",
            Path::new("duet.toml"),
        )
        .unwrap();
        let s = resolve(&args(Some("http://flag:2/"), None), None, &file);
        assert_eq!(s.server.as_deref(), Some("http://flag:2"));
        assert_eq!(s.room.as_deref(), Some("r1"));
        assert_eq!(s.name, "filer");
        assert!(s.default_data_dir);
        let s = resolve(&args(None, Some("ada")), None, &FileConfig::default());
        assert_eq!(s.server, None);
        assert_eq!(s.name, "ada");
    }

    #[test]
    fn a_typo_in_the_file_is_reported() {
        let err = FileConfig::parse("sever = \"x\"", Path::new("/c/duet.toml")).unwrap_err();
        assert!(err.to_string().contains("/c/duet.toml"), "{err}");
        assert!(err.to_string().contains("sever"), "{err}");
    }

    #[test]
    fn the_example_config_parses() {
        let text = include_str!("../assets/duet.toml");
        FileConfig::parse(text, Path::new("assets/duet.toml")).unwrap();
    }
}
