//! Opening files the core reads (pages, transcripts): only regular files. A FIFO would block the
//! open or the read forever, a character device such as `/dev/zero` never ends, a socket cannot be
//! opened at all; each is refused by its kind before any byte is read.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Why a path was not opened.
#[derive(Debug)]
pub enum OpenError {
    /// The open or stat failed (missing, no permission, ...).
    Io(io::Error),
    /// A directory.
    Directory,
    /// Not a regular file; the text names what it is ("a FIFO (named pipe)", ...).
    Special(&'static str),
}

/// What a file type is when it is neither a regular file nor a directory.
fn special(kind: FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    (!kind.is_file() && !kind.is_dir()).then_some("not a regular file")
}

fn check(meta: &Metadata) -> Result<(), OpenError> {
    if meta.is_dir() {
        return Err(OpenError::Directory);
    }
    match special(meta.file_type()) {
        Some(what) => Err(OpenError::Special(what)),
        None => Ok(()),
    }
}

/// Open `path` (symlinks followed) for reading if it is a regular file, with its metadata.
///
/// The type is checked on the path before the open and again on the opened file, and the open is
/// non-blocking, so a path swapped for a FIFO between the two cannot make it hang.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    check(&std::fs::metadata(path).map_err(OpenError::Io)?)?;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK has no effect on reads of a regular file; it only keeps a FIFO's open from
        // waiting for a writer. O_NOCTTY: a terminal never becomes our controlling one.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    check(&meta)?;
    Ok((file, meta))
}

/// Open `path` for reading without following a symlink (a symlink is an error) and without
/// blocking on a FIFO; the kind is not checked (the memory index and the log search check it).
#[cfg(unix)]
pub fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
pub fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// A size for messages: `512 KB`, `3.2 MB`, `5.0 GB`.
pub fn human(bytes: u64) -> String {
    const MB: f64 = 1024.0 * 1024.0;
    if bytes >= 1024 * 1024 * 1024 {
        format!("{:.1} GB", bytes as f64 / (MB * 1024.0))
    } else if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / MB)
    } else {
        format!("{:.0} KB", (bytes as f64 / 1024.0).ceil())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_by_kind() {
        for (path, what) in [("/dev/zero", "a character device"), ("/dev/null", "a character device")] {
            match open_regular(Path::new(path)) {
                Err(OpenError::Special(kind)) => assert_eq!(kind, what),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert!(matches!(open_regular(Path::new("/")), Err(OpenError::Directory)));
        assert!(matches!(
            open_regular(Path::new("/no/such/file")),
            Err(OpenError::Io(_))
        ));
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("agentcontext-nofollow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target.txt");
        std::fs::write(&target, "text").unwrap();
        let link = dir.join("link.txt");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut read = String::new();
        io::Read::read_to_string(&mut open_no_follow(&target).unwrap(), &mut read).unwrap();
        assert_eq!(read, "text");
        let err = open_no_follow(&link).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512), "1 KB");
        assert_eq!(human(3 * 1024 * 1024 + 200 * 1024), "3.2 MB");
        assert_eq!(human(5 * 1024 * 1024 * 1024), "5.0 GB");
    }
}
