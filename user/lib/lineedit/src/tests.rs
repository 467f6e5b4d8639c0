//! Host tests of the editor: keys in, lines and screen updates out.

use super::*;

struct Words(&'static [&'static str], &'static [&'static str]);

/// First word: the commands in `.0`; after `run `: the programs in `.1`.
impl Completer for Words {
    fn candidates(&self, before: &str, out: &mut Vec<String>) {
        let words: Vec<&str> = before.split_whitespace().collect();
        let list = match words.as_slice() {
            [] => self.0,
            ["run"] => self.1,
            _ => &[],
        };
        out.extend(list.iter().map(|s| String::from(*s)));
    }
}

const SHELL: Words = Words(
    &[
        "echo", "halt", "help", "kill", "ps", "programs", "run", "uptime",
    ],
    &["hello", "ktest", "pfilter", "stress"],
);

/// A fresh editor fed `input`; returns it, the finished lines and the output.
fn feed(input: &[u8]) -> (Editor, Vec<String>, Vec<u8>) {
    let mut e = Editor::new("> ");
    let mut out = Vec::new();
    e.begin(&mut out);
    let lines = e.feed_all(input, &mut out, &SHELL);
    (e, lines, out)
}

fn lines(input: &[u8]) -> Vec<String> {
    feed(input).1
}

fn line(input: &[u8]) -> String {
    let l = lines(input);
    assert_eq!(l.len(), 1, "{l:?}");
    l[0].clone()
}

#[test]
fn typing_and_enter() {
    assert_eq!(line(b"echo hi\r"), "echo hi");
    assert_eq!(line(b"echo hi\n"), "echo hi");
    // CR LF is one Enter, two CRs are two.
    assert_eq!(lines(b"a\r\nb\r"), ["a", "b"]);
    assert_eq!(lines(b"a\r\r"), ["a", ""]);
    let (_, _, out) = feed(b"ab\r");
    assert_eq!(out, b"> ab\n> ");
}

#[test]
fn backspace_both_codes() {
    assert_eq!(line(b"echo hix\x7f\r"), "echo hi");
    assert_eq!(line(b"echo hixy\x08\x08\r"), "echo hi");
    // At the start nothing happens but a bell.
    let (e, _, out) = feed(b"\x7f");
    assert_eq!(e.line(), "");
    assert!(out.ends_with(b"\x07"));
}

#[test]
fn left_and_backspace_correct_in_the_middle() {
    // "ecXho hi", Left x5 puts the cursor after X; Backspace removes it.
    assert_eq!(
        line(b"ecXho hi\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x7f\r"),
        "echo hi"
    );
    // SS3 arrows and Ctrl-B/Ctrl-F too.
    assert_eq!(line(b"ecXho\x1bOD\x1bOD\x7f\r"), "echo");
    assert_eq!(line(b"ecXho\x02\x02\x02\x06\x7f\r"), "echo");
    assert_eq!(line(b"eho\x1b[D\x1b[Dc\r"), "echo");
}

#[test]
fn right_stops_at_the_end_left_at_the_start() {
    let (e, _, _) = feed(b"ab\x1b[C\x1b[C\x1b[D\x1b[D\x1b[D\x1b[D");
    assert_eq!(e.cursor(), 0);
    let (e, _, _) = feed(b"ab\x1b[D\x1b[D\x1b[C\x1b[C\x1b[C");
    assert_eq!(e.cursor(), 2);
}

#[test]
fn home_and_end_in_every_encoding() {
    for home in [&b"\x1b[H"[..], b"\x1b[1~", b"\x1b[7~", b"\x1bOH", b"\x01"] {
        assert_eq!(line(&[&b"cho hi"[..], home, b"e\r"].concat()), "echo hi", "{home:?}");
    }
    for end in [&b"\x1b[F"[..], b"\x1b[4~", b"\x1b[8~", b"\x1bOF", b"\x05"] {
        assert_eq!(line(&[&b"echo h\x01"[..], end, b"i\r"].concat()), "echo hi", "{end:?}");
    }
}

#[test]
fn delete_under_the_cursor() {
    assert_eq!(line(b"echXo\x1b[D\x1b[D\x1b[3~\r"), "echo");
    assert_eq!(line(b"echXo\x1b[D\x1b[D\x04\r"), "echo");
    // Delete at the end does nothing.
    assert_eq!(line(b"echo\x1b[3~\r"), "echo");
}

#[test]
fn word_motion() {
    // Ctrl-Left twice from the end lands at "b"; Alt-F goes back past it.
    let (e, _, _) = feed(b"aa bb cc\x1b[1;5D\x1b[1;5D");
    assert_eq!(e.cursor(), 3);
    let (e, _, _) = feed(b"aa bb cc\x01\x1bf\x1bf");
    assert_eq!(e.cursor(), 5);
    let (e, _, _) = feed(b"aa bb cc\x1bb");
    assert_eq!(e.cursor(), 6);
    let (e, _, _) = feed(b"aa bb cc\x01\x1b[1;5C");
    assert_eq!(e.cursor(), 2);
}

#[test]
fn cutting_and_pasting() {
    // Ctrl-U cuts to the start, Ctrl-K to the end.
    assert_eq!(line(b"garbage\x15echo hi\r"), "echo hi");
    assert_eq!(
        line(b"echo hi there\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x0b\r"),
        "echo hi"
    );
    assert_eq!(line(b"echo garbage\x1b[D\x1b[D\x15\r"), "ge");
    // Ctrl-W cuts the word before the cursor (and the blanks after it).
    assert_eq!(line(b"echo hi there  \x17\r"), "echo hi ");
    assert_eq!(line(b"echo\x17\x17\r"), "");
    // Ctrl-Y pastes what was cut last.
    assert_eq!(line(b"hi\x15echo \x19\r"), "echo hi");
}

#[test]
fn history_up_and_down() {
    let (mut e, l, _) = feed(b"one\rtwo\r");
    assert_eq!(l, ["one", "two"]);
    let mut out = Vec::new();
    e.feed_all(b"draft\x1b[A", &mut out, &SHELL);
    assert_eq!(e.line(), "two");
    e.feed_all(b"\x1b[A", &mut out, &SHELL);
    assert_eq!(e.line(), "one");
    // Up at the oldest stays there.
    e.feed_all(b"\x1b[A", &mut out, &SHELL);
    assert_eq!(e.line(), "one");
    e.feed_all(b"\x1b[B", &mut out, &SHELL);
    assert_eq!(e.line(), "two");
    // Down past the newest returns to the line being edited.
    e.feed_all(b"\x1b[B", &mut out, &SHELL);
    assert_eq!(e.line(), "draft");
    assert_eq!(e.cursor(), 5);
    // Further Down does nothing.
    e.feed_all(b"\x1bOB", &mut out, &SHELL);
    assert_eq!(e.line(), "draft");
    // A recalled line can be edited and run.
    out.clear();
    let l = e.feed_all(b"\x15\x10\x10 1\r", &mut out, &SHELL);
    assert_eq!(l, ["one 1"]);
    assert_eq!(e.history().collect::<Vec<_>>(), ["one", "two", "one 1"]);
}

#[test]
fn history_redraws_the_row() {
    let (mut e, _, _) = feed(b"echo hi\r");
    let mut out = Vec::new();
    e.feed_all(b"x\x1b[A", &mut out, &SHELL);
    assert_eq!(out, b"x\r> echo hi\x1b[K");
}

#[test]
fn history_is_bounded_and_skips_repeats_and_blanks() {
    let mut input = Vec::new();
    for i in 0..HISTORY + 10 {
        input.extend_from_slice(alloc::format!("cmd {i}\r").as_bytes());
    }
    input.extend_from_slice(b"cmd 41\r   \r\r");
    let (e, _, _) = feed(&input);
    let h: Vec<&str> = e.history().collect();
    assert_eq!(h.len(), HISTORY);
    assert_eq!(h[0], "cmd 10");
    assert_eq!(h[HISTORY - 1], "cmd 41");
}

#[test]
fn ctrl_c_abandons_the_line() {
    let (e, l, out) = feed(b"echo oops\x03");
    assert!(l.is_empty());
    assert_eq!(e.line(), "");
    assert!(out.ends_with(b"echo oops^C\n> "));
    // It is not remembered.
    assert_eq!(e.history().count(), 0);
    assert_eq!(line(b"echo oops\x03echo ok\r"), "echo ok");
}

#[test]
fn ctrl_l_clears_and_redraws() {
    let (_, _, out) = feed(b"ab\x1b[D\x0c");
    assert!(
        out.ends_with(b"\x1b[H\x1b[2J\r> ab\x1b[K\x1b[1D"),
        "{out:?}"
    );
}

#[test]
fn unknown_escape_sequences_insert_nothing() {
    for seq in [
        &b"\x1b[2~"[..], // Insert
        b"\x1b[5~",      // Page Up
        b"\x1b[15~",     // F5
        b"\x1b[1;2P",    // Shift-F1
        b"\x1b[Z",       // Shift-Tab
        b"\x1bOP",       // F1
        b"\x1b[?25h",    // private parameters
        b"\x1b[200~",    // bracketed paste start
        b"\x1bx",        // Alt-x
        b"\x1b\x1b[A",   // Alt-Up is Up: nothing in the history
    ] {
        let mut input = b"ab".to_vec();
        input.extend_from_slice(seq);
        input.extend_from_slice(b"c\r");
        assert_eq!(line(&input), "abc", "{seq:?}");
    }
    // A long parameter string is still swallowed whole.
    let mut input = b"ab\x1b[".to_vec();
    input.extend_from_slice(&[b'9'; 40]);
    input.extend_from_slice(b"~c\r");
    assert_eq!(line(&input), "abc");
}

#[test]
fn control_bytes_break_off_a_sequence() {
    // Ctrl-C inside a CSI sequence still cancels.
    let (e, l, out) = feed(b"abc\x1b[1\x03");
    assert!(l.is_empty());
    assert_eq!(e.line(), "");
    assert!(out.ends_with(b"^C\n> "));
    // Other bytes: non-ASCII and stray controls are ignored.
    assert_eq!(line(b"a\x00\x7e\xc3\xa9\x1ab\r"), "a~b");
}

#[test]
fn sequences_split_across_feeds() {
    let mut e = Editor::new("> ");
    let mut out = Vec::new();
    e.begin(&mut out);
    for chunk in [&b"ecXho"[..], b"\x1b", b"[", b"D\x1b[", b"D", b"\x7f"] {
        e.feed_all(chunk, &mut out, &SHELL);
    }
    assert_eq!(e.line(), "echo");
}

#[test]
fn screen_updates_are_plain_vt100() {
    // Left emits ESC [ 1 D; an insertion in the middle redraws the row.
    let (_, _, out) = feed(b"ac\x1b[Db");
    assert_eq!(out, b"> ac\x1b[1D\r> abc\x1b[K\x1b[1D");
    let (_, _, out) = feed(b"abc\x01\x05");
    assert_eq!(out, b"> abc\x1b[3D\x1b[3C");
    let (_, _, out) = feed(b"ab\x7f");
    assert_eq!(out, b"> ab\x08\x1b[K");
}

#[test]
fn line_length_is_bounded() {
    let input = [b'x'; MAX_LINE + 10];
    let (e, _, out) = feed(&input);
    assert_eq!(e.line().len(), MAX_LINE);
    assert!(out.ends_with(b"\x07"));
}

#[test]
fn tab_completes_a_unique_command() {
    assert_eq!(line(b"pro\t\r"), "programs ");
    assert_eq!(line(b"up\t\r"), "uptime ");
    // After `run `, the programs.
    assert_eq!(line(b"run hel\t\r"), "run hello ");
    assert_eq!(line(b"run k\t\r"), "run ktest ");
    // Nothing matches: a bell and no change.
    let (e, _, out) = feed(b"zz\t");
    assert_eq!(e.line(), "zz");
    assert!(out.ends_with(b"\x07"));
    // Not in the middle of arguments the completer knows nothing about.
    assert_eq!(line(b"echo pro\t\r"), "echo pro");
}

#[test]
fn tab_in_the_middle_of_a_line() {
    // Completing "ru" before " hello" adds no second blank.
    assert_eq!(line(b"x hello\x01\x1b[3~ru\t\r"), "run hello");
}

#[test]
fn tab_completes_the_common_prefix_then_lists() {
    // "h": halt, help → common prefix "h" only: bell; second Tab lists.
    let (e, _, out) = feed(b"h\t");
    assert_eq!(e.line(), "h");
    assert!(out.ends_with(b"\x07"));
    let (e, _, out) = feed(b"h\t\t");
    assert_eq!(e.line(), "h");
    assert!(
        out.ends_with(b"\nhalt  help\n\r> h\x1b[K"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    // "p": programs, ps → common prefix "p" only; "pr" is unique.
    let (e, _, out) = feed(b"p\t\t");
    assert_eq!(e.line(), "p");
    assert!(String::from_utf8_lossy(&out).contains("programs  ps"));
    // "he" → "hel" (help only)... "ha"/"he" are unique; "e"/"ec" unique.
    assert_eq!(line(b"run \t\t\r"), "run ");
    let (_, _, out) = feed(b"run \t\t");
    assert!(String::from_utf8_lossy(&out).contains("hello  ktest  pfilter  stress"));
}

#[test]
fn tab_extends_to_the_common_prefix() {
    struct Two;
    impl Completer for Two {
        fn candidates(&self, _: &str, out: &mut Vec<String>) {
            out.push("pf-loop.sfi".into());
            out.push("pf-udp53.sfi".into());
            out.push("pfilter".into());
        }
    }
    let mut e = Editor::new("> ");
    let mut out = Vec::new();
    e.feed_all(b"pf-\t", &mut out, &Two);
    assert_eq!(e.line(), "pf-");
    e.feed_all(b"\x15p\t", &mut out, &Two);
    assert_eq!(e.line(), "pf");
    e.feed_all(b"-l\t", &mut out, &Two);
    assert_eq!(e.line(), "pf-loop.sfi ");
    e.feed_all(b"\x15pf-\t", &mut out, &Two);
    // A second Tab after the prefix lists the two that remain.
    out.clear();
    e.feed_all(b"\t", &mut out, &Two);
    assert!(String::from_utf8_lossy(&out).contains("pf-loop.sfi  pf-udp53.sfi"));
}

#[test]
fn a_key_between_two_tabs_means_no_listing() {
    let (_, _, out) = feed(b"h\tx\x7f\t");
    assert!(!String::from_utf8_lossy(&out).contains("halt  help"));
}
