//! Output files that appear whole or not at all. Each is written to a temporary file in the
//! same folder (so the rename never crosses file systems), flushed to disk, then renamed over
//! the target: an interrupted or failed write leaves the old file as it was, never a
//! truncated one. A temporary file that is dropped without being committed is removed.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Temporary files are named `.NAME.PID.N.tmp`: hidden, beside their target, and traceable
/// to the process that left them (see `remove_temporary_files_of`).
const TEMPORARY_SUFFIX: &str = ".tmp";

/// A file being written under a temporary name; `commit` puts it in place.
pub struct AtomicFile {
    target: PathBuf,
    temporary: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file beside `target`. The error names the target.
    pub fn create(target: &Path) -> Result<AtomicFile, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = target.file_name().ok_or_else(|| format!("{}: not a file name", target.display()))?;
        let folder = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let temporary = folder.join(format!(
            ".{}.{}.{}{TEMPORARY_SUFFIX}",
            name.to_string_lossy(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|e| format!("{}: cannot create a temporary file in {} ({e})", target.display(), folder.display()))?;
        Ok(AtomicFile { target: target.to_path_buf(), temporary, file: Some(file) })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the contents to disk; the file stays under its temporary name. Committing
    /// several files after all of them are written keeps a late failure from leaving a mix.
    pub fn finish_writing(&mut self) -> Result<(), String> {
        let file = self.file.as_mut().expect("the file is open until committed");
        file.flush().and_then(|()| file.sync_all()).map_err(|e| format!("{}: cannot write the file ({e})", self.target.display()))
    }

    /// Flushes the contents to disk and renames the file over the target.
    pub fn commit(mut self) -> Result<(), String> {
        self.finish_writing()?;
        drop(self.file.take());
        std::fs::rename(&self.temporary, &self.target).map_err(|e| format!("{}: cannot put the file in place ({e})", self.target.display()))?;
        // The rename itself is durable only once the folder's entry is on disk; where
        // folders cannot be opened (not Unix) the file system orders it itself.
        if let Some(folder) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(folder) = File::open(folder) {
                let _ = folder.sync_all();
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("the file is open until committed").write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("the file is open until committed").flush()
    }
}

impl std::io::Seek for AtomicFile {
    fn seek(&mut self, position: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.as_mut().expect("the file is open until committed").seek(position)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Writes `bytes` to `path` through a temporary file. The error names the file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| format!("{}: cannot write the file ({e})", path.display()))?;
    file.commit()
}

/// Removes the temporary files that process `pid` left in `folder` (killed before it could
/// clean up); returns how many.
pub fn remove_temporary_files_of(folder: &Path, pid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir(folder) else { return 0 };
    let ending = format!(".{pid}");
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(TEMPORARY_SUFFIX)) else { return false };
            stem.rsplit_once('.').is_some_and(|(head, count)| head.ends_with(&ending) && !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
        .count()
}
