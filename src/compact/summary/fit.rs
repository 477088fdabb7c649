//! The offline summary's fit within a cap of tokens: the latest request (whole or head + tail),
//! the user messages within their share, their older constraints and the openings of the rest,
//! carried summaries, the current state, the artifact trail, the next step, then the other
//! sections one line from each in turn; the last lines taken give way while the rendered text is
//! over the cap (per-line counts miss merges at line starts).

use super::text::{chars_of, head_tail, one_line, py_splitlines, py_strip, split_words, strip_stops, wide, word_break};
use crate::budget::{self, Options, Retrieval, Strategy, Unit};
use crate::compact::structure::{FastMap, FastSet};
use crate::error::Result;
use crate::tokens::Encoding;

/// The sections of an offline summary, in the order it writes them.
pub const SECTIONS: [&str; 15] = [
    "Latest request (verbatim)",
    "User requests and constraints (latest first)",
    "Current state",
    "Earlier summaries (carried forward)",
    "Files modified",
    "Files read",
    "Paths named",
    "Commands and their last outcome",
    "Errors",
    "Tests (last status)",
    "Identifiers",
    "Decisions",
    "Open work",
    "Next step",
    "Also in the replaced history (checked)",
];
/// The heading of the latest request when the summary carries it cut to head + marker + tail
/// (in place of `SECTIONS[0]`, which says verbatim).
pub const LATEST_CUT: &str = "Latest request (cut: head and tail)";
const LATEST: usize = 0;
const USERS: usize = 1;
const STATE: usize = 2;
const CARRIED: usize = 3;
const MODIFIED: usize = 4;
const READ: usize = 5;
const PATHS: usize = 6;
const IDENTIFIERS: usize = 10;
const NEXT: usize = 13;

/// The latest request's share of the cap (head and tail when long).
pub const LATEST_SHARE: f64 = 1.0 / 3.0;
/// The latest request gets at least this many tokens of the cap (all of a smaller cap).
pub const LATEST_MIN_TOKENS: i64 = 128;
/// Every earlier user message's share (latest first, each head and tail when long).
pub const USERS_SHARE: f64 = 0.35;
/// Earlier summaries written by other harnesses, carried forward.
pub const CARRIED_SHARE: f64 = 0.2;
/// The files modified and read, before the other facts.
pub const FILES_SHARE: f64 = 0.15;
/// ... and at least this many tokens in a smaller cap, at most a third of it.
pub const FILES_MIN_TOKENS: i64 = 24;
/// A user message in the list is cut to this many characters (head and tail) ...
pub const USER_LINE_CHARS: i64 = 1_200;
/// ... and to fewer, down to this many, when its share has less room left.
pub const USER_LINE_MIN_CHARS: i64 = 90;
/// The opening of an older user message named when the whole does not fit.
pub const USER_OPENING_CHARS: i64 = 80;
/// The tokens a whole latest request needs beyond its own count to fit beside its heading.
pub const REQUEST_SLACK: i64 = 16;
const CHARS_PER_TOKEN: i64 = 6;
const HEADER_TOKENS: i64 = 6;

/// What a fit is given beyond the sections.
#[derive(Clone, Debug, Default)]
pub struct FitInput<'a> {
    /// The latest request, verbatim (None or empty: none).
    pub latest: Option<&'a str>,
    /// The latest request given is cut already (a previous summary's, under [`LATEST_CUT`]): its
    /// heading says so even when it is kept whole.
    pub latest_cut: bool,
    /// The lines of each of [`SECTIONS`] (the first, the latest request's, is not read).
    pub sections: Vec<Vec<&'a str>>,
    /// Which user message lines constrain or correct the work (Python's `_CONSTRAINT` test,
    /// decided by the caller); lines beyond its end do not.
    pub constraints: Vec<bool>,
    /// The latest request is whole when it takes at most this many tokens (and fits).
    pub request_room: i64,
    /// The recall id the marker of a request cut to head + tail names.
    pub recall_id: Option<&'a str>,
    /// What the working set holds beside the summary (the task ledger): its paths and
    /// identifiers take no line when the sections are far over the cap.
    pub held: Option<&'a str>,
}

/// The outcome of [`fit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fitted {
    /// The summary, and its tokens.
    Fits(String, usize),
    /// The rendered summary is still over the cap with only its first sections left: the caller
    /// cuts it to head (80%) + marker + tail within the cap.
    Over(String),
}

/// The offline summary of `input` within `cap` tokens of `enc` (Python's `summarize._fit`, to the
/// byte). A negative `cap` is the caller's to refuse.
pub fn fit(input: &FitInput<'_>, cap: i64, enc: Encoding) -> Result<Fitted> {
    let mut f = Fitter::new(input, enc);
    if input.held.is_some_and(|h| !h.is_empty()) {
        let chars: i64 = input.sections.iter().flatten().map(|l| chars_of(l)).sum();
        if chars > cap * CHARS_PER_TOKEN {
            f.hold(input.held.unwrap_or_default());
        }
    }
    if let Some(latest) = input.latest.filter(|l| !l.is_empty()) {
        let files = f.take_files(files_room(cap), true);
        let (kept, cut) = latest_kept(latest, cap, enc, input.request_room, input.recall_id, files)?;
        f.chosen[LATEST] = vec![py_strip(&kept).to_owned()];
        f.latest_cut = cut || input.latest_cut;
    }
    let mut used = f.count_text(&render(&f.chosen, f.latest_cut));
    for line in f.chosen[LATEST].clone() {
        f.say(&line);
    }
    used += f.take(USERS, 0.max(share(cap, USERS_SHARE).min(cap - used)));
    used += f.take_constraints(0.max(cap - used));
    used += f.take_openings(0.max(cap - used));
    used += f.take(CARRIED, 0.max(share(cap, CARRIED_SHARE).min(cap - used)));
    used += f.take(STATE, 0.max(cap - used));
    used += f.take_files(0.max(files_room(cap).min(cap - used)), false);
    used += f.take(NEXT, 0.max(cap - used));
    let rest: Vec<usize> = (1..SECTIONS.len())
        .filter(|&n| n != STATE && n != NEXT && n != CARRIED)
        .collect();
    f.take_in_turns(&rest, used, cap);
    // The older constraints were taken before later lines of their section: newest first again.
    let mut users: Vec<(usize, String)> = f.keys[USERS].iter().copied().zip(f.chosen[USERS].drain(..)).collect();
    users.sort_by_key(|(k, _)| *k);
    f.chosen[USERS] = users.into_iter().map(|(_, t)| t).collect();
    let mut text = render(&f.chosen, f.latest_cut);
    let mut tokens = enc.count(&text);
    for name in (2..SECTIONS.len()).rev() {
        while wide(tokens) > cap && !f.chosen[name].is_empty() {
            f.chosen[name].pop();
            text = render(&f.chosen, f.latest_cut);
            tokens = enc.count(&text);
        }
    }
    Ok(if wide(tokens) > cap {
        Fitted::Over(text)
    } else {
        Fitted::Fits(text, tokens)
    })
}

/// `int(cap * share)`.
fn share(cap: i64, share: f64) -> i64 {
    (cap as f64 * share) as i64
}

/// The tokens the files touched take of a summary's `cap` before the other facts.
fn files_room(cap: i64) -> i64 {
    share(cap, FILES_SHARE).max(FILES_MIN_TOKENS.min(cap.div_euclid(3)))
}

/// The sections as the summary writes them; the latest request's under [`LATEST_CUT`] when it is
/// `latest_cut`.
pub fn render(chosen: &[Vec<String>], latest_cut: bool) -> String {
    let parts: Vec<String> = SECTIONS
        .iter()
        .zip(chosen)
        .enumerate()
        .filter(|(_, (_, lines))| !lines.is_empty())
        .map(|(n, (&name, lines))| {
            let name = if n == LATEST && latest_cut { LATEST_CUT } else { name };
            format!("## {name}\n{}", lines.join("\n"))
        })
        .collect();
    if parts.is_empty() {
        "## Current state\n- Nothing to summarize.".to_owned()
    } else {
        parts.join("\n\n")
    }
}

/// The latest request as the summary carries it (Python's `_latest_kept`), and whether it is cut
/// to head + marker + tail.
fn latest_kept(
    latest: &str,
    cap: i64,
    enc: Encoding,
    request_room: i64,
    recall_id: Option<&str>,
    files: i64,
) -> Result<(String, bool)> {
    let tokens = wide(enc.count(latest));
    if tokens <= request_room && tokens + REQUEST_SLACK <= cap {
        return Ok((latest.to_owned(), false));
    }
    let room = share(cap, LATEST_SHARE).max(LATEST_MIN_TOKENS.min(cap - files));
    let lines: Vec<&str> = py_splitlines(latest)
        .into_iter()
        .filter(|l| !py_strip(l).is_empty())
        .collect();
    let options = Options {
        retrieval: Retrieval {
            recall_id: recall_id.map(str::to_owned),
            path: None,
            unstored: recall_id.is_none() && room >= 2 * LATEST_MIN_TOKENS,
        },
        count_omitted_tokens: false,
    };
    let room = usize::try_from(room).map_err(|_| crate::error::Error::InvalidArgument {
        what: "max_tokens",
        reason: format!("the latest request's room is {room} tokens"),
    })?;
    let cut = budget::truncate(
        &lines.join("\n"),
        room,
        Unit::Tokens(enc),
        Strategy::HeadTail { head_share: 0.5 },
        &options,
    )?;
    Ok((cut.text, cut.truncated))
}

pub(super) struct Fitter<'a, 'i> {
    input: &'i FitInput<'a>,
    enc: Encoding,
    counts: FastMap<String, i64>,
    chosen: Vec<Vec<String>>,
    rendered: Vec<FastMap<usize, String>>,
    texts: Vec<String>,
    /// The words of every text said, and each less its trailing ".:;!?" (what [`Self::says`] finds).
    said: FastSet<String>,
    held: FastSet<String>,
    stopped: usize,
    /// The latest request is carried cut (its heading is [`LATEST_CUT`]).
    latest_cut: bool,
    keys: Vec<Vec<usize>>,
    next: Vec<Option<usize>>,
}

impl<'a, 'i> Fitter<'a, 'i> {
    pub(super) fn new(input: &'i FitInput<'a>, enc: Encoding) -> Self {
        let n = SECTIONS.len();
        Fitter {
            input,
            enc,
            counts: FastMap::default(),
            chosen: vec![Vec::new(); n],
            rendered: vec![FastMap::default(); n],
            texts: Vec::new(),
            said: FastSet::default(),
            held: FastSet::default(),
            stopped: 0,
            latest_cut: false,
            keys: vec![Vec::new(); n],
            next: vec![None; n],
        }
    }

    fn lines(&self, name: usize) -> &'i [&'a str] {
        self.input.sections.get(name).map_or(&[], Vec::as_slice)
    }

    fn count_text(&mut self, text: &str) -> i64 {
        if let Some(&c) = self.counts.get(text) {
            return c;
        }
        let c = wide(self.enc.count(text));
        self.counts.insert(text.to_owned(), c);
        c
    }

    fn line_text(&mut self, name: usize, k: usize) -> String {
        let raw = self.lines(name)[k];
        self.rendered[name]
            .entry(k)
            .or_insert_with(|| {
                head_tail(
                    raw,
                    if name == USERS || name == CARRIED {
                        USER_LINE_CHARS
                    } else {
                        600
                    },
                )
            })
            .clone()
    }

    /// Line `k` of `name` as written, and its tokens with the newline.
    fn line(&mut self, name: usize, k: usize) -> (String, i64) {
        let text = self.line_text(name, k);
        let c = self.count_text(&text) + 1;
        (text, c)
    }

    pub(super) fn say(&mut self, text: &str) {
        for word in split_words(text) {
            if !self.said.contains(word) {
                self.said.insert(word.to_owned());
            }
            let stripped = strip_stops(word);
            if stripped.len() < word.len() && !self.said.contains(stripped) {
                self.said.insert(stripped.to_owned());
            }
        }
        self.texts.push(text.to_owned());
    }

    fn header(&self, name: usize) -> i64 {
        if self.chosen[name].is_empty() { HEADER_TOKENS } else { 0 }
    }

    fn choose(&mut self, name: usize, k: usize, text: String) {
        self.say(&text);
        self.chosen[name].push(text);
        self.keys[name].push(k);
    }

    /// Whether what the summary says so far names `fact` as a word of it (between break
    /// characters, as it is or less its trailing ".:;!?"): Python's search of the said text for
    /// `fact` between breaks, answered from the words said.
    pub(super) fn says(&self, fact: &str) -> bool {
        if fact.is_empty() {
            return self.texts.iter().any(|t| {
                split_words(t)
                    .iter()
                    .any(|w| w.is_empty() || (w.ends_with(['.', ':', ';', '!', '?']) && strip_stops(w).is_empty()))
            });
        }
        !fact.chars().any(word_break) && self.said.contains(fact)
    }

    fn hold(&mut self, text: &str) {
        for word in split_words(text) {
            self.held.insert(strip_stops(word).to_owned());
            self.held.insert(word.to_owned());
        }
    }

    fn redundant(&self, name: usize, text: &str) -> bool {
        let Some(fact) = text.strip_prefix("- ") else {
            return false;
        };
        let named_once = matches!(name, READ | PATHS | IDENTIFIERS);
        (named_once && self.says(fact)) || ((named_once || name == MODIFIED) && self.held.contains(fact))
    }

    fn take(&mut self, name: usize, limit: i64) -> i64 {
        let mut spent = 0;
        let n = self.lines(name).len();
        self.stopped = n;
        for k in 0..n {
            let (mut text, mut c) = self.line(name, k);
            let mut extra = c + self.header(name);
            if spent + extra > limit && (name == USERS || name == CARRIED) {
                let left = limit - spent - self.header(name);
                let chars = left * 3;
                if chars < USER_LINE_MIN_CHARS {
                    self.stopped = k;
                    break;
                }
                text = head_tail(self.lines(name)[k], chars);
                c = self.count_text(&text) + 1;
                extra = c + self.header(name);
            }
            if spent + extra > limit {
                self.stopped = k;
                break;
            }
            self.choose(name, k, text);
            spent += extra;
        }
        self.next[name] = Some(self.stopped);
        spent
    }

    fn take_constraints(&mut self, limit: i64) -> i64 {
        let mut spent = 0;
        for k in self.stopped..self.lines(USERS).len() {
            if !self.input.constraints.get(k).copied().unwrap_or(false) {
                continue;
            }
            let (text, c) = self.line(USERS, k);
            let extra = c + self.header(USERS);
            if spent + extra <= limit {
                self.choose(USERS, k, text);
                spent += extra;
            }
        }
        spent
    }

    fn take_openings(&mut self, limit: i64) -> i64 {
        let mut spent = 0;
        let taken: FastSet<usize> = self.keys[USERS].iter().copied().collect();
        for (k, raw) in self.lines(USERS).iter().enumerate() {
            if taken.contains(&k) {
                continue;
            }
            let text = format!(
                "- {}",
                one_line(raw.strip_prefix("- ").unwrap_or(raw), USER_OPENING_CHARS)
            );
            let extra = self.count_text(&text) + 1 + self.header(USERS);
            if spent + extra > limit {
                break;
            }
            self.choose(USERS, k, text);
            spent += extra;
        }
        spent
    }

    fn take_files(&mut self, limit: i64, dry: bool) -> i64 {
        let mut spent = 0;
        for name in [MODIFIED, READ] {
            let mut header = self.header(name);
            let n = self.lines(name).len();
            for k in 0..n {
                let text = self.line_text(name, k);
                if self.redundant(name, &text) {
                    continue;
                }
                let (text, c) = self.line(name, k);
                if spent + c + header > limit {
                    if !dry {
                        self.next[name] = Some(k);
                    }
                    return spent;
                }
                spent += c + header;
                header = 0;
                if !dry {
                    self.choose(name, k, text);
                }
            }
            if !dry {
                self.next[name] = Some(n);
            }
        }
        spent
    }

    fn take_in_turns(&mut self, rest: &[usize], mut used: i64, cap: i64) -> i64 {
        let mut position: FastMap<usize, usize> = rest
            .iter()
            .map(|&n| (n, self.next[n].unwrap_or(self.chosen[n].len())))
            .collect();
        let taken: FastMap<usize, FastSet<usize>> = rest
            .iter()
            .map(|&n| (n, self.keys[n].iter().copied().collect()))
            .collect();
        let mut live: Vec<usize> = rest
            .iter()
            .copied()
            .filter(|&n| position[&n] < self.lines(n).len())
            .collect();
        while !live.is_empty() && used < cap {
            for &name in &live {
                if used >= cap {
                    break;
                }
                let k = position[&name];
                if taken[&name].contains(&k) || {
                    let text = self.line_text(name, k);
                    self.redundant(name, &text)
                } {
                    position.insert(name, k + 1);
                    continue;
                }
                let (text, c) = self.line(name, k);
                let extra = c + self.header(name);
                if used + extra <= cap {
                    self.choose(name, k, text);
                    used += extra;
                    position.insert(name, k + 1);
                } else {
                    position.insert(name, self.lines(name).len());
                }
            }
            live.retain(|&n| position[&n] < self.lines(n).len());
        }
        used
    }
}
