//! What a user installs beside the binary: shell completions and the
//! manual page, both made from the command line's own definition (so they
//! never drift from `--help`).

use std::io::Write;
use std::process::ExitCode;

/// `duet completions SHELL`: the completion script for SHELL on stdout.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "duet", &mut script);
    print(&script)
}

/// `duet man`: the manual page (roff) on stdout; `man -l -` reads it.
pub fn man() -> ExitCode {
    let mut page = Vec::new();
    match render(&mut page) {
        Ok(()) => print(&page),
        Err(err) => {
            eprintln!("duet: cannot write the manual: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The page: clap's sections, then what clap does not know (the
/// environment read outside the flags, the files).
fn render(out: &mut Vec<u8>) -> std::io::Result<()> {
    let page = clap_mangen::Man::new(super::command())
        .title("DUET")
        .section("1")
        .manual("Duet")
        .source(format!("duet {}", env!("CARGO_PKG_VERSION")));
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    page.render_subcommands_section(out)?;
    out.write_all(EXTRA_SECTIONS.as_bytes())?;
    page.render_version_section(out)
}

/// The sections clap cannot make (roff; `\-` is a hyphen that man keeps).
const EXTRA_SECTIONS: &str = r#".SH ENVIRONMENT
.TP
\fBDUET_LOG\fR
What goes to the log: a tracing filter such as \fBinfo\fR (the default), \fBdebug\fR or \fBduet=debug,info\fR. The TUI logs to \fIduet.log\fR in the data directory; \fBduet serve\fR to its standard error.
.TP
\fBNO_COLOR\fR
When set (to anything), the TUI and \fBduet serve\fR use no colours.
.TP
\fBDUET_SERVER\fR, \fBDUET_ROOM\fR, \fBDUET_TOKEN\fR, \fBDUET_NAME\fR, \fBDUET_DATA_DIR\fR
As the flags of the same names; every \fBduet serve\fR flag has its \fBDUET_*\fR variable too (\fBduet serve \-\-help\fR).
.SH FILES
.TP
\fI$XDG_CONFIG_HOME/duet/duet.toml\fR
The client's settings (server, room, token, name, data_dir, the embedded backend's model); flags and the environment beat it.
.TP
\fI$XDG_DATA_HOME/duet\fR
The data directory: rooms, workspaces, the embedded backend's token, port and lock, and \fIduet.log\fR (rotated: one \fIduet.log.1\fR is kept).
.TP
\fI$XDG_STATE_HOME/duet/synced\fR
What \fBduet push\fR and \fBduet pull\fR last synced with each room (size, mtime and hash of each local file): a pull asks before it replaces a file that changed since.
"#;

/// Writes `bytes` to stdout; a reader that went away (`| head`) is no
/// error.
fn print(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("duet: cannot write to stdout: {err}");
            ExitCode::FAILURE
        }
    }
}
