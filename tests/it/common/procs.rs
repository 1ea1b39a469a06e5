//! The process tree as /proc shows it, for the tests and the benches
//! (which include this file too): what a backend runs below it.

/// The descendants of `pid`, children first (not `pid` itself).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut links = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // The field after the parenthesized name, then the state: ppid.
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                links.push((p, ppid));
            }
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            links
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}
