//! `studioflow user`: the staff accounts that sign in to `serve --oauth-server` (README: "Connect
//! Claude (or any host)"). A password is read from standard input (`--password-stdin`), checked
//! and hashed with argon2id here, and never printed; without one, the command prints a one-time
//! set-up link to the server's `/oauth/setup` page. Every change is recorded in the history as
//! the operator's. The flags are declared here, and `main` delegates to them.

use super::{open_existing, CommandError, CommandResult, OPERATOR};
use crate::auth::Role;
use crate::domain::Actor;
use crate::store::{Target, User};
use anyhow::anyhow;
use serde_json::json;
use std::io::{BufRead, Write};

/// What a user command does.
#[derive(clap::Subcommand)]
pub enum UserCommand {
    /// Create a staff account: its password from standard input (--password-stdin), or a one-time set-up link.
    Create {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The name to sign in with (one word): what the history shows.
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: Option<String>,
        /// viewer (studio:read), staff (adds bookings:write) or manager (all four scopes).
        #[arg(long, value_parser = Role::parse)]
        role: Role,
        #[command(flatten)]
        password: PasswordSource,
    },
    /// List the accounts (never their passwords): name, role, e-mail, password set, created, state.
    List {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Print a JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Disable an account: it cannot sign in, and its grants stop working at the next request.
    Disable {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        name: String,
    },
    /// Set an account's password from standard input, or print a new set-up link.
    Password {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        name: String,
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Change an account's role: its grants carry no more than the new role from the next request.
    Role {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        name: String,
        #[arg(value_parser = Role::parse)]
        role: Role,
    },
}

/// Where a password comes from.
#[derive(clap::Args)]
pub struct PasswordSource {
    /// Read the password from the first line of standard input (never from a flag, which other users can see).
    #[arg(long)]
    password_stdin: bool,
    /// Without --password-stdin: the server's public URL (the origin of its --resource), for the set-up link.
    #[arg(long, env = "STUDIOFLOW_PUBLIC_URL")]
    base_url: Option<String>,
}

impl PasswordSource {
    /// The password's PHC string, read and hashed now; `None` for a set-up link (whose base is checked first).
    fn hashed(&self) -> Result<Option<String>, CommandError> {
        if !self.password_stdin {
            if self.base_url.is_none() {
                return Err(CommandError::Input(anyhow!(
                    "give --password-stdin (and the password on standard input), or --base-url URL (or STUDIOFLOW_PUBLIC_URL) to print a set-up link"
                )));
            }
            return Ok(None);
        }
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let password = line.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(&line);
        crate::auth::password::hash(password).map(Some).map_err(|e| match e {
            crate::auth::password::PasswordError::Random(_) | crate::auth::password::PasswordError::Hash(_) => CommandError::Failed(e.into()),
            e => CommandError::Input(e.into()),
        })
    }

    fn link(&self, secret: &str) -> String {
        format!("{}{}?token={secret}", self.base_url.as_deref().unwrap_or_default().trim_end_matches('/'), crate::oauth::SETUP_PATH)
    }
}

fn user_json(user: &User) -> serde_json::Value {
    json!({
        "id": user.id,
        "name": user.name,
        "email": user.email,
        "role": user.role.name(),
        "scopes": user.role.scopes().iter().map(|s| s.name()).collect::<Vec<_>>(),
        "password_set": user.has_password,
        "created": user.created.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "disabled": user.disabled.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    })
}

/// `user`: creates, lists, disables staff accounts, sets passwords and roles.
pub fn user(action: UserCommand) -> CommandResult {
    let now = chrono::Utc::now();
    let mut out = std::io::stdout().lock();
    match action {
        UserCommand::Create { db, name, email, role, password } => {
            let hashed = password.hashed()?;
            let mut store = open_existing(&db)?;
            let (user, setup) = store.write_as(&Actor::new(OPERATOR, "user create"), |w| w.create_user(&name, email.as_deref(), role, hashed.clone(), now))?;
            eprintln!("Created {} ({}, {}): it may grant apps {}.", user.name, user.id, role, role.scopes().joined(", "));
            match setup {
                Some(secret) => {
                    eprintln!("Send this one-time link to {}; it sets the password and works for 7 days:", user.name);
                    writeln!(out, "{}", password.link(&secret))?;
                }
                None => eprintln!("Its password is set: {} can sign in from any app connected to `serve --oauth-server`.", user.name),
            }
        }
        UserCommand::List { db, json } => {
            let users = open_existing(&db)?.users()?;
            if json {
                writeln!(out, "{}", serde_json::Value::Array(users.iter().map(user_json).collect()))?;
            } else if users.is_empty() {
                eprintln!("No users yet: `studioflow user create --db {db} --name NAME --role staff --password-stdin` makes one.");
            } else {
                writeln!(out, "NAME\tROLE\tEMAIL\tPASSWORD\tCREATED\tSTATE")?;
                for u in users {
                    let state = u.disabled.map_or_else(|| "active".to_owned(), |at| format!("disabled {}", at.format("%Y-%m-%d %H:%M UTC")));
                    let password = if u.has_password { "set" } else { "not set" };
                    writeln!(out, "{}\t{}\t{}\t{password}\t{}\t{state}", u.name, u.role, u.email.as_deref().unwrap_or("-"), u.created.format("%Y-%m-%d %H:%M UTC"))?;
                }
            }
        }
        UserCommand::Disable { db, name } => {
            let user = open_existing(&db)?.write_as(&Actor::new(OPERATOR, "user disable"), |w| w.disable_user(&name, now))?;
            writeln!(out, "Disabled {}: it cannot sign in, and its apps' tokens stop working at their next request.", user.name)?;
        }
        UserCommand::Password { db, name, password } => {
            let hashed = password.hashed()?;
            let mut store = open_existing(&db)?;
            match hashed {
                Some(hash) => {
                    let user = store.write_as(&Actor::new(OPERATOR, "user password"), |w| w.set_password(&name, &hash))?;
                    eprintln!("Set the password of {}.", user.name);
                }
                None => {
                    let (user, secret) = store.write_as(&Actor::new(OPERATOR, "user password"), |w| w.reset_setup(&name, now))?;
                    eprintln!("Send this one-time link to {}; it sets a new password and works for 7 days:", user.name);
                    writeln!(out, "{}", password.link(&secret))?;
                }
            }
        }
        UserCommand::Role { db, name, role } => {
            let user = open_existing(&db)?.write_as(&Actor::new(OPERATOR, "user role"), |w| w.set_role(&name, role))?;
            writeln!(out, "{} is now {}: its apps may do no more than {} from their next request.", user.name, role, role.scopes().joined(", "))?;
        }
    }
    Ok(())
}
