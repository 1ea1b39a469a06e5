//! The status bar (room, your name, connection, people, the shell's
//! directory, the host folder the room works on, the shared terminal's
//! size, your role when not an owner, the approval policy when not auto,
//! the agent's model and the tokens its replies here cost, how many
//! background processes run, how to join, server), the presence
//! column (with roles once they differ) and the hints line (messages
//! queued while offline, "X is typing" or key hints, the current mode's
//! marked).

use crate::client::socket::ConnState;
use crate::tui::app::App;
use crate::tui::composer::Mode;
use crate::tui::keymap::{self, Action};
use crate::tui::text::{truncate, width};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// The connection as words and a style.
pub fn connection(app: &App) -> (String, ratatui::style::Style) {
    let theme = app.theme;
    match &app.conn {
        ConnState::Connecting => ("◌ connecting".into(), theme.warn()),
        ConnState::Connected { rtt_ms: Some(ms) } => (format!("● connected {ms} ms"), theme.ok()),
        ConnState::Connected { rtt_ms: None } => ("● connected".into(), theme.ok()),
        ConnState::Reconnecting { in_secs, .. } => {
            (format!("◌ reconnecting in {in_secs} s"), theme.warn())
        }
        ConnState::Offline(why) => (format!("✗ offline: {why}"), theme.error()),
    }
}

/// One part of the status bar: the forms it can take, longest first (an
/// empty one drops it), and when it gives way to the others.
struct Part {
    forms: Vec<String>,
    style: Style,
    /// The rank of each shortening step (the last repeats): the step with
    /// the lowest rank of all parts is taken first.
    gives_way: &'static [u8],
}

impl Part {
    /// The rank of this part's next shortening step, if it has one.
    fn next_step(&self, taken: usize) -> Option<u8> {
        (self.forms.len() > 1).then(|| {
            let last = self.gives_way.len().saturating_sub(1);
            self.gives_way.get(taken.min(last)).copied().unwrap_or(0)
        })
    }
}

/// Draws the status bar: room, who you are, connection, people, the
/// shell's directory, how to join, the server. When it does not fit,
/// parts give way in turn: the round trip, the server, the names of who
/// is here, your name, the directory (shortened step by step), the word
/// "join:", the connection's words, the count. Online, the join hint stays
/// whole and runnable (only alone is it cut); offline, who was here (and
/// as of when) matters more than how to join.
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let bar = theme.status();
    let (conn, conn_style) = connection(app);
    let online = matches!(app.conn, ConnState::Connected { .. });
    let symbol = conn
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let (count, names) = here(app);
    let part = |forms: Vec<String>, gives_way: &'static [u8]| Part {
        forms,
        style: bar,
        gives_way,
    };
    let hint = app.session.join_hint();
    let mut parts = vec![
        Part {
            style: bar.add_modifier(Modifier::BOLD),
            ..part(vec![format!(" {} ", app.session.room)], &[9])
        },
        part(
            vec![format!("as {} ", app.session.name), String::new()],
            if online { &[8] } else { &[5] },
        ),
        // The round trip is the first thing to go, the connection's words
        // late; its symbol stays.
        Part {
            style: bar.patch(conn_style),
            ..match app.conn {
                ConnState::Connected { rtt_ms: Some(_) } => {
                    part(vec![conn, "● connected".into(), symbol], &[1, 3])
                }
                _ => part(vec![conn, symbol], if online { &[3] } else { &[7] }),
            }
        },
        // Who is here: the names go early; the count, online, after the
        // join hint's words; offline, who was here (and as of when)
        // outlasts the rest.
        part(count, if online { &[8] } else { &[9] }),
        part(vec![names, String::new()], if online { &[3] } else { &[6] }),
    ];
    if let Some(cwd) = &app.shell_cwd {
        let forms = dir_forms(cwd).into_iter().map(|f| format!(" · cwd {f}"));
        parts.push(part(forms.chain([String::new()]).collect(), &[5]));
    }
    // The host folder the room works on: its end says which it is.
    if let Some(folder) = &app.session.folder {
        let forms = folder_forms(folder)
            .into_iter()
            .map(|f| format!(" · on {f}"));
        parts.push(part(forms.chain([String::new()]).collect(), &[4, 5, 7]));
    }
    if let Some(terminal) = &app.term.running {
        parts.push(part(
            vec![
                format!(" · terminal {}×{}", terminal.cols, terminal.rows),
                " · terminal".into(),
                String::new(),
            ],
            &[3, 5],
        ));
    }
    // Who you are, when not an owner; the policy, when not auto.
    let role = app.role();
    if role != crate::protocol::RoomRole::Owner {
        parts.push(Part {
            style: bar.patch(theme.warn()),
            ..part(vec![format!(" · {role}")], &[9])
        });
    }
    let policy = app.approvals.policy;
    if policy != crate::protocol::Policy::Auto {
        let waiting = app.approvals.open.len();
        let long = match waiting {
            0 => format!(" · policy {}", policy.as_str()),
            n => format!(" · policy {} ({n} waiting)", policy.as_str()),
        };
        parts.push(Part {
            style: bar.patch(theme.warn()),
            ..part(vec![long, format!(" · policy {}", policy.as_str())], &[5])
        });
    }
    // The agent's model, and what the replies here cost.
    if let Some(model) = app.room_model() {
        parts.push(part(
            vec![
                format!(" · model {model}"),
                format!(" · {model}"),
                String::new(),
            ],
            &[4, 6],
        ));
    }
    if let Some(usage) = app.session_usage() {
        let total = usage.prompt_tokens + usage.completion_tokens;
        parts.push(part(
            vec![
                format!(
                    " · {} in · {} out",
                    crate::text::tokens(usage.prompt_tokens),
                    crate::text::tokens(usage.completion_tokens)
                ),
                format!(" · {} tok", crate::text::tokens(total)),
                String::new(),
            ],
            &[3, 4],
        ));
    }
    let running = app.procs.running();
    if running > 0 {
        let procs = if running == 1 { "proc" } else { "procs" };
        parts.push(part(
            vec![format!(" · {running} {procs}"), String::new()],
            &[4],
        ));
    }
    // Online, the hint is never dropped (only cut, when alone); offline
    // it goes before who was here.
    parts.push(part(
        [
            format!(" · join: {hint} (F6: link)"),
            format!(" · join: {hint}"),
            format!(" · {hint}"),
        ]
        .into_iter()
        .chain((!online).then(String::new))
        .collect(),
        if online { &[2, 6] } else { &[2, 3] },
    ));
    parts.push(part(
        vec![format!(" · {}", app.session.server), String::new()],
        &[2],
    ));
    let total = usize::from(area.width);
    let used = |parts: &[Part]| parts.iter().map(|p| width(&p.forms[0])).sum::<usize>();
    let mut taken = vec![0; parts.len()];
    while used(&parts) > total {
        let next = (0..parts.len())
            .filter_map(|i| parts[i].next_step(taken[i]).map(|rank| (rank, i)))
            .min();
        match next {
            Some((_, i)) => {
                parts[i].forms.remove(0);
                taken[i] += 1;
            }
            None => break,
        }
    }
    let mut spans = Vec::new();
    let mut used = 0;
    for part in parts {
        let text = &part.forms[0];
        let w = width(text);
        if used + w > total {
            let left = total.saturating_sub(used);
            if left > 1 {
                spans.push(Span::styled(truncate(text, left), part.style));
                used += left;
            }
            break;
        }
        used += w;
        spans.push(Span::styled(text.clone(), part.style));
    }
    spans.push(Span::styled(" ".repeat(total.saturating_sub(used)), bar));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The shorter and shorter ways to write a directory: whole, with
/// `/workspace` as `~w`, then cut from the left at each `/` (`…/src/app`,
/// `…/app`): the end of a path says where one is.
pub fn dir_forms(dir: &str) -> Vec<String> {
    let mut forms = vec![dir.to_string()];
    let short = match dir.strip_prefix(crate::protocol::WORKSPACE) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~w{rest}"),
        _ => dir.to_string(),
    };
    let cuts = short
        .match_indices('/')
        .map(|(i, _)| &short[i..])
        .filter(|tail| tail.len() > 1 && tail.len() < short.len())
        .map(|tail| format!("…{tail}"));
    forms.push(short.clone());
    forms.extend(cuts);
    forms.dedup();
    forms
}

/// The shorter and shorter ways to write a host folder: whole, then cut
/// from the left at each `/` (`…/src/app`, `…/app`).
fn folder_forms(dir: &str) -> Vec<String> {
    let mut forms = vec![dir.to_string()];
    forms.extend(
        dir.match_indices('/')
            .map(|(i, _)| &dir[i..])
            .filter(|tail| tail.len() > 1 && tail.len() < dir.len())
            .map(|tail| format!("…{tail}")),
    );
    forms
}

/// The forms of `· 2 here`: with the names when there is no presence
/// column, and "(as of 14:02, offline)" while the connection is down.
fn here(app: &App) -> (Vec<String>, String) {
    let people = app.presence.len();
    let (stale, stale_short) = match app.presence_as_of() {
        Some(ts) => (
            format!(" (as of {}, offline)", crate::tui::cell::clock(ts, app.tz)),
            " (offline)".to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let count = format!(" · {people} here{stale}");
    let short = format!(" · {people} here{stale_short}");
    if app.size.0 >= crate::tui::view::layout::WIDE || people == 0 {
        return (vec![count, short, String::new()], String::new());
    }
    let mut names: Vec<&str> = app.presence.iter().map(|u| u.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    (
        vec![count, short, String::new()],
        format!(": {}", names.join(", ")),
    )
}

/// Draws the presence column (wide layout).
pub fn draw_presence(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    frame.render_widget(
        Block::default()
            .borders(Borders::TOP | Borders::LEFT)
            .border_style(theme.border())
            .title(Span::styled(
                format!(" Here {} ", app.presence.len()),
                theme.dim(),
            )),
        area,
    );
    let inner = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(1),
        height: area.height.saturating_sub(1),
    };
    let avail = usize::from(inner.width).saturating_sub(1);
    // Offline: these are the people as of when the connection dropped.
    let stale = app.presence_as_of().map(|ts| {
        Line::styled(
            truncate(
                &format!("as of {}", crate::tui::cell::clock(ts, app.tz)),
                avail,
            ),
            theme.warn(),
        )
    });
    let roles = app
        .presence
        .iter()
        .any(|u| u.role != crate::protocol::RoomRole::Owner);
    let lines: Vec<Line> = stale
        .into_iter()
        .chain(app.presence.iter().map(|user| {
            let me = user.id == app.session.connection_id;
            let typing = app.typing.iter().any(|t| t.id == user.id);
            let mark = if typing { "✎" } else { "●" };
            // Roles show once they differ (a room of owners has none).
            let role = if roles {
                format!(" {}", user.role)
            } else {
                String::new()
            };
            // Where "name (you) role" does not fit, "(you)" gives way (you
            // are in bold), then the name is cut: never a word in half.
            let room_for = avail.saturating_sub(2 + width(&role)).max(1);
            let you = format!("{} (you)", user.name);
            let label = if me && width(&you) <= room_for {
                you
            } else {
                truncate(&user.name, room_for)
            };
            let style = if me {
                theme.person(&user.name).add_modifier(Modifier::BOLD)
            } else {
                theme.person(&user.name)
            };
            Line::from(vec![
                Span::styled(format!("{mark} "), theme.person(&user.name)),
                Span::styled(label, style),
                Span::styled(role, theme.dim()),
            ])
        }))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Draws "X is typing…" or, when nobody types, the key hints.
pub fn draw_hints(frame: &mut Frame, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = app.theme;
    let total = usize::from(area.width);
    let line = if let Some(first) = app.outbox.first() {
        let more = match app.outbox.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let first = first.lines().next().unwrap_or_default();
        let text = if matches!(app.conn, ConnState::Connected { .. }) {
            format!("⧗ sending{more}: {first}")
        } else {
            format!("⧗ queued, sends when back online{more}: {first}")
        };
        Line::styled(truncate(&text, total), theme.warn())
    } else if !app.typing.is_empty() {
        let names: Vec<&str> = app.typing.iter().map(|t| t.name.as_str()).collect();
        let text = match names.as_slice() {
            [one] => format!("{one} is typing…"),
            [a, b] => format!("{a} and {b} are typing…"),
            _ => format!("{} people are typing…", names.len()),
        };
        Line::styled(truncate(&text, total), theme.dim())
    } else if app.terminal_focused() {
        let back = crate::client::term::DETACH_LABEL;
        let text = if app.may(crate::tui::roles::Deed::TypeIntoTerminal).is_err() {
            format!(
                "the terminal is view-only for {}: your keys are not sent · {back} gives them back to the input",
                app.role().with_article()
            )
        } else if app.term.running.is_none() {
            format!(
                "the terminal has ended: your keys are not sent · {} opens a new one",
                crate::tui::term_view::toggle_key()
            )
        } else {
            format!("keys go to the room's terminal · {back} gives them back to the input")
        };
        Line::styled(truncate(&text, total), theme.warn())
    } else {
        let mut spans = Vec::new();
        let mut used = 0;
        let current = match app.composer.mode {
            Mode::Ask => Action::ModeAsk,
            Mode::Room => Action::ModeRoom,
            Mode::Run => Action::ModeRun,
        };
        const GAP: &str = "   ";
        for (key, what, action) in keymap::hints() {
            // Only whole hints: `KEY what`, a gap between them.
            let gap = if spans.is_empty() { 0 } else { GAP.len() };
            let w = gap + width(&key) + 1 + width(what);
            if used + w > total {
                break;
            }
            used += w;
            let what_style = if action == current {
                theme.focused().add_modifier(Modifier::BOLD)
            } else if !app.may_key(action) {
                theme.dim().add_modifier(Modifier::CROSSED_OUT)
            } else {
                theme.dim()
            };
            if gap > 0 {
                spans.push(Span::raw(GAP));
            }
            spans.push(Span::styled(key, theme.command()));
            spans.push(Span::styled(format!(" {what}"), what_style));
        }
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}
