//! The command line: which part of Duet runs, with which settings.

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod access;
mod ask;
mod backend;
mod checkpoints;
mod exec;
mod files;
mod folder;
mod manual;
mod model;
mod processes;
mod room;
mod rooms;
mod serve;
mod sync;

#[derive(Debug, Parser)]
#[command(
    name = "duet",
    version,
    about = "Pair programming in the terminal: a shared room with an AI agent and a sandbox"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Where `duet` (no subcommand) joins: flags, then environment, then
    /// `duet.toml` in the XDG config directory.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Data directory of the embedded backend started (or joined) when no
    /// --server is given (default: $XDG_DATA_HOME/duet)
    #[arg(long, env = "DUET_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Open a room of the embedded backend on this folder: DIR itself is
    /// its /workspace (no disk quota; what the room makes belongs to DIR's
    /// owner; a cleanup keeps the files). The same folder opens the same
    /// room each time.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Host rooms for a team over HTTP and WebSocket
    Serve(Box<serve::ServeArgs>),
    /// Run a command in a room's sandbox; exits with its exit code
    /// (124 when it timed out, 130 when interrupted)
    Exec(exec::ExecArgs),
    /// Clean a room up: clear its history and destroy its sandbox
    Cleanup(ClientArgs),
    /// Attach this terminal to the room's shared terminal (a shell in its
    /// sandbox that everyone in the room sees and types into), full
    /// screen; Ctrl+] detaches, the shell runs on
    Term(ClientArgs),
    /// Copy a file into or out of the room's workspace:
    /// `duet cp LOCAL :PATH` or `duet cp :PATH LOCAL` (`-` is stdin/stdout)
    Cp(files::CpArgs),
    /// Ask the room's agent; prints the reply as it streams, then the
    /// outputs of its commands; exits non-zero if the turn failed
    Ask(ask::AskArgs),
    /// Join a room by its link, as the status bar of the room's `duet`
    /// shows it: `duet join [https://][TOKEN@]HOST[:PORT]/ROOM`
    Join(room::JoinArgs),
    /// List the room's background processes and the ports something
    /// listens on in its sandbox, with the URL to open each
    Ps(processes::PsArgs),
    /// Start a background process in the room's sandbox (in /workspace;
    /// it outlives this command); prints its id
    Bg(processes::BgArgs),
    /// Print a background process's log (its last 64 KiB of stdout and of
    /// stderr); with -f, follow it until it ends, then exit with its exit
    /// code (143 when it was killed, 1 when unknown)
    Logs(processes::LogsArgs),
    /// Stop a background process (SIGTERM, then SIGKILL after 2 s)
    Kill(processes::KillArgs),
    /// Push a local folder into the room's workspace as one streamed tar:
    /// `duet push [DIR] [:PATH]` (default: `.` into /workspace);
    /// .gitignore and .duetignore honoured, .git/ left home unless --git
    #[command(override_usage = "duet push [OPTIONS] [DIR] [:PATH]")]
    Push(sync::PushArgs),
    /// Pull a workspace folder into a local one: `duet pull [:PATH] [DIR]`
    /// (`-` writes the tar to stdout); asks before replacing local files
    /// that changed since the last push or pull
    #[command(override_usage = "duet pull [OPTIONS] [:PATH] [DIR | -]")]
    Pull(sync::PullArgs),
    /// Print what changed in the workspace since the last push (or a
    /// checkpoint) as a git diff, which `git apply` takes
    Diff(sync::DiffArgs),
    /// List a folder of the room's workspace (default: /workspace):
    /// type, size, modified, name (folders end with /)
    Ls(files::LsArgs),
    /// Delete files of the room's workspace (a folder only with -r)
    Rm(files::RmArgs),
    /// Write the room's whole history: markdown (who said and ran what),
    /// the protocol's JSON, or an asciicast v2 recording of its commands
    /// (`asciinema play FILE`)
    Export(checkpoints::ExportArgs),
    /// Take a checkpoint: a copy of the room's /workspace now, to restore
    /// later (`duet restore NAME`)
    Checkpoint(checkpoints::CheckpointArgs),
    /// List the room's checkpoints (people's and the automatic ones taken
    /// before each agent turn that runs commands)
    Checkpoints(checkpoints::CheckpointsArgs),
    /// Restore a checkpoint: /workspace becomes that copy again; running
    /// commands, background processes and the shared terminal stop first
    Restore(checkpoints::RestoreArgs),
    /// Undo the agent's last turn that ran commands: restores the newest
    /// automatic checkpoint (as `duet restore` does)
    Undo(ClientArgs),
    /// Start a new room from this room's /workspace (or a checkpoint of
    /// it), with an empty history
    Fork(checkpoints::ForkArgs),
    /// Invite someone into the room with a role (viewer, writer, owner):
    /// prints the command they join with; --list shows the room's
    /// invites, --revoke ID ends one (its people are disconnected)
    Invite(access::InviteArgs),
    /// Show the room's approval policy for the agent's commands (and
    /// those waiting), or set it: auto (they run), ask (each waits for a
    /// writer or owner), off (none runs)
    Policy(access::PolicyArgs),
    /// Show the model of the room's agent and those an owner may choose,
    /// or choose one (an owner's): the room's turns use it from then on
    Model(model::ModelArgs),
    /// Approve an agent's command waiting for a person (its id: `duet
    /// policy` lists them)
    Approve(access::ApproveArgs),
    /// Deny an agent's command waiting for a person: it does not run
    Deny(access::ApproveArgs),
    /// Reach a port of the room's sandbox from this machine: listens on
    /// 127.0.0.1:LOCAL and carries each connection to PORT in the sandbox
    /// (any protocol) until Ctrl+C
    Port(processes::PortArgs),
    /// List the backend's rooms (its owner only: the server's token, or
    /// anyone on a backend without one): people here now, last change
    Rooms(rooms::RoomsArgs),
    /// Print the completion script of a shell: e.g. `duet completions
    /// bash > ~/.local/share/bash-completion/completions/duet`
    Completions {
        /// bash, zsh, fish, powershell or elvish
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `duet man | man -l -`, or save it as
    /// duet.1 in a man directory
    Man,
    /// Internal: builds one room's sandbox (started by the server)
    #[command(hide = true)]
    SandboxInit,
}

/// Where a client finds its room; flags beat the environment. The flags
/// are global: `duet --room R ps` and `duet ps --room R` are the same (the
/// one after the subcommand wins when both are given).
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Backend URL, e.g. http://127.0.0.1:8787
    #[arg(long, env = "DUET_SERVER", global = true)]
    pub server: Option<String>,
    /// Room id (1–63 of A-Z a-z 0-9 _ -)
    #[arg(long, env = "DUET_ROOM", global = true)]
    pub room: Option<String>,
    /// Bearer token, when the backend has one
    #[arg(long, env = "DUET_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Your name in the room
    #[arg(long, env = "DUET_NAME", global = true)]
    pub name: Option<String>,
}

/// The data directory the command line names (`--data-dir`, before or
/// after the subcommand, else `DUET_DATA_DIR`), set once after parsing.
static DATA_DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// The data directory the command line names, if it was parsed and names
/// one (see [`DATA_DIR`]).
pub fn data_dir() -> Option<PathBuf> {
    DATA_DIR.get().cloned().flatten()
}

pub use crate::support::local_offset;

/// Parses the command line and runs what it names.
pub fn main() -> ExitCode {
    crate::support::init_local_offset();
    let cli = parse();
    DATA_DIR.get_or_init(|| cli.data_dir.clone());
    match cli.command {
        Some(Command::SandboxInit) => crate::sandbox::helper_main(),
        Some(Command::Completions { shell }) => manual::completions(shell),
        Some(Command::Man) => manual::man(),
        Some(_) if cli.workspace.is_some() => {
            eprintln!(
                "duet: --workspace opens the terminal client: it goes with plain `duet` only"
            );
            ExitCode::from(2)
        }
        Some(Command::Join(args)) => room::join(args, cli.data_dir),
        Some(command) => run_async(command),
        None => room::main(cli.client, cli.data_dir, cli.workspace),
    }
}

/// The global flags a subcommand cannot use, and why: given on the command
/// line (before or after it), they are refused rather than ignored.
const NOT_FOR: &[(&str, &[&str], &str)] = &[
    (
        "completions",
        &["server", "room", "token", "name", "data_dir"],
        "it prints a script and joins no room",
    ),
    (
        "man",
        &["server", "room", "token", "name", "data_dir"],
        "it prints the manual and joins no room",
    ),
    (
        "serve",
        &["server", "room", "name"],
        "`duet serve` hosts rooms and joins none",
    ),
    (
        "join",
        &["server", "room", "token"],
        "the link names the server, the room and the token",
    ),
];

/// The whole command line as clap sees it (help, completions, the manual).
/// The flags of [`NOT_FOR`] are hidden placeholders in their subcommands,
/// so that the global ones are neither shown nor silently taken there.
pub fn command() -> clap::Command {
    let mut command = Cli::command();
    for (sub, ids, _) in NOT_FOR {
        command = command.mut_subcommand(sub, |mut sub| {
            for id in *ids {
                sub = sub.arg(clap::Arg::new(*id).long(flag(id)).hide(true));
            }
            sub
        });
    }
    command
}

/// The long flag of a global argument's id (`data_dir`: `data-dir`).
fn flag(id: &'static str) -> &'static str {
    match id {
        "data_dir" => "data-dir",
        other => other,
    }
}

/// Parses `args`: the global flags count before or after the subcommand;
/// one the subcommand cannot use is an error.
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some((name, sub)) = matches.subcommand()
        && let Some((_, ids, why)) = NOT_FOR.iter().find(|(n, _, _)| *n == name)
        && let Some(id) = ids
            .iter()
            .find(|id| sub.value_source(id) == Some(ValueSource::CommandLine))
    {
        let message = format!("--{} does not apply to `duet {name}`: {why}", flag(id));
        let kind = clap::error::ErrorKind::ArgumentConflict;
        return Err(match command.find_subcommand_mut(name) {
            Some(sub) => sub.error(kind, message),
            None => command.error(kind, message),
        });
    }
    Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut command))
}

/// Parses this process's command line; exits with clap's message (and
/// code 2) when it is wrong.
fn parse() -> Cli {
    try_parse_from(std::env::args_os()).unwrap_or_else(|err| err.exit())
}

/// The multi-threaded runtime every async part of `duet` runs on; its
/// worker threads live as long as the process, which the sandboxes'
/// parent-death signal relies on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("duet: cannot start the async runtime: {err}");
            ExitCode::FAILURE
        })
}

/// The data directory the command line (`--data-dir`, before or after the
/// subcommand) or the environment (`DUET_DATA_DIR`) names.
pub(crate) fn data_dir_from_env() -> Option<PathBuf> {
    data_dir().or_else(|| {
        std::env::var_os("DUET_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(Into::into)
    })
}

impl ClientArgs {
    /// The flags as the settings take them.
    pub fn flags(&self) -> crate::config::Flags {
        crate::config::Flags {
            server: self.server.clone(),
            room: self.room.clone(),
            token: self.token.clone(),
            name: self.name.clone(),
        }
    }
}

/// The client's settings: `args`, the data directory the command line
/// names, then the config file (whose terminal-client part is checked
/// too, so that a mistake in it is reported by every command).
pub(crate) fn settings(
    args: &ClientArgs,
) -> Result<crate::config::ClientSettings, crate::config::ConfigError> {
    settings_and_ui(args, data_dir_from_env()).map(|(settings, _)| settings)
}

/// The settings and the config file's terminal-client part.
pub(crate) fn settings_and_ui(
    args: &ClientArgs,
    data_dir: Option<PathBuf>,
) -> Result<
    (
        crate::config::ClientSettings,
        crate::tui::settings::UiSettings,
    ),
    crate::config::ConfigError,
> {
    crate::config::load_with(&args.flags(), data_dir)
}

/// The HTTP client of the room the settings of `args` name.
pub(crate) fn client(args: &ClientArgs) -> anyhow::Result<crate::client::http::HttpClient> {
    crate::client::commands::client_for(&settings(args)?)
}

fn run_async(command: Command) -> ExitCode {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let result = runtime.block_on(async move {
        match command {
            Command::Serve(args) => crate::server::serve(crate::server::ServeOptions::from(*args))
                .await
                .map(|_| ExitCode::SUCCESS),
            Command::Exec(args) => exec::exec(args).await,
            Command::Cleanup(args) => exec::cleanup(args).await,
            Command::Term(args) => crate::tui::attach::term(&settings(&args)?).await,
            Command::Cp(args) => files::cp(args).await,
            Command::Ask(args) => ask::ask(args).await,
            Command::Ps(args) => processes::ps(args).await,
            Command::Bg(args) => processes::bg(args).await,
            Command::Logs(args) => processes::logs(args).await,
            Command::Kill(args) => processes::kill(args).await,
            Command::Port(args) => processes::port(args).await,
            Command::Rooms(args) => rooms::list(args).await,
            Command::Ls(args) => files::ls(args).await,
            Command::Push(args) => sync::push(args).await,
            Command::Pull(args) => sync::pull(args).await,
            Command::Diff(args) => sync::diff(args).await,
            Command::Export(args) => checkpoints::export(args).await,
            Command::Rm(args) => files::rm(args).await,
            Command::Checkpoint(args) => checkpoints::checkpoint(args).await,
            Command::Checkpoints(args) => checkpoints::list(args).await,
            Command::Restore(args) => checkpoints::restore(args).await,
            Command::Undo(args) => checkpoints::undo(args).await,
            Command::Fork(args) => checkpoints::fork(args).await,
            Command::Invite(args) => access::invite(args).await,
            Command::Policy(args) => access::policy(args).await,
            Command::Model(args) => model::model(args).await,
            Command::Approve(args) => access::decide(args, true).await,
            Command::Deny(args) => access::decide(args, false).await,
            Command::SandboxInit
            | Command::Join(_)
            | Command::Completions { .. }
            | Command::Man => Ok(ExitCode::FAILURE),
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("duet: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        command().debug_assert();
        let cli = try_parse_from([
            "duet",
            "bg",
            "--name",
            "ada",
            "-n",
            "web",
            "--",
            "python3",
            "-m",
            "http.server",
        ])
        .unwrap();
        let Some(Command::Bg(bg)) = cli.command else {
            panic!("bg parses")
        };
        assert_eq!(bg.client.name.as_deref(), Some("ada"));
        assert_eq!(bg.process_name.as_deref(), Some("web"));
        assert_eq!(bg.cmd, ["python3", "-m", "http.server"]);
        assert!(
            try_parse_from(["duet", "port", "0"]).is_err(),
            "ports are 1–65535"
        );
        let cli = try_parse_from(["duet", "checkpoint", "--name", "ada", "before"]).unwrap();
        let Some(Command::Checkpoint(checkpoint)) = cli.command else {
            panic!("checkpoint parses")
        };
        assert_eq!(checkpoint.client.name.as_deref(), Some("ada"));
        assert_eq!(checkpoint.checkpoint.as_deref(), Some("before"));
        let cli = try_parse_from([
            "duet",
            "invite",
            "--role",
            "viewer",
            "--expires",
            "30m",
            "--name",
            "bob",
        ])
        .unwrap();
        let Some(Command::Invite(invite)) = cli.command else {
            panic!("invite parses")
        };
        assert_eq!(invite.role, Some(crate::protocol::RoomRole::Viewer));
        assert_eq!(invite.expires, Some(1_800));
        assert_eq!(invite.name.as_deref(), Some("bob"));
        for bad in [
            &["duet", "invite"][..],
            &["duet", "invite", "--role", "boss"],
            &["duet", "invite", "--role", "viewer", "--expires", "1w"],
            &["duet", "invite", "--list", "--role", "viewer"],
            &["duet", "policy", "maybe"],
        ] {
            let err = try_parse_from(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        assert!(try_parse_from(["duet", "invite", "--list"]).is_ok());
        assert!(try_parse_from(["duet", "invite", "--revoke", "i1"]).is_ok());
        let cli = try_parse_from(["duet", "rm", "-r", "a", "b"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Rm(rm)) if rm.recursive && rm.paths == ["a", "b"])
        );
    }
}
