//! Texts a scan found, kept in one buffer: what a tool call contributes to a handoff is ~10–20
//! short texts (its path as an identifier, a path, a file read and a file touched; the paths of
//! its command; its description), each of which took an allocation of its own and a free later.
//! Here they are ranges of one `String` per call, in the order found, each with its kind.

use super::trail::Op;

/// Where a scan puts the texts it finds, one after another.
pub(super) trait Put {
    fn put(&mut self, item: &str);
}

impl Put for Vec<String> {
    fn put(&mut self, item: &str) {
        self.push(item.to_owned());
    }
}

/// Where the artifact trail's scans put each file a call touches, with what it did.
pub(super) trait Touches {
    fn touch(&mut self, path: &str, op: Op);
    /// The file touched last was renamed (a patch's `*** Move to`); nothing when none was.
    fn renamed_last(&mut self);
}

impl Touches for Vec<(String, Op)> {
    fn touch(&mut self, path: &str, op: Op) {
        self.push((path.to_owned(), op));
    }
    fn renamed_last(&mut self) {
        if let Some(last) = self.last_mut() {
            last.1 = Op::Renamed;
        }
    }
}

/// What a piece is to the handoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Identifier,
    Path,
    Reference,
    /// The file a read tool read.
    Read,
    Modified,
    /// A file the call touched, and what it did to it.
    Touch(Op),
    /// The call in one line (for the artifact trail).
    Described,
    /// A line of assistant text that names open work.
    Todo,
    /// A line of assistant text that states an intent or a decision.
    Decision,
}

/// Texts of several [`Kind`]s in one buffer, in the order pushed: each a kind and a range of
/// the buffer.
#[derive(Debug, Default)]
pub(super) struct Pieces {
    text: String,
    items: Vec<(Kind, usize, usize)>,
}

/// Bytes a buffer starts with: most calls' pieces fit, so it is allocated once.
const FIRST_BYTES: usize = 64;

impl Pieces {
    /// Add `item` as a `kind`. A text equal to the last one pushed (a path named as read, as a
    /// path and as touched) shares its bytes.
    pub(super) fn push(&mut self, kind: Kind, item: &str) {
        let range = match self.items.last() {
            Some(&(_, start, end)) if &self.text[start..end] == item => (start, end),
            _ => {
                if self.text.capacity() == 0 {
                    self.text.reserve(FIRST_BYTES.max(item.len()));
                }
                let start = self.text.len();
                self.text.push_str(item);
                (start, self.text.len())
            }
        };
        self.items.push((kind, range.0, range.1));
    }

    /// Add each piece of `from` again as a `to` (its bytes shared), in order.
    pub(super) fn also(&mut self, from: Kind, to: Kind) {
        for k in 0..self.items.len() {
            let (kind, start, end) = self.items[k];
            if kind == from {
                self.items.push((to, start, end));
            }
        }
    }

    /// Add as a `kind` the text `write` appends to a string (written in place: no copy made).
    pub(super) fn push_with(&mut self, kind: Kind, write: impl FnOnce(&mut String)) {
        if self.text.capacity() == 0 {
            self.text.reserve(FIRST_BYTES);
        }
        let start = self.text.len();
        write(&mut self.text);
        self.items.push((kind, start, self.text.len()));
    }

    /// The pieces of `kind`, in the order pushed.
    pub(super) fn of(&self, kind: Kind) -> impl Iterator<Item = &str> + '_ {
        self.items
            .iter()
            .filter(move |(k, _, _)| *k == kind)
            .map(|&(_, start, end)| &self.text[start..end])
    }

    /// The first piece of `kind`.
    pub(super) fn first(&self, kind: Kind) -> Option<&str> {
        self.of(kind).next()
    }

    /// The files touched, with what was done to each, in the order pushed.
    pub(super) fn touches(&self) -> impl Iterator<Item = (&str, Op)> + '_ {
        self.items.iter().filter_map(|&(k, start, end)| match k {
            Kind::Touch(op) => Some((&self.text[start..end], op)),
            _ => None,
        })
    }

    /// A [`Put`] that adds each text as a `kind`.
    pub(super) fn to(&mut self, kind: Kind) -> Into<'_> {
        Into { pieces: self, kind }
    }
}

impl Touches for Pieces {
    fn touch(&mut self, path: &str, op: Op) {
        self.push(Kind::Touch(op), path);
    }
    fn renamed_last(&mut self) {
        if let Some((k, _, _)) = self
            .items
            .iter_mut()
            .rev()
            .find(|(k, _, _)| matches!(k, Kind::Touch(_)))
        {
            *k = Kind::Touch(Op::Renamed);
        }
    }
}

/// [`Pieces::to`]: texts put as one kind.
pub(super) struct Into<'p> {
    pieces: &'p mut Pieces,
    kind: Kind,
}

impl Put for Into<'_> {
    fn put(&mut self, item: &str) {
        self.pieces.push(self.kind, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_back_in_order_as_separate_lists_would() {
        let mut p = Pieces::default();
        let mut ids: Vec<String> = Vec::new();
        let mut paths: Vec<String> = Vec::new();
        let mut touches: Vec<(String, Op)> = Vec::new();
        let long = "z".repeat(300);
        let steps: [(Kind, &str); 11] = [
            (Kind::Identifier, "src/a.py"),
            (Kind::Path, "src/a.py"),
            (Kind::Touch(Op::Read), "src/a.py"),
            (Kind::Path, ""),
            (Kind::Identifier, "KeyError"),
            (Kind::Path, "ü/ß.rs"),
            (Kind::Touch(Op::Edited), "b"),
            (Kind::Identifier, long.as_str()),
            (Kind::Identifier, long.as_str()),
            (Kind::Touch(Op::Created), "c"),
            (Kind::Path, "src/a.py"),
        ];
        for (kind, item) in steps {
            match kind {
                Kind::Identifier => ids.put(item),
                Kind::Path => paths.put(item),
                Kind::Touch(op) => touches.touch(item, op),
                _ => unreachable!(),
            }
            if let Kind::Touch(op) = kind {
                p.touch(item, op);
            } else {
                p.to(kind).put(item);
            }
        }
        p.renamed_last();
        touches.renamed_last();
        assert_eq!(p.of(Kind::Identifier).collect::<Vec<_>>(), ids);
        assert_eq!(p.of(Kind::Path).collect::<Vec<_>>(), paths);
        assert_eq!(
            p.touches().map(|(t, op)| (t.to_owned(), op)).collect::<Vec<_>>(),
            touches
        );
        assert_eq!(p.first(Kind::Path), Some("src/a.py"));
        assert_eq!(p.first(Kind::Read), None);
        assert_eq!(p.of(Kind::Reference).count(), 0);
        // Repeated texts share their bytes: "src/a.py" three times in a row, the long one twice.
        assert_eq!(
            p.text.len(),
            "src/a.py".len() * 2 + "KeyError".len() + "ü/ß.rs".len() + 300 + 2
        );
    }

    #[test]
    fn renaming_the_last_touch_skips_other_kinds_and_needs_a_touch() {
        let mut p = Pieces::default();
        p.push(Kind::Path, "x");
        p.renamed_last();
        assert_eq!(p.touches().count(), 0);
        assert_eq!(p.first(Kind::Path), Some("x"));
        p.touch("a", Op::Edited);
        p.push(Kind::Path, "y");
        p.renamed_last();
        assert_eq!(p.touches().collect::<Vec<_>>(), vec![("a", Op::Renamed)]);
    }
}
