//! A real browser for the page's tests: Debian's headless Chromium
//! (`chromium-headless-shell`, which scripts/test installs) driven over the
//! DevTools protocol. A small client of our own over tokio-tungstenite
//! (already a dependency): a crate such as chromiumoxide would add
//! hundreds of generated protocol types, minutes of compile time on two
//! cores, for the dozen commands used here.
//!
//! One `Browser` is one Chromium with one page: open a URL, evaluate
//! JavaScript (awaiting promises), wait for a condition with a deadline,
//! type (`Input.insertText`, key events), size the window (1280x800,
//! 390x844), take screenshots, and keep every URL the page requested
//! (`Network.requestWillBeSent`, `Network.webSocketCreated`) and every
//! error it logged (exceptions, CSP violations).

use super::WAIT;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// What the page's connection collects while it runs.
#[derive(Default)]
struct Seen {
    /// Answers awaited, by command id.
    pending: HashMap<u64, oneshot::Sender<Value>>,
    /// Every URL the page requested or opened a socket to.
    requests: Vec<String>,
    /// Exceptions, console errors and the browser's own error log.
    errors: Vec<String>,
}

/// A headless Chromium with one page under test; killed when dropped.
pub struct Browser {
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    out: mpsc::UnboundedSender<Message>,
    seen: Arc<Mutex<Seen>>,
    next_id: AtomicU64,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: signalling the process group this harness created.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

impl Browser {
    /// Starts Chromium on `about:blank` and connects to its page.
    pub async fn start() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = tokio::process::Command::new("chromium-headless-shell")
            .args([
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--hide-scrollbars",
                "--force-color-profile=srgb",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group, so that dropping it ends the zygote and
            // the renderers too, not only the browser process.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("chromium-headless-shell runs (scripts/test installs it)");
        // Chromium writes its port (and browser path) once it listens.
        let active = profile.path().join("DevToolsActivePort");
        let port = super::apps::wait_for("Chromium's DevToolsActivePort", || {
            let active = active.clone();
            async move {
                let text = std::fs::read_to_string(&active).ok()?;
                text.lines().next()?.trim().parse::<u16>().ok()
            }
        })
        .await;
        let list_url = format!("http://127.0.0.1:{port}/json/list");
        let ws_url = super::apps::wait_for("Chromium's page", || {
            let list_url = list_url.clone();
            async move {
                let list: Value = super::http()
                    .get(&list_url)
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                list.as_array()?
                    .iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                    .map(str::to_string)
            }
        })
        .await;
        let (socket, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(&ws_url))
            .await
            .expect("DevTools answers in time")
            .expect("DevTools' socket opens");
        let (mut sink, mut stream) = socket.split();
        let (out, mut outbox) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(msg) = outbox.recv().await {
                if sink.send(msg).await.is_err() {
                    break;
                }
            }
        });
        let seen = Arc::new(Mutex::new(Seen::default()));
        let reader = seen.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                on_message(&reader, value);
            }
        });
        let browser = Browser {
            child,
            _profile: profile,
            out,
            seen,
            next_id: AtomicU64::new(1),
        };
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Network.enable",
            "Log.enable",
        ] {
            browser.call(domain, json!({})).await;
        }
        browser
    }

    /// Sends a DevTools command and answers its `result` (panics on an error).
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.seen.lock().unwrap().pending.insert(id, tx);
        let text = json!({"id": id, "method": method, "params": params}).to_string();
        self.out
            .send(Message::text(text))
            .expect("DevTools' socket is open");
        let answer = tokio::time::timeout(WAIT, rx)
            .await
            .unwrap_or_else(|_| panic!("{method}: no answer in time"))
            .expect("DevTools answers");
        if let Some(error) = answer.get("error") {
            panic!("{method}: {error}");
        }
        answer["result"].clone()
    }

    /// Opens `url` and waits until its document has loaded.
    pub async fn open(&self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).await;
        self.wait_for("the page to load", "document.readyState === 'complete'")
            .await;
    }

    /// The value of a JavaScript expression (a promise is awaited).
    pub async fn eval(&self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy, for up to `WAIT` (a condition,
    /// never a duration); answers its value.
    pub async fn wait_for(&self, what: &str, expression: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let value = self.eval(expression).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
                _ => true,
            };
            if truthy {
                return value;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "timed out waiting for {what} ({expression}); the page says {:?}; errors: {:?}",
                    self.text("body").await,
                    self.errors()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the element `selector` holds `text`.
    pub async fn wait_text(&self, selector: &str, text: &str) {
        let expression = format!(
            "Array.from(document.querySelectorAll({sel})).some(e => e.textContent.includes({text}))",
            sel = json!(selector),
            text = json!(text)
        );
        self.wait_for(&format!("{selector} to show {text:?}"), &expression)
            .await;
    }

    /// The text of the first element `selector` ("" when none).
    pub async fn text(&self, selector: &str) -> String {
        let expression = format!(
            "(document.querySelector({}) || {{}}).textContent || ''",
            json!(selector)
        );
        self.eval(&expression)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Focuses the element `selector`.
    pub async fn focus(&self, selector: &str) {
        let expression = format!("document.querySelector({}).focus()", json!(selector));
        self.eval(&expression).await;
    }

    /// Types `text` into the focused element, as an input method would.
    pub async fn type_text(&self, text: &str) {
        self.call("Input.insertText", json!({ "text": text })).await;
    }

    /// Presses and releases a key: `Enter`, `Escape`, `Backspace`, `ArrowUp`…
    /// (`text` is what it types, if anything: `"\r"` for Enter).
    pub async fn press(&self, key: &str, code: u32, text: Option<&str>) {
        let mut down =
            json!({"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code});
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await;
        let up = json!({"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code});
        self.call("Input.dispatchKeyEvent", up).await;
    }

    /// Presses Enter.
    pub async fn enter(&self) {
        self.press("Enter", 13, Some("\r")).await;
    }

    /// Sizes the window as a desktop's (`mobile: false`) or a phone's.
    pub async fn size(&self, width: u32, height: u32, mobile: bool) {
        let scale = if mobile { 3 } else { 1 };
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}),
        )
        .await;
    }

    /// Saves a PNG of the viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .expect("a screenshot is base64");
        std::fs::write(path, bytes).expect("the screenshot is written");
    }

    /// Every URL the page asked for so far (requests and sockets; a URL's
    /// fragment is never sent, and DevTools leaves it out too).
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().requests.clone()
    }

    /// The errors the page logged so far.
    pub fn errors(&self) -> Vec<String> {
        self.seen.lock().unwrap().errors.clone()
    }
}

/// Files one message of DevTools: an answer, or an event worth keeping.
fn on_message(seen: &Mutex<Seen>, value: Value) {
    let mut seen = seen.lock().unwrap();
    if let Some(id) = value.get("id").and_then(Value::as_u64) {
        if let Some(tx) = seen.pending.remove(&id) {
            let _ = tx.send(value);
        }
        return;
    }
    let params = &value["params"];
    match value["method"].as_str().unwrap_or_default() {
        "Network.requestWillBeSent" => {
            if let Some(url) = params["request"]["url"].as_str() {
                seen.requests.push(url.to_string());
            }
        }
        "Network.webSocketCreated" => {
            if let Some(url) = params["url"].as_str() {
                seen.requests.push(url.to_string());
            }
        }
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("an exception");
            seen.errors.push(text.to_string());
        }
        "Runtime.consoleAPICalled" if params["type"] == "error" => {
            seen.errors.push(params["args"].to_string());
        }
        "Log.entryAdded" if params["entry"]["level"] == "error" => {
            let text = params["entry"]["text"].as_str().unwrap_or_default();
            seen.errors.push(text.to_string());
        }
        _ => {}
    }
}
