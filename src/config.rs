//! Client settings: flags beat the environment (both through clap), which
//! beat the config file (`duet.toml` in the XDG config directory), which
//! beats the defaults. One struct, resolved once at start.

use serde::Deserialize;
use serde::de::DeserializeOwned;
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
    /// The embedded backend's model: base URL of an OpenAI-compatible API
    /// (`DUET_AI_URL` beats it).
    pub ai_url: Option<String>,
    /// The model's name (`DUET_AI_MODEL` beats it).
    pub ai_model: Option<String>,
    /// The API key of the model's service (`DUET_AI_KEY` beats it).
    pub ai_key: Option<String>,
    /// The terminal client's colours: `dark` or `light` (`DUET_THEME`
    /// beats it). Read by the terminal client (`tui::settings`) from the
    /// same text, see [`load_with`].
    pub theme: Option<toml::Value>,
    /// The terminal client's keys: action = key(s) (`tui::settings`).
    pub keys: Option<toml::Value>,
}

/// Where a client finds its room, as the command line gives it (flags,
/// then the environment); `None`: not given there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    pub server: Option<String>,
    pub room: Option<String>,
    pub token: Option<String>,
    pub name: Option<String>,
}

/// The embedded backend's model as the config file names it (the
/// `DUET_AI_*` variables, read where the backend starts, beat it).
#[derive(Clone, Default, PartialEq)]
pub struct ModelSettings {
    pub url: Option<String>,
    pub model: Option<String>,
    pub key: Option<String>,
}

impl std::fmt::Debug for ModelSettings {
    /// The key is a secret: never in a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSettings")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Why the config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}{at} is not valid: {message}", at = at_line(*line, *column))]
    Parse {
        path: PathBuf,
        /// Where the mistake is (1-based), when the parser knows.
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    #[error("no data directory: pass --data-dir DIR (or set DUET_DATA_DIR or HOME)")]
    NoDataDir,
}

/// ` at line L, column C` when both are known.
fn at_line(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
        _ => String::new(),
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(start..).map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The client's settings after every source was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// `None`: use (or start) the embedded backend of `data_dir`.
    pub server: Option<String>,
    /// `None`: no room was named anywhere.
    pub room: Option<String>,
    pub token: Option<String>,
    /// Never empty: the login name (`default_name`) when nothing else
    /// names one.
    pub name: String,
    /// The data directory of the embedded backend.
    pub data_dir: PathBuf,
    /// Whether `data_dir` is the default one (the come-back line can omit it).
    pub default_data_dir: bool,
    /// The embedded backend's model, from the config file.
    pub model: ModelSettings,
    /// Where the config file is looked for (whether or not it exists).
    pub config_file: Option<PathBuf>,
}

impl FileConfig {
    /// Parses the text of a config file.
    pub fn parse(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
        parse_as(text, path)
    }

    /// Reads `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        match read(path)? {
            Some(text) => FileConfig::parse(&text, path),
            None => Ok(FileConfig::default()),
        }
    }
}

/// Parses the text of a config file as `T` (the whole file, or the part a
/// layer above reads: the terminal client's); a mistake is located.
pub fn parse_as<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|err| {
        let (line, column) = match err.span() {
            Some(span) => {
                let (line, column) = line_and_column(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ConfigError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: err.message().trim_end().to_string(),
        }
    })
}

/// The text of `path`; `None` when there is no such file.
fn read(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Where Duet keeps its files unless told otherwise: the XDG base
/// directories (`$XDG_CONFIG_HOME`, else `~/.config`; `$XDG_DATA_HOME`,
/// else `~/.local/share`), the same on every platform. The one place both
/// the client and `duet serve` take them from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultDirs {
    /// `…/duet/duet.toml` in the config directory.
    pub config_file: PathBuf,
    /// `…/duet` in the data directory.
    pub data_dir: PathBuf,
}

/// The default directories; `None` when no home directory can be found.
pub fn default_dirs() -> Option<DefaultDirs> {
    use etcetera::base_strategy::BaseStrategy;
    let xdg = etcetera::base_strategy::Xdg::new().ok()?;
    Some(DefaultDirs {
        config_file: xdg.config_dir().join("duet").join("duet.toml"),
        data_dir: xdg.data_dir().join("duet"),
    })
}

/// The default data directory (`duet serve` and the embedded backend).
pub fn default_data_dir() -> Option<PathBuf> {
    default_dirs().map(|d| d.data_dir)
}

/// Where the client remembers what it synced (`duet push`'s manifests):
/// `$XDG_STATE_HOME/duet` (else `~/.local/state/duet`); `None` when no
/// home directory can be found.
pub fn default_state_dir() -> Option<PathBuf> {
    use etcetera::base_strategy::BaseStrategy;
    let xdg = etcetera::base_strategy::Xdg::new().ok()?;
    Some(
        xdg.state_dir()
            .unwrap_or_else(|| xdg.data_dir())
            .join("duet"),
    )
}

/// The default name: the login name (`$USER`, `$LOGNAME`, else the
/// account's name in the system's user database: a service or `env -i`
/// sets neither variable), `guest` only when none is a usable name.
pub fn default_name() -> String {
    let usable = |name: &String| crate::protocol::name_problem(name).is_none();
    ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(usable)
        .or_else(|| account_name().filter(usable))
        .unwrap_or_else(|| "guest".to_string())
}

/// This process's account name, from the user database.
#[cfg(target_os = "linux")]
fn account_name() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.name)
}

/// No user database is read here.
#[cfg(not(target_os = "linux"))]
fn account_name() -> Option<String> {
    None
}

/// Applies the layers: `args` (flags, then environment, via clap), then
/// `file`, then defaults. `data_dir` is the flag/env value of the data
/// directory, if any; `default_dir` the default one, if there is one.
pub fn resolve(
    args: &Flags,
    data_dir: Option<PathBuf>,
    file: &FileConfig,
    default_dir: Option<PathBuf>,
) -> Result<ClientSettings, ConfigError> {
    let pick = |a: &Option<String>, f: &Option<String>| {
        a.clone()
            .or_else(|| f.clone())
            .filter(|s| !s.trim().is_empty())
    };
    let chosen_dir = data_dir.or_else(|| file.data_dir.clone());
    let default_data_dir = chosen_dir.is_none();
    Ok(ClientSettings {
        server: pick(&args.server, &file.server).map(|s| s.trim_end_matches('/').to_string()),
        room: pick(&args.room, &file.room),
        token: pick(&args.token, &file.token),
        name: pick(&args.name, &file.name).unwrap_or_else(default_name),
        default_data_dir,
        data_dir: chosen_dir.or(default_dir).ok_or(ConfigError::NoDataDir)?,
        model: ModelSettings {
            url: pick(&None, &file.ai_url),
            model: pick(&None, &file.ai_model),
            key: pick(&None, &file.ai_key),
        },
        config_file: None,
    })
}

/// Reads the config file (if any) and resolves the settings.
pub fn load(args: &Flags, data_dir: Option<PathBuf>) -> Result<ClientSettings, ConfigError> {
    load_with::<serde::de::IgnoredAny>(args, data_dir).map(|(settings, _)| settings)
}

/// [`load`], and `U` read from the same file: what a layer above takes
/// from it (the terminal client's theme and keys), its mistakes located
/// as the rest's.
pub fn load_with<U: DeserializeOwned + Default>(
    args: &Flags,
    data_dir: Option<PathBuf>,
) -> Result<(ClientSettings, U), ConfigError> {
    let dirs = default_dirs();
    let text = match &dirs {
        Some(dirs) => read(&dirs.config_file)?,
        None => None,
    };
    let (file, extra) = match (&text, &dirs) {
        (Some(text), Some(dirs)) => (
            FileConfig::parse(text, &dirs.config_file)?,
            parse_as(text, &dirs.config_file)?,
        ),
        _ => (FileConfig::default(), U::default()),
    };
    let config_file = dirs.as_ref().map(|d| d.config_file.clone());
    let settings = resolve(args, data_dir, &file, dirs.map(|d| d.data_dir))?;
    Ok((
        ClientSettings {
            config_file,
            ..settings
        },
        extra,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(server: Option<&str>, name: Option<&str>) -> Flags {
        Flags {
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
        let default = Some(PathBuf::from("/home/ada/.local/share/duet"));
        let s = resolve(
            &args(Some("http://flag:2/"), None),
            None,
            &file,
            default.clone(),
        )
        .unwrap();
        assert_eq!(s.server.as_deref(), Some("http://flag:2"));
        assert_eq!(s.room.as_deref(), Some("r1"));
        assert_eq!(s.name, "filer");
        assert!(s.default_data_dir);
        assert_eq!(s.data_dir, PathBuf::from("/home/ada/.local/share/duet"));
        let s = resolve(
            &args(None, Some("ada")),
            None,
            &FileConfig::default(),
            default,
        )
        .unwrap();
        assert_eq!(s.server, None);
        assert_eq!(s.name, "ada");
        let flag = Some(PathBuf::from("/d"));
        let s = resolve(&args(None, None), flag, &FileConfig::default(), None).unwrap();
        assert!(!s.default_data_dir);
        let none = resolve(&args(None, None), None, &FileConfig::default(), None);
        assert!(matches!(none, Err(ConfigError::NoDataDir)));
    }

    #[test]
    fn the_default_dirs_follow_xdg() {
        // The test process's own environment: whatever it is, both paths
        // come from the same base directories.
        if let Some(dirs) = default_dirs() {
            assert!(dirs.config_file.ends_with("duet/duet.toml"));
            assert!(dirs.data_dir.ends_with("duet"));
            assert!(dirs.config_file.is_absolute() && dirs.data_dir.is_absolute());
        }
    }

    #[test]
    fn the_file_names_the_embedded_backends_model() {
        let file = FileConfig::parse(
            "ai_url = \"http://127.0.0.1:11434/v1\"\nai_model = \"llama3.2\"\nai_key = \"sk-1\"\n",
            Path::new("duet.toml"),
        )
        .unwrap();
        let s = resolve(&args(None, None), Some("/d".into()), &file, None).unwrap();
        assert_eq!(s.model.url.as_deref(), Some("http://127.0.0.1:11434/v1"));
        assert_eq!(s.model.model.as_deref(), Some("llama3.2"));
        assert_eq!(s.model.key.as_deref(), Some("sk-1"));
        assert!(!format!("{:?}", s.model).contains("sk-1"), "no key in logs");
    }

    #[test]
    fn a_typo_in_the_file_is_reported() {
        let err = FileConfig::parse("sever = \"x\"", Path::new("/c/duet.toml")).unwrap_err();
        assert!(err.to_string().contains("/c/duet.toml"), "{err}");
        assert!(err.to_string().contains("sever"), "{err}");
        // The file, line and column of the mistake.
        let text = "# mine\nroom = \"r\"\nname = ada\n";
        let err = FileConfig::parse(text, Path::new("/c/duet.toml")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/c/duet.toml at line 3, column 8 is not valid: "),
            "{err}"
        );
    }

    #[test]
    fn the_example_config_parses() {
        let text = include_str!("../assets/duet.toml");
        FileConfig::parse(text, Path::new("assets/duet.toml")).unwrap();
    }
}
