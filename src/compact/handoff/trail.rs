//! The artifact trail and the plan of a task ledger: what each tool call did to which file (read,
//! created, written, edited, deleted, renamed) — from file tools' names and inputs, patches, and
//! the verbs of shell commands — and the latest TODO list or plan a tool call set.

use super::pieces::Touches;
use super::text::{clipped, first_line, first_line_of};
use crate::compact::args::{Arg, Args};

/// What a call did to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Read,
    Created,
    /// Written whole (a write tool, a `>` redirect): created when the file was not seen before in
    /// the history, else edited ([`super::Artifact`] resolves it in order).
    Written,
    Edited,
    Deleted,
    Renamed,
}

impl Op {
    pub(super) fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Created | Op::Written => "created",
            Op::Edited => "edited",
            Op::Deleted => "deleted",
            Op::Renamed => "renamed",
        }
    }
}

/// Subcommands of editor tools (SWE-agent's and OpenHands' `str_replace_editor`, Anthropic's text
/// editor) that say what the call does to its `path`.
fn editor_op(subcommand: &str) -> Option<Op> {
    match subcommand {
        "view" => Some(Op::Read),
        "create" => Some(Op::Created),
        "str_replace" | "insert" | "undo_edit" | "edit" | "append" => Some(Op::Edited),
        _ => None,
    }
}

/// What a file tool named `name` does to its `path`: the editor subcommand when it names one,
/// else by the name (a read tool reads; write/create tools write whole; other write tools edit).
/// Searches and listings (`Grep`, `Glob`, `ls`) are not reads of a file.
pub(super) fn tool_op(name: &str, subcommand: Option<&str>, reads: bool, writes: bool) -> Option<Op> {
    if let Some(op) = subcommand.and_then(editor_op) {
        return Some(op);
    }
    // `name` in ASCII lower case contains `k` (no lower-case copy of the name per call).
    let named = |k: &str| {
        name.as_bytes()
            .windows(k.len())
            .any(|w| w.eq_ignore_ascii_case(k.as_bytes()))
    };
    if writes {
        if named("write") || named("create") {
            return Some(Op::Written);
        }
        return Some(Op::Edited);
    }
    let file_read = ["read", "view", "cat", "open"].iter().any(|k| named(k));
    (reads && file_read).then_some(Op::Read)
}

/// Files a patch touches with what it does to each: `*** Add File` creates, `*** Update File`
/// edits (`*** Move to` renames it), `*** Delete File` deletes; a unified diff's `+++ b/x` edits
/// (created when its `---` side is `/dev/null`).
pub(super) fn patch_ops(text: &str, out: &mut impl Touches) {
    let mut from_null = false;
    for l in text.lines() {
        let l = l.trim_end();
        if let Some(p) = l.strip_prefix("*** Add File: ") {
            out.touch(p.trim(), Op::Created);
        } else if let Some(p) = l.strip_prefix("*** Update File: ") {
            out.touch(p.trim(), Op::Edited);
        } else if let Some(p) = l.strip_prefix("*** Delete File: ") {
            out.touch(p.trim(), Op::Deleted);
        } else if let Some(p) = l.strip_prefix("*** Move to: ") {
            out.renamed_last();
            out.touch(p.trim(), Op::Created);
        } else if l.starts_with("--- ") {
            from_null = l == "--- /dev/null";
        } else if let Some(p) = l.strip_prefix("+++ b/") {
            out.touch(p.trim(), if from_null { Op::Created } else { Op::Edited });
        }
    }
}

/// A shell word as a file argument: unquoted, not an option, no variables, globs or redirects,
/// and (for reads, `loose` false) with a `.` or `/` in it, so that `head -n 20` names no file.
fn file_arg(word: &str, loose: bool) -> Option<&str> {
    let w = word.trim_matches(['"', '\'']);
    let plain = !w.is_empty()
        && !w.starts_with('-')
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-~@+:,=".contains(&b))
        && !w.contains("://")
        && w != "."
        && w != "..";
    (plain && (loose || w.contains('.') || w.contains('/')) && !w.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .then_some(w)
}

/// Wrappers before a command's verb that do not change what it does.
const PREFIXES: &[&str] = &["sudo", "env", "command", "time", "nohup", "exec", "then", "do", "else"];

/// The files one shell command line touches, by its verb: `cat`, `head`, `tail`, `less`, `nl`,
/// `bat`, `sed -n` and SWE-agent's `open <path> [<line>]` read; `sed -i` and `perl -i` edit; `rm`, `unlink`, `git rm` delete; `mv`
/// and `git mv` rename (the target created); `cp` creates its target; `touch` and SWE-agent's
/// `create` create; a `>` or `>>` redirect writes its target.
fn segment_ops(segment: &str, out: &mut impl Touches) {
    let all: Vec<&str> = segment.split_whitespace().collect();
    // Redirects first: `> file`, `>> file`, `>file` (not `2>&1`, not /dev/null); the words of a
    // redirect are not the command's arguments.
    let mut words: Vec<&str> = Vec::with_capacity(all.len());
    let mut k = 0;
    while k < all.len() {
        let w = all[k];
        let target = match w {
            ">" | ">>" | "1>" | "<" | "<<" | "2>" => all.get(k + 1).copied().inspect(|_| k += 1),
            _ => w
                .strip_prefix(">>")
                .or_else(|| w.strip_prefix('>'))
                .filter(|t| !t.starts_with('&')),
        };
        if w.starts_with('>') || w == "1>" {
            if let Some(t) = target
                .and_then(|t| file_arg(t, true))
                .filter(|t| !t.starts_with("/dev/"))
            {
                out.touch(t, if w.starts_with(">>") { Op::Edited } else { Op::Written });
            }
        } else if target.is_none() && !w.contains('>') && !w.contains('<') {
            words.push(w);
        }
        k += 1;
    }
    let start = words
        .iter()
        .position(|w| !PREFIXES.contains(w) && (!w.contains('=') || w.starts_with('-')))
        .unwrap_or(words.len());
    let mut words = &words[start..];
    if words.first() == Some(&"git") && matches!(words.get(1), Some(&"rm" | &"mv")) {
        words = &words[1..];
    }
    let Some((&verb, args)) = words.split_first() else {
        return;
    };
    let verb = verb.rsplit('/').next().unwrap_or(verb);
    let has_flag = |f: &str| args.iter().any(|w| w.starts_with(f));
    // sed's and perl's first operand is their script (unless given by -e).
    let script = matches!(verb, "sed" | "perl") && !has_flag("-e");
    let skip = if script {
        args.iter().position(|w| !w.starts_with('-')).map_or(0, |p| p + 1)
    } else {
        0
    };
    let files = |loose: bool| {
        args.iter()
            .enumerate()
            .filter(move |(k, _)| *k >= skip)
            .filter_map(move |(_, w)| file_arg(w, loose))
    };
    match verb {
        "cat" | "head" | "tail" | "less" | "more" | "nl" | "bat" | "open" => {
            files(false).for_each(|f| out.touch(f, Op::Read));
        }
        "sed" | "perl" if has_flag("-i") || has_flag("-pi") => {
            files(false).for_each(|f| out.touch(f, Op::Edited));
        }
        "sed" if has_flag("-n") => files(false).for_each(|f| out.touch(f, Op::Read)),
        "grep" | "egrep" | "fgrep" => grep_files(args).into_iter().for_each(|f| out.touch(f, Op::Read)),
        "rm" | "unlink" => files(true).for_each(|f| out.touch(f, Op::Deleted)),
        "touch" | "create" => files(true).for_each(|f| out.touch(f, Op::Created)),
        "mv" | "cp" => {
            let all: Vec<&str> = files(true).collect();
            if let Some((target, sources)) = all.split_last() {
                if verb == "mv" {
                    for f in sources {
                        out.touch(f, Op::Renamed);
                    }
                }
                if !sources.is_empty() {
                    out.touch(target, Op::Created);
                }
            }
        }
        _ => {}
    }
}

/// The index after the shell word at `k` and any words a quote opened in it spans
/// (`"def from_json"` split at whitespace is one word of the command).
fn word_end(args: &[&str], k: usize) -> usize {
    let w = args[k];
    let Some(q) = w.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return k + 1;
    };
    if w.len() > 1 && w.ends_with(q) {
        return k + 1;
    }
    args[k + 1..]
        .iter()
        .position(|x| x.ends_with(q))
        .map_or(args.len(), |p| k + 1 + p + 1)
}

/// The files `grep` reads: its operands after the pattern (the first operand, unless `-e` or
/// `-f` gives it), each a file argument; none for a recursive search (`-r`, `-R`: a search, like
/// `Grep`, is not a read of a file).
fn grep_files<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut pattern = false;
    let mut k = 0;
    while k < args.len() {
        let w = args[k];
        if w.starts_with("--") {
            if w.starts_with("--recursive") || w.starts_with("--dereference-recursive") {
                return Vec::new();
            }
            pattern |= w.starts_with("--regexp") || w.starts_with("--file");
            k += 1;
        } else if w.len() > 1 && w.starts_with('-') {
            let flags = &w[1..];
            if flags.contains(['r', 'R']) {
                return Vec::new();
            }
            k += 1;
            if flags.ends_with(['e', 'f']) {
                pattern = true;
                if k < args.len() {
                    k = word_end(args, k); // the pattern (or its file) after the flag
                }
            }
        } else if !pattern {
            pattern = true;
            k = word_end(args, k);
        } else {
            out.extend(file_arg(w, false));
            k += 1;
        }
    }
    out
}

/// The files a shell command touches ([`segment_ops`] per command of its lists and pipelines;
/// the bodies of here-documents are data, and a patch given to `apply_patch` in one is read as a
/// patch).
pub(super) fn shell_ops(command: &str, out: &mut impl Touches) {
    if command.contains("*** Begin Patch") {
        patch_ops(command, out);
    }
    let mut heredoc: Option<String> = None;
    for line in command.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        if let Some(at) = line.find("<<") {
            let tag = line[at + 2..].trim_start_matches('-').trim_start();
            let tag: String = tag
                .trim_start_matches(['\'', '"'])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !tag.is_empty() {
                heredoc = Some(tag);
            }
        }
        for segment in line.split([';', '|', '&', '(', ')']) {
            segment_ops(segment, out);
        }
    }
}

/// The text of a shell command given as an argument vector (`["bash", "-lc", "..."]`: the
/// script; otherwise the words joined by spaces).
pub(super) fn argv_command(args: &Args<'_>) -> Option<String> {
    let Some(Arg::Other(v)) = args.get("command").or_else(|| args.get("cmd")) else {
        return None;
    };
    let words: Vec<&str> = v.as_array()?.iter().filter_map(|x| x.as_str()).collect();
    match words.as_slice() {
        [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') && flag.contains('c') => {
            Some((*script).to_owned())
        }
        [] => None,
        _ => Some(words.join(" ")),
    }
}

/// A call's one-line description for the trail, written at the end of `out`: `name subcommand
/// path` for file tools, else the command's first line, else the tool's name.
pub(super) fn describe(name: &str, path: Option<&str>, command: Option<&str>, out: &mut String) {
    match (path, command) {
        (Some(p), Some(sub)) if !sub.trim().contains(char::is_whitespace) => {
            for part in [name, " ", sub.trim(), " ", p] {
                out.push_str(part);
            }
        }
        (Some(p), _) => {
            for part in [name, " ", p] {
                out.push_str(part);
            }
        }
        (None, Some(cmd)) => out.push_str(&clipped(first_line_of(cmd), 160)),
        (None, None) => out.push_str(name),
    }
}

/// The TODO list or plan a call sets, as `(item, status)`: Claude Code's `TodoWrite`
/// (`todos: [{content, status}]`) and Codex's `update_plan` (`plan: [{step, status}]`).
pub(super) fn plan_of(args: &Args<'_>) -> Option<Vec<(String, String)>> {
    let (key, text_key) = if args.get("todos").is_some() {
        ("todos", "content")
    } else {
        ("plan", "step")
    };
    let Some(Arg::Other(v)) = args.get(key) else {
        return None;
    };
    let items = v.as_array()?;
    let plan: Vec<(String, String)> = items
        .iter()
        .filter_map(|item| {
            let text = item.get(text_key).and_then(|x| x.as_str())?;
            let status = item.get("status").and_then(|x| x.as_str()).unwrap_or("");
            Some((first_line(text, 200), status.to_owned()))
        })
        .collect();
    (!plan.is_empty() || items.is_empty()).then_some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(cmd: &str) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        shell_ops(cmd, &mut out);
        out.into_iter().map(|(p, op)| (p, op.name())).collect()
    }

    fn pairs(items: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
        items.iter().map(|(p, o)| ((*p).to_owned(), *o)).collect()
    }

    #[test]
    fn shell_verbs_say_what_happened_to_each_file() {
        assert_eq!(
            ops("cd repo && cat src/app.py | head -n 20 && sed -n '1,40p' lib/util.rs"),
            pairs(&[("src/app.py", "read"), ("lib/util.rs", "read")])
        );
        assert_eq!(
            ops("git rm -f old/legacy.py; rm -rf build && mv a.txt docs/b.txt"),
            pairs(&[
                ("old/legacy.py", "deleted"),
                ("build", "deleted"),
                ("a.txt", "renamed"),
                ("docs/b.txt", "created")
            ])
        );
        assert_eq!(
            ops("sudo sed -i 's/a/b/' conf/app.toml && echo hi > notes.md 2>&1 && echo x >> log.txt"),
            pairs(&[
                ("conf/app.toml", "edited"),
                ("notes.md", "created"),
                ("log.txt", "edited")
            ])
        );
        // SWE-agent's own commands and a here-document whose body is data.
        assert_eq!(ops("create reproduce.py"), pairs(&[("reproduce.py", "created")]));
        assert_eq!(
            ops("open src/marshmallow/fields.py 1474"),
            pairs(&[("src/marshmallow/fields.py", "read")]),
            "a line number is not a file"
        );
        assert_eq!(
            ops("cat > run.sh <<'EOF'\nrm -rf /important/data.db\nEOF\nbash run.sh"),
            pairs(&[("run.sh", "created")])
        );
        assert_eq!(ops("pytest -q tests/ > /dev/null 2>&1"), pairs(&[]));
        assert_eq!(ops("head -n 20"), pairs(&[]), "a count is not a file");
    }

    #[test]
    fn grep_reads_the_files_it_is_given_not_the_ones_it_searches() {
        assert_eq!(
            ops("cd /testbed && grep -n \"def from_json\" pydicom/dataelem.py -A 20 | head"),
            pairs(&[("pydicom/dataelem.py", "read")])
        );
        assert_eq!(
            ops("grep -e 'a.b c.d' -n src/x.py lib/y.rs"),
            pairs(&[("src/x.py", "read"), ("lib/y.rs", "read")])
        );
        assert_eq!(
            ops("grep 'self.foo bar.baz' README.md"),
            pairs(&[("README.md", "read")])
        );
        assert_eq!(ops("grep -rn \"catch_warnings\" /testbed/astroid/"), pairs(&[]));
        assert_eq!(ops("grep --recursive x src/"), pairs(&[]));
        assert_eq!(ops("ps aux | grep python3"), pairs(&[]), "a pattern is not a file");
    }

    #[test]
    fn patches_and_editor_subcommands() {
        let mut out = Vec::new();
        patch_ops(
            "*** Begin Patch\n*** Add File: src/new.rs\n+x\n*** Update File: src/old.rs\n*** Move to: src/moved.rs\n@@\n*** Delete File: src/gone.rs\n*** End Patch",
            &mut out,
        );
        patch_ops(
            "--- /dev/null\n+++ b/docs/added.md\n--- a/README.md\n+++ b/README.md\n",
            &mut out,
        );
        let got: Vec<(String, &str)> = out.into_iter().map(|(p, o)| (p, o.name())).collect();
        assert_eq!(
            got,
            pairs(&[
                ("src/new.rs", "created"),
                ("src/old.rs", "renamed"),
                ("src/moved.rs", "created"),
                ("src/gone.rs", "deleted"),
                ("docs/added.md", "created"),
                ("README.md", "edited"),
            ])
        );
        assert_eq!(tool_op("str_replace_editor", Some("view"), true, true), Some(Op::Read));
        assert_eq!(
            tool_op("str_replace_editor", Some("create"), true, true),
            Some(Op::Created)
        );
        assert_eq!(
            tool_op("str_replace_editor", Some("str_replace"), true, true),
            Some(Op::Edited)
        );
        assert_eq!(tool_op("Write", None, false, true), Some(Op::Written));
        assert_eq!(tool_op("Edit", None, false, true), Some(Op::Edited));
        assert_eq!(tool_op("Read", None, true, false), Some(Op::Read));
        assert_eq!(
            tool_op("Grep", None, true, false),
            None,
            "a search is not a read of a file"
        );
        let describe = |name, path, command| {
            let mut out = String::from("kept ");
            super::describe(name, path, command, &mut out);
            out.strip_prefix("kept ").unwrap().to_owned()
        };
        assert_eq!(describe("Edit", Some("a.py"), None), "Edit a.py");
        assert_eq!(
            describe("str_replace_editor", Some("a.py"), Some("view")),
            "str_replace_editor view a.py"
        );
        assert_eq!(describe("Bash", None, Some("\n  ls -la\nmore")), "ls -la");
    }
}
