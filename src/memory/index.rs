//! The memory index: every record of a memory directory, read in parallel, parsed, validated and
//! rendered as the short listing that goes into the system prompt. Rebuilding is incremental: a
//! file whose identity, size and times are unchanged since the last refresh is not read again.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, Metadata};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::record::{self, Kind, MAX_RECORD_BYTES, Record};
use crate::error::{Error, Result, io_reason};
use crate::files::open_no_follow;
use crate::search::{Query, Scored};

/// Identity and version of a file as the directory reports it; a file is read again when any of
/// it changes (an atomic replace gives a new inode, an edit in place a new mtime or ctime).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    fn of(meta: &Metadata) -> Stamp {
        let ns = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128)
        };
        Stamp {
            ino: 0,
            size: meta.len(),
            mtime_ns: ns(meta.modified()),
            ctime_ns: ns(meta.created()),
        }
    }
}

/// A file that is not a usable record, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub reason: String,
}

/// What one refresh did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Record files (`*.md`) found.
    pub files: usize,
    /// Files read and parsed (new or changed).
    pub read: usize,
    /// Files whose previous parse was reused.
    pub reused: usize,
    /// Files that were in the index and are gone.
    pub removed: usize,
}

/// Caps on the rendered index.
#[derive(Clone, Copy, Debug)]
pub struct RenderLimits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            max_lines: 200,
            max_bytes: 25_000,
        }
    }
}

type Entry = (Stamp, std::result::Result<Record, String>);

/// The index of one memory directory, kept between refreshes.
#[derive(Debug)]
pub struct MemoryIndex {
    dir: PathBuf,
    entries: HashMap<String, Entry>,
    /// File names of the valid records, in index order (type, then name).
    order: Vec<String>,
}

/// Read a record file that the listing's stat (`meta`) said is a regular file of at most the
/// cap. Opened without following a symlink and without blocking (a file swapped for a FIFO since
/// the stat reads as empty), and never more than the cap plus one byte (a file swapped for a
/// device reads as too large). A file that grows after the stat keeps the stat's stamp, so the
/// next refresh reads it again.
fn read_record(path: &Path, meta: &Metadata) -> std::result::Result<String, String> {
    if meta.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "{} bytes, over the {MAX_RECORD_BYTES}-byte limit for a record",
            meta.len()
        ));
    }
    let mut file = open_no_follow(path).map_err(|e| format!("cannot open: {}", io_reason(&e)))?;
    let expected = meta.len() as usize;
    let mut bytes = vec![0u8; expected + 1];
    let mut filled = 0;
    // One read call for a file of the size the stat gave; more only if it comes back short.
    while filled < expected {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(format!("cannot read: {}", io_reason(&e))),
        }
    }
    if filled > expected {
        // It grew: read the rest up to the cap.
        bytes.truncate(filled);
        (&mut file)
            .take(MAX_RECORD_BYTES + 1 - filled as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read: {}", io_reason(&e)))?;
        if bytes.len() as u64 > MAX_RECORD_BYTES {
            return Err(format!("over the {MAX_RECORD_BYTES}-byte limit for a record"));
        }
    } else {
        bytes.truncate(filled);
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// What a refresh found for one listed file.
enum Scan {
    /// Same stamp as last time: the previous parse stands.
    Unchanged,
    Changed(Entry),
    /// Gone between listing and stat.
    Gone,
}

fn scan(entry: &fs::DirEntry, file: &str, previous: Option<&Entry>) -> Scan {
    // DirEntry::metadata stats relative to the open directory (fstatat/statx, no symlink follow):
    // no path walk per file.
    let meta = match entry.metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Scan::Gone,
        Err(e) => {
            return Scan::Changed((
                Stamp::default_for_error(),
                Err(format!("cannot stat: {}", io_reason(&e))),
            ));
        }
    };
    let stamp = Stamp::of(&meta);
    if previous.is_some_and(|prev| prev.0 == stamp) {
        return Scan::Unchanged;
    }
    let parsed = if meta.file_type().is_symlink() {
        Err("a symbolic link (not followed)".to_owned())
    } else if !meta.is_file() {
        Err("not a regular file".to_owned())
    } else {
        read_record(&entry.path(), &meta).and_then(|text| record::parse(file, &text, meta.len()))
    };
    Scan::Changed((stamp, parsed))
}

impl Stamp {
    fn default_for_error() -> Stamp {
        Stamp {
            ino: 0,
            size: u64::MAX,
            mtime_ns: -1,
            ctime_ns: -1,
        }
    }
}

impl MemoryIndex {
    pub fn new(dir: impl Into<PathBuf>) -> MemoryIndex {
        MemoryIndex {
            dir: dir.into(),
            entries: HashMap::new(),
            order: Vec::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bring the index up to date with the directory: list it, and read (in parallel) only the
    /// record files that are new or changed. Hidden files and names not ending in `.md` are not
    /// records and are skipped; a broken record is kept as a problem, never an error. Errors only
    /// when the directory itself cannot be listed.
    pub fn refresh(&mut self) -> Result<Refresh> {
        let fail = |e: std::io::Error| Error::FileRead {
            path: self.dir.display().to_string(),
            kind: "io",
            message: format!(
                "cannot list the memory directory {}: {}",
                self.dir.display(),
                io_reason(&e)
            ),
        };
        let listing = fs::read_dir(&self.dir).map_err(fail)?;
        let mut listed = Vec::new();
        for entry in listing {
            let entry = entry.map_err(fail)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // Record files are `NAME.md` exactly (lower case), as the store writes them.
            #[allow(clippy::case_sensitive_file_extension_comparisons)]
            if name.starts_with('.') || !name.ends_with(".md") {
                continue;
            }
            listed.push((name, entry));
        }
        let old = &self.entries;
        let scanned: Vec<Scan> = crate::parallel::install(|| {
            listed
                .par_iter()
                .with_min_len(64)
                .map(|(name, entry)| scan(entry, name, old.get(name)))
                .collect()
        });
        let mut stats = Refresh::default();
        let mut present: std::collections::HashSet<&str> = std::collections::HashSet::with_capacity(listed.len());
        let mut changed = Vec::new();
        for ((name, _), scan) in listed.iter().zip(scanned) {
            match scan {
                Scan::Gone => continue,
                Scan::Unchanged => stats.reused += 1,
                Scan::Changed(entry) => {
                    stats.read += 1;
                    changed.push((name.clone(), entry));
                }
            }
            stats.files += 1;
            present.insert(name.as_str());
        }
        let before = self.entries.len();
        self.entries.retain(|k, _| present.contains(k.as_str()));
        stats.removed = before - self.entries.len();
        if stats.read == 0 && stats.removed == 0 {
            return Ok(stats);
        }
        self.entries.extend(changed);
        let mut order: Vec<(Kind, &str, &str)> = self
            .entries
            .values()
            .filter_map(|(_, r)| r.as_ref().ok().map(|r| (r.kind, r.name.as_str(), r.file.as_str())))
            .collect();
        crate::parallel::install(|| order.par_sort_unstable());
        self.order = order.into_iter().map(|(_, _, f)| f.to_owned()).collect();
        Ok(stats)
    }

    /// Valid records in index order: by type (user, feedback, project, reference), then name.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.order
            .iter()
            .filter_map(|n| self.entries.get(n).and_then(|(_, r)| r.as_ref().ok()))
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Record> {
        self.entries
            .get(&format!("{name}.md"))
            .and_then(|(_, r)| r.as_ref().ok())
    }

    /// Files that are not usable records, by file name.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out: Vec<Problem> = self
            .entries
            .iter()
            .filter_map(|(f, (_, r))| {
                r.as_ref().err().map(|e| Problem {
                    file: f.clone(),
                    reason: e.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.file.cmp(&b.file));
        out
    }

    /// The index as it goes into the prompt: one line per record, grouped by type in a stable
    /// order, within `limits`. When not every record fits, the last line says how many are not
    /// listed and how to see them.
    pub fn render(&self, limits: RenderLimits) -> Result<String> {
        render_lines(self.records(), self.len(), limits)
    }

    /// Records matching `query` in their name, description or body, best first (name and
    /// description count more than the body); at most `limit`.
    pub fn search(&self, query: &Query, limit: usize) -> Vec<(&Record, Scored)> {
        let records: Vec<&Record> = self.records().collect();
        let texts: Vec<[&str; 3]> = records
            .iter()
            .map(|r| [r.name.as_str(), r.description.as_str(), r.body.as_str()])
            .collect();
        let scored = query.rank_fields(&texts, &[3.0, 2.0, 1.0], limit);
        scored.into_iter().map(|(i, s)| (records[i], s)).collect()
    }
}

/// One index line for a record.
pub fn line(r: &Record) -> String {
    format!("- {} ({}, {}): {}", r.name, r.kind, r.file, r.description)
}

fn marker(unlisted: usize, total: usize) -> String {
    format!("[... {unlisted} of {total} records not listed; memory_list or memory_search shows them]")
}

fn render_lines<'a>(records: impl Iterator<Item = &'a Record>, total: usize, limits: RenderLimits) -> Result<String> {
    let worst = marker(total, total);
    if limits.max_lines < 1 || limits.max_bytes <= worst.len() {
        return Err(Error::BudgetTooSmall {
            limit: if limits.max_lines < 1 {
                limits.max_lines
            } else {
                limits.max_bytes
            },
            unit: if limits.max_lines < 1 { "lines" } else { "bytes" },
            needed: if limits.max_lines < 1 { 1 } else { worst.len() + 1 },
            what: if limits.max_lines < 1 {
                "one line of the index".to_owned()
            } else {
                "the marker that says how many records are not listed".to_owned()
            },
        });
    }
    let mut out = String::new();
    let mut listed = 0usize;
    // Lines that fit with room left for the marker, in case not every line fits.
    let mut fits_with_marker = 0usize;
    let mut bytes_with_marker = 0usize;
    for r in records {
        let l = line(r);
        if listed + 1 > limits.max_lines || out.len() + l.len() + 1 > limits.max_bytes {
            out.truncate(bytes_with_marker);
            let _ = writeln!(out, "{}", marker(total - fits_with_marker, total));
            return Ok(out);
        }
        out.push_str(&l);
        out.push('\n');
        listed += 1;
        if listed < limits.max_lines && out.len() + marker(total - listed, total).len() < limits.max_bytes {
            fits_with_marker = listed;
            bytes_with_marker = out.len();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, kind: &str, desc: &str) {
        fs::write(
            dir.join(format!("{name}.md")),
            format!("---\nname: {name}\ndescription: {desc}\ntype: {kind}\nupdated: 2026-01-01\n---\nbody of {name}\n"),
        )
        .unwrap();
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("agentcontext-memtest-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn groups_by_type_and_refreshes_incrementally() {
        let d = tempdir("groups");
        write(&d, "zeta", "user", "Z");
        write(&d, "alpha", "reference", "A");
        write(&d, "beta", "feedback", "B");
        fs::write(d.join("broken.md"), "no front matter").unwrap();
        fs::write(d.join(".hidden.md"), "x").unwrap();
        fs::write(d.join("notes.txt"), "x").unwrap();
        let mut idx = MemoryIndex::new(&d);
        let s = idx.refresh().unwrap();
        assert_eq!((s.files, s.read, s.reused), (4, 4, 0));
        let text = idx.render(RenderLimits::default()).unwrap();
        assert_eq!(
            text,
            "- zeta (user, zeta.md): Z\n- beta (feedback, beta.md): B\n- alpha (reference, alpha.md): A\n"
        );
        assert_eq!(idx.problems().len(), 1);
        assert_eq!(idx.problems()[0].file, "broken.md");
        write(&d, "beta", "feedback", "B2 longer");
        let s = idx.refresh().unwrap();
        assert_eq!((s.read, s.reused, s.removed), (1, 3, 0));
        fs::remove_file(d.join("zeta.md")).unwrap();
        let s = idx.refresh().unwrap();
        assert_eq!((s.files, s.read, s.removed), (3, 0, 1));
        assert_eq!(idx.len(), 2);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn caps_with_a_marker() {
        let d = tempdir("caps");
        for i in 0..50 {
            write(&d, &format!("r{i:02}"), "project", "a description of some length");
        }
        let mut idx = MemoryIndex::new(&d);
        idx.refresh().unwrap();
        let text = idx
            .render(RenderLimits {
                max_lines: 10,
                max_bytes: 10_000,
            })
            .unwrap();
        assert_eq!(text.lines().count(), 10);
        assert!(text.ends_with("[... 41 of 50 records not listed; memory_list or memory_search shows them]\n"));
        let text = idx
            .render(RenderLimits {
                max_lines: 1000,
                max_bytes: 300,
            })
            .unwrap();
        assert!(text.len() <= 300);
        assert!(text.contains("records not listed"));
        assert!(
            idx.render(RenderLimits {
                max_lines: 0,
                max_bytes: 300
            })
            .is_err()
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_fifos_and_huge_files_are_problems() {
        let d = tempdir("attack");
        let outside = std::env::temp_dir().join(format!("agentcontext-secret-{}", std::process::id()));
        write(&d, "ok", "user", "fine");
        fs::write(&outside, "---\nname: link\ndescription: secret\ntype: user\n---\n").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("link.md")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(d.join("fifo.md"))
            .status()
            .unwrap();
        assert!(status.success());
        let big = fs::File::create(d.join("big.md")).unwrap();
        big.set_len(10_000_000_000).unwrap();
        fs::create_dir(d.join("sub.md")).unwrap();
        let mut idx = MemoryIndex::new(&d);
        idx.refresh().unwrap();
        assert_eq!(idx.len(), 1);
        let problems = idx.problems();
        let reasons: Vec<(&str, &str)> = problems.iter().map(|p| (p.file.as_str(), p.reason.as_str())).collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons[0].1.contains("over the"), "{reasons:?}");
        assert!(reasons[1].1.contains("not a regular file"));
        assert!(reasons[2].1.contains("symbolic link"));
        assert!(reasons[3].1.contains("not a regular file"));
        fs::remove_dir_all(&d).unwrap();
        fs::remove_file(&outside).unwrap();
    }
}
