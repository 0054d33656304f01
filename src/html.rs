//! Text made safe for HTML, in content and in quoted attributes: the one escaper of the pages
//! the server writes by hand (the sign-in pages) and of the e-mail's HTML body.

/// `text` with `&`, `<`, `>`, `"` and `'` written as character references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
