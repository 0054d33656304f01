//! One rule for every text that comes from outside: tool arguments, prompt arguments, command-line
//! flags and studio files. Each kind of text ([`TextKind`]: an id, a name, a line, notes, an
//! e-mail address, a tag) is trimmed and has a documented length; none may hold a control
//! character (notes may hold line breaks) or a bidirectional override, so that nothing stored can
//! rewrite a terminal, forge a line of a calendar, or read differently from how it was written.
//! The typed forms ([`Name`], [`Id`], ...) are what the edges deserialize into; the store checks
//! what it writes with the same [`TextKind::clean`], so a path that skips an edge meets the rule
//! too.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kinds of text, each with its rule. Every kind is trimmed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// An id, a cursor or a key: one word (no spaces), 1 to 200 characters.
    Id,
    /// The name of a person, a room or the studio: one line, 1 to 200 characters.
    Name,
    /// A line of free text (a reason, a phone number, a search): one line, at most 200 characters.
    Line,
    /// Notes: may hold line breaks (a CR LF pair is kept as one LF), at most 2,000 characters.
    Notes,
    /// An e-mail address: one word with one `@` and a dotted domain, at most 254 characters.
    Email,
    /// A tag (a room's feature, an engineer's skill): one line, 1 to 64 characters.
    Tag,
}

/// The most items a list from outside may hold (features, skills, needs, rooms, opening hours).
pub const MAX_LIST: usize = 50;

impl TextKind {
    /// The most characters a text of this kind may hold, after trimming.
    pub const fn max_chars(self) -> usize {
        match self {
            TextKind::Id | TextKind::Name | TextKind::Line => 200,
            TextKind::Notes => 2000,
            TextKind::Email => 254,
            TextKind::Tag => 64,
        }
    }

    /// Whether an empty text is a value (it clears a field) rather than a mistake.
    const fn may_be_empty(self) -> bool {
        matches!(self, TextKind::Line | TextKind::Notes | TextKind::Email)
    }

    /// How the rule names a text of this kind in a message.
    const fn noun(self) -> &'static str {
        match self {
            TextKind::Id => "an id",
            TextKind::Name => "a name",
            TextKind::Line => "a line of text",
            TextKind::Notes => "notes",
            TextKind::Email => "an e-mail address",
            TextKind::Tag => "a tag",
        }
    }

    /// `text` as it may be stored: trimmed (notes' CR LF pairs as LF), or why it may not.
    pub fn clean(self, text: &str) -> Result<String, TextFault> {
        let text = text.trim();
        let text = if self == TextKind::Notes && text.contains("\r\n") { text.replace("\r\n", "\n") } else { text.to_owned() };
        if text.is_empty() && !self.may_be_empty() {
            return Err(TextFault::Empty(self));
        }
        let mut count = 0;
        for (at, c) in text.chars().enumerate() {
            count += 1;
            if let Some(what) = forbidden(self, c) {
                return Err(TextFault::Character { kind: self, what, c, at: at + 1 });
            }
        }
        if count > self.max_chars() {
            return Err(TextFault::TooLong { kind: self, chars: count });
        }
        if self == TextKind::Email && !text.is_empty() && !plausible_email(&text) {
            return Err(TextFault::NotAnEmail(text));
        }
        Ok(text)
    }
}

/// What is wrong with a character in a text of `kind`, if anything.
fn forbidden(kind: TextKind, c: char) -> Option<&'static str> {
    match c {
        '\n' if kind == TextKind::Notes => None,
        '\n' | '\r' | '\u{2028}' | '\u{2029}' => Some("a line break"),
        // Trojan Source's set: embeddings, overrides and isolates reorder what a reader sees.
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Some("a bidirectional formatting character"),
        c if c.is_control() => Some("a control character"),
        c if c.is_whitespace() && matches!(kind, TextKind::Id | TextKind::Email) => Some("a space"),
        _ => None,
    }
}

/// Whether `email` looks like an address a person could mean: one `@` with something before it,
/// and a dotted domain after it, no spaces. Not an RFC 5322 parser, on purpose.
pub fn plausible_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(char::is_whitespace)
        && email.len() <= 254
}

/// Why a text breaks its kind's rule. The message says what to change; the caller names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextFault {
    #[error("is empty: give {} of 1 to {} characters", .0.noun(), .0.max_chars())]
    Empty(TextKind),
    #[error("is {chars} characters long: {} is at most {} characters", kind.noun(), kind.max_chars())]
    TooLong { kind: TextKind, chars: usize },
    #[error("holds {what} (U+{:04X}, character {at}): {} {}", u32::from(*c), kind.noun(), shape(*kind))]
    Character { kind: TextKind, what: &'static str, c: char, at: usize },
    #[error("{0:?} does not look like an e-mail address: write it as name@example.com")]
    NotAnEmail(String),
    #[error("holds {items} items: give at most {max}")]
    TooMany { items: usize, max: usize },
}

/// What a text of `kind` looks like, for messages.
fn shape(kind: TextKind) -> &'static str {
    match kind {
        TextKind::Id => "is one word of printable characters, e.g. \"studio-a\"",
        TextKind::Email => "is one word, e.g. name@example.com",
        TextKind::Notes => "is printable text, with line breaks but no other control characters",
        TextKind::Name | TextKind::Line | TextKind::Tag => "is one line of printable text",
    }
}

/// A list from outside, refused past [`MAX_LIST`] items.
pub fn check_list<T>(items: &[T]) -> Result<(), TextFault> {
    if items.len() > MAX_LIST {
        return Err(TextFault::TooMany { items: items.len(), max: MAX_LIST });
    }
    Ok(())
}

macro_rules! text_type {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The rule this text keeps.
            pub const KIND: TextKind = $kind;

            /// Checks `text` against the rule.
            pub fn parse(text: &str) -> Result<Self, TextFault> {
                Self::KIND.clean(text).map($name)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = TextFault;

            fn try_from(text: String) -> Result<Self, TextFault> {
                Self::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(text: $name) -> String {
                text.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = TextFault;

            fn from_str(text: &str) -> Result<Self, TextFault> {
                Self::parse(text)
            }
        }
    };
}

text_type!(
    /// An id, a cursor or a key ([`TextKind::Id`]).
    Id,
    TextKind::Id
);
text_type!(
    /// A person's, a room's or the studio's name ([`TextKind::Name`]).
    Name,
    TextKind::Name
);
text_type!(
    /// One line of free text, possibly empty ([`TextKind::Line`]).
    Line,
    TextKind::Line
);
text_type!(
    /// Notes, line breaks allowed, possibly empty ([`TextKind::Notes`]).
    Notes,
    TextKind::Notes
);
text_type!(
    /// An e-mail address, or empty to clear one ([`TextKind::Email`]).
    Email,
    TextKind::Email
);
text_type!(
    /// A feature or a skill ([`TextKind::Tag`]).
    Tag,
    TextKind::Tag
);

/// A list of at most [`MAX_LIST`] items from outside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<T>", into = "Vec<T>")]
#[serde(bound(deserialize = "T: Deserialize<'de>", serialize = "T: Serialize + Clone"))]
pub struct List<T>(Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<T> List<T> {
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T> TryFrom<Vec<T>> for List<T> {
    type Error = TextFault;

    fn try_from(items: Vec<T>) -> Result<Self, TextFault> {
        check_list(&items)?;
        Ok(List(items))
    }
}

impl<T> From<List<T>> for Vec<T> {
    fn from(list: List<T>) -> Vec<T> {
        list.0
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: AsRef<str>> List<T> {
    /// The items as plain strings.
    pub fn strings(&self) -> Vec<String> {
        self.0.iter().map(|t| t.as_ref().to_owned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: TextKind, text: &str) -> String {
        kind.clean(text).unwrap_err().to_string()
    }

    #[test]
    fn texts_are_trimmed_and_kept() {
        assert_eq!(TextKind::Name.clean("  Amara Osei \t").unwrap(), "Amara Osei");
        assert_eq!(TextKind::Notes.clean("bring stems\r\nand a click\n").unwrap(), "bring stems\nand a click");
        assert_eq!(TextKind::Name.clean("Zoë «Björk» 李雷 🎸").unwrap(), "Zoë «Björk» 李雷 🎸");
        assert_eq!(TextKind::Line.clean("").unwrap(), "");
        assert_eq!(TextKind::Email.clean(" a@b.co ").unwrap(), "a@b.co");
        // A backslash, a semicolon and a comma are text like any other.
        assert_eq!(TextKind::Name.clean(r"A\B; C, D").unwrap(), r"A\B; C, D");
    }

    #[test]
    fn control_characters_and_bidi_overrides_are_refused_naming_them() {
        for c in (0u32..0x20).chain(0x7f..0xa0) {
            let c = char::from_u32(c).unwrap();
            assert!(TextKind::Name.clean(&format!("a{c}b")).is_err(), "{c:?}");
            assert!(TextKind::Id.clean(&format!("a{c}b")).is_err(), "{c:?}");
            assert_eq!(TextKind::Notes.clean(&format!("a{c}b")).is_ok(), c == '\n', "{c:?}");
        }
        assert_eq!(
            fault(TextKind::Name, "Evil\r\nBEGIN:VEVENT"),
            "holds a line break (U+000D, character 5): a name is one line of printable text"
        );
        assert_eq!(
            fault(TextKind::Name, "abc\u{202E}fed"),
            "holds a bidirectional formatting character (U+202E, character 4): a name is one line of printable text"
        );
        assert_eq!(fault(TextKind::Id, "a\u{0}b"), "holds a control character (U+0000, character 2): an id is one word of printable characters, e.g. \"studio-a\"");
        assert!(TextKind::Notes.clean("a\rb").is_err());
        assert!(TextKind::Notes.clean("a\u{2028}b").is_err());
        assert!(TextKind::Id.clean("bk_00001; DROP TABLE").unwrap_err().to_string().starts_with("holds a space"));
    }

    #[test]
    fn lengths_are_counted_in_characters_after_trimming() {
        assert!(TextKind::Name.clean(&"é".repeat(200)).is_ok());
        assert_eq!(fault(TextKind::Name, &"é".repeat(201)), "is 201 characters long: a name is at most 200 characters");
        assert!(TextKind::Tag.clean(&"x".repeat(65)).is_err());
        assert!(TextKind::Notes.clean(&"x".repeat(2000)).is_ok());
        assert!(TextKind::Notes.clean(&"x".repeat(2001)).is_err());
        assert_eq!(fault(TextKind::Name, "   "), "is empty: give a name of 1 to 200 characters");
        assert_eq!(fault(TextKind::Id, ""), "is empty: give an id of 1 to 200 characters");
    }

    #[test]
    fn e_mail_addresses_must_look_like_one() {
        assert_eq!(fault(TextKind::Email, "a\u{0}b@example.com"), "holds a control character (U+0000, character 2): an e-mail address is one word, e.g. name@example.com");
        assert_eq!(fault(TextKind::Email, "amara"), "\"amara\" does not look like an e-mail address: write it as name@example.com");
        assert!(TextKind::Email.clean("amara@localhost").is_err());
    }

    #[test]
    fn typed_texts_deserialize_through_the_rule() {
        let name: Name = serde_json::from_str("\" Amara \"").unwrap();
        assert_eq!(name.as_str(), "Amara");
        let error = serde_json::from_str::<Name>("\"a\\u001bb\"").unwrap_err().to_string();
        assert!(error.starts_with("holds a control character (U+001B"), "{error}");
        let list: Result<List<Tag>, _> = serde_json::from_value(serde_json::json!(vec!["x"; 51]));
        assert_eq!(list.unwrap_err().to_string(), "holds 51 items: give at most 50");
    }
}
