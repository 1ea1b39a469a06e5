//! The tmux harness every end-to-end test of the terminal client shares:
//! a private tmux server, the real `duet` binary in its sessions, keys
//! typed as a person would, and screens read back as text.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long a screen may take to show what is expected.
pub const SCREEN_WAIT: Duration = Duration::from_secs(60);

/// A private tmux server, killed when dropped.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// A tmux server with its socket in `dir`; `Err` when tmux is missing.
    pub fn try_new(dir: &Path) -> Result<Tmux, String> {
        match Command::new("tmux").arg("-V").output() {
            Ok(out) if out.status.success() => Ok(Tmux {
                socket: dir.join("tmux.sock"),
            }),
            _ => Err("tmux is not installed (apt-get install tmux)".into()),
        }
    }

    /// A tmux server for a test, which needs it.
    pub fn new(dir: &Path) -> Tmux {
        Tmux::try_new(dir).unwrap_or_else(|why| panic!("this test needs tmux: {why}"))
    }

    /// Runs a tmux command on this server; answers its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Starts `duet ARGS` with `env` in a new 120×40 session; the shell
    /// says how it ended and stays.
    pub fn start(&self, name: &str, env: &[(&str, String)], args: &str) {
        self.start_sized(name, env, args, (120, 40));
    }

    /// `duet --room ROOM` as `name` with its embedded backend (Ada's
    /// settings, the data shared under `dir`, where other `duet` commands
    /// find the backend), back once it is connected.
    pub async fn start_embedded(&self, dir: &Path, name: &str, room: &str) {
        let env = shared_client_env(dir, "ada");
        self.start(name, &env, &format!("--room {room}"));
        self.wait(name, "a connected client", |s| s.contains("1 here"))
            .await;
    }

    /// Two people's `duet` in `room` of the backend at `url` (their
    /// settings under `dir`), back once each shows both present.
    pub async fn start_pair(&self, dir: &Path, url: &str, room: &str, people: [&str; 2]) {
        let args = format!("--server {url} --room {room}");
        for who in people {
            self.start(who, &client_env(dir, who), &args);
        }
        for who in people {
            self.wait(who, "both people present", |s| s.contains("2 here"))
                .await;
        }
    }

    /// As `start`, in a session of `size` (columns, rows).
    pub fn start_sized(&self, name: &str, env: &[(&str, String)], args: &str, size: (u16, u16)) {
        let line = format!(
            "env {} {} {args}; echo EXITED $?; sleep 600",
            env_words(env),
            env!("CARGO_BIN_EXE_duet")
        );
        self.session(name, &line, size);
    }

    /// A plain shell with `env` in a new session of `size`, `duet` on its
    /// PATH: what a person types there runs as in any terminal.
    pub fn shell(&self, name: &str, env: &[(&str, String)], size: (u16, u16)) {
        let bin = Path::new(env!("CARGO_BIN_EXE_duet"))
            .parent()
            .expect("the binary is in a folder")
            .display()
            .to_string();
        let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
        let line = format!(
            "env {} PATH={path} PS1='$ ' bash --norc --noprofile",
            env_words(env)
        );
        self.session(name, &line, size);
    }

    fn session(&self, name: &str, line: &str, (w, h): (u16, u16)) {
        let (w, h) = (w.to_string(), h.to_string());
        self.run(&["new-session", "-d", "-s", name, "-x", &w, "-y", &h, line]);
    }

    /// Sends keys by tmux name (`Enter`, `C-x`, `PageUp`).
    pub fn keys(&self, name: &str, keys: &[&str]) {
        let target = target(name);
        let mut args = vec!["send-keys", "-t", &target];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Types literal text.
    pub fn type_text(&self, name: &str, text: &str) {
        self.run(&["send-keys", "-t", &target(name), "-l", text]);
    }

    /// The session's screen as text.
    pub fn screen(&self, name: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", &target(name)])
    }

    /// The pid of the one process the pane's shell runs (its `duet`).
    pub fn pane_child(&self, name: &str) -> i32 {
        let shell = self.display(name, "#{pane_pid}");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        children
            .split_whitespace()
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{name}: the pane's shell {shell} runs nothing"))
    }

    /// A format of the session's pane (`#{alternate_on}`, `#{pane_pid}`).
    pub fn display(&self, name: &str, format: &str) -> String {
        self.run(&["display", "-p", "-t", &target(name), format])
            .trim()
            .to_string()
    }

    /// Waits until the screen satisfies `ok`; answers it.
    pub async fn wait(&self, name: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen(name);
            if ok(&screen) {
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("{name}: never showed {what}; the screen:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// `K=V` words for `env`.
fn env_words(env: &[(&str, String)]) -> String {
    let words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    words.join(" ")
}

/// The session called exactly `name` (a bare name may also match a window
/// whose name starts with it, in whichever session tmux finds first).
fn target(name: &str) -> String {
    format!("={name}:")
}

/// The environment of a person's client: its own config and data
/// directories under `dir`, and the name `who`.
pub fn client_env(dir: &Path, who: &str) -> Vec<(&'static str, String)> {
    vec![
        ("XDG_CONFIG_HOME", dir.join("config").display().to_string()),
        (
            "DUET_DATA_DIR",
            dir.join(format!("data-{who}")).display().to_string(),
        ),
        ("DUET_NAME", who.to_string()),
    ]
}

/// A person's client environment whose data directory is `dir/shared`: the
/// one every client (and `duet exec`, `duet term`) of a test shares, so
/// they all find the same embedded backend.
pub fn shared_client_env(dir: &Path, who: &str) -> Vec<(&'static str, String)> {
    let mut env = client_env(dir, who);
    for (key, value) in &mut env {
        if *key == "DUET_DATA_DIR" {
            *value = dir.join("shared").display().to_string();
        }
    }
    env
}
