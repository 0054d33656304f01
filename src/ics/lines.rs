//! iCalendar content lines (RFC 5545 §3.1): a property's name, its parameters and its value, one
//! logical line each, folded at 75 octets. TEXT values are escaped as §3.3.11 says, and no value
//! or parameter can end its line early, whatever it holds: a calendar can never be forged through
//! the names and notes it shows. It knows the grammar of a line, not what a calendar or an event
//! must contain (that is `ics::render`'s job).
//!
//! Our own, not the `icalendar` crate's: that one (0.17) kept a raw CR in TEXT, wrote NAME without
//! escaping it at all, and folded by counting bytes and chars alike.

use chrono::{DateTime, Utc};

/// The longest physical line, in octets, not counting its CRLF (RFC 5545 §3.1: "Lines of text
/// SHOULD NOT be longer than 75 octets").
pub const LINE_OCTETS: usize = 75;

/// An iCalendar text being written, line by line. Component names and property and parameter
/// names are the program's own constants (`&'static str`); values come from anywhere.
///
/// ```
/// use studioflow::ics::lines::ContentLines;
/// let mut ics = ContentLines::new();
/// ics.begin("VEVENT");
/// ics.text("SUMMARY", "Mix; then master, loud\\soft\r\nday 2");
/// ics.property("ATTENDEE").param("CN", "Doe, Jane").value("mailto:jane@example.com");
/// ics.end("VEVENT");
/// assert_eq!(
///     ics.finish(),
///     "BEGIN:VEVENT\r\n\
///      SUMMARY:Mix\\; then master\\, loud\\\\soft\\nday 2\r\n\
///      ATTENDEE;CN=\"Doe, Jane\":mailto:jane@example.com\r\n\
///      END:VEVENT\r\n"
/// );
/// ```
#[derive(Debug, Default)]
pub struct ContentLines {
    text: String,
}

impl ContentLines {
    pub fn new() -> ContentLines {
        ContentLines::default()
    }

    /// `BEGIN:<component>`.
    pub fn begin(&mut self, component: &'static str) {
        self.property("BEGIN").value(component);
    }

    /// `END:<component>`.
    pub fn end(&mut self, component: &'static str) {
        self.property("END").value(component);
    }

    /// A property of value type TEXT (SUMMARY, DESCRIPTION, LOCATION, UID, NAME, ...).
    pub fn text(&mut self, name: &'static str, value: &str) {
        self.property(name).text(value);
    }

    /// A DATE-TIME property in UTC (`20260901T080000Z`).
    pub fn utc(&mut self, name: &'static str, at: DateTime<Utc>) {
        self.property(name).value(&at.format("%Y%m%dT%H%M%SZ").to_string());
    }

    /// An INTEGER property (SEQUENCE).
    pub fn integer(&mut self, name: &'static str, value: i64) {
        self.property(name).value(&value.to_string());
    }

    /// A property with parameters, or with a value of another type: finish it with
    /// [`Property::text`] or [`Property::value`].
    pub fn property(&mut self, name: &'static str) -> Property<'_> {
        debug_assert!(is_name(name), "{name:?} is not a property name");
        Property { lines: self, line: name.to_owned() }
    }

    /// The text written so far: every line ends in CRLF.
    pub fn finish(self) -> String {
        self.text
    }

    /// Folds `line` into the text: CRLF and a space before any character that would take the
    /// physical line past [`LINE_OCTETS`], so a line is cut only between UTF-8 characters.
    fn push_line(&mut self, line: &str) {
        let mut room = LINE_OCTETS;
        for c in line.chars() {
            if c.len_utf8() > room {
                self.text.push_str("\r\n ");
                room = LINE_OCTETS - 1;
            }
            self.text.push(c);
            room -= c.len_utf8();
        }
        self.text.push_str("\r\n");
    }
}

/// A content line being written: its name, then parameters, then its value, which writes it.
#[must_use = "a property is written by its value: call .text() or .value()"]
pub struct Property<'a> {
    lines: &'a mut ContentLines,
    /// The logical line so far: the name and the parameters.
    line: String,
}

impl Property<'_> {
    /// A parameter (`;CN=...`). The value is quoted when it holds `:`, `;` or `,`; a DQUOTE, which
    /// no parameter value can hold, and control characters are left out.
    pub fn param(mut self, name: &'static str, value: &str) -> Self {
        debug_assert!(is_name(name), "{name:?} is not a parameter name");
        let value: String = value.chars().filter(|&c| c != '"' && !is_dropped(c)).collect();
        self.line.push(';');
        self.line.push_str(name);
        self.line.push('=');
        if value.contains([':', ';', ',']) {
            self.line.push('"');
            self.line.push_str(&value);
            self.line.push('"');
        } else {
            self.line.push_str(&value);
        }
        self
    }

    /// Writes the line with a TEXT value, escaped (RFC 5545 §3.3.11): backslash, semicolon and
    /// comma take a backslash; a line break (CR, LF or CRLF) becomes `\n`. Every other control
    /// character (C0 but HTAB, DEL, C1) has no place in TEXT and is left out; anything else,
    /// bidi controls included, is written as it is.
    pub fn text(mut self, value: &str) {
        self.line.push(':');
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => self.line.push_str("\\\\"),
                ';' => self.line.push_str("\\;"),
                ',' => self.line.push_str("\\,"),
                '\n' => self.line.push_str("\\n"),
                '\r' => {
                    chars.next_if_eq(&'\n');
                    self.line.push_str("\\n");
                }
                c if is_dropped(c) => {}
                c => self.line.push(c),
            }
        }
        self.lines.push_line(&self.line);
    }

    /// Writes the line with a value that needs no escaping in its type (DATE-TIME, INTEGER, a
    /// URI, a fixed word such as `CONFIRMED`). Control characters are left out all the same, so
    /// the line stays one line.
    pub fn value(mut self, value: &str) {
        self.line.push(':');
        self.line.extend(value.chars().filter(|&c| !is_dropped(c)));
        self.lines.push_line(&self.line);
    }
}

/// A control character no value can hold: C0 but HTAB (CR and LF included: a TEXT value writes
/// line breaks as `\n` before this is asked), DEL and C1.
fn is_dropped(c: char) -> bool {
    c.is_control() && c != '\t'
}

/// A property or parameter name: letters, digits and `-` (RFC 5545 §3.1, iana-token and x-name).
fn is_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of one TEXT property `X` holding `value`.
    fn text(value: &str) -> String {
        let mut ics = ContentLines::new();
        ics.text("X", value);
        ics.finish()
    }

    #[test]
    fn text_escapes_backslash_semicolon_comma_and_every_line_break() {
        let cases = [
            ("plain: words \"quoted\"", "X:plain: words \"quoted\"\r\n"),
            ("a\\b;c,d", "X:a\\\\b\\;c\\,d\r\n"),
            // CRLF is one break; a CR alone and an LF alone are one each; LF CR is two.
            ("1\r\n2\r3\n4\n\r5", "X:1\\n2\\n3\\n4\\n\\n5\r\n"),
            // An escaped backslash before an `n` stays a backslash and a letter.
            ("C:\\new", "X:C:\\\\new\r\n"),
            ("", "X:\r\n"),
        ];
        for (value, written) in cases {
            assert_eq!(text(value), written, "{value:?}");
        }
    }

    #[test]
    fn text_drops_control_characters_but_htab_and_keeps_bidi_controls() {
        // Every C0 character, DEL and every C1 character, between two letters.
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let written = text(&format!("a{c}b"));
            let expected = match c {
                '\t' => "X:a\tb\r\n",
                '\r' | '\n' => "X:a\\nb\r\n",
                _ => "X:ab\r\n",
            };
            assert_eq!(written, expected, "U+{:04X}", c as u32);
        }
        // Bidi controls are ordinary characters of TEXT: LRE RLE PDF LRO RLO, LRI RLI FSI PDI,
        // LRM RLM ALM; so are the line and paragraph separators, which are not controls.
        let bidi = "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}\u{2028}\u{2029}";
        assert_eq!(text(bidi), format!("X:{bidi}\r\n"));
    }

    #[test]
    fn a_value_and_a_parameter_cannot_end_their_line() {
        let mut ics = ContentLines::new();
        ics.property("ATTENDEE").param("CN", "Eve\r\nBEGIN:VEVENT").value("mailto:eve@x\r\nEND:VCALENDAR");
        assert_eq!(ics.finish(), "ATTENDEE;CN=\"EveBEGIN:VEVENT\":mailto:eve@xEND:VCALENDAR\r\n");
    }

    #[test]
    fn parameters_are_quoted_only_when_they_must_be() {
        let cases = [
            ("Jane Doe", "A;CN=Jane Doe:v\r\n"),
            ("Doe, Jane", "A;CN=\"Doe, Jane\":v\r\n"),
            ("a;b", "A;CN=\"a;b\":v\r\n"),
            ("mailto:x", "A;CN=\"mailto:x\":v\r\n"),
            // A DQUOTE cannot be written in a parameter at all (RFC 5545 §3.1; RFC 6868 aside).
            ("say \"hi\"", "A;CN=say hi:v\r\n"),
            ("say \"hi\", then go", "A;CN=\"say hi, then go\":v\r\n"),
            ("tab\there\u{85}", "A;CN=tab\there:v\r\n"),
            ("", "A;CN=:v\r\n"),
        ];
        for (value, written) in cases {
            let mut ics = ContentLines::new();
            ics.property("A").param("CN", value).value("v");
            assert_eq!(ics.finish(), written, "{value:?}");
        }
        let mut ics = ContentLines::new();
        ics.property("ATTENDEE").param("ROLE", "REQ-PARTICIPANT").param("CN", "Ann").text("x,y");
        assert_eq!(ics.finish(), "ATTENDEE;ROLE=REQ-PARTICIPANT;CN=Ann:x\\,y\r\n");
    }

    #[test]
    fn dates_and_integers() {
        let mut ics = ContentLines::new();
        ics.utc("DTSTART", "2026-09-01T08:00:00Z".parse().unwrap());
        ics.integer("SEQUENCE", 3);
        assert_eq!(ics.finish(), "DTSTART:20260901T080000Z\r\nSEQUENCE:3\r\n");
    }

    /// The physical lines of a text, without their CRLF; panics on a bare CR or LF.
    fn physical(text: &str) -> Vec<&str> {
        let lines: Vec<&str> = text.strip_suffix("\r\n").unwrap().split("\r\n").collect();
        assert!(lines.iter().all(|l| !l.contains(['\r', '\n'])), "{text:?}");
        lines
    }

    #[test]
    fn a_line_of_75_octets_is_whole_and_one_more_folds() {
        // "X:" and 73 letters: 75 octets, one line.
        let at_limit = text(&"a".repeat(73));
        assert_eq!(physical(&at_limit), [format!("X:{}", "a".repeat(73))]);
        // One more letter goes onto a continuation line: a space and the letter.
        let over = text(&"a".repeat(74));
        assert_eq!(physical(&over), [format!("X:{}", "a".repeat(73)), " a".to_owned()]);
        // A continuation line holds 74 octets after its space: 2 + 73 + 74 + 1 letters in three.
        let long = text(&"a".repeat(73 + 74 + 1));
        assert_eq!(physical(&long), [format!("X:{}", "a".repeat(73)), format!(" {}", "a".repeat(74)), " a".to_owned()]);
    }

    #[test]
    fn a_fold_never_cuts_a_character() {
        // "X:" and 72 letters leave one octet on the line: "é" (2 octets), "€" (3) and "🎸" (4)
        // each move whole to the next line, and the first stays 74 octets long.
        for c in ['é', '€', '🎸'] {
            let written = text(&format!("{}{c}{c}", "a".repeat(72)));
            assert_eq!(physical(&written), [format!("X:{}", "a".repeat(72)), format!(" {c}{c}")], "{c}");
        }
        // With 71 letters, two octets are left: "é" fits exactly (75 octets), "€" and "🎸" do not.
        assert_eq!(physical(&text(&format!("{}é", "a".repeat(71)))), [format!("X:{}é", "a".repeat(71))]);
        assert_eq!(physical(&text(&format!("{}€", "a".repeat(71)))), [format!("X:{}", "a".repeat(71)), " €".to_owned()]);
        // A long run of 4-octet characters: 18 fit after "X:" (74 octets), then 18 per
        // continuation line (1 + 72 octets); every line at most 75, none cut, nothing lost.
        let guitars = "🎸".repeat(40);
        let written = text(&guitars);
        let lines = physical(&written);
        assert_eq!(lines.iter().map(|l| l.len()).collect::<Vec<_>>(), [74, 73, 17]);
        assert_eq!(lines.concat().replace(' ', ""), format!("X:{guitars}"));
    }

    #[test]
    fn an_escape_can_be_folded_through_and_unfolds_whole() {
        // The escape of the comma starts at octet 75: the backslash ends the line and the comma
        // opens the next; unfolding (remove CRLF and one space) gives the escape back.
        let written = text(&format!("{},b", "a".repeat(72)));
        assert_eq!(physical(&written), [format!("X:{}\\", "a".repeat(72)), " ,b".to_owned()]);
        assert_eq!(written.replace("\r\n ", ""), format!("X:{}\\,b\r\n", "a".repeat(72)));
    }
}
