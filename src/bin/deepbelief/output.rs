//! Where a command's text goes. With `--json`, standard output carries only the final JSON
//! object (so it is the last line) and the human-readable text moves to standard error.

use serde_json::Value;

#[derive(Clone, Copy, Debug)]
pub struct Output {
    pub json: bool,
}

impl Output {
    /// A line for people: standard output, or standard error under `--json`.
    pub fn text(&self, line: &str) {
        if self.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }

    /// The final figures: printed as one JSON line under `--json` (non-finite numbers become
    /// `null`), otherwise left to the command's text.
    pub fn finish(&self, figures: &Value) {
        if self.json {
            println!("{figures}");
        }
    }
}
