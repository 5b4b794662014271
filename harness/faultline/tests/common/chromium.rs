//! Debian's headless Chromium for the HTML reports' tests: found on PATH (required when CI is
//! set), run quietly with a fresh profile, its page console messages picked from its log.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(name))
                    .find(|f| f.is_file())
            })
        });
    if found.is_none() && std::env::var_os("CI").is_some() {
        panic!("chromium not found on PATH but CI is set: `.ci/run` installs it (apt-get install -y chromium)");
    }
    found
}

/// Flags for a quiet, isolated headless run (no network, no first-run UI, a fresh profile).
pub fn chromium_cmd(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(Stdio::null());
    c
}

/// Console messages the page produced, as Chromium logs them (`CONSOLE(...)` / `Uncaught`).
pub fn console_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("CONSOLE(") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

/// The DOM Chromium built from `html` (profile under `dir`); fails on any console message.
pub fn dump_dom(bin: &Path, html: &Path, dir: &Path) -> String {
    let out = chromium_cmd(bin, &dir.join("profile-dom"))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    assert_eq!(
        console_messages(&stderr),
        Vec::<String>::new(),
        "console messages:\n{stderr}"
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}
