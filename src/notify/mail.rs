//! E-mail that updates calendars: the SMTP URL `serve --smtp` takes, the message an `email`
//! notification becomes, and one attempt at sending it (lettre, over plain SMTP, STARTTLS or TLS).
//! A message to a client or engineer has a plain-text and an HTML body saying what changed and
//! whom to contact, and an iMIP part (RFC 6047: `text/calendar; method=REQUEST`, or `CANCEL` when
//! every session in it is off their calendar) whose events carry the bookings' UIDs (the feeds'
//! own, `crate::ics::uid`) and their raised SEQUENCE, so calendar programs update them in place.
//! A reflow's staff digest has the counts and every unresolved session with its client's contact.
//! It renders what the store wrote (`store/mail.rs`) and knows nothing of rows or claims.

use crate::domain::StudioTz;
use crate::ics::lines::ContentLines;
use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value as Json;
use std::fmt::Write as _;
use std::time::Duration;

/// How the connection to the SMTP server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtp://`: none (a relay on the studio's own host or network).
    Plain,
    /// `smtp://...?tls=starttls`: STARTTLS, required (a server that does not offer it is refused).
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Tls,
}

/// Where e-mail goes, read from `serve --smtp URL`.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpUrl {
    pub host: String,
    pub port: u16,
    pub security: Security,
    /// A user name and password, percent-decoded from the URL.
    pub credentials: Option<(String, String)>,
}

impl std::fmt::Debug for SmtpUrl {
    // Never the password: configurations end up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.credentials.as_ref().map(|(user, _)| user))
            .finish()
    }
}

/// The URL forms the README lists, for refusals.
const FORMS: &str = "smtp://HOST[:PORT] (plain, port 25), smtp://USER:PASSWORD@HOST:587?tls=starttls (STARTTLS) or smtps://USER:PASSWORD@HOST[:PORT] (TLS, port 465)";

/// Reads an SMTP URL: `smtp://` (plain), `smtp://…?tls=starttls`, or `smtps://`; a user and
/// password in it are used to log in. The refusal says what to write instead.
pub fn parse_smtp_url(text: &str) -> Result<SmtpUrl, String> {
    let url = reqwest::Url::parse(text.trim()).map_err(|e| format!("--smtp: cannot read it as a URL ({e}); write {FORMS}"))?;
    let mut security = match url.scheme() {
        "smtp" => Security::Plain,
        "smtps" => Security::Tls,
        other => return Err(format!("--smtp: the scheme {other}:// is not one studioflow speaks; write {FORMS}")),
    };
    for (key, value) in url.query_pairs() {
        match (key.as_ref(), value.as_ref(), security) {
            ("tls", "starttls", Security::Plain) => security = Security::StartTls,
            ("tls", _, Security::Tls) => return Err("--smtp: smtps:// is TLS already; leave ?tls out".into()),
            _ => return Err(format!("--smtp: {key}={value} is not understood; the one option is ?tls=starttls on smtp://")),
        }
    }
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| format!("--smtp: the URL has no host; write {FORMS}"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    if url.path() != "" && url.path() != "/" {
        return Err("--smtp: the URL has a path, which SMTP has no use for; leave it out".into());
    }
    let port = url.port().unwrap_or(match security {
        Security::Plain => 25,
        Security::StartTls => 587,
        Security::Tls => 465,
    });
    let decode = |s: &str| percent_decode(s).ok_or_else(|| "--smtp: the user or password is not valid percent-encoded UTF-8".to_owned());
    let credentials = match (url.username(), url.password()) {
        ("", None) => None,
        (user, Some(password)) if !user.is_empty() => Some((decode(user)?, decode(password)?)),
        _ => return Err("--smtp: give both a user and a password (smtp://USER:PASSWORD@HOST), or neither".into()),
    };
    Ok(SmtpUrl { host, port, security, credentials })
}

/// `%XX` escapes decoded, as URLs write a user's and password's reserved characters.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Sends e-mail for the delivery worker: one SMTP connection per message (a reflow's few dozen
/// messages go out 32 at a time), each with the timeout given.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// Where mail goes, for logs (no password).
    server: String,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer").field("server", &self.server).field("from", &self.from.to_string()).finish()
    }
}

/// How one attempt at sending went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub ok: bool,
    /// The server refused it for good (a 5xx answer): retrying cannot help.
    pub permanent: bool,
    /// The server's answer, or what went wrong.
    pub text: String,
}

impl Mailer {
    /// A mailer to `url`, sending from `from` (`serve --mail-from`, an address or `Name <address>`).
    pub fn new(url: &SmtpUrl, from: &str, timeout: Duration) -> Result<Mailer, String> {
        crate::tls::install();
        let from: Mailbox = from.parse().map_err(|e| format!("--mail-from {from:?} is not an address ({e}); write one such as \"Studio <bookings@example.com>\""))?;
        let tls = |host: &str| TlsParameters::new(host.to_owned()).map_err(|e| format!("--smtp: cannot set up TLS to {host}: {e}"));
        let security = match url.security {
            Security::Plain => Tls::None,
            Security::StartTls => Tls::Required(tls(&url.host)?),
            Security::Tls => Tls::Wrapper(tls(&url.host)?),
        };
        // EHLO with this machine's name, as mail programs do: some servers refuse a bare "localhost".
        let hello = ClientId::Domain(crate::tasks::process::host_name());
        let mut builder =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(url.host.as_str()).port(url.port).tls(security).timeout(Some(timeout)).hello_name(hello);
        if let Some((user, password)) = &url.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        let server = format!("{}:{} ({:?})", url.host, url.port, url.security);
        Ok(Mailer { transport: builder.build(), from, server })
    }

    /// Renders the notification `id`'s facts and sends them. Never fails: a failure is a `Sent`
    /// saying what went wrong (never the message itself).
    pub async fn send(&self, id: &str, payload: &str) -> Sent {
        let failed = |text: String, permanent: bool| Sent { ok: false, permanent, text };
        let facts: Json = match serde_json::from_str(payload) {
            Ok(f) => f,
            Err(e) => return failed(format!("the stored message cannot be read: {e}"), true),
        };
        let email = match render(&facts, self.from.email.as_ref(), Utc::now()) {
            Ok(e) => e,
            Err(e) => return failed(e, true),
        };
        let message = match email.message(&self.from, id) {
            Ok(m) => m,
            Err(e) => return failed(e, true),
        };
        match self.transport.send(message).await {
            Ok(answer) => Sent { ok: true, permanent: false, text: format!("SMTP {}: {}", answer.code(), answer.message().collect::<Vec<_>>().join(" ")) },
            Err(e) => {
                let code = e.status().map(|c| format!("SMTP {c}: ")).unwrap_or_default();
                failed(format!("{code}{}", describe(&e)), e.is_permanent())
            }
        }
    }
}

/// An error and its causes on one line.
fn describe(e: &lettre::transport::smtp::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let _ = write!(text, ": {s}");
        source = s.source();
    }
    text
}

/// A message ready to send: to whom, its subject, its bodies and its calendar part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub to_name: Option<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// The iMIP part: its METHOD (`REQUEST` or `CANCEL`) and the iCalendar text.
    pub calendar: Option<(&'static str, String)>,
}

impl Email {
    /// The MIME message: multipart/alternative of text, HTML and (iMIP) text/calendar, with the
    /// notification's id as its Message-ID, the same on every attempt.
    pub fn message(&self, from: &Mailbox, id: &str) -> Result<Message, String> {
        let to_address = self.to.parse().map_err(|e| format!("the address {:?} cannot be written to: {e}", self.to))?;
        let to = Mailbox::new(self.to_name.clone(), to_address);
        let mut parts = MultiPart::alternative().singlepart(SinglePart::plain(self.text.clone())).singlepart(SinglePart::html(self.html.clone()));
        if let Some((method, ics)) = &self.calendar {
            let kind = ContentType::parse(&format!("text/calendar; charset=utf-8; method={method}")).map_err(|e| e.to_string())?;
            parts = parts.singlepart(SinglePart::builder().header(kind).body(ics.clone()));
        }
        Message::builder()
            .from(from.clone())
            .to(to)
            .subject(self.subject.clone())
            .message_id(Some(format!("<{id}@studioflow>")))
            .multipart(parts)
            .map_err(|e| format!("the message cannot be built: {e}"))
    }
}

fn text<'a>(facts: &'a Json, key: &str) -> &'a str {
    facts[key].as_str().unwrap_or("")
}

fn instant(value: &Json) -> Result<DateTime<Utc>, String> {
    let text = value.as_str().ok_or("a session without its time")?;
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).map_err(|e| format!("a session's time {text:?}: {e}"))
}

/// `Tue 8 Sep 2026, 10:00–12:00 BST` in the studio's zone (both ends on the start's day unless
/// the session crosses midnight).
fn span(tz: &StudioTz, start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    let (s, e) = (start.with_timezone(&tz.0), end.with_timezone(&tz.0));
    let end_text = if s.date_naive() == e.date_naive() { e.format("%H:%M").to_string() } else { e.format("%a %-d %b %H:%M").to_string() };
    format!("{}–{end_text} {}", s.format("%a %-d %b %Y, %H:%M"), s.format("%Z"))
}

/// The message a notification's facts make, sent from `organizer` (the ORGANIZER of the calendar
/// part) at `now` (its DTSTAMP).
pub fn render(facts: &Json, organizer: &str, now: DateTime<Utc>) -> Result<Email, String> {
    let studio = &facts["studio"];
    let studio_name = text(studio, "name");
    let tz: StudioTz = text(studio, "zone").parse().map_err(|e| format!("{e}"))?;
    match text(facts, "mail") {
        "person" => person(facts, studio_name, &tz, organizer, now),
        "digest" => digest(facts, studio_name, &tz),
        other => Err(format!("a stored message of unknown kind {other:?}")),
    }
}

/// One session's line: what happened to it, where and when it is (and was).
fn session_line(tz: &StudioTz, s: &Json) -> Result<String, String> {
    let (start, end) = (instant(&s["start"])?, instant(&s["end"])?);
    let room = text(&s["room"], "name");
    let now = format!("{room}, {}", span(tz, start, end));
    let mut with = format!(" (client {}", text(s, "client"));
    if let Some(e) = s["engineer"].as_str() {
        let _ = write!(with, ", engineer {e}");
    }
    // A re-staffed session names the engineer it had, or says it had none.
    let restaffed = s["engineer_before"].is_object();
    if restaffed {
        let _ = write!(with, ", before engineer {}", s["engineer_before"]["name"].as_str().unwrap_or("none"));
    }
    with.push(')');
    let cancel = s["cancel"].as_bool() == Some(true);
    Ok(if cancel && text(s, "status") != "cancelled" {
        // Taken off this person's calendar (an engineer swapped), not cancelled for the others.
        format!("Taken off your calendar: {now}{with}")
    } else if cancel {
        format!("Cancelled: {now}{with}")
    } else if s["before"].is_object() {
        let b = &s["before"];
        let was = format!("{}, {}", text(&b["room"], "name"), span(tz, instant(&b["start"])?, instant(&b["end"])?));
        format!("Moved: {was} → {now}{with}")
    } else if text(s, "change") == "created" {
        format!("Booked: {now}{with}")
    } else if restaffed {
        format!("Engineer changed: {now}{with}")
    } else {
        format!("Changed: {now}{with} ({})", text(s, "status"))
    })
}

fn person(facts: &Json, studio: &str, tz: &StudioTz, organizer: &str, now: DateTime<Utc>) -> Result<Email, String> {
    let to = &facts["to"];
    let sessions = facts["sessions"].as_array().ok_or("a message without its sessions")?;
    let lines = sessions.iter().map(|s| session_line(tz, s)).collect::<Result<Vec<_>, _>>()?;
    let all_cancelled = sessions.iter().all(|s| s["cancel"].as_bool() == Some(true));
    let moved = sessions.iter().filter(|s| s["before"].is_object() && s["cancel"].as_bool() != Some(true)).count();
    let taken_off = sessions.iter().all(|s| s["cancel"].as_bool() == Some(true) && text(s, "status") != "cancelled");
    let subject = match (facts["reflow"].as_str(), sessions.len()) {
        (Some(_), n) if moved == n => format!("{studio}: {n} of your sessions {} moved", if n == 1 { "was" } else { "were" }).replace(": 1 of your sessions was", ": your session was"),
        (Some(_), n) => format!("{studio}: {n} of your sessions changed").replace(": 1 of your sessions changed", ": your session changed"),
        (None, 1) if taken_off => format!("{studio}: a session was taken off your calendar"),
        (None, 1) if all_cancelled => format!("{studio}: your session was cancelled"),
        (None, 1) if moved == 1 => format!("{studio}: your session was moved"),
        (None, 1) if text(&sessions[0], "change") == "created" => format!("{studio}: your session is booked"),
        (None, n) => format!("{studio}: {n} of your sessions changed").replace(": 1 of your sessions changed", ": your session changed"),
    };
    let contact = match facts["contact"].as_str() {
        Some(staff) => format!("Questions? Write to {staff}."),
        None => format!("Questions? Reply to this message, or contact {studio}."),
    };
    let lead = match facts["reflow"].as_str() {
        Some(_) => format!("{studio} had to rearrange its calendar. These sessions of yours changed (times in {}):", tz.name()),
        None => format!("These sessions of yours at {studio} changed (times in {}):", tz.name()),
    };
    let name = text(to, "name");
    let mut plain = format!("Hello {name},\n\n{lead}\n\n");
    for line in &lines {
        let _ = writeln!(plain, "- {line}");
    }
    let _ = write!(plain, "\nYour calendar updates itself from the invitation attached.\n{contact}\n\n{studio}\n");
    let mut html = format!("<p>Hello {},</p>\n<p>{}</p>\n<ul>\n", crate::html::escape(name), crate::html::escape(&lead));
    for line in &lines {
        let _ = writeln!(html, "<li>{}</li>", crate::html::escape(line));
    }
    let _ = write!(html, "</ul>\n<p>Your calendar updates itself from the invitation attached.<br>{}</p>\n<p>{}</p>\n", crate::html::escape(&contact), crate::html::escape(studio));
    let method = if all_cancelled { "CANCEL" } else { "REQUEST" };
    let calendar = imip(facts, studio, method, organizer, now)?;
    Ok(Email {
        to: text(to, "email").to_owned(),
        to_name: Some(name.to_owned()).filter(|n| !n.is_empty()),
        subject,
        text: plain,
        html,
        calendar: Some((method, calendar)),
    })
}

/// The iMIP calendar part (RFC 6047, RFC 5546): one VEVENT per session with the booking's UID,
/// its SEQUENCE, the studio's address as ORGANIZER and the person as ATTENDEE. In a REQUEST, a
/// session off their calendar is STATUS:CANCELLED (one message has one METHOD).
fn imip(facts: &Json, studio: &str, method: &'static str, organizer: &str, now: DateTime<Utc>) -> Result<String, String> {
    let to = &facts["to"];
    let mut ics = ContentLines::new();
    ics.begin("VCALENDAR");
    ics.text("VERSION", "2.0");
    ics.text("PRODID", concat!("-//studioflow//studioflow ", env!("CARGO_PKG_VERSION"), "//EN"));
    ics.property("METHOD").value(method);
    for s in facts["sessions"].as_array().ok_or("a message without its sessions")? {
        let room = text(&s["room"], "name");
        let summary = match s["engineer"].as_str() {
            Some(e) => format!("{} in {room} with {e}", text(s, "client")),
            None => format!("{} in {room}", text(s, "client")),
        };
        let cancelled = s["cancel"].as_bool() == Some(true) || text(s, "status") == "cancelled";
        let status = match (cancelled, text(s, "status")) {
            (true, _) => "CANCELLED",
            (false, "tentative") => "TENTATIVE",
            _ => "CONFIRMED",
        };
        ics.begin("VEVENT");
        ics.text("UID", &crate::ics::uid(studio, text(s, "booking")));
        // SEQUENCE is a non-negative INTEGER kept to 32 signed bits (RFC 5545 §3.3.8).
        ics.integer("SEQUENCE", s["sequence"].as_i64().unwrap_or(0).clamp(0, i64::from(i32::MAX)));
        ics.utc("DTSTAMP", now);
        ics.utc("DTSTART", instant(&s["start"])?);
        ics.utc("DTEND", instant(&s["end"])?);
        ics.text("SUMMARY", &summary);
        ics.text("LOCATION", room);
        ics.text("STATUS", status);
        ics.property("ORGANIZER").param("CN", studio).value(&format!("mailto:{organizer}"));
        let attendee = ics.property("ATTENDEE").param("CN", text(to, "name")).param("ROLE", "REQ-PARTICIPANT");
        attendee.value(&format!("mailto:{}", text(to, "email")));
        ics.end("VEVENT");
    }
    ics.end("VCALENDAR");
    Ok(ics.finish())
}

/// The staff digest of a reflow: no calendar part (the staff's calendar is the studio's).
fn digest(facts: &Json, studio: &str, tz: &StudioTz) -> Result<Email, String> {
    let unresolved = facts["unresolved"].as_array().ok_or("a digest without its unresolved sessions")?;
    let reflow = text(facts, "reflow");
    let moved = facts["moved"].as_i64().unwrap_or(0);
    let told = facts["people_told"].as_i64().unwrap_or(0);
    let subject = format!("{studio}: reflow {reflow}: {moved} moved, {} unresolved", unresolved.len());
    let counts = format!("Reflow {reflow} moved {moved} sessions; {told} clients and engineers were e-mailed their changes. {} sessions could not be moved: call their clients.", unresolved.len());
    let mut lines = Vec::with_capacity(unresolved.len());
    for u in unresolved {
        let c = &u["client"];
        let reach: Vec<&str> = [c["email"].as_str(), c["phone"].as_str()].into_iter().flatten().collect();
        let reach = if reach.is_empty() { "no contact on file".to_owned() } else { reach.join(", ") };
        lines.push(format!(
            "{} ({}, {}): {} — client {} ({})",
            text(u, "booking"),
            text(&u["room"], "name"),
            span(tz, instant(&u["start"])?, instant(&u["end"])?),
            text(u, "reason"),
            text(c, "name"),
            reach
        ));
    }
    let mut plain = format!("{counts}\n\n");
    for line in &lines {
        let _ = writeln!(plain, "- {line}");
    }
    let mut html = format!("<p>{}</p>\n<ul>\n", crate::html::escape(&counts));
    for line in &lines {
        let _ = writeln!(html, "<li>{}</li>", crate::html::escape(line));
    }
    html.push_str("</ul>\n");
    Ok(Email { to: text(&facts["to"], "email").to_owned(), to_name: None, subject, text: plain, html, calendar: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn smtp_urls_in_their_three_forms() {
        let plain = parse_smtp_url("smtp://127.0.0.1:2525").unwrap();
        assert_eq!((plain.host.as_str(), plain.port, plain.security, plain.credentials), ("127.0.0.1", 2525, Security::Plain, None));
        let starttls = parse_smtp_url("smtp://me%40example.com:p%3Ass@mail.example.com?tls=starttls").unwrap();
        assert_eq!((starttls.port, starttls.security), (587, Security::StartTls));
        assert_eq!(starttls.credentials, Some(("me@example.com".into(), "p:ss".into())));
        assert!(!format!("{starttls:?}").contains("p:ss"), "no password in logs");
        let tls = parse_smtp_url("smtps://u:p@mail.example.com").unwrap();
        assert_eq!((tls.port, tls.security), (465, Security::Tls));
        for (bad, says) in [
            ("http://mail.example.com", "scheme"),
            ("smtp://mail.example.com?tls=yes", "tls=yes"),
            ("smtps://mail.example.com?tls=starttls", "TLS already"),
            ("smtp://u@mail.example.com", "both a user and a password"),
            ("smtp://mail.example.com/x", "path"),
            ("mail.example.com", "URL"),
        ] {
            let refusal = parse_smtp_url(bad).unwrap_err();
            assert!(refusal.contains(says), "{bad}: {refusal}");
        }
    }

    fn facts() -> Json {
        json!({
            "mail": "person",
            "to": {"email": "amara@example.com", "name": "Amara, \"Osei\"", "role": "client", "id": "amara"},
            "studio": {"name": "Northside Studios", "zone": "Europe/London"},
            "contact": "desk@example.com",
            "reflow": "r-1",
            "sessions": [{
                "booking": "b-7", "change": "moved", "cancel": false, "sequence": 3, "status": "confirmed",
                "room": {"id": "a", "name": "Studio A"}, "start": "2026-09-08T13:00:00Z", "end": "2026-09-08T15:00:00Z",
                "client": "Amara", "engineer": null,
                "before": {"room": {"id": "b", "name": "Studio B"}, "start": "2026-09-08T09:00:00Z", "end": "2026-09-08T11:00:00Z"}
            }]
        })
    }

    #[test]
    fn a_moved_session_reads_old_and_new_in_the_studios_zone_and_carries_its_uid_and_sequence() {
        let now = DateTime::parse_from_rfc3339("2026-08-31T09:00:00Z").unwrap().with_timezone(&Utc);
        let email = render(&facts(), "bookings@example.com", now).unwrap();
        assert_eq!(email.subject, "Northside Studios: your session was moved");
        assert!(email.text.contains("Moved: Studio B, Tue 8 Sep 2026, 10:00–12:00 BST → Studio A, Tue 8 Sep 2026, 14:00–16:00 BST"), "{}", email.text);
        assert!(email.text.contains("desk@example.com"));
        assert!(email.html.contains("Amara, &quot;Osei&quot;"), "{}", email.html);
        let (method, ics) = email.calendar.clone().unwrap();
        assert_eq!(method, "REQUEST");
        assert!(ics.contains("METHOD:REQUEST\r\n"));
        assert!(ics.contains("UID:b-7@northside-studios.studioflow\r\n"), "{ics}");
        assert!(ics.contains("SEQUENCE:3\r\n"));
        assert!(ics.contains("DTSTART:20260908T130000Z\r\n"));
        assert!(ics.contains("ORGANIZER;CN=Northside Studios:mailto:bookings@example.com\r\n"), "{ics}");
        let message = email.message(&"Desk <bookings@example.com>".parse().unwrap(), "msg_x").unwrap();
        let raw = String::from_utf8(message.formatted()).unwrap();
        assert!(raw.contains("text/calendar; charset=utf-8; method=REQUEST"), "{raw}");
        assert!(raw.contains("Message-ID: <msg_x@studioflow>"), "{raw}");
    }

    #[test]
    fn a_restaffed_session_names_both_engineers_to_each() {
        // Issue 26: the engineer taken off reads who took over, in a CANCEL; the one put on reads
        // whose it was, in a REQUEST; neither is told the session is cancelled or moved.
        let now = DateTime::parse_from_rfc3339("2026-08-31T09:00:00Z").unwrap().with_timezone(&Utc);
        let mut f = facts();
        f["to"] = json!({"email": "marco@example.com", "name": "Marco", "role": "engineer", "id": "eng-04"});
        f["sessions"][0]["before"] = Json::Null;
        f["sessions"][0]["engineer"] = json!("Tom");
        f["sessions"][0]["engineer_before"] = json!({"name": "Marco"});
        f["sessions"][0]["cancel"] = json!(true);
        let off = render(&f, "bookings@example.com", now).unwrap();
        assert_eq!(off.subject, "Northside Studios: your session changed");
        assert!(off.text.contains("- Taken off your calendar: Studio A, Tue 8 Sep 2026, 14:00–16:00 BST (client Amara, engineer Tom, before engineer Marco)\n"), "{}", off.text);
        let (method, ics) = off.calendar.unwrap();
        assert_eq!(method, "CANCEL");
        assert!(ics.contains("STATUS:CANCELLED\r\n"));
        f["to"] = json!({"email": "tom@example.com", "name": "Tom", "role": "engineer", "id": "eng-02"});
        f["sessions"][0]["cancel"] = json!(false);
        let on = render(&f, "bookings@example.com", now).unwrap();
        assert!(on.text.contains("- Engineer changed: Studio A, Tue 8 Sep 2026, 14:00–16:00 BST (client Amara, engineer Tom, before engineer Marco)\n"), "{}", on.text);
        assert_eq!(on.calendar.unwrap().0, "REQUEST");
    }

    #[test]
    fn a_cancellation_is_a_cancel() {
        let mut f = facts();
        f["reflow"] = Json::Null;
        f["sessions"][0]["cancel"] = json!(true);
        f["sessions"][0]["status"] = json!("cancelled");
        let email = render(&f, "bookings@example.com", Utc::now()).unwrap();
        assert_eq!(email.subject, "Northside Studios: your session was cancelled");
        let (method, ics) = email.calendar.unwrap();
        assert_eq!(method, "CANCEL");
        assert!(ics.contains("METHOD:CANCEL\r\n") && ics.contains("STATUS:CANCELLED\r\n"));
    }
}
