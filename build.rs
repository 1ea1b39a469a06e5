//! Embeds the browser page (`assets/web/`, docs/web.md) in the binary: one
//! table of `(file name, bytes)` written to `$OUT_DIR/web_assets.rs`, read
//! by `src/server/web.rs` with `include!`. Every file of the folder is in
//! it, so adding a file to the page needs no change here (the worker
//! lists its files in worker/src/pagefiles.js; a neutral test asks both
//! backends for each). Only Rust: no node, no network.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/web");
    // A folder: cargo looks at every file in it.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut table = String::from("&[\n");
    for name in &names {
        let path = dir.join(name);
        let _ = writeln!(
            table,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    table.push(']');
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("web_assets.rs");
    // Written only when it changed: a new mtime would relink everything
    // that includes it.
    if std::fs::read_to_string(&out).ok().as_deref() != Some(table.as_str()) {
        std::fs::write(out, table).expect("OUT_DIR is writable");
    }
}
