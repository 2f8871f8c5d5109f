//! One run at a time per `--out` folder: two runs writing the same folder would leave one's
//! model beside the other's DEEP.LOG. The lock is a file created only if absent, holding the
//! owner's process id; it goes when the run ends, failed or not. A lock whose process is
//! gone (killed, so nothing removed it) is taken over, with the temporary files it left.

use deepbelief::report::atomic::remove_temporary_files_of;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = ".deepbelief.lock";

pub struct OutLock {
    path: PathBuf,
}

impl OutLock {
    pub fn acquire(folder: &Path) -> Result<OutLock, String> {
        let path = folder.join(LOCK_FILE);
        // A second attempt only after removing a stale lock; if another run took it over in
        // between, that run holds it now.
        for _ in 0..2 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let lock = OutLock { path };
                    writeln!(file, "{}", std::process::id())
                        .and_then(|()| file.sync_all())
                        .map_err(|e| format!("{}: cannot write the lock file ({e})", lock.path.display()))?;
                    return Ok(lock);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    match read_owner(&path) {
                        Some(pid) if !process_exists(pid) => {
                            eprintln!("notice: {}: taking over the lock of process {pid}, which no longer runs", folder.display());
                            remove_temporary_files_of(folder, pid);
                            // Unless another run has just taken it over itself.
                            if read_owner(&path) == Some(pid) {
                                let _ = std::fs::remove_file(&path);
                            }
                        }
                        Some(pid) => {
                            return Err(format!(
                                "{}: another deepbelief run (process {pid}) is writing to this folder; wait for it to finish or choose another --out (the lock is {})",
                                folder.display(),
                                path.display()
                            ))
                        }
                        None => {
                            return Err(format!(
                                "{}: the folder is locked by {}, which names no process; if no run is writing to the folder, delete that file",
                                folder.display(),
                                path.display()
                            ))
                        }
                    }
                }
                Err(e) => return Err(format!("{}: cannot create the lock file ({e})", path.display())),
            }
        }
        Err(format!("{}: another deepbelief run took the folder's lock ({}) just now", folder.display(), path.display()))
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        // Only our own lock: a stale-lock takeover by another run must not be undone.
        if read_owner(&self.path) == Some(std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The process id a lock file holds.
fn read_owner(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok().and_then(|text| text.trim().parse().ok())
}

/// Whether a process with this id runs now. Without /proc (not Linux) every lock counts as
/// held: a wrong "stale" would let two runs write one folder.
fn process_exists(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    pid == std::process::id() || proc_root.join(pid.to_string()).exists()
}
