//! Who may do what over a network: scopes and the principal a credential names. The HTTP front
//! (`mcp/front/http/auth.rs`) finds the principal from an API token (`store/tokens.rs`) or an
//! OAuth access token ([`jwt`], which checks JWTs against an issuer's published keys), and checks
//! the scope a request needs (which the MCP edge knows, from its tool table) before anything
//! runs; stdio and HTTP without auth run as the local user, who may do everything. [`secret`] makes the random
//! secrets of tokens and feeds and their stored hashes; [`password`] hashes staff passwords
//! (argon2id), and a staff member's [`Role`] says which scopes their grants may carry.

pub mod jwt;
pub mod password;
pub mod secret;

use std::fmt;

/// A permission a credential carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every read, and reflows that only plan (`dry_run`).
    StudioRead,
    /// Create, move, cancel and update bookings.
    BookingsWrite,
    /// Rooms, clients, engineers and offline windows.
    StudioManage,
    /// Apply, approve and undo reflows.
    ReflowApply,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::StudioRead, Scope::BookingsWrite, Scope::StudioManage, Scope::ReflowApply];

    pub fn name(self) -> &'static str {
        match self {
            Scope::StudioRead => "studio:read",
            Scope::BookingsWrite => "bookings:write",
            Scope::StudioManage => "studio:manage",
            Scope::ReflowApply => "reflow:apply",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.name() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Scopes(u8);

impl Scopes {
    pub const NONE: Scopes = Scopes(0);

    pub fn all() -> Scopes {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// These scopes and `scope` together.
    pub fn with(self, scope: Scope) -> Scopes {
        Scopes(self.0 | scope.bit())
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// Scopes as a person writes them: names separated by commas or spaces. Every name must be
    /// known, and at least one given; the error says which are.
    pub fn parse_list(text: &str) -> Result<Scopes, String> {
        let mut scopes = Scopes::NONE;
        for name in text.split([',', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
            match Scope::parse(name) {
                Some(scope) => scopes.0 |= scope.bit(),
                None => return Err(format!("unknown scope {name:?}: the scopes are {}", Scopes::all().joined(", "))),
            }
        }
        if scopes.is_empty() {
            return Err(format!("name at least one scope of {}", Scopes::all().joined(", ")));
        }
        Ok(scopes)
    }

    /// Scopes as an OAuth `scope` claim gives them: space-separated; names studioflow does not
    /// know (another resource's) are ignored.
    pub fn from_claim(claim: &str) -> Scopes {
        claim.split(' ').filter_map(Scope::parse).collect()
    }

    /// The names, joined by `separator` (a space for the wire and the store).
    pub fn joined(self, separator: &str) -> String {
        self.iter().map(Scope::name).collect::<Vec<_>>().join(separator)
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Scopes {
        Scopes(iter.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.joined(" "))
    }
}

/// Who a request comes from, once its credential checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Stable and unique: `token:<token id>`, `user:<user id>` or `oauth:<sub>`. Tasks record it as their owner.
    pub id: String,
    /// What the history shows: the token's name, or the access token's `sub`.
    pub name: String,
    pub scopes: Scopes,
}

impl Principal {
    /// The holder of an API token.
    pub fn token(id: &str, name: &str, scopes: Scopes) -> Principal {
        Principal { id: Principal::token_id(id), name: name.to_owned(), scopes }
    }

    /// The principal id of the holder of API token `id`: the owner its tasks record.
    pub fn token_id(id: &str) -> String {
        format!("token:{id}")
    }

    /// A staff member signed in through studioflow's own authorization server, with one client:
    /// the history shows both (`alice (Claude)`); tasks belong to the user, whatever the client.
    pub fn user(user_id: &str, user: &str, client: &str, scopes: Scopes) -> Principal {
        Principal { id: format!("user:{user_id}"), name: format!("{user} ({client})"), scopes }
    }

    /// The subject of an OAuth access token.
    pub fn oauth(subject: &str, scopes: Scopes) -> Principal {
        Principal { id: format!("oauth:{subject}"), name: subject.to_owned(), scopes }
    }
}

/// A staff account's role: what the scopes of its grants may be, checked again at every request,
/// so a lowered role or a disabled account takes effect on the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads the studio.
    Viewer,
    /// Reads, and books.
    Staff,
    /// Everything.
    Manager,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Staff, Role::Manager];

    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Staff => "staff",
            Role::Manager => "manager",
        }
    }

    pub fn parse(name: &str) -> Result<Role, String> {
        Role::ALL.into_iter().find(|r| r.name() == name.trim()).ok_or_else(|| format!("unknown role {name:?}: the roles are viewer, staff and manager"))
    }

    /// The scopes the role gives: a viewer `studio:read`; staff add `bookings:write`; a manager has all four.
    pub fn scopes(self) -> Scopes {
        match self {
            Role::Viewer => [Scope::StudioRead].into_iter().collect(),
            Role::Staff => [Scope::StudioRead, Scope::BookingsWrite].into_iter().collect(),
            Role::Manager => Scopes::all(),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Scopes {
    /// The scopes in both sets.
    pub fn and(self, other: Scopes) -> Scopes {
        Scopes(self.0 & other.0)
    }

    /// The scopes of `self` that `other` lacks.
    pub fn without(self, other: Scopes) -> Scopes {
        Scopes(self.0 & !other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_print() {
        let scopes = Scopes::parse_list("reflow:apply, studio:read").unwrap();
        assert_eq!(scopes.joined(" "), "studio:read reflow:apply");
        assert!(scopes.contains(Scope::ReflowApply) && !scopes.contains(Scope::BookingsWrite));
        assert!(Scopes::parse_list("studio:read,studio:write").unwrap_err().contains("\"studio:write\""));
        assert!(Scopes::parse_list(" , ").is_err());
        assert_eq!(Scopes::from_claim("openid studio:read email"), [Scope::StudioRead].into_iter().collect());
    }

    #[test]
    fn roles_give_scopes() {
        assert_eq!(Role::Viewer.scopes().joined(" "), "studio:read");
        assert_eq!(Role::Staff.scopes().joined(" "), "studio:read bookings:write");
        assert_eq!(Role::Manager.scopes(), Scopes::all());
        assert_eq!(Scopes::all().and(Role::Staff.scopes()), Role::Staff.scopes());
        assert_eq!(Scopes::all().without(Role::Staff.scopes()).joined(" "), "studio:manage reflow:apply");
        assert!(Role::parse("admin").is_err());
    }

}
