//! Where a studio's database is ([`Target`]): a `--db` argument read as an SQLite file or a
//! PostgreSQL URL, and shown without the password a URL may carry.

use std::path::{Path, PathBuf};

/// Where a studio's database is: a file, or a PostgreSQL URL (`postgres://` or `postgresql://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    File(PathBuf),
    Postgres(String),
}

impl Target {
    /// A `--db` argument: a `postgres://` or `postgresql://` URL, or else a file path.
    pub fn parse(text: &str) -> Target {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Target::Postgres(text.to_owned())
        } else {
            Target::File(PathBuf::from(text))
        }
    }

    /// The file, for the SQLite backend.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Target::File(path) => Some(path),
            Target::Postgres(_) => None,
        }
    }
}

impl std::str::FromStr for Target {
    type Err = std::convert::Infallible;
    fn from_str(text: &str) -> Result<Target, Self::Err> {
        Ok(Target::parse(text))
    }
}

/// Shown without the password a URL may carry.
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::File(path) => write!(f, "{}", path.display()),
            Target::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// A PostgreSQL URL with its password (between `user:` and `@`, or a `password=` parameter)
/// replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => format!("{}:***@{host}", user.split(':').next().unwrap_or_default()),
        _ => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let hidden = |pair: &str| if pair.starts_with("password=") { "password=***".to_owned() } else { pair.to_owned() };
            format!("{path}?{}", query.split('&').map(hidden).collect::<Vec<_>>().join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

impl From<&Path> for Target {
    fn from(path: &Path) -> Target {
        Target::File(path.to_owned())
    }
}

impl From<&PathBuf> for Target {
    fn from(path: &PathBuf) -> Target {
        Target::File(path.clone())
    }
}

impl From<PathBuf> for Target {
    fn from(path: PathBuf) -> Target {
        Target::File(path)
    }
}

impl From<&Target> for Target {
    fn from(target: &Target) -> Target {
        target.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_db_argument_is_a_file_unless_it_is_a_postgres_url() {
        assert_eq!(Target::parse("studio.db"), Target::File("studio.db".into()));
        assert_eq!(Target::parse("postgres://u@h/db"), Target::Postgres("postgres://u@h/db".into()));
        assert_eq!(Target::parse("postgresql://h/db"), Target::Postgres("postgresql://h/db".into()));
        assert_eq!(Target::parse("./postgres://x"), Target::File("./postgres://x".into()));
    }

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(Target::parse("postgres://ann:s3cret@db.example/studio").to_string(), "postgres://ann:***@db.example/studio");
        assert_eq!(Target::parse("postgres://ann@db.example/studio").to_string(), "postgres://ann@db.example/studio");
        assert_eq!(Target::parse("postgres://db.example/studio?user=a").to_string(), "postgres://db.example/studio?user=a");
        assert_eq!(Target::parse("postgres://db.example/studio?user=a&password=pw").to_string(), "postgres://db.example/studio?user=a&password=***");
    }
}
